"""``perlcompat locks DIR``: the locks in a directory, who holds them, and stale-lock removal.

Each entry of DIR is classified by ``locks.contract.find_locks`` (mkdir directory,
symlink, rename marker, O_EXCL file, flock lock file, TOP?LOCK file) and
described by its method's ``Backend.describe()``: holder pid and host where the
lock records them, whether that holder is alive (``None`` when it cannot be
told: no pid, another host or pid namespace, Windows; ``judged`` says which,
e.g. ``"age only: another pid namespace"``), and the lock's age.  A flock lock
file nobody holds is not a lock and is not listed.  Looking takes no lock anyone
can see (flock holders come from /proc/locks, see ``locks.methods.flock.is_flocked``).

An entry that cannot be read (a directory that cannot be listed, a file that
cannot be opened, so whether it is a lock cannot be told) is listed with
method ``None`` (``?``) and the reason in ``error``, never left out.

``--break-stale`` removes stale locks with exactly what a waiting ``lock()``
does: ``Lock(path, method=m, stale=S).backend.break_stale()`` (serialized
removers, identity re-checked right before removal; older than ``stale`` or its
owner dead).  Like a waiter, it looks again a few times over ~0.1 s, because a
backend checks the owner of a lock it has only just seen after a short delay.
A directory holds application files too (``uploads/``, ``latest ->
20231101``, ``draft.locked``), so a scan breaks only entries *proven* to be
locks (:func:`doubt`): one with a perlcompat owner record (an mkdir lock's
``NAME.owner``, an excl or rename record) or TOP?LOCK lines, or one whose name
says lock (a ``.``/``_``/``-`` separated part that starts with ``lock`` or
``lck`` or ends with ``lock``: ``bbs.lock``, ``lockdir``, ``count.lck``) and, for
a symlink, whose target is ``.`` or a pid the kernel can give
(``/proc/sys/kernel/pid_max``).  The rest are listed, kept, with the reason.
``--lock PATH`` names one lock instead (a directory is then an mkdir lock): it
is judged and broken under ``lock()``'s own rules, as ``lock(PATH)`` would.
It reports per lock whether it was removed, and for a stale lock it kept,
why (``reason``: a sticky directory, no write permission on DIR, the remover
lock busy, or the lock changed meanwhile).  It also removes ``replace_file``'s
temp files whose writer is dead (``locks.replace.clean_temp_files``).  The exit status
is 0, or 2 when DIR cannot be read or is refused.

DIR (for ``--lock``, PATH's directory) is opened by ``locks.safedir.open_dir``:
never through a symlink another user could have placed, and every look and
removal after that goes through the open descriptor (``/proc/self/fd/N``), so
renaming DIR or a parent meanwhile cannot move a removal elsewhere.  As root,
``--break-stale`` works in a directory owned by another user as that user (it
drops root for good, as logrotate's ``su``) and refuses a root-owned one that
another user can write, or rename (it or a parent).
"""

from __future__ import annotations

import errno
import os
import sys
import time

from ..locks.safedir import pinned
from .quoting import quote

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..locks.safedir import Opened

#: tries of break_stale per lock, and the pause between them (s): past ``locks.remover.FIRST_LOOK``.
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
    """The *method* backend of the lock at *path*, as ``Lock(path, method=, stale=)`` makes it.

    Made directly, so that the path is the one listed (no PERLCOMPAT_LOCK_ROOT,
    and a ``/proc/self/fd/N`` directory is not resolved back to a name).
    """
    from ..locks.contract import backend_class
    from ..perl.clock import check_seconds

    return backend_class(method)(path, stale=check_seconds("stale", stale, zero=False))


def _is_stale(info: dict[str, Any], stale: float) -> bool:
    age = info.get("age")
    return info.get("alive") is False or (age is not None and age > stale)


#: why a scanned entry is not broken although it looks like a lock.
NOT_PROVEN = "not proven to be a lock: {}; pass its path with --lock to break it"


def _name_says_lock(name: str) -> bool:
    """True if a ``.``/``_``/``-`` separated part of *name* says lock (``bbs.lock``)."""
    parts = name.lower().replace("_", ".").replace("-", ".").split(".")
    return any(
        part.startswith(("lock", "lck")) or (part.endswith("lock") and part not in _NOT_LOCKS)
        for part in parts
    )


_NOT_LOCKS = ("clock", "block")


def _pid_max() -> int:
    try:
        with open("/proc/sys/kernel/pid_max", "rb") as stream:
            return int(stream.read())
    except (OSError, ValueError):
        return 4194304  # Linux's largest; BSD and macOS stay below 100000


