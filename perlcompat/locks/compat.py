"""What ``Lock`` offers in the Python lock libraries' shapes (issue 34).

* ``Lock(path, is_singleton=True)`` (filelock's name): every such call for the same
  path, of the same class, gives the same object, while it lives; its ``__init__``
  runs once.  A call that differs from the first in any other argument is a
  ``ValueError`` naming them: the object it would get is not the one it asked for.
  :func:`singleton` makes or finds it (``Lock``'s metaclass calls it only then).
* ``lk.stale`` may be set after construction (flufl.lock's ``lifetime``): it is
  the age after which others may break the lock, and what this object's own
  release checks against (``ExpiredLockError``); ``lk.refresh(stale)`` sets it and
  refreshes.  ``lk.expiration`` is when this object's hold turns stale,
  ``lk.details`` (host, pid, path) who holds the lock at the path now, read from it,
  ``lk.hostname`` this host as lock records name it (flufl.lock's names).
  :class:`Settable` holds them.
* ``Lock(path, thread_local=False)`` (filelock's): the object's holds are one count
  for every thread: a thread's ``acquire()`` while another thread holds it counts one
  more hold, and any thread may release (the hold moves to the releasing thread, so
  exit and signal cleanup still find it).  The object's gate (``locks.threadsafe``) is
  held for one step only (:func:`acquire_shared`, :func:`release_shared`), so one
  backend is never driven by two threads at once.
* :func:`extend` is ``Lock.extend`` (a Redis lease renewed), :func:`decorate` ``@Lock(...)``.
"""

from __future__ import annotations

import os
from _thread import allocate_lock, get_ident

from ..perl.clock import check_seconds
from .options import _Unset, check_timeout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from typing import Any, TypeVar

    from .api import Lock
    from .contract import Backend

    F = TypeVar("F", bound=Callable[..., Any])

_making = allocate_lock()  # two threads' first calls for one path make one object


