"""What ``Lock`` offers in the Python lock libraries' shapes (issue 34).

* ``Lock(path, is_singleton=True)`` (filelock's name): every such call for the same
  lock (method and path as ``Lock`` resolves it, or redis key), of the same class,
  gives the same object, while it lives; its ``__init__`` runs once.  A call that
  differs from the first in any other argument is a ``ValueError`` naming them: the
  object it would get is not the one it asked for.
  :func:`singleton` makes or finds it (``Lock``'s metaclass calls it only then).
* ``lk.stale`` may be set after construction (flufl.lock's ``lifetime``): it is
  the age after which others may break the lock, and what this object's own
  release checks against (``ExpiredLockError``); ``lk.refresh(stale)`` sets it and
  refreshes.  ``lk.expiration`` is when this object's hold turns stale,
  ``lk.details`` (host, pid, path) who holds the lock at the path now, read from it,
  ``lk.hostname`` this host as lock records name it (flufl.lock's names); ``lk.state``
  flufl.lock's ``LockState`` (``locks.state``), ``repr(lk)`` flufl.lock's with the
  method; ``is_locked`` of a hold older than ``stale`` looks at the lock on disk.
  :class:`Settable` holds them.  ``Lock(reentrant=False)`` (flufl.lock's one hold) is
  ``locks.state.take_again``.
* ``Lock(path, thread_local=False)`` (filelock's): the object's holds are one count
  for every thread: a thread's ``acquire()`` while another thread holds it counts one
  more hold, and any thread may release (the hold moves to the releasing thread, so
  exit and signal cleanup still find it).  The object's gate (``locks.threadsafe``) is
  held for one step only (:func:`acquire_shared`, :func:`release_shared`), so one
  backend is never driven by two threads at once.  Threads of one process are not
  excluded from each other.  The holds each thread took are counted (``_shares``, by
  thread token) for ``fork()`` (``locks.fork``); the releases owed after a forced
  release, a cleanup or a hand-off are the object's, served to any thread.
* :func:`extend` is ``Lock.extend`` (a Redis lease renewed), :func:`decorate` ``@Lock(...)``.
"""

from __future__ import annotations

import os
import sys
import weakref
from _thread import allocate_lock, get_ident
from time import monotonic

from ..perl.clock import check_seconds
from .contract import DEFAULT_METHOD
from .errors import NotALockError
from .files import LOOK
from .options import _Unset, check_stale, check_timeout, locate, missing_directory
from .threadsafe import RELEASE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from datetime import datetime
    from typing import Any, TypeVar

    from .acquired import Acquired
    from .api import Lock
    from .contract import Backend
    from .state import LockState
    from .threadsafe import Gate

    F = TypeVar("F", bound=Callable[..., Any])

_making = allocate_lock()  # two threads' first calls for one lock make one object
#: what a singleton's key is made of (the lock's identity), not compared as "differing"
_IDENTITY = ("name", "method", "root", "url")


def busy_or_raise(lock: Lock, exc: OSError) -> bool:
    """False (a busy try) if a try's *exc* is a failed read of the lock path
    (``files.LOOK``) with an errno of ``lock.retry_errnos``, else raise it.

    ENOENT is the missing directory's error (``options.missing_directory``).
    """
    if isinstance(exc, NotALockError):
        raise exc
    if exc.errno in lock._retry_errnos and getattr(exc, LOOK, False):
        lock._retried = exc.with_traceback(None)  # (named by the time-out; no frames kept)
        return False
    if isinstance(exc, FileNotFoundError):
        raise missing_directory(lock.path, lock.method, exc) from None
    raise exc


def _reset_after_fork() -> None:
    """A forked child starts with ``_making`` free (another thread of the parent held it)."""
    global _making
    _making = allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


_signatures: dict[Any, Any] = {}  # __init__ -> its signature (no import on the hot path)


def _signature(init: Any) -> Any:
    found = _signatures.get(init)
    if found is None:
        import inspect

        found = inspect.signature(init)
        if len(_signatures) < 256:  # (classes made on the fly: not kept for ever)
            _signatures[init] = found
    return found


