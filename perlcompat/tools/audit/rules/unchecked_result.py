"""unchecked-result: an ``open``, ``flock`` or lock-sub call whose failure is not tested.

The walk records how each result is used (``Ev.result``: an ``open(my $fh, ...)`` counts
as tested when the next statement tests ``$fh``); a lock sub is reported only when it may
return 0.  A ``flock`` inside an ignored ``eval`` is swallowed-flock's.
"""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import LOCK_EX, LOCK_NB, LOCK_SH, Ev, Result
from ..source import display
from ..suggest import cant, lock_call, py_flock, py_name
from .common import Judge, shared_writes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("unchecked-result", "warning", "``open``/``flock``/lock sub result ignored")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    written = shared_writes(res)  # (their suggestion takes LOCK_EX: write-under-shared-lock)
    for ev in res.events:
        if ev.result not in ("ignored", "oror"):
            continue
        if ev.kind == "open":
            yield _open(res, ev)
        elif ev.kind == "flock" and ev.inst is not None and ev.open is not None:
            handle = py_name(ev.open.handle)
            value = ev.value
            if value is not None and ev.inst.id in written:
                value = value & ~LOCK_SH | LOCK_EX
            yield POLICY.finding(
                res.source.name,
                ev.line,
                f"{ev.inst.text}: its result is not checked; "
                + (
                    "when the lock is busy it returns 0 at once"
                    if ev.value is not None and ev.value & LOCK_NB
                    else "when it fails (a handle that did not open, EINTR, EBADF) it returns 0"
                )
                + ", and the script goes on without the lock",
                f'flock({handle}, {py_flock(value)}) or die(f"Can\'t flock: {{OS_ERROR}}")',
            )
        elif (
            ev.kind == "acquire"
            and ev.inst is not None
            and ev.inst.kind == "sub"
            and judge.prog.fails(res.source, ev.via)
        ):
            yield POLICY.finding(
                res.source.name,
                ev.line,
                f"{display(ev.inst.text)} returns 0 when the lock is busy, and the result is not "
                "checked: the script goes on without the lock",
                lock_call(judge.prog, res.source, ev.inst.name or '"lockdir"', sub=ev.via),
            )


def _open(res: Result, ev: Ev) -> Finding:
    """An ``open``/``sysopen`` whose result is ignored (or bound to the file name by ``||``)."""
    assert ev.open is not None
    op = ev.open
    handle, path = op.handle, op.path
    py_handle = py_name(handle)
    if ev.via == "sysopen":
        return POLICY.finding(
            res.source.name,
            ev.line,
            f"sysopen({display(handle)}, {path.text}, ...): its result is not checked",
            f'{py_handle} = open_("{op.py_mode}", {path.py}) or die({cant("open", path)})',
        )
    why = (
        f"`||` binds to the file name {path.text}, not to open: the `die` never runs"
        if ev.result == "oror"
        else "its result is not checked"
    )
    return POLICY.finding(
        res.source.name,
        ev.line,
        f"open({display(handle)}, ...) of {path.text}: {why}; when it fails, "
        + (
            "the script reads nothing and goes on as if the file were empty"
            if op.mode == "<"
            else "the flock and the writes that follow silently do nothing"
        )
        + f'. The faithful port is {py_handle} = open_("{op.py_mode}", {path.py}): '
        "a failed open_ returns a false handle that reads as empty and writes nothing, "
        "as Perl's does; the safer change is to stop there",
        f'{py_handle} = open_("{op.py_mode}", {path.py}) or die({cant("open", path)})'
        "  # safer; the faithful port drops the `or die`",
    )