def doubt(path: str, method: str) -> str:
    """Why a directory scan must not break the *method* lock found at *path*; "" if proven."""
    from ..locks import owner as _owner
    from ..locks.files import read_small

    name = os.path.basename(path)
    if method in ("excl", "toplock", "flock"):
        return ""  # named by a record or TOP?LOCK lines (a flock lock is never broken)
    if method == "mkdir":
        if _owner.parse(read_small(path + ".owner") or b"", "mkdir") is not None:
            return ""
        return "" if _name_says_lock(name) else NOT_PROVEN.format("no owner record, no lock name")
    if method == "rename":
        if _owner.parse(read_small(path + ".locked") or b"", "rename") is not None:
            return ""
        return "" if _name_says_lock(name) else NOT_PROVEN.format("an empty marker, no lock name")
    try:
        target = os.readlink(path)
    except OSError:
        return NOT_PROVEN.format("unreadable link")
    if not _name_says_lock(name):
        return NOT_PROVEN.format(f"a link to {target!r}, no lock name")
    if target not in (".", ":") and not (target.isascii() and 0 < int(target) <= _pid_max()):
        return NOT_PROVEN.format(f"a link to {target!r}, not a pid")
    return ""


def survey(
    directory: str, stale: float, break_stale: bool, lock_path: bool = False
) -> list[dict[str, Any]]:
    """Describe every lock in *directory*; with *break_stale*, remove the stale ones.

    With *lock_path*, *directory* is one lock's path (any method), judged and
    broken under ``lock()``'s rules, proof of a lock not required.
    """
    from ..locks.contract import detect, find_locks, lock_of, parts

    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    if lock_path:
        path = os.path.abspath(directory)
        path = lock_of(path) or path  # a held rename marker names its lock
        method = detect(path)
        if method is None:
            if not os.path.lexists(path):
                raise FileNotFoundError(errno.ENOENT, "no such lock", directory)
            row: dict[str, Any] = {"name": os.path.basename(path), "path": path, "method": None}
            row.update(pid=None, host=None, alive=None, age=None, stale=False)
            row["error"] = "not a lock of any method; refusing to touch it"
            if break_stale:
                row["removed"] = False
            return [row]
        found = [(path, method)]
    else:
        found = find_locks(directory)
    for path, method in found:
        seen.update((path, *parts(path)))
        row = {"name": os.path.basename(path), "path": path, "method": method}
        try:
            backend = _lock_for(path, method, stale)
            info = backend.describe()
        except (OSError, ValueError) as exc:
            row.update(pid=None, host=None, alive=None, age=None, stale=False, error=str(exc))
            rows.append(row)
            continue
        if info is None:
            seen.discard(path)  # gone meanwhile, or a flock file nobody holds (unless unreadable)
            continue
        row.update(
            pid=info.get("pid"),
            host=info.get("host"),
            alive=info.get("alive"),
            judged=info.get("judged"),
            age=info.get("age"),
        )
        row["stale"] = _is_stale(row, stale)
        if break_stale:
            unproven = "" if lock_path else doubt(path, method)
            if unproven:
                row["removed"] = False
                row["reason"] = unproven
            else:
                row["removed"] = _break(backend, row, stale)
            if not row["removed"] and row["stale"] and not unproven and "error" not in row:
                row["reason"] = _why_kept(path if method != "rename" else path + ".locked")
        rows.append(row)
    if lock_path:
        return rows
    for name in os.listdir(directory):
        path = os.path.abspath(os.path.join(directory, name))
        if path in seen or lock_of(path) is not None:
            continue  # a piece of a lock (a released mkdir lock's owner file, a breaker file)
        problem = unreadable(path)
        if problem:
            row = {"name": name, "path": path, "method": None, "pid": None, "host": None}
            row.update(alive=None, age=None, stale=False, error=problem)
            if break_stale:
                row["removed"] = False
            rows.append(row)
    rows.sort(key=lambda row: str(row["path"]))
    return rows


def unreadable(path: str) -> str:
    """Why the entry at *path* cannot be told to be a lock or not; "" if it can be read."""
    import stat

    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            os.listdir(path)
        elif stat.S_ISLNK(st.st_mode):
            os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            os.close(os.open(path, flags))
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"cannot read it, so cannot tell whether it is a lock: {exc.strerror}"
    return ""


