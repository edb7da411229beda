"""Atomic whole-file replace: temp file beside it, fsync, rename, under a separate lock file.

``replace_file(path, data)`` writes *data* to a new file in *path*'s directory
(so the rename stays on one filesystem), fsyncs it, gives it the old file's
permission bits (and owner, where allowed), renames it over *path* with
``os.replace`` and fsyncs the directory.  A reader sees the old content or the
new, never a mix, and a crash or ``kill -9`` at any moment leaves the old or the
new content; at worst a stray ``.<name>.<pid>.<hex>.tmp`` file remains.

**The lock file.** Renaming a new file into place gives *path* a new inode.  A
process that had opened the old file and is waiting in ``flock`` on it gets its
lock on the orphaned inode after the rename, writes there, and its update is
lost without an error.  So a replaced file must not be its own lock: every
writer locks a separate file that is never replaced.  By default this function
holds ``flock(LOCK_EX)`` on ``<path>.lck`` (nms guestbook.pl's ``$file.lck``) from
before it reads the old content until after the rename; Perl scripts writing the
same file must take the same lock.  ``lock=False`` is for a caller that already
holds the lock all writers use.

*data* may be a callable: it receives the old content (``""``/``b""`` when the file
does not exist yet) and returns the new, read-modify-write under the lock.
*check*, if given, is called after the new file is on disk and right before the
rename (TOP?LOCK's "check again before renaming"); a false result removes the
temporary file and raises ``ExpiredLockError``, leaving *path* untouched.

**Windows.** Windows refuses to rename over a file that another process has
open without FILE_SHARE_DELETE (as Python's ``open()`` and Perl's ``open`` do):
a reader, locked or not, blocks the replace for as long as it reads.  There the
rename is retried (short growing pauses, a pending ``alarm()`` honoured) for up
to :data:`WINDOWS_RENAME_PATIENCE` seconds, then the ``PermissionError`` is
raised and the temporary file removed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys

from ._errno import set_errno

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Union

    Content = Union[str, bytes, bytearray, memoryview]
    PathArg = Union[str, "os.PathLike[str]"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)

#: seconds a replace on Windows waits for readers to close the old file.
WINDOWS_RENAME_PATIENCE = 10.0


def replace_file(
    path: PathArg,
    data: Content | Callable[[str | bytes], Content],
    *,
    lock: bool | PathArg = True,
    encoding: str | None = "utf-8",
    check: Callable[[], object] | None = None,
    timeout: float | None = None,
    fsync: bool = True,
) -> int:
    """Atomically replace *path* with *data* under ``flock`` on ``<path>.lck``; return 1.

    *lock*: True for ``<path>.lck``, a path for another lock file, False for none
    (the caller holds the writers' lock).  *encoding* encodes str (with
    ``surrogateescape``, so undecodable legacy bytes round-trip) and decodes the old
    content for a callable; None passes bytes.  *timeout* bounds the wait for the
    lock (None waits, honouring ``alarm()``).  Raises ``OSError`` (``$!`` set) on
    failure, ``LockError`` when the lock is not had within *timeout*.
    """
    target = os.fspath(path)
    if not isinstance(target, str) or not target:
        raise ValueError(f"replace_file needs a file path, not {path!r}")
    lock_path = _lock_path(target, lock)
    if encoding is None and isinstance(data, str):
        raise TypeError("replace_file got str data with encoding=None; pass bytes")
    if not callable(data) and not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"replace_file data must be str, bytes or a callable, not {data!r}")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0
    ):
        raise ValueError(f"timeout must be a number of seconds >= 0 or None, not {timeout!r}")
    lock_fd = -1
    try:
        if lock_path is not None:
            lock_fd = _take_lock(lock_path, timeout)
        if callable(data):
            old = _read(target)
            new = data(old if encoding is None else old.decode(encoding, "surrogateescape"))
        else:
            new = data
        _write_and_rename(target, _encode(new, encoding), check, fsync)
    except OSError as exc:
        set_errno(exc.errno or errno.EIO)
        raise
    finally:
        if lock_fd >= 0:
            os.close(lock_fd)  # releases the flock
    set_errno(0)
    return 1


def _lock_path(target: str, lock: object) -> str | None:
    """The lock file for *target* named by *lock* (True, False or a path)."""
    if lock is True:
        return target + ".lck"
    if lock is False:
        return None
    if isinstance(lock, (str, os.PathLike)):
        lock_path = os.fspath(lock)
        if isinstance(lock_path, str) and lock_path:
            if os.path.abspath(lock_path) == os.path.abspath(target):
                raise ValueError(
                    f"the lock file must not be the replaced file {target!r}: "
                    "a rename gives it a new inode and waiting writers lose their update"
                )
            return lock_path
    raise TypeError(f"lock must be True, False or a lock file path, not {lock!r}")


def _take_lock(lock_path: str, timeout: float | None) -> int:
    """Open *lock_path* (no symlinks, no truncation) and ``flock(LOCK_EX)`` it; return the fd."""
    import threading

    from ._api import DuplicateLockError, LockError, _held
    from ._errno import get_errno
    from ._flock import LOCK_EX, flock

    mine = _held.get(("flock", os.path.abspath(lock_path)))
    if mine is not None and mine._owner_thread == threading.get_ident():
        raise DuplicateLockError(
            f"this thread already holds {lock_path!r} with lock(); pass lock=False to replace_file"
        )
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_BINARY, 0o666)
    except PermissionError:
        fd = os.open(lock_path, os.O_RDONLY | _O_NOFOLLOW | _O_BINARY)
    try:
        if not flock(fd, LOCK_EX, timeout):
            number = get_errno()
            if number == errno.EWOULDBLOCK:
                raise LockError(f"lock file {lock_path!r} is busy (waited {timeout:g} s)")
            raise OSError(number, os.strerror(number), lock_path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read(target: str) -> bytes:
    """The current content of *target*, b"" if it does not exist."""
    try:
        fd = os.open(target, os.O_RDONLY | _O_BINARY)
    except FileNotFoundError:
        return b""
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _encode(new: object, encoding: str | None) -> bytes | bytearray | memoryview:
    """*new* as bytes: str encoded with *encoding* and surrogateescape."""
    if isinstance(new, str):
        if encoding is None:
            raise TypeError("replace_file got str data with encoding=None; return bytes")
        return new.encode(encoding, "surrogateescape")
    if isinstance(new, (bytes, bytearray, memoryview)):
        return new
    raise TypeError(f"replace_file's data callable must return str or bytes, not {new!r}")


def _write_and_rename(
    target: str,
    content: bytes | bytearray | memoryview,
    check: Callable[[], object] | None,
    fsync: bool,
) -> None:
    """Write *content* to a temp file beside *target*, fsync, check, rename, fsync the dir."""
    directory = os.path.dirname(os.path.abspath(target))
    try:
        old = os.lstat(target)
    except FileNotFoundError:
        old = None
    tmp, fd = _create_temp(directory, os.path.basename(target))
    try:
        try:
            if old is not None:
                _copy_mode(fd, old)
            view = memoryview(content).cast("B")
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if check is not None and not check():
            from ._api import ExpiredLockError

            raise ExpiredLockError(
                f"check before replacing {target!r} failed (lock lost?); the file is unchanged"
            )
        if sys.platform == "win32":
            _replace_windows(tmp, target)
        else:
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync and sys.platform != "win32":
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _replace_windows(tmp: str, target: str) -> None:
    """``os.replace``, retried while another process holds *target* open (Windows)."""
    import time

    deadline = time.monotonic() + WINDOWS_RENAME_PATIENCE
    pause = 0.0005
    while True:
        try:
            os.replace(tmp, target)
            return
        except PermissionError:
            if time.monotonic() >= deadline:
                raise
        alarm = sys.modules.get("perlcompat._alarm")
        if alarm is not None:
            alarm.sleep_checked(pause)
        else:
            time.sleep(pause)
        pause = min(pause * 2, 0.01)


def _copy_mode(fd: int, old: os.stat_result) -> None:
    """Give the new file *old*'s permission bits, and its owner where we may (POSIX)."""
    if sys.platform == "win32":
        return
    import stat

    if not stat.S_ISREG(old.st_mode):
        return
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
    if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except PermissionError:  # only root may give a file away; keep at least the group
            with contextlib.suppress(PermissionError):
                os.fchown(fd, -1, old.st_gid)


def _create_temp(directory: str, base: str) -> tuple[str, int]:
    """Create a new ``.<base>.<pid>.<hex>.tmp`` in *directory* with O_EXCL; return path and fd."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_BINARY
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not create a unique temporary file", directory)
