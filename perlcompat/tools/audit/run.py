"""``audit()``: the whole audit of scripts given together, in passes.

Parse every file (and the ``require``d files found beside a script, read for their subs
and constants only, their findings dropped); collect subs and constants; walk every scope
twice to learn which subs take a lock (by name or by what they leave held), how they
retry, and which subs are only ever called under a lock (walked as holding their
caller's lock; a sub never called is judged on its own); then the real walk, and the
rules (:func:`.registry.judge`).  Findings are sorted by file, line and rule, one per place
and rule.

Robustness.  A file that cannot be parsed, or whose walk or rules raise, becomes a
:class:`.findings.Problem` and is left out; the other files are audited as if it were absent.
"""

from __future__ import annotations

import os
import re

from .findings import Finding, Problem, internal
from .model import EXIT_NAME, Program, Result, Source
from .parser import Block, parse_checked
from .program import (
    Unit,
    collect_consts,
    collect_requires,
    collect_subs,
    find_error_sub,
    loaded_sources,
    main_stmts,
    shared_consts,
    sub_can_fail,
    sub_exits,
)
from .registry import judge
from .walker import Walker

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from .parser import Item


def _walk_all(
    prog: Program,
    units: list[Unit],
    failed: dict[str, Problem],
    tick: Callable[[], None] | None = None,
) -> list[Result]:
    """Walk every scope of every unit; a unit whose walk raises is recorded in *failed*."""
    by_source: dict[int, list[tuple[str, Block]]] = {}
    for name, defs in prog.subs.items():
        for source, block in defs:
            by_source.setdefault(id(source), []).append((name, block))
    results: list[Result] = []
    for unit in units:
        if tick is not None:
            tick()
        if unit.source.name in failed:
            continue
        queue: list[tuple[str, list[list[Item]], bool]] = [("main", main_stmts(unit.stmts), False)]
        for name, block in by_source.get(id(unit.source), []):
            caller = (unit.source.name, name) in prog.locked_context
            queue.append((name, block.stmts, caller))
        mine: list[Result] = []
        walker: Walker | None = None
        try:
            while queue:
                scope, stmts, caller = queue.pop(0)
                walker = Walker(prog, unit.source, scope, caller)
                mine.append(walker.walk(stmts))
                for n, anon in enumerate(walker.anon):
                    queue.append((f"{scope}:anon{n}@{anon.line}", anon.stmts, False))
        except Exception as exc:  # (never crash: report the file)
            line = walker.line if walker is not None else 1
            failed[unit.source.name] = Problem(unit.source.name, line, internal(exc))
            continue
        results.extend(mine)
    return results


