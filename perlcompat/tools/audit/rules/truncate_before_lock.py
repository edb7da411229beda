"""truncate-before-lock: ``open(F, ">$f")`` empties the file before ``flock(F, ...)`` is taken."""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import Result
from ..source import display
from ..suggest import flock_suggestion
from .common import Judge, flocked_opens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy(
    "truncate-before-lock", "error", '``open(F, ">$f")``/``+>`` then flock F and use it'
)


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    for op, evs, flocks in flocked_opens(res):
        n_lock, lock_ev = flocks[0]
        lock_text = lock_ev.inst.text if lock_ev.inst else "flock"
        used = any(n > n_lock and ev.kind in ("read", "write") for n, ev in evs)
        if op.mode in (">", "+>") and not op.held and used:
            yield POLICY.finding(
                res.source.name,
                op.line,
                f'open({display(op.handle)}, "{op.mode}...") empties {op.path.text} before '
                f"{lock_text} on line {lock_ev.line}: a process holding the lock meanwhile "
                "reads an empty file or has its write cut off",
                flock_suggestion(op.handle, op.path),
            )
