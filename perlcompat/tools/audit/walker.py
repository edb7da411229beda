"""The walk: each scope statement by statement, recording events (:mod:`.model`).

Every scope (the main program, each named sub, each anonymous sub) is walked
statement by statement with a state: the handles open now (handle -> its ``open``:
mode, path, line), the locks held now (``flock`` on a handle, a call to a lock sub
such as ``&lock('dir')``, an inline ``mkdir``/``symlink``/``O_EXCL`` lock), the paths
known absent (after ``unless (-e $f)`` or a ``while (-f $lock) { sleep }`` wait) and
whether an age test encloses the statement.  ``if``/``elsif``/``else`` branches start
from the same state and are merged after; a branch that ends in
``exit``/``die``/``return``/``&error`` does not flow on, except to a labelled statement
(``WRITE:``, reached by ``goto``).  Each built-in the audit knows has a handler
(``_HANDLERS``) that turns it into events; the rules that depend on how a result is
used (unchecked-result, swallowed-flock, check-then-create) are found here.

The walk is line-oriented and per sub: it does not follow data through variables beyond
simple ``$name = "literal"`` assignments, and a sub's lock context comes from its call
sites in the scripts audited together.
"""

from __future__ import annotations

import re

from .facts import labelled, lexicals, perl_int, retry_wait, stale_seconds, tests_handle
from .findings import Finding, Policy
from .items import (
    call_args,
    first_line_of,
    handle_name,
    item_at,
    match_paren,
    postfix_index,
    tok_at,
)
from .lexer import Tok, lex
from .model import (
    AGE_TESTS,
    CREATE,
    EXISTS_TESTS,
    EXIT_WORDS,
    FLOCK_NAMES,
    LOCK_NB,
    LOCK_UN,
    LOCKISH,
    QUAL,
    SEEK_NAMES,
    STD_HANDLES,
    STMT,
    TRUNCATE,
    Ctx,
    Ev,
    Inst,
    Open,
    Path,
    Program,
    Result,
    Source,
    State,
    bare,
    merge,
)
from .parser import Block, parse
from .rules import check_then_create, swallowed_flock, unchecked_result
from .source import display
from .suggest import INTERP, LONE_VAR, lock_call, py_expr, py_name, py_string

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from .parser import Item


