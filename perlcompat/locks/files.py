"""File primitives shared by the lock-file methods: looks, reads, removal, refusals.

Looks never follow a symlink nor block on a FIFO: :func:`lstat`,
:func:`read_small`, :func:`read_same` (only if the path still holds exactly what
was judged) and :func:`read_fd` (from offset 0).  A lock object is named by
:func:`identity` (device, inode, mtime, ctime); :func:`remove_same` is the last
step of every stale removal: it compares that identity once more and removes
only the very object judged; :func:`touch` makes one young again (a refresh).
:func:`busy` tells "taken" from "refused" after
an exclusive create; the ``*_error`` functions build the errors for a lock path
holding something a method did not make; :func:`open_flock_file` opens a
``.lck`` or slot file another user may have planted.  The inode generation, the reads
and writes at offset 0 and the open with Windows sharing flags are the platform seam's
(``locks.osapi``).  Imports the stdlib, ``perl.osflags``, ``locks.owner``,
``locks.osapi`` and ``locks.errors`` only.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module

from ..perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from . import osapi as _osapi, owner as _owner
from .errors import NotALockError, not_a_lock_error
from .osapi import open_file, pread, pwrite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Identity = tuple[int, int, int, int]


def identity(st: os.stat_result) -> Identity:
    """Return what names one lock object: (device, inode, mtime ns, ctime ns)."""
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def lstat(path: str) -> os.stat_result | None:
    """``os.lstat`` that returns None when nothing is at *path*."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_small(path: str, limit: int = 4096) -> bytes | None:
    """Read up to *limit* bytes of a regular file, never following a symlink nor blocking.

    None if absent or not a regular file (a FIFO, a device).
    """
    try:
        fd = open_file(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int = 4096) -> bytes | None:
    """The whole of the open file *fd* from offset 0; None if longer than *limit* or unreadable."""
    try:
        data = pread(fd, limit + 1, 0)
    except OSError:
        return None
    return None if len(data) > limit else data


def read_same(path: str, st: os.stat_result, limit: int = 4096) -> bytes | None:
    """Up to *limit* bytes of the file at *path* if it is still exactly *st*; None if not.

    None when the path changed (another object, written to, gone, or ESTALE:
    replaced by another host) since *st* was taken: the caller judges the new
    one on its next look.  Raises OSError
    (naming *path*) when the file cannot be read, so it cannot be told a lock.
    """
    try:
        fd = open_file(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None  # now a symlink: the next look refuses it
        if exc.errno == errno.ESTALE:
            return None  # replaced or removed by another host as we looked it up
        raise _look_error(path, exc) from None
    try:
        if _shape(os.fstat(fd)) != _shape(st):
            return None
        data = pread(fd, limit, 0)
        if _shape(os.fstat(fd)) != _shape(st) or len(data) != min(st.st_size, limit):
            return None  # rewritten while we read (timestamps can be a few ms coarse)
        return data
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ESTALE):
            return None  # removed after our open (network file systems ask by name): gone
        raise _look_error(path, exc) from None
    finally:
        os.close(fd)


#: set (True) on the error of a failed read of what is at a lock path: the one failure
#: ``Lock.retry_errnos`` may make a busy try (flufl.lock's), since a look makes nothing
LOOK = "perlcompat_look"


def _look_error(path: str, exc: OSError) -> OSError:
    """The error of reading *path* to judge it, naming it (a signal handler's: as raised)."""
    from ..perl.clock import raised_by_alarm

    if raised_by_alarm(exc):
        return exc
    error = OSError(exc.errno, f"cannot read {path!r} to tell whether it is a lock: {exc.strerror}")
    setattr(error, LOOK, True)
    return error


def _shape(st: os.stat_result) -> tuple[int, int, int, int, int]:
    # where a look by path may be answered from the directory entry (Windows), its change
    # time can be the mtime while a handle's is the real one: not compared there
    ctime = 0 if _osapi.looks_can_be_refused() else st.st_ctime_ns
    return (st.st_dev, st.st_ino, st.st_mtime_ns, ctime, st.st_size)


def rewrite_record(path: str, st: os.stat_result, data: bytes, limit: int = 4096) -> bool:
    """Make the lock file *st* at *path* hold *data*; False if *path* is another file now.

    Rewritten in place only when it differs, emptied first: a reader sees an empty
    file (an unknown owner) or the whole record, never a shorter one over a longer
    one's tail.
    """
    if read_small(path, limit) == data:
        return True
    fd = open_file(path, os.O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_BINARY)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False
        os.ftruncate(fd, 0)
        pwrite(fd, data, 0)
    finally:
        os.close(fd)
    return True


#: seconds an empty file of another user's may be a lock being made (its line follows).
OTHERS_EMPTY_GRACE = 1.0


def touch(path: str, st: os.stat_result) -> os.stat_result | None:
    """Set the times of the lock object *st* at *path* to now; its new lstat, None if changed.

    Through a descriptor of the object when it can be opened (checked to be *st*
    itself, so only that object is touched), else by path without following a
    symlink (a symlink lock; a directory we may not read); by path on Windows.
    None, touching nothing, if the path no longer holds *st*'s inode.
    """
    return _osapi.touch(path, st)


