"""fork-while-locked: ``fork`` while a lock is held, whose holder then differs in a port.

In Perl a mkdir/symlink/excl lock stays until someone removes it: a script that forks a
worker (mail, a slow rebuild) under its lock and exits leaves the child holding it.  A
Python port's ``lock()`` belongs to the process that took it: the parent's ``unlock``,
``with`` exit or exit-time cleanup frees it while the child still works, and a second
process then takes it too.  The rule flags each ``fork`` reached with such a lock held
(the scope's own, or its caller's for a sub called only under a lock).  A ``flock`` on a
handle is not flagged: the child shares the open file, and the lock stays with it after
the parent's ``close``, in Perl and in a port alike (``os.fork`` shares the descriptor).
"""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import Result
from .common import Judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("fork-while-locked", "warning", "``fork`` while a lock is held")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    for ev in res.events:
        if ev.kind != "fork" or not ev.held:
            continue
        # a flock stays with the child in a port too (os.fork shares the open file): not flagged
        held = (res.insts[i] for i in ev.held if i in res.insts)
        insts = sorted((inst for inst in held if inst.kind != "flock"), key=lambda x: x.line)
        if not insts:
            continue
        shown = ", ".join(
            inst.text if inst.kind == "caller" else f"{inst.text} (line {inst.line})"
            for inst in insts
        )
        yield POLICY.finding(
            res.source.name,
            ev.line,
            f"fork while holding {shown}: in Perl the child shares the lock and keeps it after "
            "the parent exits; in a Python port the parent's close or exit releases it while "
            "the child still works, so a second process takes it too",
            "os.fork()  # only after close()/unlock(); the child takes its own lock: "
            "a port's lock belongs to the process that took it",
        )
