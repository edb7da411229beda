"""What a file defines, read before any walk: its subs, constants, ``require``s, error sub.

A call runs the calling file's own sub of that name if it has one, else that of the
files it ``require``s or ``do``es, else any audited file's (scripts sharing a library):
a lock sub of one script does not make a same-named sub of another a lock.  A sub that
always leaves (``exit``, ``die``, ``&error``) ends a branch where it is called; a lock
sub that can return 0 makes an unchecked call of it a finding.
"""

from __future__ import annotations

from .items import flat, item_at, postfix_index, tok_at
from .lexer import Tok
from .model import EXIT_NAME, Program, Source, bare
from .parser import Block
from .walker import Walker

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .parser import Item


def collect_subs(stmts: list[list[Item]], source: Source, prog: Program) -> None:
    for items in stmts:
        first, second = tok_at(items, 0), tok_at(items, 1)
        if (
            first is not None
            and first.is_id("sub")
            and second is not None
            and second.kind == "id"
            and isinstance(items[-1], Block)
        ):
            prog.subs.setdefault(second.text.split("::")[-1].split("'")[-1], []).append(
                (source, items[-1])
            )
            collect_subs(items[-1].stmts, source, prog)
            continue
        for item in items:
            if isinstance(item, Block) and item.kind != "anonsub":
                collect_subs(item.stmts, source, prog)


def collect_consts(stmts: list[list[Item]], source: Source) -> dict[str, str]:
    """``$name = "literal"`` assignments of global names, made once.

    At file level (``my``/``our`` included) and inside blocks and subs (``my``/``local``
    there are scoped and skipped): a script that sets ``$datafile`` in ``eval { }`` or
    in its ``sub main`` names the same file as one that sets it at the top.
    """
    seen: dict[str, list[str]] = {}
    walker_path = Walker(Program(), source, "", False)
    _consts_in(stmts, walker_path, seen, False)
    return {name: values[0] for name, values in seen.items() if len(set(values)) == 1}


def _consts_in(
    stmts: list[list[Item]], walker_path: Walker, seen: dict[str, list[str]], inner: bool
) -> None:
    for items in stmts:
        for item in items:
            if isinstance(item, Block) and item.kind != "anonsub":
                _consts_in(item.stmts, walker_path, seen, True)
        toks = [t for t in items if isinstance(t, Tok)]
        k = 0
        while k < len(toks) and toks[k].is_id("my", "our", "local"):
            if inner and not toks[k].is_id("our"):
                break
            k += 1
        if (k < len(toks) and toks[k].kind == "id") or k + 2 >= len(toks):
            continue
        if len(toks) != len(items):
            continue
        var, eq = toks[k], toks[k + 1]
        if var.kind != "var" or not var.text.startswith("$") or not eq.is_op("="):
            continue
        rhs = toks[k + 2 :]
        if not rhs or not all(t.kind in ("str", "var", "num") or t.is_op(".") for t in rhs):
            continue
        if any(t.kind == "str" and t.extra not in ('"', "'", "qq", "q") for t in rhs):
            continue
        path = walker_path.path(rhs)
        seen.setdefault(var.text[1:], []).append(bare(path.key))
        if len(rhs) == 1 and rhs[0].kind == "str" and "$" not in rhs[0].text:
            literals = walker_path.src.literals
            if literals.setdefault(var.text[1:], rhs[0].text) != rhs[0].text:
                literals[var.text[1:]] = ""  # two values: none is the one


def collect_requires(stmts: list[list[Item]]) -> set[str]:
    """The names ``require "x.pl"`` / ``do "lib/x.pl"`` load, as written, anywhere in *stmts*."""
    names: set[str] = set()
    for items in stmts:
        for k, item in enumerate(items):
            if isinstance(item, Block):
                names |= collect_requires(item.stmts)
                continue
            if not item.is_id("require", "do"):
                continue
            arg = item_at(items, k + 1)
            if isinstance(arg, Tok) and arg.is_op("("):
                arg = item_at(items, k + 2)
            if isinstance(arg, Tok) and arg.kind == "str" and arg.text.strip():
                names.add(arg.text.strip())
    return names


def shared_consts(source: Source, by_base: dict[str, list[Source]]) -> dict[str, str]:
    """Constants of the files *source* loads (transitively), where all of them agree."""
    seen: set[int] = {id(source)}
    todo = [source]
    values: dict[str, set[str]] = {}
    while todo:
        for base in sorted(todo.pop().requires):
            for lib in by_base.get(base, []):
                if id(lib) in seen:
                    continue
                seen.add(id(lib))
                todo.append(lib)
                for name, value in lib.consts.items():
                    values.setdefault(name, set()).add(value)
    return {name: next(iter(v)) for name, v in values.items() if len(v) == 1}


def loaded_sources(source: Source, by_base: dict[str, list[Source]]) -> list[Source]:
    """The files *source* ``require``s or ``do``es, and those they load in turn."""
    seen: list[Source] = [source]
    todo = [source]
    while todo:
        for base in sorted(todo.pop().requires):
            for lib in by_base.get(base, []):
                if lib not in seen:
                    seen.append(lib)
                    todo.append(lib)
    return seen[1:]


def find_error_sub(stmts: list[list[Item]]) -> str:
    """The first ``&error(...)``-style sub the script calls, or ``""``."""
    for items in stmts:
        for tok in flat(items):
            if tok.kind == "id" and tok.extra == "&" and EXIT_NAME.match(tok.text):
                return tok.text
    return ""


def sub_exits(block: Block) -> bool:
    for items in block.stmts:
        first = tok_at(items, 0)
        if first is not None and first.is_id("exit", "die", "croak") and postfix_index(items) < 0:
            return True
    return False


def sub_can_fail(block: Block) -> bool:
    """True if a lock sub has a ``return`` of anything but a true literal (``return 0``...)."""

    def true_literal(item: Item | None, after: Item | None) -> bool:
        if not isinstance(item, Tok) or (isinstance(after, Tok) and after.kind == "op"):
            return False  # `return mkdir(...) ? 1 : 0` can be false
        if item.kind == "num":
            return item.text.strip("0._") != ""
        return item.kind == "str" and item.text not in ("", "0")

    def scan(stmts: list[list[Item]]) -> bool:
        for items in stmts:
            for k, item in enumerate(items):
                if isinstance(item, Block):
                    if item.kind != "anonsub" and scan(item.stmts):
                        return True
                elif item.is_id("return") and not true_literal(
                    item_at(items, k + 1), item_at(items, k + 2)
                ):
                    return True
        return False

    return scan(block.stmts)


class Unit:
    def __init__(self, source: Source, stmts: list[list[Item]]) -> None:
        self.source = source
        self.stmts = stmts


def main_stmts(stmts: list[list[Item]]) -> list[list[Item]]:
    out = []
    for items in stmts:
        first, second = tok_at(items, 0), tok_at(items, 1)
        if first is not None and first.is_id("sub") and second is not None and second.kind == "id":
            continue
        out.append(items)
    return out
