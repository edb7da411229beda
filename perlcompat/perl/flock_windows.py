"""``flock`` on Windows: ``LockFileEx`` over Perl's byte range, through portalocker.

Perl's win32 ``flock`` locks bytes 0..0xFFFF0000 with ``LockFileEx``; portalocker's
``Win32Locker`` (pywin32) locks exactly that range, and is the only portalocker
locker that can take LOCK_SH.  Perl's numbers are translated here because
portalocker's flag values differ on Windows (EX=1, SH=2).  Windows locks are
mandatory: other readers and writers of the range get ``PermissionError``.

Results follow Perl's ``win32_flock``: ERROR_LOCK_VIOLATION (the range is
locked, by another handle or by this one: ``LockFileEx`` does not convert or
repeat a lock, so LOCK_EX|LOCK_NB on a handle that holds LOCK_EX fails) is
EWOULDBLOCK; any other Windows failure, such as LOCK_UN on a handle that holds
nothing, is EINVAL.  A bad descriptor is EBADF.
"""

from __future__ import annotations

import errno

from .consts import LOCK_EX, LOCK_NB, LOCK_UN
from .errno import strerror

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_locker: Any = None


def _get_locker() -> Any:
    """Return the shared ``Win32Locker`` (portalocker >= 3.2 with pywin32)."""
    global _locker
    if _locker is None:
        try:
            from portalocker.portalocker import Win32Locker
        except ImportError as exc:
            raise ImportError(
                "perlcompat's flock on Windows needs portalocker>=3.2 (its Win32Locker, "
                "which locks Perl's byte range) and pywin32: "
                'pip install "portalocker[win32]>=3.2"'
            ) from exc
        _locker = Win32Locker()
    return _locker


def translate(operation: int) -> Any:
    """Return portalocker's ``LockFlags`` for Perl's lock *operation* (not LOCK_UN)."""
    from portalocker import LockFlags

    flags = LockFlags.EXCLUSIVE if operation & LOCK_EX else LockFlags.SHARED
    if operation & LOCK_NB:
        flags |= LockFlags.NON_BLOCKING
    return flags


def lock_fd(fd: int, operation: int) -> None:
    """Apply Perl's flock *operation* to descriptor *fd*; BlockingIOError when busy."""
    from portalocker import exceptions

    locker = _get_locker()
    try:
        if operation & LOCK_UN:
            locker.unlock(fd)
        else:
            locker.lock(fd, translate(operation))
    except exceptions.AlreadyLocked as exc:
        raise BlockingIOError(errno.EWOULDBLOCK, strerror(errno.EWOULDBLOCK)) from exc
    except exceptions.LockException as exc:
        cause = exc.__cause__
        number = cause.errno if isinstance(cause, OSError) and cause.errno else errno.EINVAL
        raise OSError(number, str(exc)) from exc
