"""Perl expressions as Python on perlcompat, each with its *kind* so no value changes meaning.

A translated expression is ``(code, kind)``: ``num`` (an int), ``float``, ``str``, ``any``
(a string, an int or undef), ``bool`` (a Python bool), ``fh`` (a handle), ``list``.
Perl's operators pick their conversion from the kind: ``$a + 1`` is ``num(a) + 1`` unless
``a`` is known to be a number, ``if ($x)`` is ``truth(x)`` unless ``x`` is a number or a
bool, ``"$x"`` is an f-string only where Python prints the value as Perl does (never a
float, never a bool).  Variables get the union of the kinds of everything assigned to them
(:attr:`Tx.kinds`, computed by translating the script until it no longer changes).
"""

from __future__ import annotations

import ast
import re

from .core import Core
from .names import py_var
from .syntax import E, Unsupported
from .tree import Node

ATOM = (ast.Name, ast.Call, ast.Attribute, ast.Subscript, ast.Constant, ast.JoinedStr, ast.List)
STR_CMP = {"eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
NUM_CMP = {"==": "==", "!=": "!=", "<": "<", ">": ">", "<=": "<=", ">=": ">="}
SPECIAL = {
    "!": ("OS_ERROR", "any"),
    "?": ("CHILD_ERROR.value", "num"),  # the int now: $saved = $? keeps it past the next wait
    "$": ("os.getpid()", "num"),
    "0": ("sys.argv[0]", "str"),
}


BITS = {"&", "|", "^", ">>", "<<"}
MASK = "0xFFFFFFFFFFFFFFFF"  # Perl's bit operators work on unsigned 64-bit integers
_UNSIGNED = re.compile(r"\d+|0[xob][0-9a-fA-F]+|\(as_bytes\(.*\)\[0\]")
_NUMERIC = re.compile(r"CHILD_ERROR\.value|\(as_bytes\(.*\)\[0\]")


def bare(code: str) -> str:
    """*code* without the parentheses around all of it (a lone argument needs none)."""
    if not (code.startswith("(") and code.endswith(")")):
        return code
    depth = 0
    for i, ch in enumerate(code):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(code) - 1:
            return code
    return code[1:-1]


def par(code: str) -> str:
    """*code* in parentheses unless it is one atom (a name, call, subscript, literal)."""
    if code.startswith("(") and code.endswith(")"):
        depth = 0
        for i, ch in enumerate(code):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(code) - 1:
                break
        else:
            return code
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return f"({code})"
    body = tree.body
    if isinstance(body, ATOM) and not (isinstance(body, ast.Constant) and code.startswith("-")):
        return code
    return f"({code})"


def py_str(text: str, quote: str = '"') -> str:
    """A Python string literal for *text*, undecodable bytes as ``\\udcXX`` escapes."""
    out = []
    for ch in text:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 32 or o == 127:
            out.append(f"\\x{o:02x}")
        elif 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def _literal(code: str, kind: str) -> tuple[str, str]:
    """A plain string literal among f-string parts is literal text."""
    if kind == "str" and code[:1] in "\"'":
        try:
            value = ast.literal_eval(code)
        except (ValueError, SyntaxError):
            return code, kind
        if isinstance(value, str):
            return value, "lit"
    return code, kind


def merge_kinds(kinds: list[str]) -> str:
    """The kind of a value that may be any of *kinds*."""
    got = set(kinds) - {"undef"}
    if "inc" in got:  # ++ keeps a number a number; on a string it may give either
        return "num" if got - {"inc"} <= {"num"} else "any"
    if not got:
        return "any"
    if len(got) == 1:
        return got.pop()
    if got <= {"num", "bool"}:
        return "num"
    if "float" in got:
        return "float"
    if got <= {"num", "str", "any"}:
        return "any"
    return "mixed"


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "a": "\a", "e": "\x1b", "0": "\0"}
_KEY = r"\$\w+\s*\.\s*'[^'\\]*'|'[^'\\]*'\s*\.\s*\$\w+"  # $lang.'key', 'key'.$n
_SUBSCRIPT = rf"\[(?:-?\d+|\$\w+)\]|\{{(?:\w+|'[^'\\]*'|\"[^\"\\$@]*\"|\$\w+|{_KEY})\}}"
_INTERP = re.compile(
    r"\\(?P<esc>x\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)"
    rf"|\$\{{(?P<braced>\w+)(?P<bsubs>(?:{_SUBSCRIPT})*)\}}"
    rf"|\$(?P<name>\w+|[!@$&?])(?P<subs>(?:{_SUBSCRIPT})*)"
    r"|@(?P<array>\w+)|\$#\{?(?P<last>\w+)\}?|(?P<lone>\$|@)",
    re.S,
)
_SUB = re.compile(rf"\[(-?\d+|\$\w+)\]|\{{({_KEY}|\w+|'[^']*'|\"[^\"]*\"|\$\w+)\}}")


