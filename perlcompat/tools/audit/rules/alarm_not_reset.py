"""alarm-not-reset: the last ``alarm(N)`` set in a scope must be cancelled there."""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import Ev, Result
from .common import Judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("alarm-not-reset", "warning", "``alarm(N)`` with no later ``alarm(0)``")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    pending: Ev | None = None
    for ev in res.events:
        if ev.kind == "alarm":
            pending = None if ev.value == 0 else ev
    if pending is None:
        return
    shown = "alarm(...)" if pending.value == -1 else f"alarm({pending.value})"
    where = "script" if res.scope == "main" else "sub"
    yield POLICY.finding(
        res.source.name,
        pending.line,
        f"{shown} is never cancelled with alarm(0) in this {where}: after the locked section "
        "the alarm still fires, and once `local $SIG{ALRM}` is restored it kills the process",
        "alarm(0)  # after the locked section and on the error path (try/finally); "
        "or flock(fh, LOCK_EX, timeout=5)",
    )
