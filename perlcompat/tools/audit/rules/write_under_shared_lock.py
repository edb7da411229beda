"""write-under-shared-lock: ``flock(OUT, 1)``/``LOCK_SH`` and then ``print OUT``/``truncate``.

A shared lock lets every other holder of a shared lock in at the same time: two
copies of the classic ``flock(OUT, 1)`` counter both read 41 and both write 42
(4 Perl processes x 100 increments ended at 310, tests/test_audit_shared_write.py).
"""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import LOCK_NB, Result
from ..source import display
from ..suggest import py_name
from .common import Judge, shared_writes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy(
    "write-under-shared-lock",
    "error",
    "``flock(F, 1)``/``LOCK_SH`` then ``print F``/``truncate``: writers share the lock",
)


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    for lock, write in shared_writes(res).values():
        assert lock.open is not None and lock.inst is not None and lock.value is not None
        handle = py_name(lock.open.handle)
        what = "truncate" if write.via == "truncate" else write.via or "a write"
        nb = " | LOCK_NB" if lock.value & LOCK_NB else ""
        yield POLICY.finding(
            res.source.name,
            lock.line,
            f"{lock.inst.text} takes a shared lock and {what} on line {write.line} writes "
            f"{display(lock.open.path.text)} under it: other processes holding the shared "
            "lock read and write at the same time, and their updates are lost (4 x 100 "
            "increments of the classic flock(OUT, 1) counter end at 310)",
            f'flock({handle}, LOCK_EX{nb}) or die(f"Can\'t flock: {{OS_ERROR}}")',
        )
