"""What each Perl built-in does to the walk: one handler per name, in :data:`HANDLERS`.

A handler gets the walk (:class:`Walk`, the part of :class:`.walker.Walker` it may use),
the statement's items, the index of the built-in and the state, records its events
(open, read, write, flock, acquire, remove, rename, alarm, seek) and returns the index
after the call.  The rules that depend on how a result is used are found here:
unchecked-result and swallowed-flock (``open``, ``sysopen``, ``flock``) and
check-then-create (``open`` of a path tested absent).
"""

from __future__ import annotations

import re

from .facts import perl_int
from .items import call_args, handle_name, item_at
from .lexer import Tok, lex
from .model import (
    CREATE,
    FLOCK_NAMES,
    LOCK_NB,
    LOCK_UN,
    LOCKISH,
    SEEK_NAMES,
    STD_HANDLES,
    TRUNCATE,
    Ctx,
    Inst,
    Open,
    bare,
)
from .parser import Block, parse
from .rules import check_then_create, swallowed_flock, unchecked_result
from .source import display
from .suggest import lock_call, py_name, py_string

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Protocol

    from .findings import Policy
    from .model import Ev, Path, Program, Result, Source, State
    from .parser import Item

    class Walk(Protocol):
        """What a handler may use of the walk (:class:`.walker.Walker`)."""

        prog: Program
        src: Source
        res: Result
        remove_keys: set[str]
        rename_pairs: set[tuple[str, str]]

        def literal(self, items: Sequence[Item]) -> str: ...
        def lock_scope(self) -> bool: ...

        def path(self, items: Sequence[Item], head: str | None = None) -> Path: ...
        def resolve(self, raw: str) -> str: ...
        def event(self, kind: str, line: int, st: State, **kw: Any) -> Ev: ...
        def handle_event(
            self, kind: str, handle: str, line: int, st: State, **kw: Any
        ) -> Ev | None: ...
        def acquire(self, st: State, inst: Inst) -> None: ...
        def release(self, st: State, line: int, inst: Inst) -> None: ...
        def close_handle(self, handle: str, line: int, st: State) -> None: ...
        def pseudo_open(self, handle: str, st: State) -> Open: ...
        def used(self, items: Sequence[Item], i: int, end: int, ctx: Ctx) -> bool: ...
        def find(
            self, policy: Policy, line: int, message: str, suggestion: str, severity: str = ""
        ) -> None: ...
        def find_unchecked(self, handle: str, line: int, message: str, suggestion: str) -> None: ...
        def block(self, stmts: list[list[Item]], st: State, ctx: Ctx) -> bool: ...
        def stmt(self, items: list[Item], st: State, ctx: Ctx) -> None: ...

    Handler = Callable[[Walk, Sequence[Item], int, State, Ctx], int]


def _handle_call(
    items: Sequence[Item], i: int, least: int
) -> tuple[list[list[Item]], int, bool, str] | None:
    """(arguments, end, a bare ``||`` among them, handle) of a call on a handle.

    None when it has fewer than *least* arguments or its first names no handle.
    """
    args, end, oror = call_args(items, i)
    if len(args) < least:
        return None
    handle = handle_name(args[0])
    return None if handle is None else (args, end, oror, handle)


