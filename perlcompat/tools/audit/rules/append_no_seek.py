"""append-no-seek: a ``>>`` handle locked, then written without ``seek(F, 0, 2)``."""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import LOCK_EX, Result
from ..source import display
from ..suggest import py_name
from .common import Judge, flocked_opens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("append-no-seek", "info", "``>>`` handle locked, written without ``seek(F, 0, 2)``")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    for op, evs, flocks in flocked_opens(res):
        n_lock, lock_ev = flocks[0]
        h = py_name(op.handle)
        if op.mode == ">>" and lock_ev.value is not None and lock_ev.value & LOCK_EX:
            after = [
                ev
                for n, ev in evs
                if n > n_lock and (ev.kind == "seek" or ev.via in ("print", "syswrite"))
            ]
            if after and after[0].kind == "write":
                yield POLICY.finding(
                    res.source.name,
                    lock_ev.line,
                    f"{display(op.handle)} is opened for append and locked, then written without "
                    f"seek({display(op.handle)}, 0, 2): harmless where O_APPEND is honoured "
                    "(Linux, BSD), lost or overwritten lines on filesystems that emulate it (NFS)",
                    f"seek({h}, 0, SEEK_END)  # right after flock({h}, LOCK_EX)",
                )
