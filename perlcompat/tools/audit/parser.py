"""Tokens to statements and blocks: :func:`parse`, and :func:`parse_checked` for whole files.

A statement is a list of items, each a :class:`.lexer.Tok` or a :class:`Block`; blocks
are ``if``/``elsif``/``else`` chains, loops, ``eval``, named and anonymous subs and
plain ``{...}``.  :func:`parse_checked` names the first place the text cannot be
followed (a quote, regex or heredoc that never ends, an unclosed ``{``, a stray ``}``,
a NUL byte, nesting deeper than :data:`MAX_NESTING`); such a file is reported, not audited.
"""

from __future__ import annotations

from .lexer import Lexer, Tok, lex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Union

    Item = Union["Tok", "Block"]


class Block:
    """A ``{ ... }`` block: its kind (if, else, while, eval, sub, anonsub, expr...), statements."""

    __slots__ = ("end_line", "kind", "line", "stmts")

    def __init__(self, kind: str, stmts: list[list[Item]], line: int, end_line: int) -> None:
        self.kind = kind
        self.stmts = stmts
        self.line = line
        self.end_line = end_line

    def __repr__(self) -> str:
        return f"<Block {self.kind} L{self.line}-{self.end_line} {len(self.stmts)} stmts>"


_CONTROL = frozenset({"if", "unless", "elsif", "while", "until", "for", "foreach"})
_ENDS_STMT = frozenset(
    {"if", "unless", "elsif", "else", "while", "until", "for", "foreach", "bare", "sub", "continue"}
)


def _matching_open(items: list[Item], close: int) -> int:
    """Index of the ``(`` matching the ``)`` at *close* in *items*, or -1."""
    depth = 0
    for k in range(close, -1, -1):
        item = items[k]
        if isinstance(item, Tok) and item.kind == "op":
            if item.text == ")":
                depth += 1
            elif item.text == "(":
                depth -= 1
                if depth == 0:
                    return k
    return -1


def _block_kind(cur: list[Item]) -> str:
    """What a ``{`` opens, judged from the statement so far."""
    if not cur:
        return "bare"
    last = cur[-1]
    if isinstance(last, Block):
        return "expr"
    if last.kind == "id":
        if last.text in ("else", "continue", "eval", "do", "BEGIN", "END", "INIT", "CHECK"):
            return {"BEGIN": "bare", "END": "bare", "INIT": "bare", "CHECK": "bare"}.get(
                last.text, last.text
            )
        if last.text == "sub":
            return "anonsub"
        if len(cur) >= 2 and isinstance(cur[-2], Tok) and cur[-2].is_id("sub"):
            return "sub" if len(cur) == 2 else "anonsub"
        if last.text in ("print", "printf", "say", "exec", "system"):
            return "handle"
        if last.text == "sort" or last.text == "map" or last.text == "grep":
            return "expr"
        if last.text in ("package",):
            return "bare"
        return "expr"
    if last.is_op(":") and len(cur) == 2:
        return "bare"
    if last.is_op(")"):
        # (looked up one by one: in a long elsif chain *cur* is the whole chain so far)
        k = _matching_open(cur, len(cur) - 1) - 1
        while (
            k >= 0
            and (word := _word(cur, k)) is not None
            and (word.kind == "var" or word.is_id("my", "our", "local", "state"))
        ):
            k -= 1  # foreach my $x (...)
        word = _word(cur, k) if k >= 0 else None
        if word is not None and word.kind == "id":
            if word.text in _CONTROL:
                return word.text
            before = _word(cur, k - 1) if k >= 1 else None
            if before is not None and before.is_id("sub"):
                return "sub" if k == 1 else "anonsub"
    return "expr"


def _word(cur: list[Item], k: int) -> Tok | None:
    """``cur[k]`` if it is a token, None if it is a block."""
    item = cur[k]
    return item if isinstance(item, Tok) else None


#: Deeper block nesting is not followed (no real script comes near; the walk recurses).
MAX_NESTING = 100


class _Parser:
    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        self.i = 0
        self.errors: list[tuple[int, str]] = []
        self.depth = 0
        self.too_deep = False

    def block(self, in_block: bool, opened: int = 0) -> tuple[list[list[Item]], int]:
        """Statements up to the ``}`` closing this block (or the end); and that line."""
        toks = self.toks
        stmts: list[list[Item]] = []
        cur: list[Item] = []
        depth = 0
        inline = 0
        while self.i < len(toks):
            tok = toks[self.i]
            if tok.kind == "op":
                text = tok.text
                if text in ("(", "["):
                    depth += 1
                elif text in (")", "]"):
                    depth = max(0, depth - 1)
                elif text == "{":
                    if tok_is_subscript(cur):
                        inline += 1
                    else:
                        self.i += 1
                        if self.depth >= MAX_NESTING:
                            self.errors.append((tok.line, f"blocks nested over {MAX_NESTING} deep"))
                            self.too_deep = True
                            self.i = len(toks)
                            break
                        kind = _block_kind(cur)
                        self.depth += 1
                        inner, end_line = self.block(True, tok.line)
                        self.depth -= 1
                        cur.append(Block(kind, inner, tok.line, end_line))
                        nxt = toks[self.i] if self.i < len(toks) else None
                        if (
                            kind in _ENDS_STMT
                            and depth == 0
                            and not (nxt is not None and nxt.is_id("elsif", "else", "continue"))
                        ):
                            stmts.append(cur)
                            cur = []
                        continue
                elif text == "}":
                    if inline > 0:
                        inline -= 1
                    elif in_block:
                        if cur:
                            stmts.append(cur)
                        self.i += 1
                        return stmts, tok.line
                    else:
                        self.errors.append((tok.line, "a } that closes no block"))
                        self.i += 1
                        continue
                elif text == ";" and depth == 0 and inline == 0:
                    if cur:
                        stmts.append(cur)
                    cur = []
                    self.i += 1
                    continue
            cur.append(tok)
            self.i += 1
        if cur:
            stmts.append(cur)
        if in_block and not self.too_deep:
            self.errors.append((opened, "the { opened here is never closed"))
        last = toks[-1].line if toks else 1
        return stmts, last


def tok_is_subscript(cur: list[Item]) -> bool:
    """True if a ``{`` after *cur* opens a subscript or deref, not a block."""
    if not cur:
        return False
    prev = cur[-1]
    if isinstance(prev, Block):
        return False
    return (
        prev.kind in ("var", "cast")
        or prev.is_op("->", "]")
        or (prev.is_op("}") and prev.extra == "sub")
    )


def parse(toks: list[Tok]) -> list[list[Item]]:
    """Group tokens into statements; blocks become :class:`Block` items."""
    stmts, _ = _Parser(toks).block(False)
    return stmts


def parse_source(text: str, first_line: int = 1) -> list[list[Item]]:
    """Statements of Perl source *text*."""
    return parse(lex(text, first_line))


def parse_checked(text: str) -> tuple[list[list[Item]], tuple[int, str] | None]:
    """Statements of *text*, and (line, reason) of the first place it cannot follow, if any.

    It cannot follow a string, regex or heredoc that never ends, a ``{`` never closed, a
    ``}`` that closes nothing, or a NUL byte (binary data).  Any other input is tokenized.
    """
    lexer = Lexer(text)
    toks = lexer.run()
    parser = _Parser(toks)
    stmts, _ = parser.block(False)
    if parser.too_deep:
        return [], parser.errors[-1]
    problems = sorted(lexer.errors + parser.errors)
    return stmts, (problems[0] if problems else None)