def _why_kept(path: str) -> str:
    """Why a stale lock at *path* was not removed, as far as can be told from outside."""
    import stat

    from ..locks.guards import guard, unguard

    directory = os.path.dirname(path)
    geteuid = getattr(os, "geteuid", None)
    euid = None if geteuid is None else geteuid()
    try:
        st = os.lstat(path)
        dst = os.stat(directory)
    except OSError as exc:
        return f"cannot look at it: {exc.strerror}"
    effective = os.access in os.supports_effective_ids
    if not os.access(directory, os.W_OK | os.X_OK, effective_ids=effective):
        return f"no permission to remove entries of {directory}"
    if dst.st_mode & stat.S_ISVTX and euid not in (0, st.st_uid, dst.st_uid):
        return (
            f"sticky directory: only its owner (uid {st.st_uid}), the directory's "
            f"owner (uid {dst.st_uid}) or root may remove it"
        )
    try:
        fd = guard(path, exclusive=True)
    except OSError as exc:
        return f"the remover lock cannot be taken here: {exc.strerror}"
    if fd is None:
        return "another process holds the remover lock (a flock on the directory)"
    unguard(fd)
    return "it changed or could not be removed while being removed; try again"


def _break(backend: Any, row: dict[str, Any], stale: float) -> bool:
    """``break_stale()`` as a waiting ``lock()`` calls it; True if the lock was removed."""
    for attempt in range(BREAK_TRIES):
        try:
            if backend.break_stale():
                return True
            info = backend.describe()
        except OSError as exc:
            row["error"] = str(exc)
            return False
        if info is None or not _is_stale(info, stale):
            return False
        if attempt + 1 < BREAK_TRIES:
            time.sleep(BREAK_PAUSE)
    return False


def _open(directory: str, lock_path: bool, break_stale: bool) -> Opened:
    """Open DIR (or ``--lock`` PATH's directory) by :func:`locks.safedir.open_dir`.

    Removals then go through :func:`locks.safedir.pinned`.  As root, before any
    removal: a directory owned by another user is handled as that user (the
    process drops to its owner); a root-owned one that another user can write,
    or rename (it or a parent), is refused (OSError EPERM), as is any
    directory where /proc cannot pin the descriptor and someone else could rename it.
    """
    from ..locks.safedir import open_dir

    path = os.path.abspath(directory)
    opened = open_dir(os.path.dirname(path) if lock_path else path)
    if not break_stale or sys.platform == "win32":
        return opened
    try:
        if os.geteuid() == 0 and opened.st.st_uid != 0:
            _become(opened.st.st_uid, opened.st.st_gid)
        elif os.geteuid() == 0 and opened.others():
            raise OSError(
                errno.EPERM,
                f"refusing to remove locks as root in {opened.path!r}: {opened.others()};"
                " run it as the user the locks belong to, or keep them in a directory only"
                " root can change",
            )
        if pinned(opened.fd) is None and opened.others():
            raise OSError(
                errno.EPERM,
                f"refusing to remove locks in {opened.path!r}: {opened.others()}, and /proc is"
                " not there to hold the directory by its descriptor",
            )
    except BaseException:
        opened.close()
        raise
    return opened


def _become(uid: int, gid: int) -> None:
    """Drop root for good to *uid* (its passwd group, else *gid*; no supplementary groups).

    What a removal may import is imported first: *uid* may not be able to read
    root's Python installation.
    """
    import contextlib
    import importlib
    import pwd

    from ..locks.contract import on_disk

    on_disk()  # every file method
    for name in _PRELOAD:
        importlib.import_module(name)
    if sys.platform == "win32":
        raise OSError(errno.ENOSYS, "no users to drop to on Windows")
    with contextlib.suppress(KeyError):
        gid = pwd.getpwuid(uid).pw_gid
    try:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    except OSError as exc:
        raise OSError(
            exc.errno, f"cannot drop root to uid {uid}, the directory's owner: {exc.strerror}"
        ) from None


#: imported before :func:`_become` drops root: what a removal and its report may import.
_PRELOAD = (
    "fcntl",
    "json",
    "logging",
    "socket",
    "stat",
    "warnings",
    "perlcompat.locks.log",
    "perlcompat.locks.owner",
    "perlcompat.locks.replace",
    "perlcompat.locks.netfs",
    "perlcompat.locks.stale",
    "perlcompat.perl.errno",
    "perlcompat.perl.flock",
)


def _unpin_text(text: str, where: str, shown: str) -> str:
    if where == shown:
        return text
    return shown if text == where else text.replace(where + "/", shown.rstrip("/") + "/")


