"""Perl expressions from PPI's flat token lists: an :class:`E` tree by Perl's precedence.

PPI groups brackets (``Structure::List``, ``Subscript``, ``Block``) but leaves operators
flat; :func:`parse` climbs Perl's precedence table (perlop) over them.  Named unary
operators (``defined``, ``-e``, ``lc`` ...) take one operand tighter than a comparison; list
operators (``print``, ``push``, ``join`` ...) take everything up to ``and``/``or``/``not``.
Anything it does not know raises :class:`Unsupported` with the reason the port shows.
"""

from __future__ import annotations

import re

from .tree import Node

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Unsupported(Exception):
    """A construct the port leaves to a person: the message is the ``# PORT:`` reason."""


class E:
    """An expression: ``k`` its kind, ``a`` its parts, ``node`` the PPI node it started at."""

    __slots__ = ("a", "k", "node")

    def __init__(self, k: str, *a: Any, node: Node | None = None) -> None:
        self.k = k
        self.a = a
        self.node = node

    def __repr__(self) -> str:
        return f"E({self.k}, {', '.join(map(repr, self.a))})"


BINARY = {
    "or": 1, "xor": 1, "and": 2,
    ",": 4, "=>": 4,
    "?": 6,
    "..": 7, "...": 7,
    "||": 8, "//": 8,
    "&&": 9,
    "|": 10, "^": 10,
    "&": 11,
    "==": 12, "!=": 12, "<=>": 12, "eq": 12, "ne": 12, "cmp": 12,
    "<": 13, ">": 13, "<=": 13, ">=": 13, "lt": 13, "gt": 13, "le": 13, "ge": 13,
    "<<": 15, ">>": 15,
    "+": 16, "-": 16, ".": 16,
    "*": 17, "/": 17, "%": 17, "x": 17,
    "=~": 18, "!~": 18,
    "**": 20,
}  # fmt: skip
ASSIGN = {
    "=",
    "+=",
    "-=",
    "*=",
    "/=",
    ".=",
    "x=",
    "%=",
    "**=",
    "||=",
    "&&=",
    "//=",
    "|=",
    "&=",
    "^=",
    "<<=",
    ">>=",
}
NAMED_UNARY_PREC = 14
UNARY_PREC = 19

NAMED_UNARY = {
    "defined", "ref", "scalar", "lc", "uc", "lcfirst", "ucfirst", "length", "chr", "ord",
    "hex", "oct", "int", "abs", "sqrt", "rand", "srand", "exit", "umask", "undef", "sleep",
    "close", "chdir", "rmdir", "readlink", "localtime", "gmtime", "alarm", "caller",
    "exists", "delete", "each", "keys", "values", "shift", "pop", "fileno", "stat", "lstat",
    "log", "exp", "sin", "cos", "quotemeta", "chroot", "readline", "lock", "chomp", "chop",
    "binmode",
}  # fmt: skip
NULLARY = {"time", "wantarray", "times", "wait", "getppid", "__FILE__", "__LINE__", "fork"}
LIST_OPS = {
    "print", "printf", "say", "push", "unshift", "splice", "join", "split", "sprintf",
    "die", "warn", "return", "open", "sysopen", "seek", "truncate", "tell", "flock",
    "unlink", "mkdir", "chmod", "chown", "utime", "rename", "symlink", "link", "sort",
    "reverse", "map", "grep", "read", "sysread", "syswrite", "crypt", "pack", "unpack",
    "index", "rindex", "substr", "system", "exec", "kill", "select", "eof", "opendir",
    "readdir", "closedir", "require", "local", "my", "our", "bless", "tie", "keys", "jcode",
}  # fmt: skip


def _is_op(node: Node | None, *ops: str) -> bool:
    return node is not None and node.cls == "Token::Operator" and node.text in ops


def expression_tokens(struct: Node) -> list[Node]:
    """The tokens inside a bracket structure (its one statement's, or none)."""
    stmts = [k for k in struct.kids if k.is_("Statement")]
    if len(stmts) > 1:
        raise Unsupported("more than one statement inside brackets")
    return stmts[0].significant() if stmts else []