class Exprs(Core):
    """The expression half of the translator (mixed into :class:`.stmts.Translator`)."""

    def sx(self, e: E) -> tuple[str, str]:
        """*e* in scalar context."""
        k = e.k
        if k == "num":
            return self.number(e.a[0])
        if k == "lit":
            return py_str(str(e.a[0]), self.quote), "str"
        if k == "str":
            return self.string(e.a[0], bool(e.a[1]))
        if k == "heredoc":
            tok: Node = e.a[0]
            body = "".join(str(x) for x in tok.get("hd") or [])
            raw = tok.text.replace(" ", "")
            return self.interpolate(body, interp="'" not in raw), "str"
        if k == "var":
            return self.var(str(e.a[0]), str(e.a[1]))
        if k == "elem":
            return self.element(e)
        if k == "helem":
            return self.hash_element(e)
        if k == "paren":
            inner: E | None = e.a[0]
            if inner is None:
                return "undef", "undef"
            if inner.k == "comma":
                return self.sx(inner.a[-1])  # comma in scalar context
            return self.sx(inner)
        if k == "bin":
            return self.binary(e)
        if k == "pre":
            return self.prefix(e)
        if k == "post":
            return self.incdec(e.a[1], str(e.a[0]), post=True)
        if k == "tern":
            c, a, b = e.a
            ca, ka = self.sx(a)
            cb, kb = self.sx(b)
            return f"{par(ca)} if {self.bx(c)} else {par(cb)}", merge_kinds([ka, kb])
        if k == "func":
            return self.builtin(e, scalar=True)
        if k == "call":
            return self.user_call(e), "any"
        if k == "print":
            return self.print_(e), "num"
        if k == "filetest":
            arg = self.strx(e.a[1])
            kind = "float" if e.a[0] in ("-M", "-A", "-C") else "any"
            return f"filetest({py_str(str(e.a[0]))}, {arg})", self.use("filetest", kind)
        if k == "readline":
            return self.readline_(str(e.a[0]), scalar=True)
        if k == "lastidx":
            return f"len({self.var('@', str(e.a[0]))[0]}) - 1", "num"
        if k == "lslice":
            base, idx = e.a
            lst = self.lx(base)
            if idx is None or idx.k != "num":
                raise Unsupported("a list slice with a computed index")
            self.use("PerlList")
            return f"PerlList({lst})[{idx.a[0]}]", "any"
        if k == "re":
            return self.match(None, e.a[0], negate=False)
        if k == "method":
            return self.method(e)
        if k == "decl":
            return self.sx(e.a[1])
        if k == "word":
            return self.bareword(str(e.a[0]))
        if k == "assign":
            raise Unsupported("an assignment inside an expression")
        if k == "blockop":
            if e.a[0] == "grep":
                return f"len({self.lx(e)})", "num"
            raise Unsupported(f"{e.a[0]} in scalar context")
        if k in ("evalblock", "doblock"):
            raise Unsupported(f"{k[:-5]} {{...}} inside an expression")
        if k == "qx":  # `cmd`: its output, undef (None) when it cannot start
            return f"({self.use('qx')}({self.command(e.a[0])}) or {self.use('undef')})", "str"
        raise Unsupported(f"{k} in scalar context")

    def command(self, tok: Node) -> str:
        """The command of `` `cmd` `` / ``qx(cmd)`` as a Python string (interpolated as Perl's)."""
        text = tok.text.strip()
        if text.startswith("`"):
            return self.interpolate(text[1:-1], interp=True)
        body = text[2:].lstrip()
        if len(body) < 2 or body[0].isalnum() or body[0] == "#":
            raise Unsupported("qx with this delimiter")
        return self.interpolate(body[1:-1], interp=body[0] != "'")

    # -- names -----------------------------------------------------------------------------

    def var(self, sigil: str, name: str) -> tuple[str, str]:
        if sigil == "$":
            if name == "[":  # the array base: 0 (Perl 5.30 refuses any other value)
                return "0", "num"
            if name in SPECIAL:
                code, kind = SPECIAL[name]
                self.use(code.split(".")[0] if "." in code else code)
                return code, kind
            if name == "@":
                self.eval_error_used = True
                self.globals_used["EVAL_ERROR"] = "@"
                return "EVAL_ERROR", "str"
            if name == "_":
                return self.topic(), "any"
            if name.isdigit():
                if not self.func.captures:
                    raise Unsupported(f"${name} with no match before it in this sub")
                return f"(_m[{name}] or {self.use('undef')})", "str"
            if not re.fullmatch(r"\w+(?:(?:::|')\w+)*", name):
                raise Unsupported(f"the special variable ${name}")
            if re.search(r"::|'", name) and not name.startswith(("main::", "::")):
                raise Unsupported(f"${name}, another package's variable")
            return self.name("$", name), self.kind_of("$" + name)
        if sigil == "@":
            if name == "_":
                return "args", "list"
            if name == "ARGV":  # a CGI's arguments: an ISINDEX query's words, as Perl's
                self.use("sys")
                self.globals_used["ARGV"] = "ARGV"
                return "ARGV", "list"
            if name == "INC":
                raise Unsupported("@INC")
            return self.name("@", name), "list"
        if sigil == "%":
            if name == "ENV":
                raise Unsupported("the whole %ENV")
            return self.name("%", name), "hash"
        raise Unsupported(f"the variable {sigil}{name}")

    def element(self, e: E) -> tuple[str, str]:
        name = str(e.a[0])
        idx = e.a[1]
        base = "args" if name == "_" else self.name("@", name)
        if name == "ARGV":
            base = self.var("@", "ARGV")[0]
        if name == "INC":
            raise Unsupported("@INC")
        if idx is None:
            raise Unsupported("an empty subscript")
        code, kind = self.sx(idx)
        if kind not in ("num",) and base == "args":
            self.use("elem")
            return f"elem(args, {code})", "any"
        if base == "args":
            self.use("elem")
            return f"elem(args, {code})", "any"
        return f"{base}[{code}]", self.elem_kind("@" + name)

    def hash_element(self, e: E) -> tuple[str, str]:
        name = str(e.a[0])
        key = self.key(e.a[1])
        if name == "ENV":
            self.use("os")
            self.use("undef")
            return f"os.environ.get({key}, undef)", "str"
        if name == "SIG":
            self.use("SIG")
            return f"SIG[{key}]", "any"
        return f"{self.name('%', name)}[{key}]", self.elem_kind("%" + name)

    def key(self, e: E) -> str:
        if e.k == "lit":
            return py_str(str(e.a[0]), self.quote)
        code, kind = self.sx(e)
        if kind in ("str", "any"):
            return code
        if kind == "num":
            return f"str({code})"
        raise Unsupported(f"a hash key of kind {kind}")

    def bareword(self, word: str) -> tuple[str, str]:
        if word in ("STDIN", "STDOUT", "STDERR"):
            return self.use(word, word), "fh"
        if word in self.handles or word.isupper():
            return self.handle_name(word), "fh"
        if word in ("LOCK_SH", "LOCK_EX", "LOCK_NB", "LOCK_UN", "SEEK_SET", "SEEK_CUR", "SEEK_END"):
            return self.use(word, word), "num"
        if word.startswith("O_") and word.isupper():
            return self.use(word, word), "num"
        raise Unsupported(f"the bareword {word}")

    def handle_name(self, word: str) -> str:
        self.handles.add(word)
        py = py_var(word) if word not in self.scalar_names else py_var(word, "_fh")
        self.globals_used[py] = "*"
        return py

    # -- conversions ----------------------------------------------------------------------

    def number(self, text: str) -> tuple[str, str]:
        t = text.replace("_", "")
        if re.fullmatch(r"0[0-7]+", t):
            return "0o" + t[1:], "num"
        if re.fullmatch(r"-?\d+|0[xX][0-9a-fA-F]+|0[bB][01]+", t):
            return t, "num"
        return t, "float"

    def strx(self, e: E) -> str:
        """*e* as a Python str with Perl's text for its value."""
        code, kind = self.sx(e)
        return self.as_str(code, kind)

    def as_str(self, code: str, kind: str) -> str:
        if kind in ("str", "undef"):
            return code
        if kind in ("num", "any", "fh"):
            return f"str({code})"
        raise Unsupported(f"a {kind} used as a string (Perl prints it otherwise)")

    def numx(self, e: E) -> tuple[str, str]:
        """*e* as a Python number (``num()`` of a string, as Perl's numeric context)."""
        code, kind = self.sx(e)
        if kind in ("num", "float", "undef"):
            return code, kind if kind != "undef" else "num"
        if kind == "numvalue":  # already a number (num() of something): int or float
            return code, "any_num"
        if kind == "bool":
            return f"int({code})", "num"
        self.use("num")
        return f"num({code})", "any_num"

    def bx(self, e: E) -> str:
        """*e* as a condition with Perl's truth (``"0"`` is false)."""
        if e.k == "var" and e.a[0] in ("@", "%"):
            return self.sx(e)[0] if e.a[0] == "%" else self.var("@", str(e.a[1]))[0]
        if e.k == "paren" and e.a[0] is not None:
            return self.bx(e.a[0])
        if e.k == "bin" and e.a[0] in ("&&", "||", "and", "or"):  # only the truth matters
            py = "and" if e.a[0] in ("&&", "and") else "or"
            return f"{par(self.bx(e.a[1]))} {py} {par(self.bx(e.a[2]))}"
        if e.k == "pre" and e.a[0] == "!":
            return f"not {par(self.bx(e.a[1]))}"
        code, kind = self.sx(e)
        if kind in ("num", "bool", "fh", "float"):
            return code
        self.use("truth")
        return f"truth({code})"

    # -- operators --------------------------------------------------------------------------

    def binary(self, e: E) -> tuple[str, str]:
        op = str(e.a[0])
        left: E = e.a[1]
        right: E = e.a[2]
        if op in ("=~", "!~"):
            if right.k != "re":
                raise Unsupported("=~ with a computed pattern")
            return self.match(left, right.a[0], negate=op == "!~")
        if op == ".":
            parts = self.concat_parts(e)
            return self.fstring(parts), "str"
        if op in STR_CMP:
            return f"{par(self.strx(left))} {STR_CMP[op]} {par(self.strx(right))}", "bool"
        if op in NUM_CMP:
            a, _ = self.numx(left)
            b, _ = self.numx(right)
            return f"{par(a)} {NUM_CMP[op]} {par(b)}", "bool"
        if op in ("+", "-", "*", "%"):
            a, ka = self.numx(left)
            b, kb = self.numx(right)
            if "float" in (ka, kb) or "any_num" in (ka, kb):
                kind = "float" if "float" in (ka, kb) else "numany"
            else:
                kind = "num"
            if kind == "numany":
                kind = "num" if op != "%" and "any_num" not in (ka, kb) else "numvalue"
            if op == "%" and kind != "num":  # Perl's % takes the integer parts
                a = a if ka == "num" else f"int({a})"
                b = b if kb == "num" else f"int({b})"
                return f"{par(a)} % {par(b)}", "num"
            return f"{par(a)} {op} {par(b)}", "num" if kind in ("num",) else "numvalue"
        if op == "/":  # a float: print_ prints it as Perl does; an f-string would not
            a, _ = self.numx(left)
            b, _ = self.numx(right)
            return f"{par(a)} / {par(b)}", "float"
        if op == "**":
            a, ka = self.numx(left)
            b, kb = self.numx(right)
            whole = ka == "num" and right.k == "num" and not str(right.a[0]).startswith("-")
            return f"{par(a)} ** {par(b)}", "num" if whole else "float"
        if op == "x":
            if left.k == "paren":
                raise Unsupported("list repetition")
            n, _ = self.numx(right)
            return f"{par(self.strx(left))} * {par('int(' + n + ')')}", "str"
        if op in ("&&", "||", "and", "or", "//"):
            return self.logical(op, left, right)
        if op in ("..", "..."):
            raise Unsupported("a range in scalar context (the flip-flop)")
        if op in BITS:
            return self.bits(op, left, right), "num"
        raise Unsupported(f"the operator {op}")

    def bits(self, op: str, left: E, right: E) -> str:
        """``& | ^ >> <<`` on numbers: Perl's unsigned 64-bit integers (a string & a string
        is Perl's string operation: refused)."""
        a, ka = self.numx(left)
        b, kb = self.numx(right)
        if "num" not in (ka, kb) and not (_NUMERIC.fullmatch(a) or _NUMERIC.fullmatch(b)):
            raise Unsupported(f"{op} of two values that may be strings (Perl's string {op})")
        a = a if ka == "num" else f"int({a})"
        b = b if kb == "num" else f"int({b})"
        plain = [_UNSIGNED.fullmatch(c) is not None for c in (a, b)]
        if op == ">>":
            return f"{a if plain[0] else f'({a} & {MASK})'} >> {par(b)}"
        if (op == "&" and any(plain)) or (all(plain) and op != "<<"):
            return f"{par(a)} {op} {par(b)}"
        return f"({par(a)} {op} {par(b)}) & {MASK}"

    def logical(self, op: str, left: E, right: E) -> tuple[str, str]:
        """``||``/``&&``: Perl returns the operand itself, judged by Perl's truth."""
        lc, lk = self.sx(left)
        rc, rk = self.sx(right)
        if op == "//":
            self.use("defined")
            if not re.fullmatch(r"[\w.\[\]\"'()]+", lc):
                raise Unsupported("// of an expression with effects")
            return f"{par(lc)} if defined({lc}) else {par(rc)}", merge_kinds([lk, rk])
        py = "or" if op in ("||", "or") else "and"
        if lk in ("num", "bool", "fh"):
            return f"{par(lc)} {py} {par(rc)}", merge_kinds([lk, rk])
        if not re.fullmatch(r"[\w.]+(\[[\w\"'.]*\])?|os\.environ\.get\([\"'\w, ]+\)", lc):
            raise Unsupported(f'{op} on a value whose truth differs in Python ("0")')
        self.use("truth")
        if py == "or":
            return f"{par(lc)} if truth({lc}) else {par(rc)}", merge_kinds([lk, rk])
        return f"{par(rc)} if truth({lc}) else {par(lc)}", merge_kinds([lk, rk])

    def prefix(self, e: E) -> tuple[str, str]:
        op = str(e.a[0])
        arg: E = e.a[1]
        if op == "!":
            return f"not {par(self.bx(arg))}", "bool"
        if op == "-":
            code, kind = self.numx(arg)
            return f"-{par(code)}", "num" if kind == "num" else "float"
        if op == "+":
            return self.sx(arg)
        if op in ("++", "--"):
            return self.incdec(arg, op, post=False)
        if op == "\\":
            if arg.k == "call" and arg.a[1] is None:
                return self.sub_name(str(arg.a[0])), "code"
            raise Unsupported("a reference (\\)")
        raise Unsupported(f"the unary {op}")

    def incdec(self, target: E, op: str, post: bool) -> tuple[str, str]:
        """``++$x`` inside an expression: an assignment expression (names only)."""
        if target.k != "var" or target.a[0] != "$":
            raise Unsupported(f"{op} of an element inside an expression")
        name, kind = self.var("$", str(target.a[1]))
        if post:
            if kind != "num":
                raise Unsupported(f"{op} after a variable that may hold a string, in an expression")
            self.assigned(name)
            back = "-" if op == "++" else "+"
            return f"(({name} := {name} {op[0]} 1) {back} 1)", "num"
        self.assigned(name)
        if kind == "num":
            return f"({name} := {name} {op[0]} 1)", "num"
        if op == "--":
            self.use("num")
            return f"({name} := num({name}) - 1)", "numvalue"
        return f"({name} := {self.use('inc', 'inc')}({name}))", "any"

    def concat_parts(self, e: E) -> list[tuple[str, str]]:
        """The pieces of a chain of ``.``: (code, kind) each; literals as ("lit", text)."""
        if e.k == "bin" and e.a[0] == ".":
            return self.concat_parts(e.a[1]) + self.concat_parts(e.a[2])
        if e.k == "str" and not e.a[1]:
            return [(str(e.a[0].get("s")), "lit")]
        if e.k in ("str", "heredoc"):
            return self.string_parts(e)
        code, kind = self.sx(e)
        if kind in ("float", "bool", "list", "hash", "code", "mixed"):
            raise Unsupported(f"a {kind} joined into a string (Perl prints it otherwise)")
        return [(code, kind)]

    def fstring(self, parts: list[tuple[str, str]]) -> str:
        """An f-string (or plain literal) of *parts*."""
        q = self.quote
        parts = [_literal(code, kind) for code, kind in parts]
        if all(kind == "lit" for _, kind in parts):
            return py_str("".join(code for code, _ in parts), q)
        if len(parts) == 1 and parts[0][1] == "str":
            return parts[0][0]
        if any(kind != "lit" and ("\\" in code or q in code) for code, kind in parts):
            return " + ".join(
                py_str(code, q) if kind == "lit" else par(self.as_str(code, kind))
                for code, kind in parts
                if code or kind != "lit"
            )
        out = []
        for code, kind in parts:
            if kind == "lit":
                lit = py_str(code, q)[1:-1]
                out.append(lit.replace("{", "{{").replace("}", "}}"))
            else:
                if kind in ("float", "bool", "list", "hash", "code", "mixed"):
                    raise Unsupported(f"a {kind} interpolated (Perl prints it otherwise)")
                out.append("{" + (f"({code})" if code.startswith("{") else code) + "}")
        return "f" + q + "".join(out) + q

    # -- strings -------------------------------------------------------------------------------

    def string(self, tok: Node, interp: bool) -> tuple[str, str]:
        if not interp:
            return py_str(str(tok.get("s", "")), self.quote), "str"
        return self.fstring(self.string_parts(E("str", tok, True))), "str"

    def interpolate(self, body: str, interp: bool) -> str:
        if not interp:
            return py_str(body, self.quote)
        return self.fstring(self.interp_parts(body))

    def string_parts(self, e: E) -> list[tuple[str, str]]:
        tok: Node = e.a[0]
        if e.k == "heredoc":
            body = "".join(str(x) for x in tok.get("hd") or [])
            if "'" in tok.text:
                return [(body, "lit")]
            return self.interp_parts(body)
        return self.interp_parts(str(tok.get("s", "")))

    def interp_parts(self, body: str) -> list[tuple[str, str]]:
        parts: list[tuple[str, str]] = []
        lit: list[str] = []
        pos = 0
        for m in _INTERP.finditer(body):
            lit.append(body[pos : m.start()])
            pos = m.end()
            esc, braced, name, array, last, lone = (
                m["esc"],
                m["braced"],
                m["name"],
                m["array"],
                m["last"],
                m["lone"],
            )
            subs = m["subs"] or m["bsubs"]
            if esc is not None:
                lit.append(self.escape(esc))
                continue
            after = body[pos : pos + 3]
            if lone is not None:
                if after[:1] in ("{", "["):
                    raise Unsupported(
                        f"{lone}{after[:1]}...}} in a string (an expression Perl runs)"
                    )
                lit.append(lone)
                continue
            if (name or braced) and (
                after[:1] in ("[", "{") or after[:3] in ("->[", "->{") or after[:2] == "::"
            ):
                raise Unsupported("a subscript or package name in a string the port does not read")
            if name and after[:1] == "'" and body[pos + 1 : pos + 2].isalpha():
                raise Unsupported(f'"${name}\'..." in a string: Perl reads ${name}::... there')
            if lit:
                parts.append(("".join(lit), "lit"))
                lit = []
            saved, self.quote = self.quote, "'"
            try:
                if last is not None:
                    parts.append((f"len({self.var('@', last)[0]}) - 1", "num"))
                    continue
                if array is not None:
                    if ("@", array) not in self.symbols:
                        raise Unsupported(f"@{array} in a string is an array the script never sets")
                    code = self.var("@", array)[0]
                    parts.append((f"' '.join(map(str, {code}))", "str"))
                    continue
                expr = self.interp_var(braced or name, subs or "")
                parts.append(expr)
            finally:
                self.quote = saved
        lit.append(body[pos:])
        if "".join(lit):
            parts.append(("".join(lit), "lit"))
        return [(c, k) if k != "lit" else (c, "lit") for c, k in parts]

    def escape(self, esc: str) -> str:
        if esc in _ESCAPES:
            return _ESCAPES[esc]
        if esc.startswith("x{"):  # below 256 a byte, as "\xHH"; above, a character
            value = int(esc[2:-1], 16)
            return chr(value) if value < 128 or value > 255 else chr(0xDC00 + value)
        if esc.startswith("x"):
            value = int(esc[1:] or "0", 16)
            return chr(value) if value < 128 else chr(0xDC00 + value)
        if esc[0] in "01234567":
            value = int(esc, 8)
            return chr(value) if value < 128 else chr(0xDC00 + value)
        if esc in ("u", "l", "U", "L", "E", "Q"):
            raise Unsupported(f"\\{esc} in a string")
        return esc

    def interp_var(self, name: str, subs: str) -> tuple[str, str]:
        if not subs:
            if name in ("&",):
                raise Unsupported("$& in a string")
            return self.var("$", name)
        code = None
        kind = "any"
        for m in _SUB.finditer(subs):
            index, key = m.groups()
            if code is not None:
                raise Unsupported("a nested subscript in a string (a reference)")
            if index is not None:
                idx = self.var("$", index[1:])[0] if index.startswith("$") else index
                code, kind = self.element_code(name, idx)
            else:
                parts = [p.strip() for p in key.split(".")] if re.fullmatch(_KEY, key) else [key]
                keys = [
                    E("var", "$", p[1:]) if p.startswith("$") else E("lit", p.strip("'\""))
                    for p in parts
                ]
                key_e = keys[0] if len(keys) == 1 else E("bin", ".", keys[0], keys[1])
                code, kind = self.hash_element(E("helem", name, key_e))
        return code or "", kind

    def element_code(self, name: str, idx: str) -> tuple[str, str]:
        if name == "_":
            self.use("elem")
            return f"elem(args, {idx})", "any"
        return f"{self.name('@', name)}[{idx}]", self.elem_kind("@" + name)
