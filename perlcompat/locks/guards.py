"""The remover guards: one remover at a time for one lock path (rule 1 of ``locks.remover``).

A :class:`RemoverGuard` is what ``StaleBackend.break_stale`` serializes with;
``locks.remover.remover_guard`` chooses the kind, in one place, from the lock's
file system: :class:`FlockGuard` on local storage, ``locks.netfs.RemoverLock``
(an O_EXCL file on the storage itself) on shared storage.

The local guard is an exclusive ``flock`` on the lock's directory, or on a
``<lock>.breaker`` file beside it on Windows and where the directory can be
written but not read (mode 0733).  A remover takes it with LOCK_NB: busy means
another remover is at work, try again on the next wait.  A holder releases
under the same flock taken shared (:func:`release_guard`, rule 3), waiting for
it at most ``RELEASE_WAIT`` seconds.

A guard that cannot be taken at all (the open is refused, or the file system
refuses the flock: NFS answers LOCK_EX on a directory opened read-only with
EBADF, a lock daemon out of locks with ENOLCK) raises ``OSError``, errno kept
and the path named, rather than passing for busy: a stale lock that cannot be
broken safely is reported (``lock()`` returns 0 with that ``$!`` at once), not
waited on for ever.
"""

from __future__ import annotations

import errno
import os
from _thread import _local

from ..perl.consts import LOCK_EX, LOCK_NB, LOCK_SH
from ..perl.flock import lock_fd
from ..perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from . import osapi as _osapi
from .retry import deadline_after, tries

#: a release waits at most this long (s) for the remover lock (see ``locks.stale``).
RELEASE_WAIT = 0.5
#: suffix of the file that carries the remover lock where the directory cannot.
BREAKER_SUFFIX = ".breaker"

_tls = _local()


def count_removal(step: int) -> None:
    """Count this thread into (+1) or out of (-1) a removal under a guard.

    :func:`release_guard` in a signal handler that interrupted this thread's own
    removal must not wait for the guard that thread holds.
    """
    _tls.breaking = getattr(_tls, "breaking", 0) + step


def _lock_fd(fd: int, operation: int) -> None:
    lock_fd(fd, operation)


def _guard_open(path: str) -> int:
    """Open the descriptor that carries the remover lock for *path*.

    The lock's directory, or ``<path>.breaker`` on Windows and where the
    directory can be written but not read (EACCES).
    """
    fd = _osapi.open_directory(os.path.dirname(path) or ".")
    if fd is not None:
        return fd
    flags = os.O_RDWR | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
    return os.open(path + BREAKER_SUFFIX, flags, 0o666)


def guard(path: str, exclusive: bool) -> int | None:
    """Take the remover lock of *path* without waiting; the descriptor, or None if busy.

    Raises OSError (its errno kept, the message naming *path*) when the remover
    lock cannot be taken at all: it cannot be opened, or the file system refuses
    the flock (NFS refuses LOCK_EX on a directory opened read-only: EBADF; or
    ENOLCK), so that a stale lock there is reported, not waited on for ever.
    """
    try:
        fd = _guard_open(path)
    except OSError as exc:
        raise _guard_error(path, exc, "open") from None
    try:
        _lock_fd(fd, (LOCK_EX if exclusive else LOCK_SH) | LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError as exc:
        os.close(fd)
        raise _guard_error(path, exc, "take") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _guard_error(path: str, exc: OSError, verb: str) -> OSError:
    return OSError(
        exc.errno,
        f"cannot {verb} the remover lock of {path!r} (a flock on its directory or"
        f" {os.path.basename(path)}{BREAKER_SUFFIX}): {exc.strerror}; its stale lock cannot be"
        " broken safely here",
    )


def release_guard(path: str, patience: float | None = None) -> int | None:
    """Take the remover lock shared, to release a lock, waiting for a remover to finish.

    Polls for at most *patience* seconds (default :data:`RELEASE_WAIT`), then
    raises OSError (EWOULDBLOCK), as it does at once if the lock cannot be
    opened; None only when this thread is itself inside a removal (a signal
    handler's cleanup).
    """
    if getattr(_tls, "breaking", 0):
        return None  # a signal handler interrupted this thread's own removal
    try:
        fd = _guard_open(path)
    except OSError as exc:
        raise OSError(
            exc.errno, f"cannot open the remover lock of {path!r} to release it: {exc.strerror}"
        ) from None
    deadline = deadline_after(RELEASE_WAIT if patience is None else patience)
    try:
        # a release's wait: an ALRM handler must not cut it (alarm=False)
        for _ in tries(deadline, first=0.0005, growth=2, cap=0.02, alarm=False):
            try:
                _lock_fd(fd, LOCK_SH | LOCK_NB)
                return fd
            except BlockingIOError:
                pass
        raise BlockingIOError(errno.EWOULDBLOCK, os.strerror(errno.EWOULDBLOCK))
    except OSError as exc:
        os.close(fd)
        raise OSError(
            exc.errno, f"cannot take the remover lock of {path!r} to release it: {exc.strerror}"
        ) from None
    except BaseException:
        os.close(fd)
        raise


def unguard(fd: int | None) -> None:
    """Drop a remover lock taken by :func:`guard` or :func:`release_guard`."""
    if fd is not None:
        os.close(fd)


class RemoverGuard:
    """One remover at a time for one lock path: what ``break_stale`` serializes with.

    Two kinds, chosen in one place (``locks.remover.remover_guard``): :class:`FlockGuard`
    on local storage, ``locks.netfs.RemoverLock`` on shared storage.
    :meth:`acquire` never waits: False if another remover holds the guard, and
    OSError if the guard cannot be taken at all here (a refused open or lock),
    so a stale lock is reported instead of silently never broken.
    """

    __slots__ = ()

    #: looks may come from a client cache: judge twice, move the lock before removing it
    cached: bool = False
    #: the storage's clock when taken (ns), where the guard has one; None: the local clock
    clock_ns: int | None = None

    def acquire(self) -> bool:
        """Take the guard without waiting; False if busy, OSError if refused."""
        raise NotImplementedError

    def still_mine(self) -> bool:
        """True if the guard is still ours right before a removal."""
        return True

    def release(self) -> None:
        """Drop the guard (a no-op if not taken)."""
        raise NotImplementedError


class FlockGuard(RemoverGuard):
    """The local remover guard: an exclusive flock on the lock's directory (:func:`guard`)."""

    __slots__ = ("_fd", "path")

    def __init__(self, lock_path: str) -> None:
        self.path = lock_path
        self._fd: int | None = None

    def acquire(self) -> bool:
        self._fd = guard(self.path, exclusive=True)
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        unguard(fd)
