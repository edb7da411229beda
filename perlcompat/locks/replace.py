"""Atomic whole-file replace: temp file beside it, fsync, rename, under a separate lock file.

``replace_file(path, data)`` writes *data* to a new file in *path*'s directory
(so the rename stays on one filesystem), fsyncs it, gives it the old file's
owner (where allowed), permission bits and POSIX ACL, renames it over *path* with
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
does not exist yet) and returns the new, read-modify-write under the lock.  With
``lines=True`` it receives Perl's lines instead (``@lines = <IN>``: a list of the
lines with their ``"\\n"``, split at ``"\\n"`` only, the last one without it if the
file does not end with one) and may return a list of lines.  ``must_exist=True``
is Perl's ``open(IN, "<$f") or die``: a file that cannot be opened for reading
raises its ``OSError`` (``FileNotFoundError``) before anything is written.
*check*, if given, is called after the new file is on disk and right before the
rename (TOP?LOCK's "check again before renaming"); a false result removes the
temporary file and raises ``ExpiredLockError``, leaving *path* untouched.

**Only a regular file is replaced.** A symlink at *path* is refused with
``OSError`` ELOOP (a planted link must neither be read through, leaking its
target into a new file, nor silently turned into a detached copy), a directory
with EISDIR, a FIFO, socket or device with EINVAL; nothing is written.  The old
content is read with ``O_NOFOLLOW``.  The temp file of an existing file is
created 0600 and only then given the old one's owner, mode and POSIX ACL (GNU
``sed -i``'s order; ``tempfile.mkstemp``'s 0600), so no other user can open it
while it holds the new content of a file they may not read; a new file is
created as ``open(">f")`` creates it (0666 less the umask, a default ACL).

**Temp files of killed writers.** A writer holds ``flock(LOCK_EX)`` on its temp
file (POSIX) from just after creating it until after the rename.  Each writer,
once it holds the lock, and ``perlcompat locks --break-stale`` call
:func:`clean_temp_files`, which removes a temp file only if all of these hold,
checked in this order: its name is exactly ``.<name>.<pid>.<8 hex>.tmp``; it is a
regular file with one link; the pid in its name is dead on this host (``locks.owner``:
ESRCH, a zombie, or a process that started after the file was written); its
flock can be taken with LOCK_NB (no writer anywhere holds it, NFS included); and,
holding that flock, the path still names the same inode with the same mtime and
ctime.  Anything else is left alone.  (Windows: nothing is removed; a live
writer's pid cannot be judged there.)

**Windows.** Windows refuses to rename over a file that another process has
open without FILE_SHARE_DELETE (as Python's ``open()`` and Perl's ``open`` do):
a reader, locked or not, blocks the replace for as long as it reads.  There the
rename is retried (short growing pauses, a pending ``alarm()`` honoured) for up
to :data:`WINDOWS_RENAME_PATIENCE` seconds, then the ``PermissionError`` is
raised and the temporary file removed.  The other way round, ``MoveFileEx``
holds the renamed file open with DELETE access until it returns, so for those
microseconds an ``open()`` that does not share delete (Python's, Perl's) fails
with ``PermissionError`` (a sharing violation).  :func:`read_file` is the reader's
side: it opens with FILE_SHARE_READ|WRITE|DELETE (``osapi.open_file``) and
retries a ``PermissionError`` for up to :data:`WINDOWS_RENAME_PATIENCE` seconds.
"""

from __future__ import annotations

import contextlib
import errno
import os

from ..perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from . import osapi as _osapi
from .errors import perl_sub

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Union

    Content = Union[str, bytes, bytearray, memoryview]
    PathArg = Union[str, "os.PathLike[str]"]

#: seconds a replace on Windows waits for readers to close the old file.
WINDOWS_RENAME_PATIENCE = 10.0