def _unpin_log(where: str, shown: str) -> None:
    """Name the directory as the user did in the ``perlcompat`` logger's records too."""
    import logging

    def unpin(record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _unpin_text(arg, where, shown) if isinstance(arg, str) else arg
                for arg in record.args
            )
        return True

    logging.getLogger("perlcompat").addFilter(unpin)


def _unpin(row: dict[str, Any], where: str, shown: str) -> dict[str, Any]:
    """*row* with the ``/proc/self/fd/N`` directory named as the user named it."""
    return {
        key: _unpin_text(value, where, shown) if isinstance(value, str) else value
        for key, value in row.items()
    }


def _table(rows: list[dict[str, Any]], break_stale: bool) -> str:
    head = ["NAME", "METHOD", "PID", "HOST", "HOLDER", "AGE", "STALE"]
    if break_stale:
        head.append("ACTION")
    body = []
    for row in rows:
        cells = [
            quote(row["name"]),
            row["method"] or "?",
            "-" if row["pid"] is None else str(row["pid"]),
            quote(row["host"] or "-"),
            _state(row["alive"], row.get("judged")),
            _age_text(row["age"]),
            "yes" if row["stale"] else "no",
        ]
        if break_stale:
            cells.append("removed" if row.get("removed") else "kept")
        for note in (row.get("error"), row.get("reason")):
            if note:
                cells.append(f"({quote(note, sentence=True)})")
        body.append(cells)
    widths = [max(len(r[i]) for r in [head, *body] if i < len(r)) for i in range(len(head))]
    lines = []
    for cells in [head, *body]:
        fixed = [c.ljust(widths[i]) for i, c in enumerate(cells[: len(head)])]
        lines.append("  ".join(fixed + cells[len(head) :]).rstrip())
    return "".join(line + "\n" for line in lines)


def _seconds(text: str) -> float:
    """``--stale``'s value: a finite number of seconds > 0 (not nan, inf, 0 or -1)."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, not {text!r}")
    return value


#: ``version`` of the ``--json`` document; bumped only when a field changes meaning.
JSON_VERSION = 1


def main(argv: list[str]) -> int:
    """``perlcompat locks DIR [--json] [--stale S] [--break-stale] [--lock]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="perlcompat locks",
        description="List the locks in a directory (any method): holder, alive or dead, age.",
    )
    parser.add_argument("directory", metavar="DIR")
    parser.add_argument(
        "--lock",
        action="store_true",
        help="DIR is one lock's path (a directory: an mkdir lock), judged as lock() judges it",
    )
    parser.add_argument("--json", action="store_true", help="print the locks as JSON")
    parser.add_argument(
        "--stale",
        type=_seconds,
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
    temps: list[str] = []
    opened = None
    try:
        if sys.platform != "win32":  # (Windows: no directory descriptors, no root)
            opened = _open(args.directory, args.lock, args.break_stale)
    except OSError as exc:
        why = str(exc.strerror)
        if not why.startswith("refusing"):
            why = f"cannot read {args.directory}: {why}"
        sys.stderr.write(f"perlcompat locks: {quote(why, sentence=True)}\n")
        return 2
    try:
        path = os.path.abspath(args.directory)
        shown = os.path.dirname(path) if args.lock else path
        where = (pinned(opened.fd) if opened is not None else None) or shown
        target = os.path.join(where, os.path.basename(path)) if args.lock else where
        if args.break_stale and where != shown:
            _unpin_log(where, shown)
        rows = survey(target, args.stale, args.break_stale, lock_path=args.lock)
        if args.break_stale and not args.lock:  # and temp files of dead replace_file writers
            from ..locks.replace import clean_temp_files

            temps = [os.path.basename(path) for path in clean_temp_files(target)]
        rows = [_unpin(row, where, shown) for row in rows]
    except OSError as exc:
        why = _unpin_text(str(exc.strerror), where, shown)
        why = f"cannot read {args.directory}: {why}"
        sys.stderr.write(f"perlcompat locks: {quote(why, sentence=True)}\n")
        return 2
    finally:
        if opened is not None:
            opened.close()
    if args.json:
        import json

        doc = {
            "version": JSON_VERSION,
            "directory": os.path.abspath(args.directory),
            "stale": args.stale,
            "locks": rows,
        }
        if args.break_stale:
            doc["removed_temp_files"] = temps
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif rows:
        sys.stdout.write(_table(rows, args.break_stale))
    else:
        sys.stdout.write(f"no locks in {quote(args.directory)}\n")
    if not args.json:
        for name in temps:
            sys.stdout.write(f"removed {quote(name)} (temp file of a dead replace_file writer)\n")
    return 0
