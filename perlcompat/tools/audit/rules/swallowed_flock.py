"""swallowed-flock: ``eval "flock(...)"`` or ``eval { flock(...) }``, its failure hidden.

The walk marks a ``flock`` whose result is ignored inside an ``eval`` whose own result
is ignored (``Ev.result == "eval"``).
"""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import Result
from ..suggest import py_flock, py_name
from .common import Judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("swallowed-flock", "warning", '``eval "flock(...)"``: failure hidden')


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    for ev in res.events:
        if ev.kind != "flock" or ev.result != "eval" or ev.inst is None or ev.open is None:
            continue
        yield POLICY.finding(
            res.source.name,
            ev.line,
            f"{ev.inst.text} inside an eval whose result is ignored: a failed or unsupported "
            "flock is hidden and the script runs without the lock",
            f"flock({py_name(ev.open.handle)}, {py_flock(ev.value)}) or die(f\"Can't flock: "
            '{OS_ERROR}")',
        )
