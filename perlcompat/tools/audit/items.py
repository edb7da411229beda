"""Helpers over a statement's items (tokens and blocks): call arguments, parentheses, handles.

:func:`flat` yields the tokens of items and of the blocks among them.
"""

from __future__ import annotations

from .lexer import Tok
from .model import LOW_WORDS, NAMED_UNARY, POSTFIX
from .parser import Block

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from .parser import Item


def tok_at(items: Sequence[Item], k: int) -> Tok | None:
    if 0 <= k < len(items):
        item = items[k]
        if isinstance(item, Tok):
            return item
    return None


def match_paren(items: Sequence[Item], start: int) -> int:
    """Index of the ``)`` or ``]`` closing the bracket at *start* (or the last index)."""
    depth = 0
    for k in range(start, len(items)):
        item = items[k]
        if isinstance(item, Tok) and item.kind == "op":
            if item.text in ("(", "["):
                depth += 1
            elif item.text in (")", "]"):
                depth -= 1
                if depth == 0:
                    return k
    return len(items) - 1


def _split_args(items: Sequence[Item]) -> list[list[Item]]:
    args: list[list[Item]] = [[]]
    depth = 0
    for item in items:
        if isinstance(item, Tok) and item.kind == "op":
            if item.text in ("(", "[", "{"):
                depth += 1
            elif item.text in (")", "]", "}"):
                depth -= 1
            elif item.text in (",", "=>") and depth == 0:
                args.append([])
                continue
        args[-1].append(item)
    return [a for a in args if a]


def call_args(items: Sequence[Item], i: int) -> tuple[list[list[Item]], int, bool]:
    """Arguments of the call at *i*, index after them, and whether a bare ``||`` is among them."""
    head = items[i]
    name = head.text if isinstance(head, Tok) else ""
    nxt = tok_at(items, i + 1)
    if nxt is not None and nxt.is_op("("):
        close = match_paren(items, i + 1)
        return _split_args(items[i + 2 : close]), close + 1, False
    unary = name in NAMED_UNARY
    depth = 0
    oror = False
    cut = -1  # where a bare `||` starts: it belongs to the last argument, not to the call
    k = i + 1
    while k < len(items):
        item = items[k]
        if isinstance(item, Tok):
            if item.kind == "op":
                if item.text in ("(", "["):
                    depth += 1
                elif item.text in (")", "]"):
                    if depth == 0:
                        break
                    depth -= 1
                elif depth == 0 and item.text in ("||", "&&", "//"):
                    if unary:
                        break
                    if not oror:
                        cut = k
                    oror = True
                elif (
                    depth == 0
                    and unary
                    and item.text in (",", "?", ":", "=", "==", "!=", "<", ">", "<=", ">=")
                ):
                    break
            elif item.kind == "id" and depth == 0 and item.text in LOW_WORDS:
                break
        k += 1
    return _split_args(items[i + 1 : cut if oror else k]), k, oror


def postfix_index(items: Sequence[Item]) -> int:
    depth = 0
    for k, item in enumerate(items):
        if not isinstance(item, Tok):
            continue
        if item.kind == "op":
            if item.text in ("(", "[", "{"):
                depth += 1
            elif item.text in (")", "]", "}"):
                depth -= 1
        elif k > 0 and depth == 0 and item.kind == "id" and item.text in POSTFIX:
            return k
    return -1


def first_line_of(items: Sequence[Item]) -> int:
    for item in items:
        return item.line
    return 0


def handle_name(arg: Sequence[Item]) -> str | None:
    """``OUT``, ``*OUT``, ``my $fh``, ``\\*OUT`` -> the handle's name."""
    for item in reversed(arg):
        if isinstance(item, Tok):
            if item.kind == "var":
                return item.text[1:] if item.text.startswith("*") else item.text
            if item.kind == "id" and item.text not in ("my", "our", "local", "state"):
                return item.text
    return None


def item_at(items: Sequence[Item], k: int) -> Item | None:
    return items[k] if 0 <= k < len(items) else None


def flat(items: Iterable[Item]) -> Iterator[Tok]:
    for item in items:
        if isinstance(item, Block):
            for stmt in item.stmts:
                yield from flat(stmt)
        else:
            yield item
