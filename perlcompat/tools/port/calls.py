"""Subs and calls: user subs' Python names, ``&calls``, the lock sub's ``lock()`` call and its
way out, anonymous subs, ``local`` (as ``my`` where no called sub sees it), ``local $SIG{...}``."""

from __future__ import annotations

import re

from .core import Core
from .exprs import py_str
from .names import py_var
from .syntax import E, Parser, Unsupported, expression_tokens, parse
from .tree import Node

QUOTES = "\"'"


class Calls(Core):
    """The calls part of the translator (mixed into :class:`.stmts.Translator`)."""

    def def_name(self, name: str) -> str:
        """The Python name of sub *name*: never one of the script's variables' names."""
        py = py_var(name)
        taken = {py_var(n) for _, n in self.symbols} | set(self.handles)
        return py_var(name, "_sub") if py in taken else py

    def sub_name(self, name: str) -> str:
        if name not in self.subs:
            py = py_var(name)
            taken = {py_var(n) for _, n in self.symbols} | set(self.handles)
            if not self.unseen_libs or py in taken or not name.isidentifier():
                raise Unsupported(f"&{name}, a sub this script does not define")
            self.foreign_calls.add(py)  # the unread library's sub: require() defines it
            return py
        return self.def_name(name)

    def private_local(self, target: E) -> None:
        """``local`` of variables no other sub reads is ``my``; else dynamic scope: refuse."""
        items = [target] if target.k == "var" else []
        if target.k == "paren" and target.a[0] is not None:
            inner = target.a[0]
            items = list(inner.a) if inner.k == "comma" else [inner]
        if self.in_sub is None or not items:
            raise Unsupported("local (dynamic scope)")
        reach = self.reachable(self.in_sub)
        for item in items:
            if item.k != "var" or self.users.get(item.a[0] + item.a[1], set()) & reach:
                raise Unsupported("local of a variable a sub it calls reads (dynamic scope)")

    def reachable(self, sub: str) -> set[str]:
        """The subs *sub* calls, directly or not (itself only if it recurses)."""
        seen: set[str] = set()
        todo = list(self.calls.get(sub, ()))
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(self.calls.get(name, ()))
        return seen

    def lock_call(self, e: E) -> str:
        args = list(e.a[1] or [])
        template, _, give_up = self.lock_calls[str(e.a[0])].partition(" or FAIL:")
        if give_up:  # the sub's own way out when its tries run out (&error): the port's too
            template += " or " + self.give_up(int(give_up))
        self.use(template.split("(")[0])
        if "(NAME" not in template:  # a sub that locks a global: called without arguments
            if args:
                raise Unsupported("a lock sub on a global, called with arguments")
            return template
        if len(args) != 1:
            raise Unsupported("a lock sub called without its one path")
        return template.replace("NAME", self.strx(args[0]), 1)

    def give_up(self, line: int) -> str:
        """The Perl statement at *line* (a lock sub's give-up call) as a Python expression."""
        for node in _statements(self.script.root):
            if node.first_line() == line and node.cls == "Statement":
                e = parse(node.significant(), self.subs)
                if e is not None and (
                    e.k == "call" or (e.k == "func" and e.a[0] in ("die", "exit"))
                ):
                    return self.sx(e)[0]
        raise Unsupported("a lock sub whose way out is not one call")

    def user_call(self, e: E, value: bool = True) -> str:
        name = str(e.a[0])
        if value:
            self.value_subs.add(name)
        if name in self.lock_calls:
            return self.lock_call(e)
        args = e.a[1]
        if "::" in name or "'" in name:
            raise Unsupported(f"&{name}, another package's sub")
        py = self.sub_name(name)
        if args is None:
            if self.in_sub is not None and e.a[2]:
                return f"{py}(*args)"
            return f"{py}()"
        return f"{py}({', '.join(self.items(list(args)))})"

    def anon_sub(self, block: Node) -> str:
        stmts = [k for k in block.kids if k.is_("Statement")]
        if len(stmts) != 1:
            raise Unsupported("an anonymous sub of more than one statement")
        e = parse(stmts[0].significant(), self.subs)
        if e is None:
            raise Unsupported("an empty anonymous sub")
        code = self.sx(e)[0]
        if "ARGV" in code:  # shift/pop read the anonymous sub's @_, not @ARGV
            raise Unsupported("shift or pop of @_ in an anonymous sub")
        return f"lambda *args: {code}" if re.search(r"\bargs\b", code) else f"lambda *_: {code}"

    def is_local_sig(self, node: Node) -> bool:
        toks = node.significant()
        return (
            len(toks) >= 4
            and toks[0].text == "local"
            and toks[1].text == "$SIG"
            and toks[2].cls == "Structure::Subscript"
        )

    def local_sig(self, node: Node, rest: list[Node]) -> None:
        """``local $SIG{ALRM} = sub {...};`` then the block's rest: ``with local_sig(...)``."""
        self.total += 1
        try:
            toks = node.significant()
            key = expression_tokens(toks[2])
            if len(key) != 1 or toks[3].text != "=":
                raise Unsupported("local $SIG{...} of this form")
            handler = Parser(toks[4:], self.subs).parse(0)
            code, _ = self.rvalue(handler)
            self.emit(f"with {self.use('local_sig')}({py_str(key[0].text.strip(QUOTES))}, {code}):")
            self.done += 1
        except Unsupported as exc:
            self.port(node, str(exc))
            self.block(rest)
            return
        self.indent += 1
        self.block(rest)
        self.indent -= 1


def _statements(node: Node) -> list[Node]:
    out = []
    for kid in node.kids:
        if kid.is_("Statement"):
            out.append(kid)
        out.extend(_statements(kid))
    return out
