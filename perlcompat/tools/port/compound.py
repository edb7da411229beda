"""``if``/``elsif``/``unless``/``while``/``until``/``for``/``foreach`` and ``sub`` definitions.

``foreach $x (@a)`` whose body assigns ``$x`` writes the element back (Perl's loop
variable is the element itself); ``while (<FH>)`` reads lines as ``for line in FH``.
"""

from __future__ import annotations

import re

from .core import Core, Func
from .exprs import par
from .syntax import E, Unsupported, expression_tokens, parse
from .tree import Node


class Compound(Core):
    """The compound-statement half of the translator (mixed into :class:`.stmts.Translator`)."""

    def compound(self, node: Node) -> None:
        kids = [k for k in node.kids if not k.is_("Token::Comment")]
        words = [k.text for k in kids if k.cls == "Token::Word"]
        head = words[0] if words else ""
        if kids and kids[0].cls == "Token::Label":
            raise Unsupported("a labelled loop")
        if head in ("if", "unless"):
            return self.if_(kids)
        if head in ("while", "until"):
            return self.while_(kids, head)
        if head in ("for", "foreach"):
            return self.foreach(kids)
        if not words and kids and kids[0].cls == "Structure::Block":
            self.emit("if True:  # a bare block")
            self.indent += 1
            self.block(kids[0].kids)
            self.indent -= 1
            return
        raise Unsupported(f"the compound statement {head or '{...}'}")

    def cond(self, struct: Node) -> E:
        e = parse(expression_tokens(struct), self.subs)
        if e is None:
            raise Unsupported("an empty condition")
        return e

    def if_(self, kids: list[Node]) -> None:
        i = 0
        first = True
        while i < len(kids):
            word = kids[i].text
            if word == "else":
                self.emit("else:")
                i += 1
            else:
                cond = self.cond(kids[i + 1])
                test = self.bx(cond)
                if word == "unless":
                    test = f"not {par(test)}"
                keyword = "if" if first else "elif"
                self.emit(f"{keyword} {test}:")
                i += 2
            first = False
            block = kids[i]
            i += 1
            self.indent += 1
            self.block(block.kids)
            self.indent -= 1

    def while_(self, kids: list[Node], head: str) -> None:
        if len(kids) != 3 or kids[1].cls != "Structure::Condition":
            raise Unsupported(f"{head} of this form (continue block?)")
        cond = self.cond(kids[1])
        block = kids[2]
        if cond.k == "readline" and head == "while":
            var = self.loop_name("line")
            fh = self.handle(
                E("word", cond.a[0])
                if not str(cond.a[0]).startswith("$")
                else E("var", "$", str(cond.a[0])[1:])
            )
            return self.loop_over(f"for {var} in {fh}:", var, block)
        if cond.k == "assign" and cond.a[2].k == "readline" and head == "while":
            target = cond.a[1]
            inner = target.a[1] if target.k == "decl" else target
            if inner.k != "var" or inner.a[0] != "$":
                raise Unsupported("while (... = <FH>) into something not a scalar")
            var = self.lvalue(target)
            self.record_kind(target, "str")
            line = cond.a[2]
            fh = self.readline_(str(line.a[0]), scalar=False)[0].rsplit(".", 1)[0]
            self.emit(f"for {var} in {fh}:")
            self.indent += 1
            self.block(block.kids)
            self.indent -= 1
            return
        test = self.bx(cond)
        self.emit(f"while {test}:" if head == "while" else f"while not {par(test)}:")
        self.indent += 1
        self.block(block.kids)
        self.indent -= 1

    def modified(self, body: list[Node], word: str, cond: list[Node]) -> None:
        """``STATEMENT if COND;`` and its kin."""
        c = parse(cond, self.subs)
        stmt = parse(body, self.subs)
        if c is None or stmt is None:
            raise Unsupported("an empty statement modifier")
        if word in ("if", "unless"):
            test = self.bx(c)
            self.emit(f"if {test}:" if word == "if" else f"if not {par(test)}:")
        elif word in ("while", "until"):
            test = self.bx(c)
            self.emit(f"while {test}:" if word == "while" else f"while not {par(test)}:")
        else:
            var = self.loop_name("item")
            lst = self.lx(c)
            changes = _changes_topic(body) and not fresh_list(c)
            header = f"for {var} in {lst}:"
            if changes:  # $_ is the element: a change is written back, as Perl's alias
                arr = c.a[0] if c.k == "paren" and c.a[0] is not None else c
                if arr.k != "var" or arr.a[0] != "@":
                    raise Unsupported("a foreach modifier over a list that may change $_")
                index = self.loop_name("i")
                header = f"for {index}, {var} in enumerate({lst}):"
                self.aliases.append((var, lst, index))
            self.topics.append(var)
            try:
                self.emit(header)
                self.indent += 1
                self.expr_statement(stmt)
                self.indent -= 1
            finally:
                self.topics.pop()
                if changes:
                    self.aliases.pop()
            return
        self.indent += 1
        self.expr_statement(stmt)
        self.indent -= 1

    def loop_over(self, header: str, var: str, block: Node) -> None:
        self.emit(header)
        self.topics.append(var)
        self.indent += 1
        try:
            self.block(block.kids)
        finally:
            self.indent -= 1
            self.topics.pop()

    def foreach(self, kids: list[Node]) -> None:
        rest = kids[1:]
        if rest and rest[0].cls == "Structure::For":
            return self.c_for(rest[0], rest[1])
        decl = False
        if rest and rest[0].cls == "Token::Word" and rest[0].text in ("my", "our"):
            decl = True
            rest = rest[1:]
        var_tok = None
        if rest and rest[0].cls == "Token::Symbol":
            var_tok = rest[0]
            rest = rest[1:]
        if len(rest) != 2 or rest[0].cls != "Structure::List":
            raise Unsupported("foreach of this form")
        lst_e = parse(expression_tokens(rest[0]), self.subs)
        lst = "[]" if lst_e is None else self.lx(lst_e)
        block = rest[1]
        if var_tok is None:
            var = self.loop_name("item")
            if not (self.writes(block, "$_") or self.writes_topic(block)) or fresh_list(lst_e):
                return self.loop_over(f"for {var} in {lst}:", var, block)
            if lst_e is None or lst_e.k != "var" or lst_e.a[0] != "@":
                raise Unsupported("foreach over a list whose body changes $_ (aliases)")
            index = self.loop_name("i")
            self.aliases.append((var, lst, index))  # $_ is the element: write it back
            try:
                return self.loop_over(f"for {index}, {var} in enumerate({lst}):", var, block)
            finally:
                self.aliases.pop()
        name = var_tok.text[1:]
        key = "$" + name
        target = E("var", "$", name)
        py = self.declare(target) if decl else self.lvalue(target)
        self.record_kind(
            target, "str" if lst_e is not None and self.list_kind(lst_e) == "str" else "any"
        )
        aliased = self.writes(block, key)
        if aliased and (lst_e is None or lst_e.k != "var" or lst_e.a[0] != "@"):
            raise Unsupported("foreach over a list whose body changes the loop variable (aliases)")
        saved = None
        if not decl and self.used_outside(key, kids):  # Perl gives it its value back after
            saved = self.loop_name(f"saved_{py}")
            self.emit(f"{saved} = {py}")
            self.emit("try:")
            self.indent += 1
        if aliased:
            index = self.loop_name("i")
            self.emit(f"for {index}, {py} in enumerate({lst}):")
            self.aliases.append((py, lst, index))
        else:
            self.emit(f"for {py} in {lst}:")
        self.indent += 1
        try:
            self.block(block.kids)
        finally:
            self.indent -= 1
            if aliased:
                self.aliases.pop()
        if saved is not None:
            self.indent -= 1
            self.emit(f"finally:  # after the loop, ${name} is again what it was (Perl's local)")
            self.emit(f"    {py} = {saved}")

    def used_outside(self, key: str, kids: list[Node]) -> bool:
        """True if the script names *key* (``$line``) anywhere but in this statement."""
        inside = sum(1 for k in kids for t in k.tokens() if t.text == key)
        everywhere = sum(1 for t in self.script.root.tokens() if t.text == key)
        return everywhere > inside

    def c_for(self, head: Node, block: Node) -> None:
        """``for (INIT; COND; STEP) {...}`` -> INIT, ``while COND:``, the body, STEP."""
        parts = [k for k in head.kids if k.is_("Statement")]
        if len(parts) not in (2, 3) or _exits(block):
            raise Unsupported("a C-style for loop with next/last (its step would be skipped)")
        init, cond = (parse(p.significant(), self.subs) for p in parts[:2])
        step = parse(parts[2].significant(), self.subs) if len(parts) == 3 else None
        if init is not None:
            self.expr_statement(init)
        self.emit(f"while {self.bx(cond) if cond is not None else 'True'}:")
        self.indent += 1
        self.block(block.kids)
        if step is not None:
            if self.func.lines[-1].strip() == "pass":
                del self.func.lines[-1]
            self.expr_statement(step)
        self.indent -= 1

    def writes_topic(self, block: Node) -> bool:
        """True if *block* changes ``$_`` implicitly: ``s///;``, ``tr///;``, ``chomp;``."""
        for tok in block.tokens():
            if tok.cls in ("Token::Regexp::Substitute", "Token::Regexp::Transliterate"):
                return True  # (with =~ before it, writes() decides; counting it too is safe)
            if tok.cls == "Token::Word" and tok.text in ("chomp", "chop"):
                return True
        return False

    def writes(self, block: Node, key: str) -> bool:
        """True if *block* assigns the scalar *key* (``$x = ``, ``$x =~ s///``, ``$x++``, chomp)."""
        toks = list(block.tokens())
        for i, tok in enumerate(toks):
            if tok.cls in ("Token::Symbol", "Token::Magic") and tok.text == key:
                nxt = toks[i + 1] if i + 1 < len(toks) else None
                prev = toks[i - 1] if i else None
                if (
                    nxt is not None
                    and nxt.cls == "Token::Operator"
                    and (
                        (nxt.text.endswith("=") and nxt.text not in ("==", "!=", "<=", ">="))
                        or nxt.text in ("=~", "++", "--")
                    )
                ):
                    return True
                if prev is not None and prev.text in ("++", "--", "chomp", "chop", "("):
                    before = toks[i - 2] if i > 1 else None
                    if prev.text != "(" or (
                        before is not None and before.text in ("chomp", "chop")
                    ):
                        return True
        return False

    # -- subs -------------------------------------------------------------------------------------

    def sub_def(self, node: Node) -> None:
        """``sub name {...}`` -> ``def name(*args):`` (a lock sub: a comment naming ``lock()``)."""
        name = str(node.get("name"))
        block = [k for k in node.kids if k.cls == "Structure::Block"]
        comments = self.findings.pop(node.first_line(), [])
        n = self.count(node)
        if name in self.lock_calls:
            self.total += n
            call, _, give_up = self.lock_calls[name].partition(" or FAIL:")
            if give_up:
                call += f" (when it gives up: line {give_up}'s call)"
            func = Func(name)
            func.pre = [
                *comments,
                f"# sub {name}: perlcompat's {call.split('(')[0]}() takes its place: "
                + call.replace("NAME", "path"),
            ]
            self.done += n
            self.defs.append(func)
            return
        if not block:
            self.total += n
            self.port_into(name, node, "a sub without a body")
            return
        saved = (self.func, self.indent, self.in_sub, self.args_list)
        self.func = Func(name)
        self.func.pre.extend(comments)
        self.func.is_def = True
        self.indent = 1
        self.in_sub = name
        self.args_list = False
        self.total += 1
        self.done += 1
        try:
            self.block(block[0].kids)
            self.implicit_return()
            if self.args_list:
                self.use("PerlList")
                self.func.args_list = True
            self.defs.append(self.func)
        finally:
            self.func, self.indent, self.in_sub, self.args_list = saved

    def port_into(self, name: str, node: Node, reason: str) -> None:
        saved = self.func, self.indent
        self.func = Func(name)
        self.indent = 0
        self.port(node, reason)
        self.defs.append(self.func)
        self.func, self.indent = saved

    def implicit_return(self) -> None:
        """Perl returns a sub's last value: ``return`` it when the last line is an expression.

        When it ends otherwise (an ``if``, a loop) and some caller uses its value, Perl's value
        is the last statement run, which the port does not know: a ``# PORT:`` line says so.
        """
        if not self.last_value():
            name = self.func.name
            if name in self.value_subs:
                self.emit(
                    f"# PORT: sub {name} ends with a block and a caller uses its value: Perl's"
                    " is its last statement's, the port's None"
                )
                self.port_lines += 1

    def last_value(self) -> bool:
        """Make the sub's last expression line its ``return``; False if it ends otherwise."""
        lines = self.func.lines
        for i in range(len(lines) - 1, -1, -1):
            stripped = lines[i].strip()
            if not stripped or stripped.startswith("#"):
                continue
            if stripped.startswith(("return", "sys.exit", "die(")) and not lines[i].startswith(
                "     "
            ):
                return True
            indent = len(lines[i]) - len(lines[i].lstrip())
            if indent != 4 or stripped.startswith(
                (
                    "return",
                    "sys.exit",
                    "pass",
                    "if ",
                    "for ",
                    "while ",
                    "else",
                    "elif",
                    "try",
                    "except",
                    "with ",
                    "global",
                )
            ):
                return False
            if "=" in stripped.split("(")[0] or stripped.startswith(("break", "continue")):
                return False
            code = stripped.split("  #")[0]
            lines[i] = "    return " + code + stripped[len(code) :]
            return True
        return False

    # -- the rest: eval blocks, use/require, jcode.pl calls ----------------------------------

    def jcode(self, e: E) -> str:
        """``&jcode'convert(*s, 'sjis');`` -> ``s, _ = jcode.convert(s, "sjis")``."""
        func = str(e.a[0]).replace("::", "'").split("'", 1)[1]
        args = list(e.a[1] or [])
        if not args or args[0].k not in ("glob", "pre"):
            raise Unsupported(f"jcode'{func} without *variable")
        first = args[0] if args[0].k == "glob" else args[0].a[1]
        if first.k == "glob":
            first = E("var", "$", first.a[0])
        target = self.lvalue(first)
        rest = [self.sx(a)[0] for a in args[1:]]
        self.use("jcode")
        if func == "getcode":
            return f"jcode.getcode({target})"
        return f"{target}, _ = jcode.{func}({', '.join([target, *rest])})"

    def eval_block(self, block: Node) -> None:
        """``eval { ... };``: ``$@`` is the error's text, or "" when the block finished."""
        self.eval_error_used = True
        self.assigned("EVAL_ERROR")
        self.globals_used["EVAL_ERROR"] = "@"
        self.func.globals.add("EVAL_ERROR") if self.in_sub else None
        self.emit('EVAL_ERROR = ""')
        self.emit("try:")
        self.indent += 1
        self.block(block.kids)
        self.indent -= 1
        self.emit("except Exception as exc:  # noqa: BLE001  (Perl's eval catches every die)")
        self.emit("    EVAL_ERROR = str(exc)")

    def include(self, node: Node) -> None:
        toks = node.significant()
        word = toks[0].text
        if word in ("use", "no"):
            module = toks[1].text if len(toks) > 1 else ""
            if module in ("strict", "warnings", "vars", "Fcntl", "CGI", "utf8", "lib", "POSIX"):
                if module == "POSIX" and len(toks) > 2:
                    raise Unsupported("use POSIX with a list")
                return
            if re.fullmatch(r"[\d.v]+", module):
                return
            raise Unsupported(f"use {module}")
        e = parse(toks, self.subs)
        if e is None:
            raise Unsupported("an empty require")
        self.emit(self.sx(e)[0])