class Parser:
    """One token list, parsed by :meth:`parse`."""

    def __init__(self, toks: list[Node], subs: set[str]) -> None:
        self.toks = toks
        self.i = 0
        self.subs = subs

    def peek(self, k: int = 0) -> Node | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> Node:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def sub(self, toks: list[Node]) -> E | None:
        """An inner token list as one expression (None if empty)."""
        if not toks:
            return None
        p = Parser(toks, self.subs)
        out = p.parse(0)
        if not p.at_end():
            raise Unsupported(f"cannot follow {p.peek()!r}")
        return out

    def starts_term(self) -> bool:
        tok = self.peek()
        if tok is None:
            return False
        if tok.cls == "Token::Operator":
            return tok.text in ("!", "-", "\\", "+", "++", "--", "~", "not", "<") or (
                len(tok.text) == 2 and tok.text[0] == "-" and tok.text[1].isalpha()
            )
        if tok.cls == "Token::Word":
            return tok.text not in BINARY and tok.text not in (
                "if",
                "unless",
                "while",
                "until",
                "for",
                "foreach",
            )
        return tok.cls != "Token::Structure"

    def parse(self, min_prec: int) -> E:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok is None:
                return left
            op = tok.text
            if tok.cls == "Token::Operator" and op in ASSIGN:
                if min_prec > 5:
                    return left
                self.take()
                right = self.parse(5)
                left = E("assign", op, left, right, node=tok)
                continue
            if tok.cls.startswith("Token::Number") and op[:1] in "-+" and len(op) > 1:
                # `time-24`: PPI reads "-24" as one number; here it is a minus and 24
                if min_prec > BINARY["-"]:
                    return left
                number = Node({"c": tok.cls, "l": tok.line, "t": op[1:]}, str)
                self.toks[self.i : self.i + 1] = [
                    Node({"c": "Token::Operator", "l": tok.line, "t": op[0]}, str),
                    number,
                ]
                continue
            if tok.cls not in ("Token::Operator", "Token::Word") or op not in BINARY:
                return left
            prec = BINARY[op]
            if prec < min_prec:
                return left
            self.take()
            if op in (",", "=>"):
                items = [left] if left.k != "comma" else list(left.a)
                if left.k == "word" and op == "=>":
                    items[-1] = E("lit", left.a[0], node=left.node)
                if self.at_end() or not self.starts_term():
                    left = E("comma", *items, node=tok)
                    continue
                items.append(self.parse(5))
                left = E("comma", *items, node=tok)
                continue
            if op == "?":
                then = self.parse(5)
                colon = self.peek()
                if not _is_op(colon, ":"):
                    raise Unsupported("?: without its ':'")
                self.take()
                other = self.parse(6)
                left = E("tern", left, then, other, node=tok)
                continue
            right = self.parse(prec + 1 if op != "**" else prec)
            left = E("bin", op, left, right, node=tok)

    def unary(self) -> E:
        tok = self.peek()
        if tok is None:
            raise Unsupported("an expression ends too early")
        if tok.cls == "Token::Operator":
            op = tok.text
            if op in ("!", "-", "+", "~", "\\"):
                self.take()
                return E("pre", op, self.parse(UNARY_PREC), node=tok)
            if op in ("++", "--"):
                self.take()
                return E("pre", op, self.parse(UNARY_PREC + 2), node=tok)
            if op == "not":
                self.take()
                return E("pre", "!", self.parse(3), node=tok)
            if len(op) == 2 and op[0] == "-" and op[1].isalpha():
                self.take()
                return E("filetest", op, self.parse(NAMED_UNARY_PREC + 1), node=tok)
        return self.postfix(self.term())

    def postfix(self, base: E) -> E:
        while True:
            tok = self.peek()
            if tok is None:
                return base
            if _is_op(tok, "++", "--"):
                self.take()
                base = E("post", tok.text, base, node=tok)
                continue
            if _is_op(tok, "->"):
                self.take()
                nxt = self.take()
                if nxt.cls == "Token::Word":
                    args = None
                    after = self.peek()
                    if after is not None and after.cls == "Structure::List":
                        args = self.args_of(self.take())
                    base = E("method", base, nxt.text, args, node=nxt)
                    continue
                raise Unsupported("a reference (->)")
            if (
                tok.cls in ("Structure::Subscript", "Structure::Constructor")
                and tok.get("o") == "["
            ) and base.k in ("paren", "call", "func"):
                self.take()
                base = E("lslice", base, self.sub(expression_tokens(tok)), node=tok)
                continue
            if tok.cls == "Structure::Subscript":
                raise Unsupported("a nested subscript (a reference)")
            return base

    def args_of(self, struct: Node) -> list[E]:
        inner = self.sub(expression_tokens(struct))
        if inner is None:
            return []
        return list(inner.a) if inner.k == "comma" else [inner]

    def list_args(self) -> list[E]:
        """A list operator's arguments: its parentheses, or everything up to and/or/not."""
        tok = self.peek()
        if tok is not None and tok.cls == "Structure::List":
            return self.args_of(self.take())
        if not self.starts_term():
            return []
        inner = self.parse(4)
        return list(inner.a) if inner.k == "comma" else [inner]

    def term(self) -> E:
        tok = self.take()
        cls = tok.cls
        after = self.peek(1)
        if _is_op(tok, "<") and after is not None and _is_op(after, ">"):
            word = self.take()
            self.take()
            return E("readline", word.text, node=tok)
        if cls.startswith("Token::Number"):
            return E("num", tok.text, node=tok)
        if cls in ("Token::Quote::Single", "Token::Quote::Literal"):
            return E("str", tok, False, node=tok)
        if cls in ("Token::Quote::Double", "Token::Quote::Interpolate"):
            return E("str", tok, True, node=tok)
        if cls == "Token::HereDoc":
            return E("heredoc", tok, node=tok)
        if cls == "Token::QuoteLike::Words":
            return E("qw", list(tok.get("w") or []), node=tok)
        if cls == "Token::QuoteLike::Readline":
            return E("readline", tok.text[1:-1], node=tok)
        if cls in ("Token::QuoteLike::Backtick", "Token::QuoteLike::Command"):
            return E("qx", tok, node=tok)
        if cls.startswith("Token::Regexp") or cls == "Token::QuoteLike::Regexp":
            return E("re", tok, node=tok)
        if cls in ("Token::Symbol", "Token::Magic", "Token::ArrayIndex"):
            return self.symbol(tok)
        if cls == "Token::Cast":
            if tok.text == "\\":
                return E("pre", "\\", self.parse(UNARY_PREC), node=tok)
            after = self.peek()
            if tok.text == "$" and after is not None and after.cls == "Structure::Block":
                inner = expression_tokens(after)  # ${name[0]}: only $name[0] spelled otherwise
                if (
                    len(inner) == 2
                    and inner[0].cls == "Token::Word"
                    and inner[1].cls == "Structure::Constructor"
                    and inner[1].get("o") == "["
                    and re.fullmatch(r"[A-Za-z_]\w*", inner[0].text)
                ):
                    self.take()
                    return E("elem", inner[0].text, self.sub(expression_tokens(inner[1])), node=tok)
            raise Unsupported(f"a dereference ({tok.text}{{...}})")
        if cls in ("Structure::List", "Structure::Condition"):
            return E("paren", self.sub(expression_tokens(tok)), node=tok)
        if cls == "Structure::Block":
            return E("block", tok, node=tok)
        if cls == "Structure::Constructor":
            raise Unsupported("an anonymous array or hash (a reference)")
        if cls == "Token::Word":
            return self.word(tok)
        raise Unsupported(f"cannot read {tok.text!r} here")

    def symbol(self, tok: Node) -> E:
        text = tok.text
        sigil = text[0]
        if sigil == "&":
            name = text[1:]
            args = None
            after = self.peek()
            if after is not None and after.cls == "Structure::List":
                args = self.args_of(self.take())
            return E("call", name, args, True, node=tok)
        if sigil == "*":
            return E("glob", text[1:], node=tok)
        nxt = self.peek()
        if sigil == "$" and nxt is not None and nxt.cls == "Structure::Subscript":
            self.take()
            inner = expression_tokens(nxt)
            if nxt.get("o") == "{":
                if len(inner) == 1 and inner[0].cls == "Token::Word":
                    key: E | None = E("lit", inner[0].text, node=inner[0])
                elif len(inner) == 2 and _is_op(inner[0], "-") and inner[1].cls == "Token::Word":
                    key = E("lit", "-" + inner[1].text, node=inner[1])
                else:
                    key = self.sub(inner)
                return E("helem", tok.sym[1:], key, node=tok)
            return E("elem", tok.sym[1:], self.sub(inner), node=tok)
        if sigil == "@" and nxt is not None and nxt.cls == "Structure::Subscript":
            raise Unsupported("a slice")
        if sigil == "$" and text.startswith("$#"):
            return E("lastidx", text[2:].lstrip("{").rstrip("}"), node=tok)
        return E("var", sigil, text[1:], node=tok)

    def word(self, tok: Node) -> E:
        w = tok.text
        nxt = self.peek()
        if _is_op(nxt, "=>"):
            return E("lit", w, node=tok)
        if w in ("my", "our", "local"):
            target = self.term()
            return E("decl", w, target, node=tok)
        if w == "sub" and nxt is not None and nxt.cls == "Structure::Block":
            return E("anonsub", self.take(), node=tok)
        if w in ("do", "eval") and nxt is not None and nxt.cls == "Structure::Block":
            return E(w + "block", self.take(), node=tok)
        if _is_op(nxt, "->"):
            return E("class", w, node=tok)
        if w in ("__FILE__", "__LINE__"):
            return E("func", w, [], node=tok)
        if w in ("print", "printf", "say"):
            return self.print_op(tok)
        if w in ("map", "grep", "sort") and nxt is not None:
            block = None
            paren = False
            if nxt.cls == "Structure::List":
                inner = expression_tokens(nxt)
                if inner and inner[0].cls == "Structure::Block":
                    self.take()
                    p = Parser(inner, self.subs)
                    block = p.take()
                    if _is_op(p.peek(), ","):
                        p.take()
                    rest = p.parse(4) if not p.at_end() else None
                    args = [] if rest is None else list(rest.a) if rest.k == "comma" else [rest]
                    return E("blockop", w, block, args, node=tok)
                paren = True
            if nxt.cls == "Structure::Block" and not paren:
                block = self.take()
                if _is_op(self.peek(), ","):
                    self.take()
            args = self.list_args()
            return E("blockop", w, block, args, node=tok)
        if w in NULLARY:
            if nxt is not None and nxt.cls == "Structure::List":
                self.args_of(self.take())
            return E("func", w, [], node=tok)
        if w in NAMED_UNARY:
            if nxt is not None and nxt.cls == "Structure::List":
                args = self.args_of(self.take())
                return E("func", w, args, node=tok)
            if self.starts_term():
                return E("func", w, [self.parse(NAMED_UNARY_PREC + 1)], node=tok)
            return E("func", w, [], node=tok)
        if w in LIST_OPS or w in self.subs:
            args = self.list_args()
            kind = "func" if w in LIST_OPS else "call"  # a sub cannot replace a built-in
            if kind == "call":
                return E("call", w, args, False, node=tok)
            return E("func", w, args, node=tok)
        if nxt is not None and nxt.cls == "Structure::List":
            return E("func", w, self.args_of(self.take()), node=tok)
        if "::" in w or "'" in w:
            args = self.list_args()
            return E("func", w, args, node=tok)
        return E("word", w, node=tok)

    def print_op(self, tok: Node) -> E:
        """``print``/``printf``: the handle (bareword, ``{$fh}``, ``$fh`` then a term), items."""
        toks: list[Node]
        nxt = self.peek()
        if nxt is not None and nxt.cls == "Structure::List":
            self.take()
            toks = expression_tokens(nxt)
            rest_parser = Parser(toks, self.subs)
        else:
            rest_parser = self
        handle: E | None = None
        first = rest_parser.peek()
        second = rest_parser.peek(1)
        if first is not None and first.cls == "Token::Word" and first.text.isupper() is not None:
            if (
                first.text not in LIST_OPS | NAMED_UNARY | NULLARY | self.subs
                and not _is_op(second, ",", "->", "=>", "(")
                and (second is None or second.cls != "Structure::List")
            ):
                rest_parser.take()
                handle = E("word", first.text, node=first)
        elif first is not None and first.cls == "Structure::Block":
            rest_parser.take()
            handle = rest_parser.sub(first.significant() or expression_tokens(first))
        elif (
            first is not None
            and first.cls == "Token::Symbol"
            and first.text.startswith("$")
            and second is not None
            and not (second.cls == "Token::Operator" or second.cls.startswith("Structure::Sub"))
        ):
            rest_parser.take()
            handle = E("var", "$", first.text[1:], node=first)
        if rest_parser is self:
            args = self.list_args()
        else:
            inner = rest_parser.parse(0) if not rest_parser.at_end() else None
            if not rest_parser.at_end():
                raise Unsupported("print (...) followed by more")
            args = [] if inner is None else list(inner.a) if inner.k == "comma" else [inner]
        return E("print", tok.text, handle, args, node=tok)


def parse(toks: list[Node], subs: set[str]) -> E | None:
    """The expression of a whole token list; None if it is empty."""
    return Parser(toks, subs).sub(toks)
