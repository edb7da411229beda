"""Perl statements, blocks and subs as Python lines, in the script's order.

:class:`Translator` walks PPI's statements; each becomes Python lines or, when some part
of it raises :class:`.syntax.Unsupported`, its Perl lines as ``# PORT:`` comments with the
reason.  Top-level statements go into ``main()`` (Perl runs them after compiling every sub,
so a sub defined below its call still works), subs into ``def name(*args)``; globals a
function assigns are declared ``global``.  Comments stay where they were.
"""

from __future__ import annotations

import re

from .builtins import Builtins
from .bytefuncs import Bytes
from .calls import Calls
from .compound import Compound
from .core import Func
from .exprs import Exprs, par
from .names import py_var
from .syntax import E, Unsupported, parse
from .tree import Node, Script

MODIFIERS = ("if", "unless", "while", "until", "for", "foreach")
QUOTES = "\"'"


TOPIC = "TOPIC"  # Perl's global $_ where a sub assigns it outside a loop
WHILE_READLINE = re.compile(rb"while\s*\(\s*<[^>]*>\s*\)")


class Translator(Exprs, Builtins, Bytes, Compound, Calls):
    """The whole translation of one script (run until the variables' kinds settle)."""

    def __init__(self, script: Script, kinds: dict[str, str], lock_calls: dict[str, str]) -> None:
        self.script = script
        self.kinds = kinds
        self.seen: dict[str, list[str]] = {}
        self.lock_calls = lock_calls  # sub -> "lock(NAME, ...)" template; unlock subs -> ""
        self.imports: set[str] = set()
        self.quote = '"'
        self.handles: set[str] = set()
        self.symbols: set[tuple[str, str]] = set()
        self.subs: set[str] = set()
        self.requires: list[str] = []
        self.consts: dict[str, str] = {}  # "$name" -> its one string value (require $lib)
        self.value_subs: set[str] = set()  # subs some caller uses the value of
        self.unseen_libs = False  # a required library the tool cannot read defines subs
        self.foreign_calls: set[str] = set()  # Python names of subs called from such a library
        self.eval_error_used = False
        self.args_list = False
        self.in_sub: str | None = None
        self.topics: list[str] = []
        self.func = Func("main")
        self.indent = 1
        self.total = 0
        self.done = 0
        self.port_lines = 0
        self.defs: list[Func] = []
        self.findings: dict[int, list[str]] = {}
        self.globals_used: dict[str, str] = {}
        self.aliases: list[tuple[str, str, str]] = []
        self.exit_subs: set[str] = set()
        self.users: dict[str, set[str]] = {}  # "$name" -> the subs ("<main>") that use it
        self.calls: dict[str, set[str]] = {}  # sub ("<main>") -> the words it names (calls)
        # while (<FH>) sets the global $_ (to undef at the end): $_ = ... then stays PORT
        self.script_reads_topic_lines = bool(WHILE_READLINE.search(script.raw))
        self.scan(script.root)
        self.scalar_names = {py_var(n) for s, n in self.symbols if s == "$"}

    # -- bookkeeping ----------------------------------------------------------------------------

    def scan(self, node: Node) -> None:
        for tok in node.tokens():
            if tok.cls in ("Token::Symbol", "Token::Magic"):
                sym = tok.sym
                if sym[:1] in "$@%" and sym[1:].replace("::", "").replace("'", "").isidentifier():
                    self.symbols.add((sym[0], sym[1:]))
        for kid in node.kids:
            scope = str(kid.get("name")) if kid.cls == "Statement::Sub" else "<main>"
            own = set(kid.kids[:2]) if kid.cls == "Statement::Sub" else set()
            for tok in kid.tokens():
                if tok in own:  # `sub NAME`: not a call of itself
                    continue
                if tok.cls in ("Token::Symbol", "Token::Magic"):
                    self.users.setdefault(tok.sym, set()).add(scope)
                    if tok.text.startswith("&"):
                        self.calls.setdefault(scope, set()).add(tok.text[1:])
                elif tok.cls == "Token::Word":
                    self.calls.setdefault(scope, set()).add(tok.text)
        for kid in node.kids:
            if kid.cls == "Statement::Sub" and kid.get("name"):
                self.subs.add(str(kid.get("name")))
            self.scan_subs(kid)

    def scan_subs(self, node: Node) -> None:
        for kid in node.kids:
            if kid.cls == "Statement::Sub" and kid.get("name"):
                self.subs.add(str(kid.get("name")))
            self.scan_subs(kid)

    def use(self, name: str, result: str | None = None) -> str:
        """Record that the output needs *name* imported; return *result* (or *name*)."""
        self.imports.add(name)
        return result if result is not None else name

    def name(self, sigil: str, name: str) -> str:
        key = sigil + name
        if key in self.func.locals:
            return self.func.locals[key]
        if sigil == "$":
            py = py_var(name)
        elif sigil == "@":
            py = py_var(name, "_list" if ("$", name) in self.symbols else "")
        else:
            taken = ("$", name) in self.symbols or ("@", name) in self.symbols
            py = py_var(name, "_hash" if taken else "")
        self.globals_used[py] = sigil
        self.func.read_globals.add(py)
        return py

    def kind_of(self, key: str) -> str:
        return self.kinds.get(key, "any")

    def elem_kind(self, key: str) -> str:
        return self.kinds.get(key + "[]", "any")

    def record(self, key: str, kind: str) -> None:
        self.seen.setdefault(key, []).append(kind)

    def assigned(self, py: str) -> None:
        if py in self.globals_used and py not in self.func.locals.values():
            self.func.globals.add(py)

    def topic(self) -> str:
        if not self.topics:
            if self.func.topic:  # $_ this function assigned: Perl's global $_
                self.func.read_globals.add(TOPIC)
                return TOPIC
            raise Unsupported("$_ outside a loop")
        return self.topics[-1]

    def set_topic(self) -> str:
        """``$_ = ...`` outside a loop: the global ``TOPIC`` (unless ``while (<FH>)`` sets it)."""
        if self.script_reads_topic_lines or ("$", TOPIC) in self.symbols:
            raise Unsupported("assigning $_ in a script whose while (<FH>) also sets it")
        self.globals_used[TOPIC] = "$"
        self.func.topic = True
        self.func.globals.add(TOPIC)
        return TOPIC

    def emit(self, line: str) -> None:
        self.func.lines.append("    " * self.indent + line)

    # -- statements -------------------------------------------------------------------------

    def block(self, nodes: list[Node]) -> None:
        """The statements and comments of one block, then ``pass`` if it wrote no code."""
        start = len(self.func.lines)
        kids = list(nodes)
        i = 0
        while i < len(kids):
            kid = kids[i]
            i += 1
            if kid.cls == "Token::Comment":
                text = self.script.readable(kid.text).strip()
                if text.startswith("#!"):
                    continue
                if kid.get("own") or not self.func.lines:
                    self.emit(text)
                elif self.func.lines[-1].lstrip().startswith("# PORT:"):
                    continue
                else:
                    self.func.lines[-1] += "  " + text
                continue
            if kid.is_("Token::Pod"):
                for line in kid.text.splitlines():
                    self.emit("# " + line)
                continue
            if not kid.is_("Statement"):
                continue
            if kid.cls == "Statement::Variable" and self.is_local_sig(kid):
                self.local_sig(kid, kids[i:])
                return
            self.statement(kid)
        if not any(not ln.strip().startswith("#") for ln in self.func.lines[start:]):
            self.emit("pass")

    def count(self, node: Node) -> int:
        """The statements in *node* (itself included; not the expressions inside brackets)."""
        own = node.is_("Statement") and node.cls not in ("Statement::Null", "Statement::Expression")
        return int(own) + sum(self.count(k) for k in node.kids if not k.cls.startswith("Token"))

    def statement(self, node: Node) -> None:
        for text in self.findings.pop(node.first_line(), []):
            self.emit(text)
        mark = len(self.func.lines)
        saved_indent = self.indent
        before = (self.total, self.done, self.port_lines)
        self.total += 1
        try:
            self.one(node)
            self.done += 1
            first = self.func.lines[mark] if len(self.func.lines) > mark else ""
            if "\\udc" in first.split("  # ")[0] and self.script.encoding != "utf-8":
                perl = self.script.line(node.first_line()).strip()
                self.func.lines.insert(
                    mark, "    " * saved_indent + f"# {self.script.encoding}: {perl}"
                )
        except (Unsupported, RecursionError, LookupError, ValueError, TypeError) as exc:
            # (a construct the translator misreads is left to a person, never a crash)
            reason = str(exc) if isinstance(exc, Unsupported) else f"not understood: {exc!r}"
            del self.func.lines[mark:]
            self.indent = saved_indent
            self.total, self.done, self.port_lines = before
            self.total += self.count(node)
            self.port(node, reason)

    def port(self, node: Node, reason: str) -> None:
        reason = " ".join(reason.split())
        reason = reason if len(reason) <= 100 else reason[:97] + "..."
        first, last = node.first_line(), node.last_line()
        for number in range(first, last + 1):
            line = self.script.line(number).rstrip()
            text = f"# PORT: {line.strip()}"
            if number == first:
                text += f"  ({reason})"
            self.emit(text)
            self.port_lines += 1

    def one(self, node: Node) -> None:
        cls = node.cls
        if cls == "Statement::Null":
            return
        if cls == "Statement::Sub":  # Perl defines it for the whole script, where it stands
            self.sub_def(node)
            self.emit(f"# sub {node.get('name')}: defined at module level (Perl subs are global)")
            return
        if cls == "Statement::Compound":
            return self.compound(node)
        if cls == "Statement::Include":
            return self.include(node)
        if cls == "Statement::End":
            self.emit("# __END__: the rest of the script is not code")
            return
        if cls in ("Statement::End", "Statement::Data"):
            raise Unsupported("__END__ / __DATA__")
        if cls == "Statement::Package":
            raise Unsupported("package")
        if cls == "Statement::Scheduled":
            raise Unsupported("BEGIN/END blocks")
        toks = node.significant()
        if toks and toks[0].cls == "Token::Word" and toks[0].text in ("format",):
            raise Unsupported("format")
        cut = self.modifier_at(toks)
        if cut is not None:
            return self.modified(toks[:cut], toks[cut].text, toks[cut + 1 :])
        e = parse(toks, self.subs)
        if e is not None:
            self.expr_statement(e)

    def modifier_at(self, toks: list[Node]) -> int | None:
        for i, tok in enumerate(toks):
            if i and tok.cls == "Token::Word" and tok.text in MODIFIERS:
                return i
        return None

    def loop_name(self, base: str) -> str:
        name = base
        while ("$", name) in self.symbols or name in self.topics:
            name += "_"
        return name

    def expr_statement(self, e: E) -> None:
        k = e.k
        if k == "assign":
            for line in self.assign(e):
                self.emit(line)
            return
        if k == "bin" and e.a[0] in ("or", "||", "and", "&&"):
            return self.guarded(e)
        if k == "re" and e.a[0].cls.endswith(("Substitute", "Transliterate")):
            e = E("bin", "=~", E("var", "$", "_"), e)  # s/a/b/; works on $_
            k = "bin"
        if k == "bin" and e.a[0] == "=~" and e.a[2].k == "re":
            tok: Node = e.a[2].a[0]
            if tok.cls in ("Token::Regexp::Substitute", "Token::Regexp::Transliterate"):
                target = e.a[1]
                if target.k == "paren" and target.a[0] is not None and target.a[0].k == "assign":
                    self.expr_statement(target.a[0])  # ($copy = $text) =~ s/a/b/;
                    target = target.a[0].a[1]
                for line in self.substitute(target, tok):
                    self.emit(line)
                return
        if k == "bin" and e.a[0] == "=~" and e.a[2].k == "re" and e.a[2].a[0].cls.endswith("Match"):
            code, _ = self.match(e.a[1], e.a[2].a[0], negate=False)
            self.emit(code.replace(" is not None", "")[1:-1] if code.startswith("(_m :=") else code)
            return
        if k in ("post", "pre") and e.a[0] in ("++", "--"):
            return self.increment(e.a[1], str(e.a[0]))
        if k == "func" and e.a[0] == "return":
            return self.return_(list(e.a[1]))
        if k == "word" and e.a[0] in ("last", "next"):
            self.emit("break" if e.a[0] == "last" else "continue")
            return
        if k == "word" and e.a[0] == "return":
            return self.return_([])
        if k == "func" and e.a[0] in ("last", "next"):
            raise Unsupported("last/next with a label")
        if k == "func" and e.a[0] == "open":
            args = list(e.a[1])
            self.emit(f"{self.open_target(args[0])} = {self.open_call(args)}")
            return
        if k == "func" and e.a[0] == "sysopen":
            args = list(e.a[1])
            self.emit(f"{self.open_target(args[0])} = {self.sx(e)[0]}")
            return
        if k == "func" and e.a[0] == "read":
            return self.read_stmt(list(e.a[1]))
        if k == "func" and e.a[0] == "splice" and len(e.a[1]) == 2:  # splice(@a, N): cut the tail
            target = e.a[1][0]
            if target.k != "var" or target.a[0] != "@":
                raise Unsupported("splice of something not a named array")
            self.emit(f"del {self.sx(target)[0]}[{self.intx(e.a[1][1])}:]")
            return
        if k == "func" and e.a[0] in ("chomp", "chop"):
            target = e.a[1][0] if e.a[1] else E("var", "$", "_")
            if target.k == "paren" and target.a[0] is not None:
                target = target.a[0]
            if target.k == "assign":  # chomp(my $line = <IN>);
                self.expr_statement(target)
                target = target.a[1]
            func = self.use(str(e.a[0]))
            if target.k == "var" and target.a[0] == "@":
                self.emit(f"{func}({self.sx(target)[0]})")
            else:
                name = self.lvalue(target)
                self.emit(f"{name} = {func}({self.sx(target)[0]})")
                for line in self.alias_lines(name):
                    self.emit(line)
            return
        if k == "func" and e.a[0] == "undef" and e.a[1]:
            target = e.a[1][0]
            if target.k == "var" and target.a[0] == "$":
                self.emit(f"{self.lvalue(target)} = {self.use('undef')}")
                return
        if k == "evalblock":
            return self.eval_block(e.a[0])
        if k == "doblock":
            body: Node = e.a[0]
            self.block(body.kids)
            return
        if k == "decl":
            return self.declare_only(e)
        if k == "call" and str(e.a[0]).replace("::", "'").startswith("jcode'"):
            self.emit(self.jcode(e))
            return
        if k == "call" and e.a[0] in self.lock_calls:
            self.emit(self.lock_call(e))
            return
        if k == "func" and e.a[0] == "die" and not e.a[1]:
            raise Unsupported("die without a message (Perl re-raises $@ with '...propagated')")
        if k == "call" and e.a[0] not in self.lock_calls:
            self.emit(self.user_call(e, value=False))  # a call for its effect: value unused
            return
        code, _ = self.sx(e)
        self.emit(code)

    def guarded(self, e: E) -> None:
        """``A or B;`` in void context: ``A or B`` when B leaves, else ``if not A: B``."""
        op = str(e.a[0])
        left: E = e.a[1]
        right: E = e.a[2]
        leaves = self.leaves(right)
        if left.k == "func" and left.a[0] in ("open", "sysopen") and op in ("or", "||"):
            args = list(left.a[1])
            target = self.open_target(args[0])
            call = self.open_call(args) if left.a[0] == "open" else self.sx(left)[0]
            if leaves:
                self.emit(f"{target} = {call} or {self.sx(right)[0]}")
                return
            self.emit(f"{target} = {call}")
            test = target
        elif left.k == "call" and left.a[0] in self.lock_calls and leaves:
            self.emit(f"{self.lock_call(left)} or {self.sx(right)[0]}")
            return
        else:
            test = self.bx(left)
            if leaves and op in ("or", "||"):
                self.emit(f"{par(test)} or {self.sx(right)[0]}")
                return
        self.emit(f"if {'not ' + par(test) if op in ('or', '||') else test}:")
        self.indent += 1
        if right.k == "doblock":
            self.block(right.a[0].kids)
        else:
            self.expr_statement(right)
        self.indent -= 1

    def leaves(self, e: E) -> bool:
        """True if *e* never returns: ``die``, ``exit``, a sub that always exits."""
        if e.k == "func" and e.a[0] in ("die", "exit") and e.a[1]:
            return True
        return e.k == "call" and str(e.a[0]) in self.exit_subs

    # -- assignment ------------------------------------------------------------------------------

    def lvalue(self, e: E) -> str:
        """The Python target for Perl's lvalue *e*, recorded as assigned."""
        if e.k == "decl":
            return self.declare(e.a[1])
        if e.k == "var" and e.a[0] == "$":
            if e.a[1] in ("_", "!", "@", "$", "0"):
                if e.a[1] == "_":
                    return self.topics[-1] if self.topics else self.set_topic()
                raise Unsupported(f"assigning ${e.a[1]}")
            py = self.name("$", str(e.a[1]))
            self.assigned(py)
            self.alias_write(py)
            return py
        if e.k in ("var",):
            py = self.sx(e)[0]
            self.assigned(py)
            return py
        if e.k == "helem":
            if e.a[0] == "ENV":
                self.use("os")
                return f"os.environ[{self.key(e.a[1])}]"
            code, _ = self.hash_element(e)
            return code
        if e.k == "elem":
            if e.a[0] == "_":
                raise Unsupported("assigning $_[N] (the caller's variable)")
            return self.element(e)[0]
        raise Unsupported("an assignment to this kind of target")

    def declare(self, e: E) -> str:
        if e.k != "var":
            raise Unsupported("my/local of this form")
        sigil, name = str(e.a[0]), str(e.a[1])
        if self.in_sub is None:  # a file-scope my: the subs below see it, a global here
            py = self.name(sigil, name)
            self.assigned(py)
            return py
        py = py_var(name, {"$": "", "@": "_list", "%": "_hash"}[sigil] if sigil != "$" else "")
        if sigil + name not in self.func.locals and py in self.func.read_globals:
            py += "_my"  # the global of that name is read in this sub too (before the my)
        self.func.locals[sigil + name] = py
        return py

    def declare_only(self, e: E) -> None:
        """``my $x;`` / ``my ($a, @b);``: Perl's fresh undef / empty values."""
        kind = str(e.a[0])
        target: E = e.a[1]
        if kind == "local":
            self.private_local(target)
        targets = (
            [target]
            if target.k == "var"
            else list(target.a[0].a)
            if target.k == "paren" and target.a[0] is not None and target.a[0].k == "comma"
            else [target.a[0]]
            if target.k == "paren"
            else []
        )
        for t in targets:
            if t is None or t.k != "var":
                raise Unsupported("my of this form")
            py = self.declare(t)
            self.emit(f"{py} = {self.fresh(str(t.a[0]))}")

    def fresh(self, sigil: str) -> str:
        if sigil == "@":
            return f"{self.use('PerlList')}()"
        if sigil == "%":
            return f"{self.use('PerlHash')}()"
        return self.use("undef")

    def assign(self, e: E) -> list[str]:
        op = str(e.a[0])
        left: E = e.a[1]
        right: E = e.a[2]
        if left.k == "decl" and left.a[0] == "local":
            self.private_local(left.a[1])
            left = E("decl", "my", left.a[1], node=left.node)
        target_e = left.a[1] if left.k == "decl" else left
        inner = target_e.a[0] if target_e.k == "paren" else None
        if inner is not None and inner.k == "var" and inner.a[0] == "@":
            target_e = inner  # my (@x) = LIST: the array takes it all
            left = E("decl", left.a[0], target_e) if left.k == "decl" else target_e
        if target_e.k == "paren":
            if op != "=":
                raise Unsupported("an operator assignment to a list")
            return self.list_assign(left, right)
        if target_e.k == "var" and target_e.a[0] in ("@", "%"):
            if op != "=":
                raise Unsupported("an operator assignment to an array")
            if target_e.a[0] == "%":
                return [f"{self.lvalue(left)} = {self.use('PerlHash')}({self.hash_items(right)})"]
            value = self.lx(right)
            self.record("@" + str(target_e.a[1]) + "[]", self.list_kind(right))
            if value == "[]":
                value = ""
            return [f"{self.lvalue(left)} = {self.use('PerlList')}({value})"]
        if right.k == "assign" and op == "=":  # $a = $b = value
            chain = [left]
            rhs = right
            while rhs.k == "assign" and rhs.a[0] == "=":
                chain.append(rhs.a[1])
                rhs = rhs.a[2]
            code, kind = self.rvalue(rhs)
            names = [self.lvalue(t) for t in chain]
            for t in chain:
                self.record_kind(t, kind)
            return [" = ".join(names) + f" = {code}"]
        if op == "=":
            code, kind = self.rvalue(right)
            target = self.lvalue(left)
            self.record_kind(target_e, kind)
            return [f"{target} = {code}", *self.alias_lines(target)]
        current = target_e
        if op == ".=":
            parts = self.concat_parts(E("bin", ".", current, right))
            code = self.fstring(parts)
            target = self.lvalue(current)
            self.record_kind(current, "str")
            return [f"{target} = {code}", *self.alias_lines(target)]
        if op in ("+=", "-=", "*="):
            value, vkind = self.numx(right)
            cur, ckind = self.numx(current)
            target = self.lvalue(current)
            kind = "num" if ckind == "num" and vkind == "num" else "numvalue"
            self.record_kind(current, kind)
            if cur == target:
                return [f"{target} {op} {par(value)}"]
            return [f"{target} = {cur} {op[0]} {par(value)}", *self.alias_lines(target)]
        if op in ("|=", "&=", "^=", "<<=", ">>="):
            code = self.bits(op[:-1], current, right)
            target = self.lvalue(current)
            self.record_kind(current, "num")
            return [f"{target} = {code}", *self.alias_lines(target)]
        if op in ("||=", "&&=", "//="):
            code, kind = self.logical(op[:-1], current, right)
            target = self.lvalue(current)
            self.record_kind(current, kind)
            return [f"{target} = {code}"]
        raise Unsupported(f"the assignment {op}")

    def hash_items(self, e: E) -> str:
        """``%h = (key => value, ...)`` / ``%h = %other`` / ``%h = ()``: PerlHash's argument."""
        if e.k == "var" and e.a[0] == "%":
            return self.sx(e)[0]
        inner = e.a[0] if e.k == "paren" else e
        if inner is None:
            return ""
        items = list(inner.a) if inner.k == "comma" else [inner]
        if len(items) % 2 or any(i.k in ("var", "paren") and i.a[0] in ("@", "%") for i in items):
            raise Unsupported("a hash assigned from a list that is not key, value pairs")
        pairs = []
        for key, value in zip(items[::2], items[1::2]):
            code, _ = self.rvalue(value)
            pairs.append(f"{self.key(key)}: {code}")
        return "{" + ", ".join(pairs) + "}"

    def rvalue(self, e: E) -> tuple[str, str]:
        if e.k == "var" and e.a[0] == "@":
            return f"len({self.sx(e)[0]})", "num"
        if e.k == "anonsub":
            return self.anon_sub(e.a[0]), "code"
        if e.k == "func" and e.a[0] == "reverse":  # $s = reverse(...): the bytes reversed
            joined = " + ".join(self.as_str(*self.sx(a)) for a in e.a[1]) or self.topic()
            if any(self.listy(a) for a in e.a[1]):
                raise Unsupported("scalar reverse of a list")
            code = f"{self.use('as_bytes')}({joined})[::-1]"
            return f"{self.use('from_bytes')}({code})", "str"
        if e.k == "bin" and e.a[0] == "+" and e.a[1].k == "var" and e.a[1].a[0] == "@":
            b, kind = self.numx(e.a[2])
            return f"len({self.sx(e.a[1])[0]}) + {par(b)}", "num" if kind == "num" else "numvalue"
        code, kind = self.sx(e)
        if kind == "list":
            raise Unsupported("a list assigned to a scalar (Perl takes its last or its count)")
        return code, kind

    def record_kind(self, target: E, kind: str) -> None:
        if kind == "numvalue":
            kind = "any"  # num() of a string may be a float
        if kind in ("any_num", "bytes_len", "ascii_case"):
            kind = "any"
        if target.k == "var":
            self.record(str(target.a[0]) + str(target.a[1]), kind)
        elif target.k == "helem":
            self.record("%" + str(target.a[0]) + "[]", kind)
        elif target.k == "elem":
            self.record("@" + str(target.a[0]) + "[]", kind)
        elif target.k == "decl":
            self.record_kind(target.a[1], kind)

    def list_kind(self, e: E) -> str:
        if e.k == "readline" or (e.k == "func" and e.a[0] == "split"):
            return "str"
        if e.k == "var" and e.a[0] == "@":
            return self.elem_kind("@" + str(e.a[1]))
        return "any"

    def list_assign(self, left: E, right: E) -> list[str]:
        """``($a, $b) = split(...)`` / ``= @_`` / ``= (1, 2)``: missing values are undef."""
        target = left.a[1] if left.k == "decl" else left
        inner: E | None = target.a[0]
        items = [] if inner is None else list(inner.a) if inner.k == "comma" else [inner]
        if not items or any(t.k == "var" and t.a[0] != "$" for t in items):
            raise Unsupported("a list assignment to arrays or hashes")
        decl = left.a[1] if left.k == "decl" else None
        names = []
        for t in items:
            if t.k == "func" and t.a[0] == "undef":
                names.append("_")
                continue
            names.append(self.declare(t) if decl is not None else self.lvalue(t))
            func = right.a[0] if right.k == "func" else ""
            self.record_kind(t, {"split": "str", "localtime": "num"}.get(func, "any"))
        n = len(names)
        if right.k == "func" and right.a[0] == "split":
            value = self.split(list(right.a[1]), fields=n)
        elif right.k == "func" and right.a[0] == "localtime" and n <= 9:
            value = self.localtime(list(right.a[1]), scalar=False)[0] + f"[:{n}]"
        else:
            value = f"[*{self.lx(right)}, *[{self.use('undef')}] * {n}][:{n}]"
        if n == 1:
            return [f"{names[0]} = {value}[0]"]
        return [f"{', '.join(names)} = {value}"]

    def increment(self, target: E, op: str) -> None:
        """``$x++;`` / ``$x--;`` as statements: ``+= 1`` for a number, Perl's magic ++ otherwise."""
        code, kind = self.sx(target)
        name = self.lvalue(target)
        if kind == "num":
            self.emit(f"{name} {op[0]}= 1")
        elif op == "--":
            self.emit(f"{name} = {self.use('num')}({code}) - 1")
        else:
            self.emit(f"{name} = {self.use('inc')}({code})")
        self.record_kind(target, "inc")
        for line in self.alias_lines(name):
            self.emit(line)

    # -- aliases: foreach's variable is the array's element -----------------------------------

    def alias_write(self, py: str) -> None:
        pass

    def alias_lines(self, py: str) -> list[str]:
        for var, array, index in reversed(self.aliases):
            if var == py:
                return [f"{array}[{index}] = {var}"]
        return []

    # -- bodies --------------------------------------------------------------------------------

    def return_(self, args: list[E]) -> None:
        if self.in_sub is None:
            raise Unsupported("return outside a sub")
        if not args:
            self.emit("return")
        elif len(args) == 1:
            code, kind = self.sx(args[0])
            if kind == "list":
                raise Unsupported("return of a list")
            self.emit(f"return {code}")
        else:
            raise Unsupported("return of a list")

    def read_stmt(self, args: list[E]) -> None:
        if len(args) != 3:
            raise Unsupported("read with an offset")
        fh = self.handle(args[0])
        target = self.lvalue(args[1])
        n, _ = self.numx(args[2])
        self.use("Scalar")
        self.use("read")
        self.emit(f"{target} = Scalar()")
        self.emit(f"read({fh}, {target}, {n})")
        self.emit(f"{target} = str({target})")
        self.record_kind(args[1], "str")