def _arguments(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by name: bound to ``Lock.__init__``'s signature (a subclass's
    pass-through ``__init__(*args, **kwargs)`` too), else to the class's own.

    No ``import`` runs here once warm: a forked child must not wait for a module lock
    another thread of its parent held.
    """
    lock_init = sys.modules[__package__ + ".api"].Lock.__init__
    for init in (lock_init, cls.__init__):  # type: ignore[misc]
        try:
            bound = _signature(init).bind(None, *args, **kwargs)
        except TypeError:
            continue
        bound.apply_defaults()
        given = dict(bound.arguments)
        given.pop(next(iter(given)))  # self
        if init is lock_init or not given:
            return given
        first = next(iter(given))  # a subclass's own signature: its first argument names the lock
        given.setdefault("name", given.pop(first))
        return given
    raise TypeError(f"{cls.__name__}() got arguments it does not take: {args!r}, {kwargs!r}")


def _identity(given: dict[str, Any]) -> tuple[str, str, str | None]:
    """(method, lock path or key, url): the lock the arguments name, as ``Lock`` resolves it.

    The path is the one ``Lock`` computes (``root=``, ``PERLCOMPAT_LOCK_ROOT``) with its
    directory's symlinks resolved; a redis key is the name exactly as given.
    """
    method, path, url = locate(
        given.get("name", "lockdir"), given.get("method"), given.get("url"), given.get("root")
    )
    if url is None:
        directory, base = os.path.split(path)
        path = os.path.join(os.path.realpath(directory), base)  # (the lock itself: not followed)
    return method or DEFAULT_METHOD, path, url


def singleton(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``cls(*args, **kwargs)`` with ``is_singleton=True``: the one object of its lock.

    ``Lock``'s metaclass (``api``) calls it; the object is made (``__init__`` run) once.
    The key is the lock's identity (:func:`_identity`): two calls naming one lock in
    different spellings share an object; two different locks never do.
    """
    given = _arguments(cls, args, kwargs)
    key = _identity(given)
    for name in _IDENTITY:
        given.pop(name, None)
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
            f" for lock {key[1]!r} ({key[0]})"
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
    """``Lock``'s ``is_locked``, ``stale`` (settable), ``expiration``, ``details``,
    ``hostname``, ``state`` and ``repr()`` (flufl.lock's shape)."""

    _stale: float
    _since: float
    _owner_thread: int | None
    _backend: Backend
    _gate: Gate | None
    auto_refresh: float | None
    path: str
    method: str
    _expires: tuple[tuple[float, float], datetime] | None = None
    _retry_errnos: tuple[int, ...] = ()
    _retried: OSError | None = None  # the last error ``retry_errnos`` made a busy try

    @property
    def is_locked(self) -> bool:
        """True while this object holds the lock (False from the start of its release).

        A hold older than ``stale`` (others may break it now) is looked at on disk
        each time: False once it was broken or replaced (its ``release()`` then raises
        ``BrokenLockError``).  A younger one is not: no file system call.
        """
        gate = self._gate
        if self._owner_thread is None or (gate is not None and gate.step == RELEASE):
            return False
        if monotonic() - self._since <= self._stale:
            return True
        from .state import still_ours

        return still_ours(self)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        """``<Lock PATH method=M [locked: STALE] pid=N at 0xID>`` (flufl.lock's, and the method)."""
        from datetime import timedelta

        state = "locked" if self.is_locked else "unlocked"
        return (
            f"<Lock {self.path!r} method={self.method} [{state}: {timedelta(seconds=self._stale)}]"
            f" pid={os.getpid()} at {id(self):#x}>"
        )

    @property
    def state(self) -> LockState:
        """What the lock at the path looks like now (flufl.lock's ``LockState``; one look)."""
        from .state import state_of

        return state_of(self)  # type: ignore[arg-type]

    @property
    def stale(self) -> float:
        """Seconds after which others may break the lock (settable: flufl.lock's ``lifetime``)."""
        return self._stale

    @stale.setter
    def stale(self, value: float) -> None:
        seconds = check_stale(value)
        if self.auto_refresh is not None and self.auto_refresh >= seconds:
            raise ValueError(
                f"stale must be longer than auto_refresh ({self.auto_refresh:g} s), not"
                f" {value!r}: a lock refreshed that late is broken first"
            )
        self._stale = float(seconds)
        self._backend.stale = self._stale

    @property
    def retry_errnos(self) -> list[int]:
        """Errnos at which a failed read of the lock path is a busy try (flufl.lock's; []).

        Reading what is at the lock path, to judge it, with one of them (a lock file
        another user's or a network file system's cannot read for now: EACCES, EIO ...)
        is tried again within the patience, and the ``LockTimeout`` names the call's last
        one (as flufl.lock's, which retries only its read of the lock file).  Any other
        failure still raises at once: a step that makes the lock, a refused lock path
        (``NotALockError``), a signal handler's error.  ``del`` empties it.
        """
        return list(self._retry_errnos)

    @retry_errnos.setter
    def retry_errnos(self, errnos: Iterable[int]) -> None:
        if isinstance(errnos, (str, bytes)) or not hasattr(errnos, "__iter__"):
            raise TypeError(f"retry_errnos must be a list of errno numbers, not {errnos!r}")
        numbers = tuple(errnos)
        for number in numbers:
            if type(number) is not int or number <= 0:
                raise ValueError(f"retry_errnos must hold errno numbers (> 0), not {number!r}")
        self._retry_errnos = numbers

    @retry_errnos.deleter
    def retry_errnos(self) -> None:
        self._retry_errnos = ()

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


