"""``Lock.state``: what the lock at a ``Lock``'s path looks like now, in flufl.lock's terms.

:class:`LockState` has flufl.lock's names and values.  :func:`state_of` infers one
from one look at the lock (``Backend.holds`` for this object's own hold, else
``Backend.describe``: its owner, alive or not, and its age).  A look is out of date
as soon as it returns; what to do about a state is the program's policy.  Loaded on
first use only.
"""

from __future__ import annotations

import time
from enum import Enum

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .api import Lock


class LockState(Enum):
    """The state of the lock at a path, as far as one look can tell (flufl.lock's)."""

    #: no lock at the path
    unlocked = 1
    #: this object holds it, its hold younger than its ``stale``
    ours = 2
    #: this object holds it, its hold older than its ``stale``: others may break it
    ours_expired = 3
    #: another holder's, whose process on this host is gone: any waiter breaks it
    stale = 4
    #: another holder's, older than this object's ``stale``: this object would break it
    theirs_expired = 5
    #: another holder's, alive or not known (another host); or no lock this method reads
    unknown = 6


def state_of(lock: Lock) -> LockState:
    """*lock*'s :attr:`Lock.state`: its own hold (still the lock on disk), else the lock
    found at its path judged by *lock*'s ``stale`` and its owner's liveness."""
    if lock._owner_thread is not None and still_ours(lock):
        expired = time.monotonic() - lock._since > lock.stale
        return LockState.ours_expired if expired else LockState.ours
    try:
        found = lock.backend.describe()
    except OSError:  # a file there that this method does not read as a lock
        return LockState.unknown
    if found is None:
        return LockState.unlocked
    if found.get("alive") is False:
        return LockState.stale
    if (found.get("age") or 0.0) > lock.stale:
        return LockState.theirs_expired
    return LockState.unknown


def still_ours(lock: Lock) -> bool:
    """The lock at *lock*'s path is still the one it took (one look; True if the method
    cannot tell, or the look fails: as far as the object knows, it holds it)."""
    try:
        return lock._backend.holds() is not False
    except OSError:
        return True


def take_again(lock: Lock) -> bool:
    """``acquire()`` by the holder of a ``reentrant=False`` lock: ``DuplicateLockError``
    while its hold is still the lock on disk; a hold broken meanwhile is released
    (``BrokenLockError``, logged) and False returned: the lock is to be taken anew."""
    from contextlib import suppress

    from .errors import BrokenLockError, DuplicateLockError

    if still_ours(lock):
        raise DuplicateLockError(
            f"lock {lock.path!r} is already held by this Lock (reentrant=False)"
        )
    with suppress(BrokenLockError):  # (logged by the release)
        lock.release()
    return False