def fresh_list(e: E | None) -> bool:
    """True if *e* makes new values (``split``, ``keys``, ``<FH>``, ``qw``): a change to
    foreach's ``$_`` is lost with them in Perl too (an array's elements would change)."""
    if e is not None and e.k == "paren":
        e = e.a[0]
    return e is not None and (
        e.k in ("readline", "qw", "qx")
        or (e.k == "func" and e.a[0] in ("split", "keys", "localtime", "stat"))
    )


def _exits(node: Node) -> bool:
    """True if *node* has a ``next``/``last``/``redo`` of its own loop (not of a loop inside)."""
    for kid in node.kids:
        if kid.cls == "Statement::Compound":
            first = next((k for k in kid.kids if k.cls == "Token::Word"), None)
            if first is not None and first.text in ("for", "foreach", "while", "until"):
                continue
        if kid.cls == "Token::Word" and kid.text in ("next", "last", "redo"):
            return True
        if kid.kids and _exits(kid):
            return True
    return False


def _changes_topic(toks: list[Node]) -> bool:
    """True if the statement *toks* may change ``$_`` (``s///;``, ``$_ .= ...``, ``chomp;``)."""
    flat = [t for tok in toks for t in ([tok] if not tok.kids else list(tok.tokens()))]
    for i, tok in enumerate(flat):
        prev = flat[i - 1].text if i else ""
        nxt = flat[i + 1].text if i + 1 < len(flat) else ""
        on_topic = prev != "=~" or (i > 1 and flat[i - 2].text == "$_")
        if tok.cls in ("Token::Regexp::Substitute", "Token::Regexp::Transliterate") and on_topic:
            return True
        if tok.text in ("chomp", "chop"):
            return True
        assigns = nxt.endswith("=") and nxt not in ("==", "!=", "<=", ">=")
        if tok.text == "$_" and (assigns or nxt in ("=~", "++", "--") or prev in ("++", "--")):
            return True
    return False