class Walker:
    def __init__(self, prog: Program, source: Source, scope: str, caller: bool) -> None:
        self.prog = prog
        self.src = source
        self.res = Result(source, scope)
        self.anon: list[Block] = []
        self.remove_keys: set[str] = set()
        self.lexicals: set[str] = {"_"}
        self.pending: dict[str, Finding] = {}  # unchecked open of $fh, unless tested next
        self.branches: list[tuple[int, int]] = []
        self.state = State()
        self.line = 1  # of the statement being walked: where a failure is reported
        self.scope_stmts: list[list[Item]] = []
        if caller:
            inst = Inst(prog.new_id(), "caller", "", 0, "the caller's lock")
            self.res.caller = inst.id
            self.res.insts[inst.id] = inst
            self.state.held[inst.id] = inst

    # -- recording ---------------------------------------------------------
    def find(
        self, policy: Policy, line: int, message: str, suggestion: str, severity: str = ""
    ) -> None:
        self.res.findings.append(policy.finding(self.src.name, line, message, suggestion, severity))

    def event(self, kind: str, line: int, st: State, **kw: Any) -> Ev:
        ev = Ev(kind, line, st.snapshot(), **kw)
        ev.branch = tuple(self.branches)
        self.res.events.append(ev)
        return ev

    def is_local(self, key: str) -> bool:
        """True if *key* still names a ``my`` variable of this scope (or ``$_``).

        ``$self->{file}`` is not local: the object's field names the same file in
        every method of this script (the key carries the script's name instead).
        """
        return any(n in self.lexicals for n in re.findall(r"\$(\w+)(?!\w|->\{)", key))

    def acquire(self, st: State, inst: Inst) -> None:
        inst.local = self.is_local(inst.key)
        self.res.insts[inst.id] = inst
        self.event("acquire", inst.line, st, inst=inst)
        st.held[inst.id] = inst

    def release(self, st: State, line: int, inst: Inst) -> None:
        st.held.pop(inst.id, None)
        self.event("release", line, st, inst=inst)

    # -- paths and constants ----------------------------------------------
    def resolve(self, raw: str) -> str:
        consts = self.src.consts
        shared = self.src.shared

        def sub(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            if name in self.lexicals:
                return "$" + name  # a `my` variable is not the file-level one
            return consts.get(name, shared.get(name, match.group(0)))

        for _ in range(4):
            new = INTERP.sub(sub, raw)
            if new == raw:
                break
            raw = new
        return _normalize(raw)

    def path(self, items: Sequence[Item], head: str | None = None) -> Path:
        """The file named by expression *items* (*head* replaces the first string's body)."""
        raw: list[str] = []
        text = ""
        py: list[str] = []
        joined = False  # a `.` since the last piece
        for n, item in enumerate(items):
            if isinstance(item, Block):
                piece, raw_piece, py_piece = "{...}", "{...}", "path"
            elif item.is_op("."):
                joined = True
                continue
            elif item.kind == "str":
                body = (head if (n == 0 and head is not None) else item.text).strip()
                interp = item.extra in ('"', "qq", "heredoc")
                raw_piece = INTERP.sub(lambda m: "$" + (m.group(1) or m.group(2)), body)
                lone = LONE_VAR.fullmatch(body)
                quote = '"' if interp else "'"
                piece = "$" + lone.group(1) if interp and lone else quote + body + quote
                py_piece = py_string(body, interp) if body else ""
                if not body:
                    piece = ""
            elif item.kind == "var":
                piece = raw_piece = item.text
                py_piece = py_name(item.text)
            else:
                piece = raw_piece = py_piece = item.text
            raw.append(raw_piece)
            if py_piece:
                py.append(py_piece)
            if piece:
                text += (" . " if joined and text else "") + piece
                joined = False
        key = self.resolve("".join(raw).strip())
        shown = display(text or "''")
        py_text = py_expr(items, head)
        local = self.is_local(key)
        if "$" in key or "{...}" in key:
            # Still a variable (an object field, `$ENV{...}`, a `my`): its value is this
            # script's own, so the key names nothing in another script.
            key = f"{self.src.name}{QUAL}{key}"
        return Path(key, shown, py_text, local)

    # -- blocks and statements --------------------------------------------
    def walk(self, stmts: list[list[Item]]) -> Result:
        self.scope_stmts = stmts
        self.lexicals |= lexicals(stmts)
        self.remove_keys = self.scan_removals(stmts)
        self.block(stmts, self.state, STMT)
        self.res.end_held = list(self.state.held.values())
        return self.res

    def scan_removals(self, stmts: Iterable[list[Item]]) -> set[str]:
        """Keys this scope passes to ``rmdir``/``unlink``: a ``mkdir`` of one is a lock."""
        keys: set[str] = set()
        for items in stmts:
            for k, item in enumerate(items):
                if isinstance(item, Block):
                    keys |= self.scan_removals(item.stmts)
                elif item.is_id("rmdir", "unlink"):
                    args, _, _ = call_args(items, k)
                    keys.update(self.path(a).key for a in args)
        return keys

    def find_unchecked(self, handle: str, line: int, message: str, suggestion: str) -> None:
        """An unchecked open; ``open(my $fh, ...); unless ($fh) {...}`` checks it after all."""
        finding = unchecked_result.POLICY.finding(self.src.name, line, message, suggestion)
        if handle.startswith("$"):
            self.pending[handle] = finding
        else:
            self.res.findings.append(finding)

    def block(self, stmts: list[list[Item]], st: State, ctx: Ctx) -> bool:
        """Walk statements; True if the block ends by leaving (exit, die, return, &error)."""
        leaves = False
        for items in stmts:
            if leaves:
                if not labelled(items):
                    continue
                leaves = False  # `WRITE: ...` after an exit is reached by `goto WRITE`
            waiting, self.pending = self.pending, {}
            for handle, finding in waiting.items():
                if not tests_handle(items, handle):
                    self.res.findings.append(finding)
            self.stmt(items, st, ctx)
            if self.is_exit(items):
                leaves = True
        self.res.findings.extend(self.pending.values())
        self.pending = {}
        return leaves

    def is_exit(self, items: list[Item]) -> bool:
        first = tok_at(items, 0)
        if first is None or first.kind != "id" or postfix_index(items) > 0:
            return False
        if first.text in EXIT_WORDS and not first.extra:
            return True
        return self.prog.exits(self.src, first.text)

    def stmt(self, items: list[Item], st: State, ctx: Ctx) -> None:
        if not items:
            return
        first = items[0]
        self.line = first.line
        if isinstance(first, Block):
            self.block(first.stmts, st, ctx)
            if len(items) > 1:
                self.stmt(items[1:], st, ctx)
            return
        if first.kind == "id" and not first.extra:
            word = first.text
            if word in ("if", "unless"):
                self.chain(items, st, ctx)
                return
            if word in ("while", "until", "for", "foreach") and isinstance(items[-1], Block):
                self.loop(items, st, ctx)
                return
            name_tok = tok_at(items, 1)
            if (
                word == "sub"
                and isinstance(items[-1], Block)
                and name_tok
                and name_tok.kind == "id"
            ):
                return  # a named sub: walked as its own scope
            if word in ("package", "use", "no", "require", "format"):
                return
            if word == "do" and len(items) > 1 and isinstance(items[1], Block):
                self.block(items[1].stmts, st, ctx)
                rest = items[2:]
                if rest and isinstance(rest[0], Tok) and rest[0].is_id("while", "until"):
                    self.expr(rest[1:], st, Ctx(cond=True, loop=True, eval_=ctx.eval))
                elif rest:
                    self.expr(rest, st, ctx)
                return
            if labelled(items) and len(items) > 2:
                while labelled(items) and len(items) > 2:
                    items = items[2:]  # `A: B: stmt`
                self.stmt(items, st, ctx)
                return
        k = postfix_index(items)
        if k < 0:
            self.expr(items, st, ctx)
            return
        mod_tok = items[k]
        assert isinstance(mod_tok, Tok)
        modifier = mod_tok.text
        cond = items[k + 1 :]
        self.expr(cond, st, Ctx(cond=True, loop=modifier in ("while", "until"), eval_=ctx.eval))
        saved_absent, saved_age = dict(st.absent), st.age
        facts = _cond_facts(self, cond)
        if modifier == "unless" and facts.single_present:
            st.absent[facts.single_present] = (facts.line, False)
        if modifier == "if":
            for key in facts.absent_if_true:
                st.absent[key] = (facts.line, False)
        if facts.age:
            st.age = facts.line
        self.expr(items[:k], st, ctx)
        st.absent, st.age = saved_absent, saved_age
        if modifier == "if" and facts.single_present and self.is_exit(items[:k]):
            st.absent[facts.single_present] = (facts.line, False)  # `return if -e $f;`

    def chain(self, items: list[Item], st: State, ctx: Ctx) -> None:
        """``if``/``unless`` ... ``elsif`` ... ``else``: branches from one state, merged."""
        age = st.age
        ends: list[State] = []
        later_absent: dict[str, tuple[int, bool]] = {}
        k = 0
        has_else = False
        chain_id = self.prog.new_id()
        arm = 0
        while k < len(items):
            word = tok_at(items, k)
            if (
                word is not None
                and word.is_id("if", "unless", "elsif")
                and tok_at(items, k + 1) is not None
            ):
                close = match_paren(items, k + 1)
                cond = items[k + 2 : close]
                body = items[close + 1] if close + 1 < len(items) else None
                self.expr(cond, st, Ctx(cond=True, eval_=ctx.eval))
                facts = _cond_facts(self, cond)
                branch = st.copy()
                branch.absent.update(later_absent)
                if word.text == "unless":
                    if facts.single_present:
                        branch.absent[facts.single_present] = (facts.line, False)
                else:
                    for key in facts.absent_if_true:
                        branch.absent[key] = (facts.line, False)
                    if facts.single_present:
                        later_absent[facts.single_present] = (facts.line, False)
                if facts.age:
                    branch.age = facts.line
                if isinstance(body, Block):
                    self.branches.append((chain_id, arm))
                    if not self.block(body.stmts, branch, ctx):
                        ends.append(branch)
                    self.branches.pop()
                else:
                    ends.append(branch)
                arm += 1
                k = close + 2
                continue
            if word is not None and word.is_id("else") and isinstance(item_at(items, k + 1), Block):
                has_else = True
                branch = st.copy()
                branch.absent.update(later_absent)
                body = items[k + 1]
                assert isinstance(body, Block)
                self.branches.append((chain_id, arm))
                if not self.block(body.stmts, branch, ctx):
                    ends.append(branch)
                self.branches.pop()
                k += 2
                continue
            self.expr(items[k:], st, ctx)
            break
        if not has_else:
            fall = st.copy()
            fall.absent.update(later_absent)  # `if (-e $f) { return }` leaves $f absent
            ends.append(fall)
        if ends:
            st.assign(merge(ends, age))

    def loop(self, items: list[Item], st: State, ctx: Ctx) -> None:
        head = items[0]
        assert isinstance(head, Tok)
        word = head.text
        body = items[-1]
        assert isinstance(body, Block)
        open_at = next(
            (k for k, it in enumerate(items) if isinstance(it, Tok) and it.is_op("(")), -1
        )
        cond: list[Item] = []
        if open_at > 0:
            cond = items[open_at + 1 : match_paren(items, open_at)]
        age = st.age
        before = len(self.res.events)
        self.expr(cond, st, Ctx(cond=True, loop=word in ("while", "until"), eval_=ctx.eval))
        facts = _cond_facts(self, cond)
        branch = st.copy()
        if facts.age:
            branch.age = facts.line
        ends = [st.copy()]
        if not self.block(body.stmts, branch, ctx):
            ends.append(branch)
        taken = [
            e.inst
            for e in self.res.events[before:]
            if e.kind == "acquire" and e.inst is not None and e.inst.kind != "flock"
        ]
        if taken:
            retry, wait = retry_wait(items, self.scope_stmts)
            for inst in taken:
                inst.retry = inst.retry or retry
                inst.wait = inst.wait or wait
        merged = merge(ends, age)
        if word == "while" and facts.single_present:
            merged.absent[facts.single_present] = (facts.line, True)
        if word == "until" and len(facts.absent_if_true) == 1:
            merged.absent[facts.absent_if_true[0]] = (facts.line, True)
        st.assign(merged)

    # -- expressions -------------------------------------------------------
    def expr(self, items: Sequence[Item], st: State, ctx: Ctx) -> None:
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item, Block):
                self.inner_block(item, st, ctx)
                i += 1
                continue
            if item.kind == "id":
                prev = tok_at(items, i - 1)
                nxt = tok_at(items, i + 1)
                if (
                    (
                        prev is not None
                        and (prev.is_op("->", "\\") or prev.is_id("defined", "exists"))
                    )
                    or (nxt is not None and nxt.is_op("=>"))
                    or (prev is not None and prev.is_op("{") and nxt is not None and nxt.is_op("}"))
                ):
                    i += 1
                    continue
                name = item.text[6:] if item.text.startswith("CORE::") else item.text
                handler = None if item.extra else _HANDLERS.get(name)
                if handler is not None:
                    i = handler(self, items, i, st, ctx)
                    continue
                if (
                    item.extra == "&"
                    or name in self.prog.subs
                    or (
                        nxt is not None
                        and nxt.is_op("(")
                        and self.prog.classify(name, source=self.src)
                    )
                ):
                    self.user_call(items, i, st, ctx)
            elif item.kind == "rl" and item.text and item.text not in STD_HANDLES:
                self.handle_event("read", item.text, item.line, st)
            i += 1

    def inner_block(self, block: Block, st: State, ctx: Ctx) -> None:
        if block.kind == "anonsub":
            self.anon.append(block)
        elif block.kind in ("handle",):
            return
        else:
            self.block(block.stmts, st, Ctx(eval_=ctx.eval))

    def used(self, items: Sequence[Item], i: int, end: int, ctx: Ctx) -> bool:
        """True if the value of the call at *i* (ending before *end*) is looked at."""
        return ctx.cond or i > 0 or end < len(items)

    def handle_event(self, kind: str, handle: str, line: int, st: State, **kw: Any) -> Ev | None:
        op = st.handles.get(handle)
        if op is None:
            return None
        return self.event(kind, line, st, open_=op, path=op.path, **kw)

    def close_handle(self, handle: str, line: int, st: State) -> None:
        op = st.handles.pop(handle, None)
        if op is None:
            return
        for inst in [h for h in st.held.values() if h.open is op]:
            self.release(st, line, inst)
        self.event("close", line, st, open_=op, path=op.path)

    def pseudo_open(self, handle: str, st: State) -> Open:
        """A handle used here but opened elsewhere (another sub)."""
        op = Open(handle, "?", False, Path(f"<{handle}>", handle, py_name(handle)), 0, frozenset())
        st.handles[handle] = op
        return op

    # -- user subs -----------------------------------------------------------
    def user_call(self, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> None:
        tok = items[i]
        assert isinstance(tok, Tok)
        name = tok.text
        line = tok.line
        paren = tok_at(items, i + 1)
        kind = self.prog.classify(name, tok.extra == "&", self.src)
        if not kind:
            self.res.calls.append((name, st.snapshot(), line))
            self.event("call", line, st, via=name)
            return
        if name.split("::")[-1].split("'")[-1] not in self.prog.subs:
            self.res.unknown.append((("&" if tok.extra else "") + name, line, kind))
        args, end, _ = call_args(items, i)
        if tok.extra == "&" and not (paren is not None and paren.is_op("(")):
            args, end = [], i + 1  # `&lock;` passes the caller's @_
        first = self.path(args[0]) if args else None
        key = first.key if first is not None else f"{name}()"
        if first is None and any(s is self.src for s, _ in self.prog.subs.get(name, [])):
            key = f"{self.src.name}{QUAL}{key}"  # this script's own sub: its own lock
        shown = f"&{name}({first.text if first else ''})"
        if kind == "lock":
            if not self.used(items, i, end, ctx) and self.prog.fails(self.src, name):
                self.find(
                    unchecked_result.POLICY,
                    line,
                    f"{display(shown)} returns 0 when the lock is busy, and the result is not "
                    "checked: the script goes on without the lock",
                    lock_call(self.prog, self.src, first.py if first else '"lockdir"', sub=name),
                )
            inst = Inst(self.prog.new_id(), "sub", key, line, shown, name=first.py if first else "")
            self.acquire(st, inst)
        elif kind == "unlock":
            held = [h for h in st.held.values() if h.kind == "sub"]
            match = [h for h in held if h.key == key] or (held[-1:] if not args else [])
            for inst in match:
                self.release(st, line, inst)
            self.event(
                "remove",
                line,
                st,
                path=first or Path(key, shown, '"lockdir"'),
                via=name,
                age=st.age,
            )


# -- built-in handlers -------------------------------------------------------


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


def _h_open(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
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


def _h_sysopen(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
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


def _flock_op(w: Walker, arg: Sequence[Item]) -> int | None:
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


def _h_flock(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
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


def _h_close(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
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
    if nxt.kind == "id" and not nxt.extra and nxt.text not in _HANDLERS:
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


def _h_print(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    handle, _ = _print_handle(items, i)
    if handle is not None and handle not in STD_HANDLES:
        w.handle_event("write", handle, items[i].line, st, via="print")
    return i + 1


def _h_first_handle(kind: str) -> Handler:
    def handler(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
        args, _, _ = call_args(items, i)
        if args:
            handle = handle_name(args[0])
            if handle is not None and handle not in STD_HANDLES:
                tok = items[i]
                assert isinstance(tok, Tok)
                w.handle_event(kind, handle, tok.line, st, via=tok.text)
        return i + 1

    return handler


def _h_truncate(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
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


def _h_seek(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = call_args(items, i)
    if len(args) >= 3:
        handle = handle_name(args[0])
        whence = _int_value(w, args[2], SEEK_NAMES)
        if handle is not None:
            w.handle_event("seek", handle, items[i].line, st, value=whence)
    return i + 1


def _int_value(w: Walker, arg: Sequence[Item], names: dict[str, int]) -> int | None:
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


def _h_rename(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
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
    if ctx.loop and w.used(items, i, end, ctx):
        inst = Inst(
            w.prog.new_id(), "rename", src.key, line, f"rename({src.text}, ...)", name=src.py
        )
        w.acquire(st, inst)
        return i + 1
    w.event("write", line, st, path=dst, via="rename", source=src)
    return i + 1


def _h_remove(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
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

    def handler(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
        args, end, _ = call_args(items, i)
        if len(args) <= path_arg:
            return i + 1
        path = w.path(args[path_arg])
        lockish = ctx.loop or bool(LOCKISH.search(bare(path.key))) or path.key in w.remove_keys
        if w.used(items, i, end, ctx) and lockish:
            line = items[i].line
            inst = Inst(w.prog.new_id(), kind, path.key, line, f"{kind}({path.text})", name=path.py)
            w.acquire(st, inst)
        return i + 1

    return handler


def _h_alarm(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = call_args(items, i)
    value = _int_value(w, args[0], {}) if args else None
    if args and value is None:
        value = -1  # not a literal: assume it sets an alarm
    w.event("alarm", items[i].line, st, value=value if args else 0)
    return i + 1


def _h_eval(w: Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
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


if TYPE_CHECKING:
    from collections.abc import Callable

    Handler = Callable[[Walker, Sequence[Item], int, State, Ctx], int]

_HANDLERS: dict[str, Handler] = {
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
    "eval": _h_eval,
}


class _Facts:
    __slots__ = ("absent_if_true", "age", "line", "single_present", "stale_after")

    def __init__(self) -> None:
        self.absent_if_true: list[str] = []
        self.single_present = ""
        self.age = False
        self.line = 0
        self.stale_after = 0


def _cond_facts(w: Walker, cond: Sequence[Item]) -> _Facts:
    """File-existence and age facts a condition establishes."""
    facts = _Facts()
    facts.line = first_line_of(cond)
    toks = [t for t in cond if isinstance(t, Tok)]
    disjunction = any(t.is_op("||") or t.is_id("or") for t in toks)
    tests: list[tuple[str, bool]] = []
    for k, tok in enumerate(cond):
        if not isinstance(tok, Tok):
            continue
        if tok.kind == "ft" and tok.text in AGE_TESTS:
            facts.age = True
        if tok.is_id("stat", "lstat", "time") or (tok.kind == "var" and tok.text == "$^T"):
            facts.age = True
        if tok.kind == "ft" and tok.text in EXISTS_TESTS:
            target = item_at(cond, k + 1)
            if isinstance(target, Tok) and target.is_op("("):
                close = match_paren(cond, k + 1)
                path_items = list(cond[k + 2 : close])
            elif isinstance(target, Tok):
                path_items = [target]
            else:
                continue
            prev = tok_at(cond, k - 1)
            negated = prev is not None and (prev.is_op("!") or prev.is_id("not"))
            tests.append((w.path(path_items).key, negated))
    if facts.age:
        facts.stale_after = stale_seconds(toks)
        if facts.stale_after:
            w.res.stale_at[facts.line] = facts.stale_after
    if not disjunction:
        facts.absent_if_true = [key for key, neg in tests if neg]
        plain = [t for t in toks if not t.is_op("(", ")")]
        if len(tests) == 1 and not tests[0][1] and len(plain) == 2:
            facts.single_present = tests[0][0]
    return facts


def _normalize(key: str) -> str:
    key = re.sub(r"\s+", " ", key.strip())
    key = re.sub(r"/{2,}", "/", key)
    while key.startswith("./"):
        key = key[2:]
    return key
