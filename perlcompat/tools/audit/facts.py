"""What a statement's tokens say, read without a walk: numbers, retry loops, age tests.

A lock's retry loop gives its tries and pause (:func:`retry_wait`), an age test its
stale age in seconds (:func:`stale_seconds`); :func:`lexicals` are the ``my`` names of a
scope, :func:`labelled` a statement ``goto`` can reach.
"""

from __future__ import annotations

from .items import flat, postfix_index, tok_at
from .lexer import Tok
from .model import AGE_TESTS
from .parser import Block

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from .parser import Item


def perl_int(text: str) -> int | None:
    """A Perl integer literal: ``2``, ``0x1F``, ``0b101``, ``0755`` (octal), ``1_000``."""
    text = text.replace("_", "").lower()
    try:
        if text.startswith(("0x", "0b")):
            return int(text, 0)
        if len(text) > 1 and text.startswith("0"):
            return int(text, 8)
        return int(text)
    except ValueError:
        return None


def labelled(items: list[Item]) -> bool:
    """True if statement *items* starts with a label (``WRITE:``): ``goto`` can reach it."""
    first, second = tok_at(items, 0), tok_at(items, 1)
    return (
        first is not None
        and first.kind == "id"
        and not first.extra
        and "'" not in first.text
        and ":" not in first.text
        and second is not None
        and second.is_op(":")
    )


def arith(toks: Sequence[Tok]) -> float | None:
    """The value of ``600``, ``600 / 86400``, ``3 * 60``: numbers joined by ``*`` and ``/``."""
    value: float | None = None
    op = ""
    for tok in toks:
        if tok.kind == "num":
            number = perl_int(tok.text)
            try:
                x = float(number) if number is not None else float(tok.text.replace("_", ""))
            except ValueError:
                return None
            if value is None:
                value = x
            elif op == "*":
                value *= x
            elif op == "/" and x:
                value /= x
            else:
                return None
            op = ""
        elif tok.is_op("*", "/") and value is not None and not op:
            op = tok.text
        elif tok.kind == "re" and value is not None:
            return None
        else:
            break
    return value


def assigned_int(stmts: list[list[Item]], var: str) -> int:
    """N of a ``$var = N`` statement in *stmts* (nested blocks too), or 0."""
    for stmt in stmts:
        toks = list(flat(stmt))
        for k in range(len(toks) - 2):
            if (
                toks[k].kind == "var"
                and toks[k].text == var
                and toks[k + 1].is_op("=")
                and toks[k + 2].kind == "num"
            ):
                return perl_int(toks[k + 2].text) or 0
    return 0


def retry_wait(loop: list[Item], scope: list[list[Item]]) -> tuple[int, float]:
    """A lock retry loop's tries and pause: ``foreach (1 .. 5)``, ``$retry = 5; --$retry``,
    ``if (++$n > 5)``; ``sleep(1)``.  (0, 0) for a loop that does not sleep: not a retry
    loop (a ``foreach`` over lines that takes a lock inside it)."""
    toks = list(flat(loop))
    wait = 0.0
    retry = 0
    for k, tok in enumerate(toks):
        nxt = toks[k + 1 : k + 3]
        if tok.is_id("sleep", "select") and nxt:
            num = nxt[1] if nxt[0].is_op("(") and len(nxt) > 1 else nxt[0]
            value = perl_int(num.text) if num.kind == "num" else None
            if value:
                wait = float(value)
        if tok.is_op("..") and 0 < k < len(toks) - 1 and toks[k + 1].kind == "num":
            retry = perl_int(toks[k + 1].text) or retry
    if not wait:
        return 0, 0.0
    if not retry:
        for k, tok in enumerate(toks):
            if not tok.is_op("<", "<=", ">", ">=", "=="):
                continue
            left = toks[k - 1] if k else None
            right = toks[k + 1] if k + 1 < len(toks) else None
            pairs: list[tuple[Tok | None, Tok | None]] = [(right, left), (left, right)]
            for side, other in pairs:
                if side is None or side.kind != "num":
                    continue
                value = perl_int(side.text) or 0
                if value > 0 and value <= 1000:
                    retry = value
                elif value == 0 and other is not None and other.kind == "var":
                    retry = assigned_int(scope, other.text) or retry
    return retry, wait


def stale_seconds(toks: list[Tok]) -> int:
    """The age, in seconds, an age test compares with: ``-M $f > 600/86400``, ``time - 180``."""
    for k, tok in enumerate(toks):
        if tok.kind == "ft" and tok.text in AGE_TESTS:
            for j in range(k + 1, len(toks)):
                if toks[j].is_op(">", ">=", "<", "<="):
                    days = arith(toks[j + 1 :])
                    return round(days * 86400) if days is not None and days > 0 else 0
            return 0
    for k, tok in enumerate(toks):  # `time - $mtime > 60 * 10`
        if tok.is_op(">", ">="):
            value = arith(toks[k + 1 :])
            if value is not None and value >= 1:
                return round(value)
    nums = [perl_int(t.text) for t in toks if t.kind == "num"]
    seconds = [n for n in nums if n is not None and 10 <= n != 86400]
    return max(seconds) if seconds else 0


def tests_handle(items: list[Item], handle: str) -> bool:
    """True if statement *items* tests the handle variable: ``unless ($fh)``, ``$fh or die``."""
    toks = [t for t in items if isinstance(t, Tok)]
    if not any(t.kind == "var" and t.text == handle for t in toks):
        return False
    first = toks[0] if toks else None
    if first is not None and first.is_id("if", "unless"):
        return True
    if postfix_index(items) > 0:
        return True
    return any(t.is_id("or", "and", "defined") or t.is_op("||", "&&", "!") for t in toks)


def lexicals(stmts: Iterable[list[Item]]) -> set[str]:
    """Names declared with ``my``/``state`` anywhere in *stmts*."""
    names: set[str] = set()
    for items in stmts:
        declaring = False
        depth = 0
        for item in items:
            if isinstance(item, Block):
                names |= lexicals(item.stmts)
                continue
            if item.is_id("my", "state"):
                declaring, depth = True, 0
            elif declaring:
                if item.kind == "var" and item.text[:1] in "$@%":
                    names.add(item.text[1:])
                    declaring = depth > 0
                elif item.is_op("("):
                    depth += 1
                elif not item.is_op(","):
                    declaring = False  # `)` ends `my ($a, $b)`; anything else ends `my $a`
    return names
