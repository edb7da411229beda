"""ex-on-readonly: ``flock(IN, LOCK_EX)`` on a handle opened read-only."""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import LOCK_EX, Result
from ..source import display
from ..suggest import py_name
from .common import Judge, flocked_opens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("ex-on-readonly", "warning", "``flock(IN, LOCK_EX)`` on a read-only handle")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    for op, evs, flocks in flocked_opens(res):
        h = py_name(op.handle)
        written = any(ev.kind == "write" for _, ev in evs)
        for _, ev in flocks:
            if ev.value is None or not ev.value & LOCK_EX or op.mode != "<":
                continue
            if op.explicit or not written:
                yield POLICY.finding(
                    res.source.name,
                    ev.line,
                    f"{ev.inst.text if ev.inst else 'flock'} asks for an exclusive lock on "
                    f"{display(op.handle)}, opened read-only: Solaris and fcntl-based flock "
                    "emulations refuse it (EBADF), so the script runs unlocked there",
                    f'flock({h}, LOCK_SH) or die(...)  # or open_("+<", {op.path.py}) to write',
                )
