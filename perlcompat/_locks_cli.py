"""``perlcompat locks DIR``: the locks in a directory, who holds them, and stale-lock removal.

Each entry of DIR is classified by ``_api.find_locks`` (mkdir directory,
symlink, rename marker, O_EXCL file, flock lock file, TOP?LOCK file) and
described by its method's ``Backend.describe()``: holder pid and host where the
lock records them, whether that holder is alive (``None`` when it cannot be
told: no pid, another host or pid namespace, Windows; ``judged`` says which,
e.g. ``"age only: another pid namespace"``), and the lock's age.  A flock lock file
nobody holds is not a lock and is not listed.

``--break-stale`` removes stale locks with exactly what a waiting ``lock()``
does: ``Lock(path, method=m, stale=S).backend.break_stale()`` (serialized
removers, identity re-checked right before removal; a live lock is never
removed).  Like a waiter, it looks again a few times over ~0.1 s, because a
backend checks the owner of a lock it has only just seen after a short delay.
It reports per lock whether it was removed.  It also removes ``replace_file``'s
temp files whose writer is dead (``_replace.clean_temp_files``).  The exit status
is 0, or 2 when DIR cannot be read.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: tries of break_stale per lock, and the pause between them (s): past ``_stale.FIRST_LOOK``.
BREAK_TRIES = 4
BREAK_PAUSE = 0.03


def _age_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _state(alive: bool | None, judged: str | None = None) -> str:
    if alive is None and judged and judged.startswith("age only"):
        return f"unknown ({judged})"  # another host or pid namespace, no pid: by age
    return {True: "alive", False: "dead", None: "unknown"}[alive]


def _lock_for(path: str, method: str, stale: float) -> Any:
    from ._api import Lock

    # root= keeps PERLCOMPAT_LOCK_ROOT out of it: the path is the one we listed.
    return Lock(os.path.basename(path), method=method, stale=stale, root=os.path.dirname(path))


def _is_stale(info: dict[str, Any], stale: float) -> bool:
    age = info.get("age")
    return info.get("alive") is False or (age is not None and age > stale)


def survey(directory: str, stale: float, break_stale: bool) -> list[dict[str, Any]]:
    """Describe every lock in *directory*; with *break_stale*, remove the stale ones."""
    from ._api import find_locks

    rows: list[dict[str, Any]] = []
    for path, method in find_locks(directory):
        row: dict[str, Any] = {"name": os.path.basename(path), "path": path, "method": method}
        try:
            lock = _lock_for(path, method, stale)
            info = lock.backend.describe()
        except (OSError, ValueError) as exc:
            row.update(pid=None, host=None, alive=None, age=None, stale=False, error=str(exc))
            rows.append(row)
            continue
        if info is None:
            continue  # gone meanwhile, or a flock file nobody holds
        row.update(
            pid=info.get("pid"),
            host=info.get("host"),
            alive=info.get("alive"),
            judged=info.get("judged"),
            age=info.get("age"),
        )
        row["stale"] = _is_stale(row, stale)
        if break_stale:
            row["removed"] = _break(lock, row, stale)
        rows.append(row)
    return rows


def _break(lock: Any, row: dict[str, Any], stale: float) -> bool:
    """``break_stale()`` as a waiting ``lock()`` calls it; True if the lock was removed."""
    for attempt in range(BREAK_TRIES):
        try:
            if lock.backend.break_stale():
                return True
            info = lock.backend.describe()
        except OSError as exc:
            row["error"] = str(exc)
            return False
        if info is None or not _is_stale(info, stale):
            return False
        if attempt + 1 < BREAK_TRIES:
            time.sleep(BREAK_PAUSE)
    return False


def _table(rows: list[dict[str, Any]], break_stale: bool) -> str:
    head = ["NAME", "METHOD", "PID", "HOST", "HOLDER", "AGE", "STALE"]
    if break_stale:
        head.append("ACTION")
    body = []
    for row in rows:
        cells = [
            row["name"],
            row["method"],
            "-" if row["pid"] is None else str(row["pid"]),
            row["host"] or "-",
            _state(row["alive"], row.get("judged")),
            _age_text(row["age"]),
            "yes" if row["stale"] else "no",
        ]
        if break_stale:
            cells.append("removed" if row.get("removed") else "kept")
        if row.get("error"):
            cells.append(f"({row['error']})")
        body.append(cells)
    widths = [max(len(r[i]) for r in [head, *body] if i < len(r)) for i in range(len(head))]
    lines = []
    for cells in [head, *body]:
        fixed = [c.ljust(widths[i]) for i, c in enumerate(cells[: len(head)])]
        lines.append("  ".join(fixed + cells[len(head) :]).rstrip())
    return "".join(line + "\n" for line in lines)


def main(argv: list[str]) -> int:
    """``perlcompat locks DIR [--json] [--stale S] [--break-stale]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="perlcompat locks",
        description="List the locks in a directory (any method): holder, alive or dead, age.",
    )
    parser.add_argument("directory", metavar="DIR")
    parser.add_argument("--json", action="store_true", help="print the locks as JSON")
    parser.add_argument(
        "--stale",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help="age after which a lock is stale, as lock(stale=...) (default 180)",
    )
    parser.add_argument(
        "--break-stale",
        action="store_true",
        help="remove stale locks (dead holder or older than --stale), as lock() does",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.stale <= 0:
        sys.stderr.write("perlcompat locks: --stale must be > 0\n")
        return 2
    temps: list[str] = []
    try:
        rows = survey(args.directory, args.stale, args.break_stale)
        if args.break_stale:  # and replace_file's temp files whose writer is dead
            from ._replace import clean_temp_files

            temps = [os.path.basename(path) for path in clean_temp_files(args.directory)]
    except OSError as exc:
        sys.stderr.write(f"perlcompat locks: cannot read {args.directory}: {exc.strerror}\n")
        return 2
    if args.json:
        import json

        doc = {"directory": os.path.abspath(args.directory), "stale": args.stale, "locks": rows}
        if args.break_stale:
            doc["removed_temp_files"] = temps
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif rows:
        sys.stdout.write(_table(rows, args.break_stale))
    else:
        sys.stdout.write(f"no locks in {args.directory}\n")
    if not args.json:
        for name in temps:
            sys.stdout.write(f"removed {name} (temp file of a dead replace_file writer)\n")
    return 0