def refuse_non_reentrant(reentrant: bool) -> None:
    """``Lock(thread_local=False)``: ``reentrant=False`` is a ValueError (no meaning there)."""
    if not reentrant:
        raise ValueError(
            "reentrant=False needs thread_local=True: a lock whose holds every thread"
            " shares is taken again by design"
        )


def extend(lock: Lock, seconds: float | None) -> None:
    """``Lock.extend``: renew a lease-based lock (redis) to *seconds* (default ``stale``)."""
    import time

    from .errors import BrokenLockError, NotLockedError

    if lock._owner_thread is None:
        raise NotLockedError(f"lock {lock.path!r} is not held by this Lock")
    if seconds is not None:
        seconds = check_seconds("seconds", seconds, zero=False)
    if not lock._backend.supports_extend:
        raise TypeError(f"lock method {lock.method!r} has no lease to extend")
    if not lock._backend.extend(seconds):
        raise BrokenLockError(f"lock {lock.path!r} was lost before it could be extended")
    length = lock.stale if seconds is None else float(seconds)
    lock._since = time.monotonic() + length - lock.stale


def acquire_shared(
    lock: Lock, timeout: float | _Unset | None, poll: float | None, blocking: bool
) -> None:
    """``Lock.acquire`` with ``thread_local=False``: held by the object, whichever thread
    took it, a call counts one more hold; else the lock is taken as by ``acquire()``."""
    import time

    from .cleanup import _token
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
        else:
            gate.step = TAKE
            owed = _owed(lock)
            lock._wait_take(get_ident(), None, deadline, timeout, poll)
            lock._shares.clear()
            _owe(lock, owed)  # (the old holds' exits stay no-ops: never this hold's release)
        token = _token()
        lock._shares[token] = lock._shares.get(token, 0) + 1
    finally:
        gate.leave()


def release_shared(lock: Lock, force: bool, me: int) -> None:
    """``Lock.release`` with ``thread_local=False`` by the thread *me*.

    The hold moves to this thread first (the registry of held locks is per thread,
    and keyed by this thread's token: an ended thread's ident may be this one's).  A
    lock not held is answered at once, never behind another thread's pending
    ``acquire()``: a no-op while releases are owed (after a forced release, a cleanup or
    a ``fork()`` hand-off, whichever thread's holds they were), else NotLockedError.
    """
    from . import cleanup as _cleanup
    from .errors import NotLockedError
    from .threadsafe import gate_of

    gate = gate_of(lock)
    if gate.held_here():  # a signal handler mid-step of this thread: never wait for itself
        raise NotLockedError(
            f"lock {lock.path!r} is being taken by this thread, not held (release()"
            " re-entered from a signal handler?)"
        )
    if lock._owner_thread is None:
        return _not_held(lock, force)
    gate.take(None)  # (another thread's step: a release, or a count, a short one)
    try:
        if lock._owner_thread is None or (lock._abandoned and not force):
            return _not_held(lock, force)  # (an old hold's exit, owed: before a count)
        _cleanup.untrack(lock)
        lock._owner_thread = me
        _cleanup.track(lock)  # (with this thread's token: the holder check passes)
        before = lock._count
        owed = _owed(lock)  # (only with force: else none, see above)
        lock._abandoned = {}
        lock._releasing = me
        try:
            lock._release(force, me)
        finally:
            lock._releasing = 0
            _owe(lock, owed + _owed(lock))  # (a forced release: its holds' exits too)
            if lock._owner_thread is None:
                lock._shares.clear()
            elif lock._count < before:
                _unshare(lock, _cleanup._token())
    finally:
        gate.leave()


