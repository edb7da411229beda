"""rename-replaces-flocked: a new inode under processes waiting in flock on the old one."""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import Result
from .common import Judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("rename-replaces-flocked", "error", "rename over a file that is itself flocked")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    for ev in res.events:
        if ev.kind != "write" or ev.via != "rename" or ev.path is None:
            continue
        if judge.flock_site(res, ev.path) is None:
            continue
        py = ev.path.py
        yield POLICY.finding(
            res.source.name,
            ev.line,
            f"rename replaces {ev.path.text}, which {judge.where(res, ev.path)} locks with "
            "flock: a process already waiting in flock on the old file wakes up holding a lock "
            "on the unlinked inode, and its update is lost",
            f'replace_file({py}, data)  # flocks {py} + ".lck", never the replaced file; '
            "Perl writers must flock the .lck file too",
        )