def root_and_not_mine(st: os.stat_result) -> bool:
    """True if we are root and the file *st* belongs to another user (POSIX).

    Root never writes into, nor takes for a lock, another user's file that no
    record proves a lock: it may be theirs.
    """
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0 and st.st_uid != 0


def unlink_quietly(path: str) -> bool:
    """Unlink *path*; False instead of an error if that fails."""
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def busy(exc: OSError, path: str) -> bool:
    """True if *exc* from an exclusive create of *path* means "taken", not "refused".

    EEXIST; ESTALE (a network file system: the name was replaced or removed by
    another host as we looked it up; nothing was created, try again) while the
    lock's directory can still be looked at (a stale handle of the directory
    itself, a removed working directory or a re-exported mount, stays stale:
    an error, never waited on for ever); or EPERM/EACCES, which network file
    systems report for collisions (sshfs), when the name is there, or when it is
    gone again (released in between) but the directory lets us create a probe
    file beside it.
    """
    if isinstance(exc, FileExistsError):
        return True
    if exc.errno == errno.ESTALE:
        try:
            os.stat(os.path.dirname(path) or ".")
        except OSError:
            return False
        return True
    if exc.errno not in (errno.EPERM, errno.EACCES):
        return False
    if lstat(path) is not None:
        return True
    probe = f"{path}.breaking.{os.urandom(6).hex()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    except OSError:
        return False  # refused for real
    os.close(fd)
    unlink_quietly(probe)
    return True


def kind_error(path: str, st: os.stat_result, wanted: str) -> NotALockError:
    """Return the error for a lock path occupied by something its method cannot have made."""
    if stat_module.S_ISLNK(st.st_mode):
        return not_a_lock_error(
            errno.ELOOP,
            f"lock path {path!r} is a symlink, not a {wanted}; refusing to use or follow it",
            path,
        )
    number = errno.ENOTDIR if wanted == "directory" else errno.EEXIST
    return not_a_lock_error(number, f"lock path {path!r} exists and is not a {wanted}", path)


def not_a_lock(path: str, method: str, why: str, number: int = errno.EEXIST) -> NotALockError:
    """Return the error for a lock path holding something its method did not make."""
    return not_a_lock_error(
        number,
        f"lock path {path!r} {why}: not a lock of method {method!r}; refusing to touch it",
        path,
    )


def open_error(path: str, exc: OSError, wanted: str) -> OSError:
    """Return a clear error for a failed open of the lock file *path* (symlink, directory)."""
    if exc.errno == errno.ELOOP:
        return not_a_lock_error(
            errno.ELOOP,
            f"lock path {path!r} is a symlink, not a {wanted}; refusing to use or follow it",
            path,
        )
    if exc.errno == errno.EISDIR or (isinstance(exc, PermissionError) and _is_dir(path)):
        # (Windows refuses to open a directory with EACCES: still refused, never waited on)
        return not_a_lock_error(
            errno.EISDIR, f"lock path {path!r} is a directory, not a {wanted}", path
        )
    return exc


def _is_dir(path: str) -> bool:
    try:
        return stat_module.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def links_error(path: str, st: os.stat_result, method: str) -> OSError | None:
    """The error for a file with more than one hard link (EPERM), else None."""
    if st.st_nlink > 1:
        return not_a_lock(path, method, f"has {st.st_nlink} hard links", errno.EPERM)
    return None


def is_record(data: bytes | None, kind: str, blank: bool = False) -> bool:
    """True if the whole file *data* is one owner record of *kind* (or blank, if allowed)."""
    if not data or not data.endswith(b"\n") or data.count(b"\n") != 1:
        return False
    if blank and not data.strip():
        return True
    return _owner.parse(data, kind) is not None


def same(path: str, st: os.stat_result) -> bool:
    """True if *path* still holds exactly the object *st* (the last look before removal)."""
    now = lstat(path)
    return now is not None and identity(now) == identity(st)


def remove_same(path: str, st: os.stat_result, remove: Callable[[str], object] = os.unlink) -> bool:
    """``remove(path)`` if *path* still holds exactly the object *st*; True if removed.

    The removal step of every ``_remove`` (rule 2): the identity is compared
    right before it, and nothing is removed (False) if the path holds anything
    else, nothing, or if the removal fails.
    """
    if not same(path, st):
        return False
    try:
        remove(path)
    except OSError:
        return False
    return True


def open_flock_file(path: str) -> int:
    """Open, creating it (0666 less umask), a file to ``flock``: a ``.lck`` or slot file.

    Never follows a symlink, never blocks on a FIFO another user planted
    (``O_NONBLOCK``), never truncates; anything but a regular file is refused
    (OSError naming *path*).  A file we may not write is opened read-only
    (flock(2) locks those too); a create refused in a read-only directory stays
    EACCES.
    """
    flags = O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
    try:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o666)
        except PermissionError as refused:
            try:
                fd = os.open(path, os.O_RDONLY | flags)
            except FileNotFoundError:
                raise refused from None  # not there, and we may not create it: EACCES
    except OSError as exc:
        raise open_error(path, exc, "regular file") from None
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat_module.S_ISREG(st.st_mode):
        os.close(fd)
        raise kind_error(path, st, "regular file")
    return fd
