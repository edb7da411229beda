"""unlink-before-rename: ``unlink($f); rename($tmp, $f)`` leaves a moment with no file."""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import Result
from .common import Judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("unlink-before-rename", "error", "``unlink($f); rename($tmp, $f)``")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    events = res.events
    for n, ev in enumerate(events):
        if ev.kind != "remove" or ev.path is None or ev.via != "unlink":
            continue
        path = ev.path
        for later in events[n + 1 :]:
            if (
                later.kind == "write"
                and later.via == "rename"
                and later.path is not None
                and later.path.key == path.key
                and not later.exclusive(ev)
            ):
                src = later.source.py if later.source else "tmp"
                yield POLICY.finding(
                    res.source.name,
                    ev.line,
                    f"{path.text} is removed here and renamed into place on line {later.line}: "
                    "in between it does not exist, and a reader or writer then starts from an "
                    "empty file",
                    f"rename({src}, {path.py}) or die(...)  # replaces atomically "
                    "(os.replace, also on Windows): no unlink first",
                )
                break
