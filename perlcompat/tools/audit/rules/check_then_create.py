"""check-then-create: a file tested absent (``-e``/``-f``), then created by an ``open``.

The walk records on each ``open`` of a path tested absent where it was tested
(``Ev.absent``), and takes the lock when that open is the script's lock (a wait loop
before it, or a lock-like name): such an open is an error; a truncating ``>``/``+>``
open of a data file is a warning; a ``>>`` append empties nothing and is not reported.
Only an open with no lock held counts.
"""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import CREATE, TRUNCATE, Result
from ..suggest import lock_call, py_name
from .common import Judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy(
    "check-then-create",
    "error",
    "``-e``/``-f`` test, then an ``open`` that takes a lock (any creating mode) or "
    "truncates (``>``/``+>``)",
)


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    events = res.events
    for n, ev in enumerate(events):
        if ev.kind != "open" or ev.absent is None or ev.open is None or ev.held:
            continue
        op, path, test_line = ev.open, ev.open.path, ev.absent[0]
        if op.mode not in CREATE:
            continue
        taken = events[n + 1] if n + 1 < len(events) else None
        if (
            taken is not None
            and taken.kind == "acquire"
            and taken.inst is not None
            and taken.inst.kind == "file"
            and taken.inst.line == ev.line
        ):  # the walk took this open as the script's lock
            yield POLICY.finding(
                res.source.name,
                ev.line,
                f"{path.text} is tested absent on line {test_line} and created here: two "
                'processes can both see it missing and both "take" the lock',
                lock_call(judge.prog, res.source, path.py, method="excl")
                + "  # one atomic O_EXCL create",
            )
        elif op.mode in TRUNCATE:
            # `>>`/`+>>` after the test is the safe way to create a data file: it never
            # empties what another request wrote.  Only a truncating open loses data.
            py_handle = py_name(op.handle)
            yield POLICY.finding(
                res.source.name,
                ev.line,
                f"{path.text} is tested absent on line {test_line} and created here with "
                f"'{op.mode}': two first requests can both create it, and the second empties "
                "what the first wrote",
                f'{py_handle} = open_("+>>", {path.py})  # creates without emptying; then '
                f"flock({py_handle}, LOCK_EX) and test its size",
                severity="warning",
            )