@perl_sub(raises=True)
def replace_file(
    path: PathArg,
    data: Content | Callable[[str | bytes], Content],
    *,
    lock: bool | PathArg = True,
    encoding: str | None = "utf-8",
    check: Callable[[], object] | None = None,
    timeout: float | None = None,
    fsync: bool = True,
    must_exist: bool = False,
    lines: bool = False,
) -> int:
    """Atomically replace *path* with *data* under ``flock`` on ``<path>.lck``; return 1.

    *lock*: True for ``<path>.lck``, a path for another lock file, False for none
    (the caller holds the writers' lock).  *encoding* encodes str (with
    ``surrogateescape``, so undecodable legacy bytes round-trip) and decodes the old
    content for a callable; None passes bytes.  *timeout* bounds the wait for the
    lock (None waits, honouring ``alarm()``).  *must_exist*: refuse (``OSError``,
    ``FileNotFoundError`` for a missing file) unless *path* can be read, as Perl's
    ``open(IN, "<$f") or die``.  *lines*: the callable gets a list of Perl lines
    (str, or bytes with ``encoding=None``) and may return a list.  Raises ``OSError``
    (``$!`` set) on failure, ``LockError`` when the lock is not had within *timeout*.
    """
    target = os.fspath(path)
    if not isinstance(target, str) or not target:
        raise ValueError(f"replace_file needs a file path, not {path!r}")
    lock_path = _lock_path(target, lock)
    if encoding is None and isinstance(data, str):
        raise TypeError("replace_file got str data with encoding=None; pass bytes")
    if not callable(data) and not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"replace_file data must be str, bytes or a callable, not {data!r}")
    if lines and not callable(data):
        raise TypeError("replace_file(lines=True) needs a callable that takes the lines")
    if timeout is not None:
        from ..perl.clock import check_seconds

        timeout = check_seconds("timeout", timeout)
    lock_fd = -1
    try:
        if lock_path is not None:
            lock_fd = _take_lock(lock_path, timeout)
        _clean_quietly(target)
        if callable(data):
            raw = _read(target, must_exist)
            old = raw if encoding is None else raw.decode(encoding, "surrogateescape")
            new = data(perl_lines(old) if lines else old)  # type: ignore[arg-type]
        else:
            if must_exist:  # Perl's open(IN, "<$f")
                os.close(os.open(target, os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_BINARY))
            new = data
        _write_and_rename(target, _encode(new, encoding), check, fsync)
    finally:
        if lock_fd >= 0:
            os.close(lock_fd)  # releases the flock
    return 1


@perl_sub(raises=True)
def read_file(
    path: PathArg, *, encoding: str | None = "utf-8", lines: bool = False
) -> str | bytes | list[str] | list[bytes]:
    """The whole content of *path*, read without a lock, as a display CGI reads a file
    that ``replace_file`` rewrites (File::Slurp's ``read_file``).

    A rename-replace makes every read a whole old or whole new version.  On Windows
    the file is opened sharing delete (so a rename's handle on it does not refuse
    the open) and a ``PermissionError`` is retried for up to
    :data:`WINDOWS_RENAME_PATIENCE` seconds.  *encoding* decodes with
    ``surrogateescape`` (None: bytes); *lines* gives Perl's lines as :func:`perl_lines`.
    Only a regular file is read (no symlinks).  Raises ``OSError`` (``$!`` set) when
    it cannot be read: ``FileNotFoundError`` if it does not exist.
    """
    target = os.fspath(path)
    if not isinstance(target, str) or not target:
        raise ValueError(f"read_file needs a file path, not {path!r}")
    raw = _read_shared(target)
    text = raw if encoding is None else raw.decode(encoding, "surrogateescape")
    return perl_lines(text) if lines else text


def _read_shared(target: str) -> bytes:
    """*target*'s bytes; on Windows opened sharing delete, a PermissionError retried."""
    return _osapi.while_readers(WINDOWS_RENAME_PATIENCE, _read_existing, target)


def _read_existing(target: str) -> bytes:
    """The content of the regular file *target*; ``FileNotFoundError`` if there is none."""
    return _read(target, must_exist=True)


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
    from ..perl.consts import LOCK_EX
    from ..perl.errno import get_errno
    from ..perl.flock import flock
    from .api import DuplicateLockError, LockError, owned_here

    if owned_here("flock", os.path.abspath(lock_path)) is not None:
        raise DuplicateLockError(
            f"this thread already holds {lock_path!r} with lock(); pass lock=False to replace_file"
        )
    from .files import open_flock_file

    fd = open_flock_file(lock_path)  # (a FIFO planted there is refused, not waited on)
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