def audit(
    sources: Iterable[tuple[str, str]],
    errors: list[Problem] | None = None,
    load: Callable[[str], str | None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    programs: list[Program] | None = None,
) -> list[Finding]:
    """Findings for Perl *sources*, given as (file name, latin-1 decoded text) pairs.

    A file that cannot be followed (see :func:`.parser.parse_checked`) is not audited; it is
    appended to *errors* as a :class:`Problem`.  With *load* (a path -> text or None
    reader), a ``require``d file that is not among *sources* is read from beside its
    script, for its subs and constants only.  *progress* is called with (steps done,
    steps in all) along the way.  *programs*, if given, gets the :class:`.model.Program`
    (what ``perlcompat port`` reads the lock subs from).  Never raises for any text.
    """
    problems: dict[str, Problem] = {}
    prog = Program()
    if programs is not None:
        programs.append(prog)
    units: list[Unit] = []
    libraries: set[str] = set()
    given = list(sources)
    todo = list(given)
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], 4 * (len(given) + len(libraries)))

    known = {re.split(r"[/\\]", name)[-1] for name, _ in given}
    while todo:
        name, text = todo.pop(0)
        tick()
        try:
            stmts, problem = parse_checked(text)
        except Exception as exc:  # (never crash: report the file)
            problems[name] = Problem(name, 1, internal(exc))
            continue
        if problem is not None:
            if name not in libraries:
                problems[name] = Problem(name, *problem)
            continue
        source = Source(name)
        source.library = name in libraries
        try:
            source.consts = collect_consts(stmts, source)
            raw_requires = collect_requires(stmts)
            collect_subs(stmts, source, prog)
            # a rename in one sub undone in another (lock/unlock subs): a rename lock
            source.rename_pairs = Walker(prog, source, "", False).scan_renames(stmts)
        except Exception as exc:
            problems[name] = Problem(name, 1, internal(exc))
            continue
        source.requires = {re.split(r"[/\\]", r)[-1] for r in raw_requires}
        source.error_sub = find_error_sub(stmts)
        for raw in sorted(raw_requires):
            base = re.split(r"[/\\]", raw)[-1]
            if base in known:
                continue
            lib_text = None
            if load is not None and not raw.startswith(("/", "\\")) and "$" not in raw:
                lib_path = os.path.join(os.path.dirname(name), raw)
                lib_text = load(lib_path)
                if lib_text is not None:
                    known.add(base)
                    libraries.add(lib_path)
                    todo.append((lib_path, lib_text))
            if lib_text is None:
                source.missing.append(raw)
        prog.sources.append(source)
        units.append(Unit(source, stmts))
    by_base: dict[str, list[Source]] = {}
    for source in prog.sources:
        by_base.setdefault(re.split(r"[/\\]", source.name)[-1], []).append(source)
    for source in prog.sources:
        source.shared = shared_consts(source, by_base)
        source.loads = loaded_sources(source, by_base)
    for name, defs in prog.subs.items():
        for source, block in defs:
            if sub_exits(block) or EXIT_NAME.match(name):
                prog.exit_subs.add((source.name, name))
    # Pass 1: learn which subs lock (by name or by what they leave held) and their callers.
    first = _walk_all(prog, units, problems, tick)
    for res in first:
        kept = any(
            h.kind in ("flock", "fcntl", "mkdir", "symlink", "link", "excl", "file")
            for h in res.end_held
        )
        if res.scope in prog.subs and not prog.classify(res.scope, source=res.source) and kept:
            prog.sub_class[(res.source.name, res.scope)] = "lock"  # returns holding what it took
    for name, defs in prog.subs.items():
        for source, block in defs:
            if prog.classify(name, source=source) == "lock" and sub_can_fail(block):
                prog.can_fail.add((source.name, name))
    first = _walk_all(prog, units, problems, tick)
    for res in first:
        if prog.classify(res.scope, source=res.source) == "lock":
            tries = [(i.retry, i.wait) for i in res.insts.values() if i.retry or i.wait]
            stale = max(res.stale_at.values(), default=0)
            if tries or stale:
                retry, wait = tries[0] if tries else (0, 0.0)
                prog.styles.setdefault((res.source.name, res.scope), (retry, wait, stale))
            forms = [i.form for i in sorted(res.insts.values(), key=lambda i: i.line) if i.form]
            if forms:  # the first branch's (daycount.cgi: symlink for $lockkey 1, mkdir for 2)
                prog.forms.setdefault((res.source.name, res.scope), forms[0])
    calls: dict[tuple[str, str], list[bool]] = {}
    callee: dict[tuple[str, str], Source] = {}
    for res in first:
        for name, held, _ in res.calls:
            if name not in prog.subs:
                continue
            for source in prog.visible(res.source, name):
                calls.setdefault((source.name, name), []).append(bool(held))
                callee[(source.name, name)] = source
    for (file, name), held_flags in calls.items():
        if held_flags and all(held_flags) and not prog.classify(name, source=callee[file, name]):
            prog.locked_context.add((file, name))
    # Pass 2: the real walk, then the rules.
    results = _walk_all(prog, units, problems, tick)
    prog.results = results
    findings = judge(prog, results, problems)
    dropped = libraries | set(problems)
    unique: dict[tuple[str, int, str], Finding] = {}
    for f in findings:
        if f.file not in dropped:
            unique.setdefault((f.file, f.line, f.rule), f)
    order = {name: n for n, (name, _) in enumerate(given)}
    if errors is not None:
        errors.extend(sorted(problems.values(), key=lambda p: order.get(p.file, 0)))
    return sorted(unique.values(), key=lambda f: (order.get(f.file, 0), f.line, f.rule))
