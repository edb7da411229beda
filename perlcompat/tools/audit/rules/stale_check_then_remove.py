"""stale-check-then-remove: a lock judged stale by its age, then removed (two removers race)."""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import LOCKISH, Result, bare
from ..suggest import lock_call
from .common import Judge, style_inst

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("stale-check-then-remove", "error", "age test, then remove the lock (race)")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    for ev in res.events:
        if ev.kind != "remove" or ev.path is None:
            continue
        path = ev.path
        builtin = ev.via in ("unlink", "rmdir")
        lockish = not builtin or bool(LOCKISH.search(bare(path.key))) or path.key in judge.lock_keys
        if ev.age and lockish:
            yield POLICY.finding(
                res.source.name,
                ev.line,
                f"the lock {path.text} is judged stale on line {ev.age} and removed here: two "
                "processes can both judge it stale; one removes it and locks again, then the "
                "other removes that new, live lock",
                lock_call(
                    judge.prog,
                    res.source,
                    path.py,
                    inst=style_inst(res, path.key),
                    sub=_lock_sub(judge, res),
                    stale=res.stale_at.get(ev.age, 0),
                )
                + "  # stale recovery that never removes a successor's new lock",
            )


def _lock_sub(judge: Judge, res: Result) -> str:
    """The lock sub this scope is (its own stale check judges the lock it takes), else ""."""
    return res.scope if judge.prog.classify(res.scope, source=res.source) == "lock" else ""