def _h_open(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    call = _handle_call(items, i, 2)
    if call is None:
        return i + 1
    args, end, oror, handle = call
    line = items[i].line
    if len(args) == 2:
        mode, explicit, head, path_items = _two_arg_mode(args[1])
    else:
        mode, explicit = _three_arg_mode(args[2 - 1])
        head, path_items = None, args[2]
    if mode in ("pipe", "dup") or not path_items:
        return i + 1
    first = path_items[0]
    if isinstance(first, Tok) and first.is_op("\\"):
        return i + 1  # in-memory file
    path = w.path(path_items, head)
    w.close_handle(handle, line, st)
    op = Open(handle, mode, explicit, path, line, st.snapshot())
    st.handles[handle] = op
    w.res.opens.append(op)
    w.event("open", line, st, open_=op, path=path)
    py_handle = py_name(handle)
    if not w.used(items, i, end, ctx):
        why = (
            f"`||` binds to the file name {path.text}, not to open: the `die` never runs"
            if oror
            else "its result is not checked"
        )
        w.find_unchecked(
            "" if oror else handle,
            line,
            f"open({display(handle)}, ...) of {path.text}: {why}; when it fails, "
            + (
                "the script reads nothing and goes on as if the file were empty"
                if mode == "<"
                else "the flock and the writes that follow silently do nothing"
            )
            + f'. The faithful port is {py_handle} = open_("{op.py_mode}", {path.py}): '
            "a failed open_ returns a false handle that reads as empty and writes nothing, "
            "as Perl's does; the safer change is to stop there",
            f'{py_handle} = open_("{op.py_mode}", {path.py}) or die({_cant("open", path)})'
            "  # safer; the faithful port drops the `or die`",
        )
    if mode in CREATE and path.key in st.absent and not st.held:
        test_line, waited = st.absent[path.key]
        lockish = waited or bool(LOCKISH.search(bare(path.key)))
        if lockish:
            w.find(
                check_then_create.POLICY,
                line,
                f"{path.text} is tested absent on line {test_line} and created here: two "
                'processes can both see it missing and both "take" the lock',
                lock_call(w.prog, w.src, path.py, method="excl") + "  # one atomic O_EXCL create",
            )
            inst = Inst(
                w.prog.new_id(), "file", path.key, line, f"open(>{path.text})", name=path.py
            )
            w.acquire(st, inst)
        elif mode in TRUNCATE:
            # `>>`/`+>>` after the test is the safe way to create a data file: it never
            # empties what another request wrote.  Only a truncating open loses data.
            w.find(
                check_then_create.POLICY,
                line,
                f"{path.text} is tested absent on line {test_line} and created here with "
                f"'{mode}': two first requests can both create it, and the second empties "
                "what the first wrote",
                f'{py_handle} = open_("+>>", {path.py})  # creates without emptying; then '
                f"flock({py_handle}, LOCK_EX) and test its size",
                severity="warning",
            )
    return i + 1


def _cant(what: str, path: Path) -> str:
    """``f"Can't open {name}: {OS_ERROR}"`` for a ``die`` in a suggestion."""
    if path.py.isidentifier():
        return f'f"Can\'t {what} {{{path.py}}}: {{OS_ERROR}}"'
    literal = re.fullmatch(r'"([^"\\{}]*)"', path.py)
    if literal:
        return f'f"Can\'t {what} {literal.group(1)}: {{OS_ERROR}}"'
    return f'f"Can\'t {what}: {{OS_ERROR}}"'


def _two_arg_mode(arg: list[Item]) -> tuple[str, bool, str | None, list[Item]]:
    """Mode, whether explicit, the path's first string body, and the path items."""
    first = arg[0]
    if isinstance(first, Tok) and first.kind == "str" and first.extra in ('"', "'", "qq", "q"):
        body = first.text
        if body.rstrip().endswith("|"):
            return "pipe", True, None, []
        match = re.match(r"\s*(\+?(?:>>|>|<)|\|)?\s*", body)
        assert match is not None
        mode = match.group(1)
        rest = body[match.end() :]
        if mode == "|":
            return "pipe", True, None, []
        if rest.startswith("&"):
            return "dup", True, None, []
        if not rest.strip() and len(arg) == 1:
            return "?", False, None, []
        if mode is None:
            return "<", False, rest, arg
        return mode, True, rest, arg
    if isinstance(first, Tok) and first.kind == "var":
        return "<", False, None, arg
    return "?", False, None, arg


def _three_arg_mode(arg: list[Item]) -> tuple[str, bool]:
    first = arg[0] if arg else None
    if isinstance(first, Tok) and first.kind == "str":
        match = re.match(r"\s*(\+?(?:>>|>|<)|-\||\|-)", first.text)
        if match:
            mode = match.group(1)
            if "|" in mode:
                return "pipe", True
            if "&" in first.text:
                return "dup", True
            return mode, True
    return "?", False


def _h_sysopen(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    call = _handle_call(items, i, 3)
    if call is None:
        return i + 1
    args, end, _, handle = call
    line = items[i].line
    flags = {t.text.split("::")[-1] for t in args[2] if isinstance(t, Tok) and t.kind == "id"}
    if "O_RDWR" in flags:
        mode = "+>" if "O_TRUNC" in flags else "+<"
    elif "O_WRONLY" in flags:
        mode = ">" if "O_TRUNC" in flags else (">>" if "O_APPEND" in flags else "+<")
    elif flags and all(f.startswith("O_") for f in flags):
        mode = "<"
    else:
        mode = "?"  # flags in a variable
    path = w.path(args[1])
    w.close_handle(handle, line, st)
    op = Open(handle, mode, True, path, line, st.snapshot())
    st.handles[handle] = op
    w.res.opens.append(op)
    w.event("open", line, st, open_=op, path=path)
    used = w.used(items, i, end, ctx)
    if "O_EXCL" in flags and "O_CREAT" in flags and used:
        inst = Inst(
            w.prog.new_id(), "excl", path.key, line, f"sysopen({path.text}, O_EXCL)", name=path.py
        )
        w.acquire(st, inst)
    elif not used:
        w.find_unchecked(
            handle,
            line,
            f"sysopen({display(handle)}, {path.text}, ...): its result is not checked",
            f'{py_name(handle)} = open_("{op.py_mode}", {path.py}) or die({_cant("open", path)})',
        )
    return i + 1


def _flock_op(w: Walk, arg: Sequence[Item]) -> int | None:
    value = 0
    seen = False
    for item in arg:
        if not isinstance(item, Tok):
            return None
        if item.kind == "num":
            number = perl_int(item.text)
            if number is None:
                return None
            value |= number
            seen = True
        elif item.kind == "id":
            name = item.text.split("::")[-1]
            if name not in FLOCK_NAMES:
                return None
            value |= FLOCK_NAMES[name]
            seen = True
        elif item.kind == "var":
            const = w.resolve(item.text)
            if not const.isdigit():
                return None
            value |= int(const)
            seen = True
        elif not item.is_op("|", "+", "(", ")"):
            return None
    return value if seen else None


def _op_text(arg: Sequence[Item]) -> str:
    return " ".join(t.text for t in arg if isinstance(t, Tok))


def _h_flock(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    call = _handle_call(items, i, 2)
    if call is None:
        return i + 1
    args, end, _, handle = call
    line = items[i].line
    op_value = _flock_op(w, args[1])
    op = st.handles.get(handle) or w.pseudo_open(handle, st)
    shown = f"flock({display(handle)}, {display(_op_text(args[1]))})"
    py_handle = py_name(handle)
    py_op = _py_flock(op_value)
    unlocking = op_value is not None and bool(op_value & LOCK_UN)
    if not w.used(items, i, end, ctx) and not unlocking:
        if ctx.eval:
            w.find(
                swallowed_flock.POLICY,
                line,
                f"{shown} inside an eval whose result is ignored: a failed or unsupported "
                "flock is hidden and the script runs without the lock",
                f'flock({py_handle}, {py_op}) or die(f"Can\'t flock: {{OS_ERROR}}")',
            )
        else:
            w.find(
                unchecked_result.POLICY,
                line,
                f"{shown}: its result is not checked; "
                + (
                    "when the lock is busy it returns 0 at once"
                    if op_value is not None and op_value & LOCK_NB
                    else "when it fails (a handle that did not open, EINTR, EBADF) it returns 0"
                )
                + ", and the script goes on without the lock",
                f'flock({py_handle}, {py_op}) or die(f"Can\'t flock: {{OS_ERROR}}")',
            )
    for inst in [h for h in st.held.values() if h.open is op]:
        w.release(st, line, inst)
    if op_value is not None and op_value & LOCK_UN:
        w.event("flock", line, st, open_=op, path=op.path, value=op_value)
        return i + 1
    inst = Inst(
        w.prog.new_id(),
        "flock",
        op.path.key,
        line,
        shown,
        name=op.path.py,
        blocking=op_value is None or not op_value & LOCK_NB,
        open_=op,
    )
    w.event("flock", line, st, open_=op, path=op.path, value=op_value, inst=inst)
    w.acquire(st, inst)
    return i + 1


def _py_flock(value: int | None) -> str:
    if value is None:
        return "LOCK_EX"
    names = [n for n, v in FLOCK_NAMES.items() if value & v]
    return " | ".join(names) or "LOCK_EX"


def _h_close(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = call_args(items, i)
    if args:
        handle = handle_name(args[0])
        if handle is not None:
            w.close_handle(handle, items[i].line, st)
    return i + 1


_INFIX_WORDS = frozenset(
    {"x", "eq", "ne", "lt", "gt", "le", "ge", "cmp", "and", "or", "xor", "if", "unless"}
)
_TERM_KINDS = frozenset({"str", "var", "num", "rl", "qw", "cast"})


def _print_handle(items: Sequence[Item], i: int) -> tuple[str | None, int]:
    """The handle a ``print``/``printf`` at *i* writes to, and where its list starts."""
    j = i + 1
    nxt = item_at(items, j)
    if isinstance(nxt, Tok) and nxt.is_op("("):
        j += 1
        nxt = item_at(items, j)
    if isinstance(nxt, Block) and nxt.kind == "handle":
        inner = [t for s in nxt.stmts for t in s if isinstance(t, Tok)]
        name = inner[0].text if inner else None
        return name, j + 1
    if not isinstance(nxt, Tok):
        return None, j
    after = item_at(items, j + 1)
    if nxt.kind == "id" and not nxt.extra and nxt.text not in HANDLERS:
        # `print OUT "x"` or `print OUT;`, but not `print foo(1)`, `print CONST . "x"`
        if isinstance(after, Tok) and after.kind == "op" and after.text not in ("-", "\\"):
            return None, j
        return nxt.text, j + 1
    if (
        nxt.kind == "var"
        and nxt.text.startswith("$")
        and isinstance(after, Tok)
        and (after.kind in _TERM_KINDS or (after.kind == "id" and after.text not in _INFIX_WORDS))
    ):
        return nxt.text, j + 1  # `print $fh "x"`, `print $fh @lines`
    return None, j


def _h_print(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    handle, _ = _print_handle(items, i)
    if handle is not None and handle not in STD_HANDLES:
        w.handle_event("write", handle, items[i].line, st, via="print")
    return i + 1


def _h_first_handle(kind: str) -> Handler:
    def handler(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
        args, _, _ = call_args(items, i)
        if args:
            handle = handle_name(args[0])
            if handle is not None and handle not in STD_HANDLES:
                tok = items[i]
                assert isinstance(tok, Tok)
                w.handle_event(kind, handle, tok.line, st, via=tok.text)
        return i + 1

    return handler


def _h_truncate(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = call_args(items, i)
    line = items[i].line
    if not args:
        return i + 1
    handle = handle_name(args[0])
    if handle is not None and handle in st.handles:
        w.handle_event("write", handle, line, st, via="truncate")
    elif not (len(args[0]) == 1 and isinstance(args[0][0], Tok) and args[0][0].kind == "id"):
        w.event("write", line, st, path=w.path(args[0]), via="truncate")
    return i + 1


def _h_seek(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = call_args(items, i)
    if len(args) >= 3:
        handle = handle_name(args[0])
        whence = _int_value(w, args[2], SEEK_NAMES)
        if handle is not None:
            w.handle_event("seek", handle, items[i].line, st, value=whence)
    return i + 1


def _int_value(w: Walk, arg: Sequence[Item], names: dict[str, int]) -> int | None:
    toks = [t for t in arg if isinstance(t, Tok) and not t.is_op("(", ")")]
    if len(toks) != 1:
        return None
    tok = toks[0]
    if tok.kind == "num":
        return perl_int(tok.text)
    if tok.kind == "id":
        return names.get(tok.text.split("::")[-1])
    if tok.kind == "var":
        const = w.resolve(tok.text)
        return int(const) if const.isdigit() else None
    return None


def _h_rename(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, end, _ = call_args(items, i)
    line = items[i].line
    if len(args) < 2:
        return i + 1
    src, dst = w.path(args[0]), w.path(args[1])
    held = {h.key: h for h in st.held.values() if h.kind not in ("flock", "caller")}
    if dst.key in held or src.key in held:
        if dst.key in held and held[dst.key].kind == "rename":
            w.release(st, line, held[dst.key])
        return i + 1
    used = w.used(items, i, end, ctx)
    # a lock sub whose rename another sub (the unlock sub) undoes: the data file renamed
    # away as the lock (in straight-line code read_write's unlocked-update says so instead)
    renamed_back = (dst.key, src.key) in w.rename_pairs and w.lock_scope()
    if used and (ctx.loop or renamed_back):
        inst = Inst(
            w.prog.new_id(), "rename", src.key, line, f"rename({src.text}, ...)", name=src.py
        )
        inst.form = {"method": '"rename"', "held": w.literal(args[1]) or dst.py}
        if w.literal(args[0]):
            inst.form["name"] = w.literal(args[0])
        if renamed_back:
            inst.form["data"] = "True"  # the data file itself renamed away while worked on
        w.acquire(st, inst)
        return i + 1
    w.event("write", line, st, path=dst, via="rename", source=src)
    return i + 1


def _h_remove(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = call_args(items, i)
    tok = items[i]
    assert isinstance(tok, Tok)
    for arg in args:
        path = w.path(arg)
        for inst in [h for h in st.held.values() if h.key == path.key and h.kind != "flock"]:
            w.release(st, tok.line, inst)
        w.event("remove", tok.line, st, path=path, via=tok.text, age=st.age)
    return i + 1


def _h_marker(kind: str, path_arg: int) -> Handler:
    """``mkdir``/``symlink``/``link``: a lock when its result decides and it is removed again."""

    def handler(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
        args, end, _ = call_args(items, i)
        if len(args) <= path_arg:
            return i + 1
        path = w.path(args[path_arg])
        lockish = ctx.loop or bool(LOCKISH.search(bare(path.key))) or path.key in w.remove_keys
        if w.used(items, i, end, ctx) and lockish:
            line = items[i].line
            inst = Inst(w.prog.new_id(), kind, path.key, line, f"{kind}({path.text})", name=path.py)
            inst.form = {"method": f'"{kind}"'} if kind != "mkdir" else {"method": ""}
            if w.literal(args[path_arg]):  # the path the script fixes (not a sub's parameter)
                inst.form["name"] = w.literal(args[path_arg])
            if kind == "symlink":
                target = _target_template(args[0])
                if target is None:
                    inst.form = {}  # a target we cannot read: no form to suggest
                elif target != "{pid}":  # symlink($$, ...) is the method's own target
                    inst.form["target"] = py_string(target, False)
            w.acquire(st, inst)
        return i + 1

    return handler


def _target_template(arg: Sequence[Item]) -> str | None:
    """A symlink target as a ``target=`` template (``"."``, ``"/{pid}"``); None if unknown."""
    if len(arg) != 1 or not isinstance(arg[0], Tok):
        return None
    tok = arg[0]
    if tok.kind == "var":
        return "{pid}" if tok.text == "$$" else None
    if tok.kind != "str":
        return None
    text = tok.text.replace("{", "{{").replace("}", "}}")
    if tok.extra in ('"', "qq"):
        text = text.replace("$$", "{pid}")
    return None if "$" in text or "@" in text or not text else text


#: File::FcntlLock's and Fcntl's lock functions.
_FCNTL_SET = {"F_SETLK": False, "F_SETLKW": True}


def _h_fcntl(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    """``fcntl(FH, F_SETLKW, $flock_struct)``: a POSIX record lock on the handle's file."""
    return _fcntl_lock(w, items, i, st, ctx, "fcntl")


def fcntl_method(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    """``$fs->lock($fh, F_SETLKW)`` (File::FcntlLock): a record lock; any other ``->lock`` no."""
    return _fcntl_lock(w, items, i, st, ctx, "->lock")


def _fcntl_lock(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx, how: str) -> int:
    call = _handle_call(items, i, 2)
    if call is None:
        return i + 1
    args, _end, _, handle = call
    function = [t for t in args[1] if isinstance(t, Tok)]
    if len(function) != 1 or function[0].text.split("::")[-1] not in _FCNTL_SET:
        return i + 1  # F_GETLK, F_GETFL ...: not a lock
    blocking = _FCNTL_SET[function[0].text.split("::")[-1]]
    line = items[i].line
    op = st.handles.get(handle) or w.pseudo_open(handle, st)
    mine = [h for h in st.held.values() if h.kind == "fcntl" and h.open is op]
    if mine:  # a second F_SETLK on a held handle: the F_UNLCK that releases it
        for inst in mine:
            w.release(st, line, inst)
        return i + 1
    shown = f"{how}({display(handle)}, {function[0].text})"
    inst = Inst(
        w.prog.new_id(), "fcntl", op.path.key, line, shown, name=op.path.py, blocking=blocking
    )
    inst.open = op
    w.acquire(st, inst)
    return i + 1


def _h_alarm(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = call_args(items, i)
    value = _int_value(w, args[0], {}) if args else None
    if args and value is None:
        value = -1  # not a literal: assume it sets an alarm
    w.event("alarm", items[i].line, st, value=value if args else 0)
    return i + 1


def _h_eval(w: Walk, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    """``eval {...}`` / ``eval "..."``: its last value is the eval's, checked if the eval is."""
    nxt = item_at(items, i + 1)
    if isinstance(nxt, Block):
        stmts = nxt.stmts
    elif isinstance(nxt, Tok) and nxt.kind == "str":
        stmts = parse(lex(nxt.text, nxt.line))
        for inner in stmts:
            for tok in inner:
                if isinstance(tok, Tok):
                    tok.line = nxt.line
    else:
        return i + 1
    used = w.used(items, i, i + 2, ctx)
    inner_ctx = Ctx(eval_=not used)
    if stmts:
        # Only the last statement's value is the eval's: the others are plain statements.
        w.block(stmts[:-1], st, Ctx(eval_=ctx.eval))
        w.stmt(stmts[-1], st, Ctx(cond=True) if used else inner_ctx)
    return i + 2


#: built-in name -> its handler.
HANDLERS: dict[str, Handler] = {
    "open": _h_open,
    "sysopen": _h_sysopen,
    "flock": _h_flock,
    "close": _h_close,
    "print": _h_print,
    "printf": _h_print,
    "say": _h_print,
    "syswrite": _h_first_handle("write"),
    "read": _h_first_handle("read"),
    "sysread": _h_first_handle("read"),
    "getc": _h_first_handle("read"),
    "readline": _h_first_handle("read"),
    "truncate": _h_truncate,
    "seek": _h_seek,
    "sysseek": _h_seek,
    "rename": _h_rename,
    "unlink": _h_remove,
    "rmdir": _h_remove,
    "mkdir": _h_marker("mkdir", 0),
    "symlink": _h_marker("symlink", 1),
    "link": _h_marker("link", 1),
    "alarm": _h_alarm,
    "fcntl": _h_fcntl,
    "eval": _h_eval,
}