def _owed(lock: Lock) -> int:
    """How many releases of *lock* are owed no-ops (its old holds' exits)."""
    return sum(lock._abandoned.values())


def _owe(lock: Lock, owed: int) -> None:
    """*owed* releases of *lock* are no-ops, whichever thread makes them (key 0: no thread's)."""
    lock._abandoned = {0: owed} if owed else {}


def _not_held(lock: Lock, force: bool) -> None:
    """A release of *lock* while not held (or owed): a no-op if owed or *force*, else
    NotLockedError.  Owed releases are made first: an old hold's exit never releases a
    newer hold (another thread may have taken the object again meanwhile)."""
    from .errors import ExpiredLockError, NotLockedError

    owed = lock._abandoned
    if not owed and not force:
        raise NotLockedError(f"lock {lock.path!r} is not held by this Lock")
    if force:
        owed.clear()
    else:
        key = next(iter(owed))
        if owed[key] <= 1:
            del owed[key]
        else:
            owed[key] -= 1
    lost, lock._lost = lock._lost, ""
    if lost:
        raise ExpiredLockError(lost)


def _unshare(lock: Lock, token: object) -> None:
    """One hold fewer: this thread's (*token*) if it has one, else another thread's."""
    shares = lock._shares
    if token not in shares:
        if not shares:
            return
        token = next(iter(shares))
    if shares[token] <= 1:
        del shares[token]
    else:
        shares[token] -= 1


def share_of(lock: Lock) -> int:
    """How many of *lock*'s holds (``thread_local=False``) the calling thread took."""
    from .cleanup import _token

    return lock._shares.get(_token(), 0)


def count_if_held(lock: Lock) -> bool:
    """``thread_local=False``: one more hold, by the calling thread, if the object holds
    the lock (never waits: False if not held, or another thread is in a step)."""
    from .cleanup import _token
    from .threadsafe import _owned, gate_of

    gate = gate_of(lock)
    if lock._owner_thread is None or _owned(gate._lock) or not gate.try_take():
        return False
    try:
        if lock._owner_thread is None:
            return False
        lock._count += 1
        token = _token()
        lock._shares[token] = lock._shares.get(token, 0) + 1
        return True
    finally:
        gate.leave()


async def acquire_shared_async(
    lock: Lock, timeout: float | _Unset | None, poll_interval: float | None, blocking: bool
) -> Acquired:
    """``Lock.acquire_async`` with ``thread_local=False``: as :func:`acquire_shared`, a call
    while the object holds the lock counts one more hold (whichever thread or task took it);
    else tries between ``asyncio.sleep``s, the event loop's thread the taker."""
    from . import retry as _retry
    from .acquired import Acquired
    from .cleanup import _token
    from .threadsafe import Step, _take_async, async_patience, gate_of

    timeout, poll, deadline = async_patience(lock, timeout, poll_interval, blocking)
    me = get_ident()
    lock._next_break = 0.0
    async for _ in _retry.tries_async(deadline, poll=poll):
        if count_if_held(lock):
            return Acquired(lock)
        if lock._owner_thread is not None or not gate_of(lock).try_take():
            continue  # (another thread's step, a short one)
        with Step(lock):
            lock._backend.deadline = deadline
            owed = _owed(lock)
            if await _take_async(lock, me):
                lock._shares = {_token(): 1}
                _owe(lock, owed)  # (the old holds' exits stay no-ops)
                gate_of(lock).leave()  # (held for one step only)
                return Acquired(lock)
    raise lock._timed_out(timeout)
