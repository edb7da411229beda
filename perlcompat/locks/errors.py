"""The lock errors: ``LockError`` (an ``OSError`` with errno set) and its subclasses,
and :func:`perl_sub`, the one adapter that turns them into Perl's 0 and ``$!``
(:func:`perl_failure` its failing half).

``Lock``, ``Semaphore`` and ``replace_file`` raise them; the Perl-shaped subs
(``lock()``/``unlock()``, ``sem_acquire``/``sem_release``, ``rename_if_holding``)
return 1, or 0 with ``$!`` set, through :func:`perl_sub`.  Each class's
``default_errno`` is the ``$!`` it stands for.
"""

from __future__ import annotations

import errno
from _thread import _local

from ..perl.errno import fail, reraise_foreign, set_errno

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])


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


class NotALockError(LockTimeout):
    """The lock path holds something its method never makes: refused at once, untouched.

    A ``LockTimeout`` too (this lock cannot be had), so a handler written for
    filelock's, portalocker's or flufl.lock's time-out runs; made by
    :func:`not_a_lock_error`, it is also the errno's own ``OSError`` subclass
    (``FileExistsError`` for EEXIST, ``FileNotFoundError``, ``NotADirectoryError``,
    ``IsADirectoryError``, ``PermissionError``), as ``OSError(errno, ...)`` would be.
    ``errno``: why (EEXIST, ENOTEMPTY, ELOOP ...; EEXIST if made without one).
    """

    default_errno = errno.EEXIST


class _ExistsNotALock(NotALockError, FileExistsError):
    """A ``NotALockError`` with errno EEXIST."""


class _NotFoundNotALock(NotALockError, FileNotFoundError):
    """A ``NotALockError`` with errno ENOENT."""


class _NotADirectoryNotALock(NotALockError, NotADirectoryError):
    """A ``NotALockError`` with errno ENOTDIR."""


class _IsADirectoryNotALock(NotALockError, IsADirectoryError):
    """A ``NotALockError`` with errno EISDIR."""


class _PermissionNotALock(NotALockError, PermissionError):
    """A ``NotALockError`` with errno EPERM or EACCES."""


_NOT_A_LOCK = {
    errno.EEXIST: _ExistsNotALock,
    errno.ENOENT: _NotFoundNotALock,
    errno.ENOTDIR: _NotADirectoryNotALock,
    errno.EISDIR: _IsADirectoryNotALock,
    errno.EPERM: _PermissionNotALock,
    errno.EACCES: _PermissionNotALock,
}


def not_a_lock_error(number: int, message: str, path: str) -> NotALockError:
    """The ``NotALockError`` for the lock path *path*, of the class errno *number* maps to."""
    exc = _NOT_A_LOCK.get(number, NotALockError)(message, number)
    exc.lock_file = path
    return exc


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


class BrokenLockError(ExpiredLockError, NotLockedError):
    """Our lock was broken or replaced while held: it expired and is not held any more
    (an ``ExpiredLockError`` and a ``NotLockedError``, flufl.lock's; errno ETIMEDOUT)."""

    default_errno = errno.ETIMEDOUT


_calls = _local()  # ``depth``: the Perl-shaped calls under way in this thread


def in_perl_sub() -> bool:
    """True inside a Perl-shaped call (``lock()``, ``sem_acquire()`` ...) in this thread.

    A nested lock of a name this thread holds is refused there at once (``$!`` =
    EDEADLK); a ``Lock`` object outside one waits for it as for anyone's (issue 34).
    """
    return bool(getattr(_calls, "depth", 0))


def perl_sub(*, raises: bool = False) -> Callable[[F], F]:
    """Make a function Perl-shaped: ``$!`` is 0 after its success, set from its ``OSError``.

    The function returns 1 on success or ``fail(number)``.  An ``OSError`` it
    raises becomes 0 with ``$!`` its errno (EIO if none), except one that did not
    come from a system call or that an ``alarm()`` handler raised
    (``perl.errno.reraise_foreign``): those propagate, as Perl's ``die`` in a
    handler does.  With *raises* the function keeps raising (``replace_file``):
    only ``$!`` is set from the error.
    """

    def wrap(func: F) -> F:
        def sub(*args: Any, **kwargs: Any) -> Any:
            _calls.depth = getattr(_calls, "depth", 0) + 1
            try:
                result = func(*args, **kwargs)
            except OSError as exc:
                if raises:
                    set_errno(exc.errno or errno.EIO)
                    raise
                return perl_failure(exc)
            finally:
                _calls.depth -= 1
            if raises or result:
                set_errno(0)
            return result

        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(sub, name, getattr(func, name))
        sub.__wrapped__ = func  # type: ignore[attr-defined]
        return sub  # type: ignore[return-value]

    return wrap


def perl_failure(exc: OSError) -> int:
    """Perl's 0 with ``$!`` set from *exc* (EIO if it has no errno), for a sub that failed.

    An ``OSError`` that did not come from a system call, or that an ``alarm()`` handler
    raised, propagates instead (``perl.errno.reraise_foreign``).  (``lock()`` and
    ``unlock()`` call it as :func:`perl_sub` does, without its wrapper.)
    """
    if not isinstance(exc, LockError):
        reraise_foreign(exc)
    return fail(exc.errno or errno.EIO)


# Named where users import them: tracebacks say ``perlcompat.LockTimeout``, and a
# pickled error names ``perlcompat`` (which loads it lazily), not this module's path.
for _cls in (
    LockError,
    LockTimeout,
    NotALockError,
    DuplicateLockError,
    NotLockedError,
    ExpiredLockError,
    BrokenLockError,
):
    _cls.__module__ = "perlcompat"
del _cls