def _read(target: str, must_exist: bool = False) -> bytes:
    """The current content of *target*, b"" if it does not exist (unless *must_exist*).

    Only a regular file is read: never through a symlink (``O_NOFOLLOW``); opened with
    ``osapi.open_file`` (sharing delete on Windows).
    """
    old = _old_file(target)  # (a symlink, directory or device raises here)
    if old is None and must_exist:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), target)
    try:
        fd = _osapi.open_file(target, os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_BINARY)
    except FileNotFoundError:
        if must_exist:
            raise
        return b""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_regular(target, errno.ELOOP, "a symlink") from None
        raise
    try:
        return _read_all(fd, target)
    finally:
        os.close(fd)


def _read_all(fd: int, target: str) -> bytes:
    """Everything *fd* holds, refusing anything but a regular file."""
    import stat

    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped in since the lstat
        raise _not_regular(target, errno.EINVAL, "not a regular file")
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def perl_lines(text: str | bytes) -> list[str] | list[bytes]:
    """Split *text* as Perl's ``<IN>`` in list context: lines with their ``"\\n"``.

    Only ``"\\n"`` ends a line (``splitlines()`` also splits at \\x0b, \\x0c,
    \\x1c-\\x1e and \\x85, bytes found inside Shift_JIS and Latin-1 text); a last
    line without ``"\\n"`` is kept as it is.  The result is a ``PerlList``.
    """
    from ..perl.lists import PerlList

    newline = "\n" if isinstance(text, str) else b"\n"
    parts = text.split(newline)  # type: ignore[arg-type]
    last = parts.pop()
    found = PerlList([part + newline for part in parts])  # type: ignore[operator]
    if last:
        found.append(last)
    return found


def _encode(new: object, encoding: str | None) -> bytes | bytearray | memoryview:
    """*new* as bytes: str encoded with *encoding* and surrogateescape; a list is joined."""
    if isinstance(new, (list, tuple)):
        if all(isinstance(item, str) for item in new):
            new = "".join(new)
        elif all(isinstance(item, (bytes, bytearray)) for item in new):
            new = b"".join(new)
        else:
            raise TypeError(
                "replace_file's data callable returned a list that is not all str or all bytes"
            )
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
    old = _old_file(target)
    # 0600 while it is another file's replacement (tempfile.mkstemp, GNU sed -i); a new
    # file is made as open(">f") makes it (0666 less the umask, a default ACL)
    tmp, fd = _create_temp(directory, os.path.basename(target), 0o666 if old is None else 0o600)
    try:
        try:
            if old is not None:
                _osapi.copy_owner_and_mode(fd, old, target)
            view = memoryview(content).cast("B")
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
            if not _osapi.renames_open_files():  # (Windows)
                os.close(fd)
                fd = -1
            if check is not None and not check():
                from .api import ExpiredLockError

                raise ExpiredLockError(
                    f"check before replacing {target!r} failed (lock lost?); the file is unchanged"
                )
            # (retried on Windows while readers hold the old file open)
            _osapi.while_readers(WINDOWS_RENAME_PATIENCE, os.replace, tmp, target)
        finally:
            if fd >= 0:
                os.close(fd)  # releases the temp file's flock, after the rename
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        _osapi.fsync_directory(directory)


def _old_file(target: str) -> os.stat_result | None:
    """``lstat`` of *target* (None if absent); OSError unless it is a regular file."""
    import stat

    from .files import lstat

    old = lstat(target)
    if old is None:
        return None
    if stat.S_ISREG(old.st_mode):
        return old
    if stat.S_ISLNK(old.st_mode):
        raise _not_regular(target, errno.ELOOP, "a symlink")
    if stat.S_ISDIR(old.st_mode):
        raise _not_regular(target, errno.EISDIR, "a directory")
    raise _not_regular(target, errno.EINVAL, "not a regular file")


