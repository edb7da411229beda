"""The locks over a read and the write after it: four rules, one decision per rewrite.

For each first rewrite of a file (through a handle, a rename into place or a truncate
by name), the last earlier read of the same file decides: read and written under one
lock, nothing; read unlocked and the write's lock taken after the read, lock-after-read;
read under a lock the write does not hold, lock-gap.  A write under no lock at all is
unlocked-write where other code flocks that file, else unlocked-update after a read.
"""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import REWRITE, Ev, Inst, Path, Program, Result
from ..suggest import fcntl_suggestion, flock_suggestion, lock_call
from .common import Judge, by_open

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


LOCK_AFTER_READ = Policy(
    "lock-after-read", "error", "the file is read before the lock that covers its write"
)
LOCK_GAP = Policy("lock-gap", "error", "read under one lock, written under another (or none)")
UNLOCKED_WRITE = Policy(
    "unlocked-write", "error", "rewritten with no lock while other code flocks it"
)
UNLOCKED_UPDATE = Policy("unlocked-update", "warning", "read then rewritten with no lock at all")


def _last_read_before(reads: tuple[list[int], list[Ev]], n_w: int, wr: Ev) -> tuple[int, Ev] | None:
    """The last of *reads* (one file's event numbers and events) before *n_w* that can precede
    the write *wr* (not in another branch of its if-chain)."""
    from bisect import bisect_left

    numbers, found = reads
    for k in range(bisect_left(numbers, n_w) - 1, -1, -1):
        if not found[k].exclusive(wr):
            return numbers[k], found[k]
    return None


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    events = res.events
    opens = by_open(res)
    reads: dict[str, tuple[list[int], list[Ev]]] = {}  # file -> its reads, in order
    for n, ev in enumerate(events):
        if ev.kind == "read" and ev.open and ev.open.real and ev.path is not None:
            numbers, found = reads.setdefault(ev.path.key, ([], []))
            numbers.append(n)
            found.append(ev)
    for n_w, wr in _rewrites(res):
        assert wr.path is not None
        path = wr.path
        at = wr.open.line if wr.open is not None else wr.line
        handle = wr.open.handle if wr.open is not None else "FH"
        prior = _last_read_before(reads.get(path.key, ([], [])), n_w, wr)
        if prior:
            n_r, rd = prior
            if rd.held & wr.held:
                continue
            if not rd.held:
                later = [
                    res.insts[i]
                    for i in wr.held
                    if i in res.insts and _acquired_after(events, res.insts[i], n_r)
                ]
                if later:
                    inst = min(later, key=lambda x: x.line)
                    yield LOCK_AFTER_READ.finding(
                        res.source.name,
                        inst.line,
                        f"{path.text} is read on line {rd.line} before this lock is taken and "
                        f"written under it (line {at}): a write by another process in between "
                        "is lost; lock before reading",
                        _before_read_suggestion(judge.prog, res, inst, rd),
                    )
                    continue
            else:
                how = "under another lock" if wr.held else "after the lock is released"
                yield LOCK_GAP.finding(
                    res.source.name,
                    at,
                    f"{path.text} is read on line {rd.line} under one lock and written here "
                    f"{how}: in between another process can write it, and that update is "
                    "lost; hold one lock from the read to the write",
                    flock_suggestion(rd.open.handle if rd.open else handle, path),
                )
                continue
        if wr.held:
            continue
        site = judge.flock_site(res, path)
        flocked_here = wr.open is not None and any(
            e.kind == "flock" for _, e in opens.get(id(wr.open), [])
        )
        if site is not None and site[2] is not wr.open and not flocked_here:
            if wr.via != "rename":  # rename-replaces-flocked reports that one
                yield UNLOCKED_WRITE.finding(
                    res.source.name,
                    at,
                    f"{path.text} is rewritten here without a lock, while "
                    f"{judge.where(res, path)} flocks it: that process's read-modify-write "
                    "overwrites this write or reads it half-written",
                    flock_suggestion(handle if wr.open else site[2].handle, path),
                )
        elif prior and not flocked_here:
            away = _renamed_away(events, prior[0], n_w, path)
            if away is not None:  # the data file renamed as the lock: a flock excludes nothing
                yield _rename_lock_finding(judge.prog, res, at, prior[1], away, path)
                continue
            yield UNLOCKED_UPDATE.finding(
                res.source.name,
                at,
                f"{path.text} is read on line {prior[1].line} and rewritten here with no "
                "lock: two requests at once both read the old content, and one update is lost",
                flock_suggestion(handle, path),
            )


def _renamed_away(events: list[Ev], n_read: int, n_write: int, path: Path) -> Ev | None:
    """The ``rename($data, $path)`` before the read whose file the script renames back after
    the write (the data file renamed as the lock: docs/locks.md), else None."""
    into = [
        ev
        for ev in events[:n_read]
        if ev.via == "rename" and ev.path is not None and ev.path.key == path.key and ev.source
    ]
    if not into:
        return None
    away = into[-1]
    assert away.source is not None
    for ev in events[n_write:]:
        if (
            ev.via == "rename"
            and ev.source is not None
            and ev.source.key == path.key
            and ev.path is not None
            and ev.path.key == away.source.key
        ):
            return away
    return None


def _rename_lock_finding(
    prog: Program, res: Result, at: int, read: Ev, away: Ev, path: Path
) -> Finding:
    """The unlocked update of a data file the script renames away as its lock, ported as one."""
    assert away.source is not None
    data = away.source
    call = lock_call(prog, res.source, data.py, method="rename").replace(
        'method="rename"', f'method="rename", held={path.py}, data=True', 1
    )
    return UNLOCKED_UPDATE.finding(
        res.source.name,
        at,
        f"{path.text} is read on line {read.line} and rewritten here under no lock the audit "
        f"recognises; if renaming {data.text} to {path.text} on line {away.line} is the "
        "script's lock (the data file renamed away while it works), port that rename as the "
        f"lock below and work on {path.text} as the script does: a flock on either name does "
        "not exclude the Perl script",
        f"{call}  # ... unlock({data.py}) where the script renames it back",
    )


def _rewrites(res: Result) -> list[tuple[int, Ev]]:
    """The first rewrite through each handle, and each rename into place / truncate by name."""
    writes: list[tuple[int, Ev]] = []
    seen: set[int] = set()
    for n, ev in enumerate(res.events):
        if ev.kind != "write" or ev.path is None:
            continue
        if ev.open is not None:
            if not ev.open.real or ev.open.mode not in REWRITE or id(ev.open) in seen:
                continue
            seen.add(id(ev.open))
        writes.append((n, ev))
    return writes


def _acquired_after(events: list[Ev], inst: Inst, n: int) -> bool:
    for k, ev in enumerate(events):
        if ev.kind == "acquire" and ev.inst is inst:
            return k > n
    return False


def _before_read_suggestion(prog: Program, res: Result, inst: Inst, read: Ev) -> str:
    if inst.kind == "flock" and inst.open is not None:
        return flock_suggestion(inst.open.handle, inst.open.path) + f"  # before line {read.line}"
    if inst.kind == "fcntl" and inst.open is not None:
        return fcntl_suggestion(inst.open.handle) + f"  # before line {read.line}"
    call = lock_call(prog, res.source, inst.name or '"lockdir"', inst=inst)
    return f"{call}  # before reading, line {read.line}"