def singleton(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``cls(*args, **kwargs)`` with ``is_singleton=True``: the one object of its path.

    ``Lock``'s metaclass (``api``) calls it; the object is made (``__init__`` run) once.
    """
    import inspect
    import weakref

    init = cls.__init__  # type: ignore[misc]  # (the class's own, a subclass's too)
    bound = inspect.signature(init).bind(None, *args, **kwargs)
    bound.apply_defaults()
    given = dict(bound.arguments)
    given.pop(next(iter(given)))  # self
    name = given.pop(next(iter(given)))  # the lock's path: the first argument
    key = os.path.abspath(os.fspath(name)) if isinstance(name, (str, os.PathLike)) else name
    with _making:
        instances = cls.__dict__.get("_instances")
        if instances is None:
            instances = weakref.WeakValueDictionary()
            type.__setattr__(cls, "_instances", instances)
        found = instances.get(key)
        if found is None:
            found = type.__call__(cls, *args, **kwargs)
            found._singleton_args = given
            instances[key] = found
            return found
    first: dict[str, Any] = found._singleton_args
    differ = sorted(k for k, v in given.items() if k not in first or first[k] != v)
    if differ:
        raise ValueError(
            "Singleton lock instances cannot be initialized with differing arguments:"
            f" {', '.join(f'{k}={given[k]!r} (was {first.get(k)!r})' for k in differ)}"
            f" for lock {key!r}"
        )
    return found


def decorate(lock: Lock, func: F) -> F:
    """``Lock.__call__``: *func* holding *lock* around each call."""
    import functools

    @functools.wraps(func)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return func(*args, **kwargs)

    return locked  # type: ignore[return-value]


class Settable:
    """``Lock``'s ``stale`` (settable), ``expiration``, ``details``, ``hostname``."""

    _stale: float
    _since: float
    _owner_thread: int | None
    _backend: Backend
    auto_refresh: float | None
    path: str
    _expires: tuple[tuple[float, float], datetime] | None = None

    @property
    def stale(self) -> float:
        """Seconds after which others may break the lock (settable: flufl.lock's ``lifetime``)."""
        return self._stale

    @stale.setter
    def stale(self, value: float) -> None:
        seconds = check_seconds("stale", value, zero=False)
        if self.auto_refresh is not None and self.auto_refresh >= seconds:
            raise ValueError(
                f"stale must be longer than auto_refresh ({self.auto_refresh:g} s), not"
                f" {value!r}: a lock refreshed that late is broken first"
            )
        self._stale = float(seconds)
        self._backend.stale = self._stale

    @property
    def expiration(self) -> datetime:
        """When this object's hold turns stale (others may break it; its release raises
        ``ExpiredLockError`` after it); NotLockedError if it does not hold the lock."""
        if self._owner_thread is None:
            from .errors import NotLockedError

            raise NotLockedError(f"lock {self.path!r} is not held by this Lock")
        cached = self._expires
        if cached is None or cached[0] != (self._since, self._stale):  # (once per hold)
            import time
            from datetime import datetime, timedelta

            at = datetime.now() + timedelta(seconds=self._stale - (time.monotonic() - self._since))
            cached = self._expires = ((self._since, self._stale), at)
        return cached[1]

    @property
    def details(self) -> tuple[str | None, int | None, str]:
        """(host, pid, path) of whoever holds the lock at the path now, read from the lock;
        host and pid None where its format records none; NotLockedError if there is no lock."""
        found = self._backend.describe()
        if found is None:
            from .errors import NotLockedError

            raise NotLockedError(f"there is no lock at {self.path!r}")
        return found.get("host"), found.get("pid"), self.path

    @property
    def hostname(self) -> str:
        """This host's name as lock records (and :attr:`details`) give it."""
        from .owner import hostname

        return hostname()


def extend(lock: Lock, seconds: float | None) -> None:
    """``Lock.extend``: renew a lease-based lock (redis) to *seconds* (default ``stale``)."""
    import time

    from .errors import ExpiredLockError, NotLockedError

    if lock._owner_thread is None:
        raise NotLockedError(f"lock {lock.path!r} is not held by this Lock")
    if seconds is not None:
        seconds = check_seconds("seconds", seconds, zero=False)
    if not lock._backend.supports_extend:
        raise TypeError(f"lock method {lock.method!r} has no lease to extend")
    if not lock._backend.extend(seconds):
        raise ExpiredLockError(f"lock {lock.path!r} was lost before it could be extended")
    length = lock.stale if seconds is None else float(seconds)
    lock._since = time.monotonic() + length - lock.stale


def acquire_shared(
    lock: Lock, timeout: float | _Unset | None, poll: float | None, blocking: bool
) -> None:
    """``Lock.acquire`` with ``thread_local=False``: held by the object, whichever thread
    took it, a call counts one more hold; else the lock is taken as by ``acquire()``."""
    import time

    from .errors import DuplicateLockError
    from .threadsafe import TAKE, gate_of

    if not blocking:
        timeout = 0
    timeout = lock.timeout if isinstance(timeout, _Unset) else check_timeout(timeout)
    poll = lock.poll if poll is None else check_seconds("poll_interval", poll, zero=False)
    deadline = None if timeout is None else time.monotonic() + timeout
    gate = gate_of(lock)
    if gate.held_here():  # a signal handler mid-step of this thread: never wait for itself
        raise DuplicateLockError(
            f"lock {lock.path!r}: acquire() re-entered (from a signal handler?) while this"
            " thread is taking or releasing it"
        )
    if not gate.take(deadline):  # another thread's step: its wait for the lock, at most
        raise lock._timed_out(timeout)
    try:
        if lock._owner_thread is not None:
            lock._count += 1
            return
        gate.step = TAKE
        lock._wait_take(get_ident(), None, deadline, timeout, poll)
    finally:
        gate.leave()


def release_shared(lock: Lock, force: bool, me: int) -> None:
    """``Lock.release`` with ``thread_local=False`` by the thread *me*: a hold taken in
    another thread moves to this one first (the registry of held locks is per thread)."""
    from . import cleanup as _cleanup
    from .errors import NotLockedError
    from .threadsafe import gate_of

    gate = gate_of(lock)
    if gate.held_here():  # a signal handler mid-step of this thread: never wait for itself
        raise NotLockedError(
            f"lock {lock.path!r} is being taken by this thread, not held (release()"
            " re-entered from a signal handler?)"
        )
    gate.take(None)  # (another thread's step: a release, or a wait within its timeout)
    try:
        owner = lock._owner_thread
        if owner is not None and owner != me:
            _cleanup.untrack(lock)
            lock._owner_thread = me
            _cleanup.track(lock)
        lock._releasing = me
        try:
            lock._release(force, me)
        finally:
            lock._releasing = 0
    finally:
        gate.leave()