def _not_regular(target: str, number: int, what: str) -> OSError:
    return OSError(
        number,
        f"replace_file: {target!r} is {what}; only a regular file is replaced "
        "(a symlink is neither followed nor replaced)",
        target,
    )


def _create_temp(directory: str, base: str, mode: int) -> tuple[str, int]:
    """Create a new ``.<base>.<pid>.<hex>.tmp`` (*mode*) in *directory* with O_EXCL; path and fd.

    On POSIX the fd carries ``flock(LOCK_EX)``: the mark of a live writer that
    :func:`clean_temp_files` respects, wherever that writer runs.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_BINARY
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            fd = os.open(tmp, flags, mode)
        except FileExistsError:
            continue
        _osapi.hold_temp_file(fd)
        return tmp, fd
    raise FileExistsError(errno.EEXIST, "could not create a unique temporary file", directory)


# -- temp files of dead writers ---------------------------------------------------
_HEX = frozenset("0123456789abcdef")


def temp_file_owner(name: str, base: str | None = None) -> int | None:
    """The writer pid if *name* is exactly one of our temp names ``.<base>.<pid>.<hex8>.tmp``.

    *base*: the replaced file's name, or None for any.  None if *name* is not one.
    """
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    parts = name[1:-4].rsplit(".", 2)
    if len(parts) != 3:
        return None
    stem, pid, tag = parts
    if not stem or (base is not None and stem != base):
        return None
    if len(tag) != 8 or not _HEX.issuperset(tag):
        return None
    if not (pid.isascii() and pid.isdigit()) or pid[0] == "0" or len(pid) > 10:
        return None
    return int(pid)


def clean_temp_files(directory: str | os.PathLike[str], base: str | None = None) -> list[str]:
    """Remove the temp files that dead ``replace_file`` writers left in *directory*.

    *base* limits it to the temp files of one replaced file's name.  Returns the
    paths removed.  Only files that pass every test in the module docstring are
    removed; nothing is removed on Windows.  An unreadable *directory* raises OSError.
    """
    if not _osapi.pids_known():
        return []  # (Windows) a live writer's pid cannot be judged
    folder = os.fspath(directory)
    removed = []
    with os.scandir(folder) as entries:
        names = [entry.name for entry in entries]
    for name in names:
        pid = temp_file_owner(name, base)
        if pid is not None:
            path = os.path.join(folder, name)
            if _remove_if_orphaned(path, pid):
                removed.append(path)
    return removed


def _remove_if_orphaned(path: str, pid: int) -> bool:
    """Remove the temp file *path* named for writer *pid* if that writer is gone; True if done."""
    import stat

    from ..perl.consts import LOCK_EX, LOCK_NB
    from ..perl.flock import lock_fd
    from .files import identity
    from .owner import alive

    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        return False
    if alive(pid, None, None, st.st_mtime) is not False:
        return False
    flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
    try:
        fd = os.open(path, os.O_RDWR | flags)  # (NFS grants LOCK_EX to writable fds only)
    except PermissionError:
        try:
            fd = os.open(path, os.O_RDONLY | flags)
        except OSError:
            return False
    except OSError:
        return False
    try:
        mine = os.fstat(fd)
        if (mine.st_dev, mine.st_ino) != (st.st_dev, st.st_ino):
            return False
        lock_fd(fd, LOCK_EX | LOCK_NB)  # busy: a writer still has it
        now = os.lstat(path)
        if identity(now) != identity(os.fstat(fd)) or now.st_nlink != 1:
            return False
        os.unlink(path)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _clean_quietly(target: str) -> None:
    """Remove dead writers' temp files of *target*; never fails the write itself.

    As root, only where no other user can write or rename the directory
    (``locks.safedir.refuse_as_root``): elsewhere the temp files are left.
    """
    directory = os.path.dirname(os.path.abspath(target))
    # an unreadable directory (mode 0733): nothing to clean that we can see
    with contextlib.suppress(OSError):
        from .safedir import refuse_as_root

        refuse_as_root(os.path.abspath(target))
        clean_temp_files(directory, os.path.basename(target))
