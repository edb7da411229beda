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
(:mod:`.handlers`) that turns it into events; a call of a sub is followed here: a lock
sub takes a lock (unchecked-result when it may fail and its result is ignored), an
unlock sub releases it.

The walk is line-oriented and per sub: it does not follow data through variables beyond
simple ``$name = "literal"`` assignments, and a sub's lock context comes from its call
sites in the scripts audited together.
"""

from __future__ import annotations

import re

from .facts import labelled, lexicals, retry_wait, stale_seconds, tests_handle
from .findings import Finding, Policy
from .handlers import HANDLERS, fcntl_method
from .items import (
    call_args,
    first_line_of,
    item_at,
    match_paren,
    postfix_index,
    tok_at,
)
from .lexer import Tok
from .model import (
    AGE_TESTS,
    EXISTS_TESTS,
    EXIT_WORDS,
    QUAL,
    STD_HANDLES,
    STMT,
    Ctx,
    Ev,
    Inst,
    Open,
    Path,
    Program,
    Result,
    Source,
    State,
    merge,
)
from .parser import Block
from .rules import lock_order, unchecked_result
from .source import display
from .suggest import INTERP, LONE_VAR, lock_call, py_expr, py_name, py_string

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from .parser import Item


#: locks one walk tracks as held at once (Linux lockdep's ``MAX_LOCK_DEPTH`` is 48):
#: a lock taken beyond it is reported once (info) and not checked, so that the
#: audit of a script holding thousands at once stays linear.
MAX_HELD = 48


class Walker:
    def __init__(self, prog: Program, source: Source, scope: str, caller: bool) -> None:
        self.prog = prog
        self.src = source
        self.res = Result(source, scope)
        self.anon: list[Block] = []
        self.remove_keys: set[str] = set()
        self.rename_pairs: set[tuple[str, str]] = set()
        self.lexicals: set[str] = {"_"}
        self.pending: dict[str, Finding] = {}  # unchecked open of $fh, unless tested next
        self.branches: list[tuple[int, int]] = []
        self.state = State()
        self.line = 1  # of the statement being walked: where a failure is reported
        self.scope_stmts: list[list[Item]] = []
        self.too_deep = False  # past MAX_HELD locks held at once (reported once)
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
        if len(st.held) >= MAX_HELD:
            if not self.too_deep:
                self.too_deep = True
                self.find(
                    lock_order.POLICY,
                    inst.line,
                    f"{display(inst.text)} is taken while {len(st.held)} other locks are held:"
                    f" the audit tracks at most {MAX_HELD} locks held at once, so this one and"
                    " later ones are not checked (lock order, reads and writes under them)",
                    "",
                    "info",
                )
            return
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

    def lock_scope(self) -> bool:
        """True while walking a lock sub (``sub lock``, or one learned to return holding)."""
        scope = self.res.scope
        return scope in self.prog.subs and self.prog.classify(scope, source=self.src) == "lock"

    def literal(self, items: Sequence[Item]) -> str:
        """The path *items* as a Python string literal where the script fixes it, else "".

        ``$lockfile`` set once to ``"./lock/daycount.lock"`` gives that literal, as written.
        """
        if len(items) != 1 or not isinstance(items[0], Tok):
            return ""
        tok = items[0]
        if tok.kind == "var" and tok.text.startswith("$"):
            name = tok.text[1:].strip("{}")
            text = "" if name in self.lexicals else self.src.literals.get(name, "")
        elif tok.kind == "str" and "$" not in tok.text and "@" not in tok.text:
            text = tok.text
        else:
            return ""
        return py_string(text, False) if text.strip() else ""

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
        self.rename_pairs = self.scan_renames(stmts) | self.src.rename_pairs
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

    def scan_renames(self, stmts: Iterable[list[Item]]) -> set[tuple[str, str]]:
        """(from, to) keys of this scope's ``rename`` calls: a pair renamed back is a lock."""
        pairs: set[tuple[str, str]] = set()
        for items in stmts:
            for k, item in enumerate(items):
                if isinstance(item, Block):
                    pairs |= self.scan_renames(item.stmts)
                elif item.is_id("rename"):
                    args, _, _ = call_args(items, k)
                    if len(args) >= 2:
                        pairs.add((self.path(args[0]).key, self.path(args[1]).key))
        return pairs

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
                if prev is not None and prev.is_op("->") and item.text == "lock":
                    i = fcntl_method(self, items, i, st, ctx)  # File::FcntlLock's ->lock
                    continue
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
                handler = None if item.extra else HANDLERS.get(name)
                if handler is not None:
                    i = handler(self, items, i, st, ctx)
                    continue
                if name == "fork" and not item.extra:  # rules/fork_while_locked.py
                    self.event("fork", item.line, st)
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
