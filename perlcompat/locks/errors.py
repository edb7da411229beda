"""The lock errors: ``LockError`` (an ``OSError`` with errno set) and its subclasses.

``lock()``/``unlock()`` turn them into Perl's 0 and ``$!``; ``Lock``,
``Semaphore`` and ``replace_file`` raise them.  Each class's ``default_errno``
is the ``$!`` it stands for.
"""

from __future__ import annotations

import errno


class LockError(OSError):
    """A lock was not acquired within its patience (errno EWOULDBLOCK)."""

    default_errno = errno.EWOULDBLOCK

    def __init__(self, message: str, errno_: int | None = None) -> None:
        number = self.default_errno if errno_ is None else errno_
        super().__init__(number, message)

    def __reduce__(self) -> tuple[object, ...]:
        # OSError's own gives cls(errno, message): the arguments swapped for this __init__.
        return type(self), (self.strerror, self.errno), self.__dict__ or None


class LockTimeout(LockError, TimeoutError):
    """No lock within the patience: a ``LockError`` and a ``TimeoutError`` (errno EWOULDBLOCK).

    ``lock_file`` is the lock's path (filelock's ``Timeout.lock_file``; a redis lock's name).
    """

    default_errno = errno.EWOULDBLOCK
    lock_file: str | None = None


class DuplicateLockError(LockError):
    """This thread already holds that lock (errno EDEADLK)."""

    default_errno = errno.EDEADLK


class NotLockedError(LockError):
    """Releasing a lock this object does not hold (errno ENOLCK)."""

    default_errno = errno.ENOLCK


#: The Redis Mutex article's name for :class:`NotLockedError` (flufl.lock's is ``NotLockedError``).
HasNotLockError = NotLockedError


class ExpiredLockError(LockError):
    """Released after its stale limit: someone may have broken it (errno ETIMEDOUT)."""

    default_errno = errno.ETIMEDOUT


# Named where users import them: tracebacks say ``perlcompat.LockTimeout``, and a
# pickled error names ``perlcompat`` (which loads it lazily), not this module's path.
for _cls in (LockError, LockTimeout, DuplicateLockError, NotLockedError, ExpiredLockError):
    _cls.__module__ = "perlcompat"
del _cls
