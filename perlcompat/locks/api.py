"""``Lock``: patience, ownership and cleanup, once for every method.

``lock()``/``unlock()`` (``locks.functions``) are the Perl-shaped calls over it, and
``locks.options`` checks the arguments of both.

A *method* is a ``Backend`` (``locks.contract``: the declared contract, the
registry of methods and their on-disk detection) in a module of its own under
``locks.methods`` (mkdir, symlink, rename, excl, link, flock, toplock, redis), loaded
on first use.  A backend knows how to make one non-blocking attempt, how to
release only what it holds, and how to recover a stale lock (older than
``stale``, or its owner dead) without removing a successor's.  Everything else
lives here, once:

* **Patience.** ``acquire()`` tries for ``timeout`` seconds (or the mkdir lock
  sub's ``(retry - 1) * wait``: ``locks.options``), then raises ``LockTimeout``,
  also a ``TimeoutError``.  Between tries it sleeps a short, jittered, growing
  interval capped well below ``wait`` (a released lock is taken within
  milliseconds), or ``poll`` seconds jittered +-50%, a Perl sub's cadence, fair to
  Perl waiters (docs/locks.md has the bench).  A pending ``alarm()`` is honoured
  between tries.  The first try is made at once; only a busy lock enters the
  loop, ``locks.retry.tries``.  A read of the lock path failing with an errno of
  ``retry_errnos`` counts as busy; a lock path holding no lock raises ``NotALockError``.
* **Staleness.** After a failed try (at most every ``BREAK_EVERY`` seconds) the
  backend is asked to recover a lock older than ``stale`` seconds, or one whose
  owner on this host is dead.  The
  backend does that race-free (see ``locks.remover``); this loop only asks.
* **Ownership.** A lock is held by one ``Lock`` object in one thread of one
  process.  The same ``Lock`` object taken again by the thread that holds it
  counts (filelock's re-entrancy: nested ``with lk:``), and the lock is
  released at the matching last ``release()``.  A nested ``lock()`` of a name
  this thread holds is refused at once (``$!`` = EDEADLK), so a port that nests
  the same ``lock()`` fails loudly instead of waiting out its own patience; a
  second ``Lock`` object waits for it as for anyone's (filelock, portalocker).
  Another thread waits like another process would (on the same ``Lock`` object
  too: one holder thread, ``locks.threadsafe``), and cannot release the holder's
  lock: its ``unlock()`` returns 0
  (``$!`` = ENOLCK), its ``release()`` raises ``NotLockedError``.  A release
  that fails (``OSError`` from the method) leaves the lock held by its object,
  so the lock on disk and the object never disagree and the release can be
  retried.  It never wedges the process: the next ``acquire()``/``lock()`` of
  that lock in this thread by another object (each ``lock()`` makes one)
  retries the pending release first and, while it still fails, waits as for a
  busy lock (the lock is still on disk); once the hold is older than ``stale``
  (others may break it now) the pending hold is dropped with a WARNING and the
  lock is treated as anyone else's (waited on, broken when stale).
* **Cleanup.** Held locks are released at normal interpreter exit and on
  SIGHUP/INT/PIPE/QUIT/TERM (``locks.cleanup``), then the signal does what it did.
  A child forked with ``os.fork()`` does not hold (or release) its parent's
  locks; one forked with ``perlcompat.fork()`` takes this thread's locks over
  (``locks.fork``).
* **Tools.** ``Backend.describe()`` reports who holds the lock at a path,
  :func:`detect_method` (``contract.detect``) tells which method made a lock
  found on disk, and :func:`find_locks` lists the locks of a directory
  (``perlcompat locks``).
* **Expiry.** Releasing a lock held longer than ``stale`` raises
  ``ExpiredLockError`` (``unlock()`` returns 0, ``$!`` = ETIMEDOUT): another
  process was entitled to break it, so the critical section may have overlapped.
  A lock no longer ours is never removed.
* **Logging.** Stale-lock removals, expired or broken locks and an ``unlock()``
  that finds another owner's lock are logged at WARNING on the ``perlcompat``
  logger, redis hold-offs at INFO (``locks.log``: ``logging`` is imported only
  then); no handlers are configured.  Each acquire and release is logged at
  DEBUG once the program has imported ``logging`` and enabled DEBUG there.
* **Lifetime.** ``Lock.refresh()`` makes a held lock young again for every age
  rule, perlcompat's and a Perl sub's (the lock's mtime, and its owner record
  where it has one; a Redis lease is extended); ``auto_refresh=N`` does it
  every N seconds from a daemon thread while the lock is held.
* **Async.** ``async with Lock(...)`` and ``await lk.acquire_async(timeout)``
  wait with ``asyncio.sleep`` between tries, so the event loop keeps running;
  tasks of one loop take turns on a lock (no re-entrancy there).
"""

from __future__ import annotations

import os
import sys
import time
from _thread import RLock, get_ident

from ..perl.clock import check_seconds
from . import cleanup as _cleanup, compat as _compat, retry as _retry, threadsafe as _threadsafe
from .acquired import Acquired
from .compat import Settable
from .contract import (
    DEFAULT_METHOD,
    REGISTERED,
    Backend,
    backend_class,
    detect as detect_method,
    find_locks,
)
from .errors import (
    BrokenLockError,
    DuplicateLockError,
    ExpiredLockError,
    HasNotLockError,
    LockError,
    LockTimeout,
    NotALockError,
    NotLockedError,
    in_perl_sub,
)
from .options import (
    UNSET,
    _Unset,
    check_timeout,
    locate,
    patience,
    perl_formats,
    poll_seconds,
    resolve_held,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "Acquired",
    "DuplicateLockError",
    "ExpiredLockError",
    "HasNotLockError",
    "Lock",
    "LockError",
    "LockTimeout",
    "NotALockError",
    "NotLockedError",
    "detect_method",
    "find_locks",
]

#: largest pause between tries, in seconds (jittered +-50%; ``locks.retry``).
BACKOFF_MAX = _retry.MAX
#: a waiter asks the backend to break a stale lock at most this often (s).
BREAK_EVERY = 0.005


def owned_here(method: str, path: str) -> Lock | None:
    """The ``Lock`` by which this thread owns the lock *path* of *method*, else None.

    The registry of held locks is ``locks.cleanup``'s.
    """
    owner: Lock | None = _cleanup.holder(method, path)
    return owner


class _OnePerPath(type):
    """``Lock``'s metaclass: ``is_singleton=True`` gives the one object of its path."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("is_singleton"):
            return _compat.singleton(cls, args, kwargs)  # (made there, once)
        return super().__call__(*args, **kwargs)


class Lock(Settable, metaclass=_OnePerPath):
    """A named lock: ``acquire()``/``release()``, context manager and decorator.

    ``Lock("lockdir")`` is the mkdir lock sub; ``method=`` picks another
    (``"flock"`` is the recommended one where no Perl script needs a directory),
    ``url="redis://..."`` a Redis lock.  The patience is ``timeout`` seconds
    (None or -1: for ever) or, without it, the mkdir lock sub's ``(retry - 1) * wait``
    (giving both ``timeout`` and ``retry`` is a ValueError); ``poll`` seconds
    between tries waits at a Perl sub's cadence (fair to Perl waiters);
    ``stale`` is the age after which another process may break the lock;
    ``auto_refresh`` seconds (< ``stale``) refreshes it that often while held
    (:meth:`refresh`).  Method options: ``mode`` (mkdir), ``held`` and ``data``
    (rename), ``url`` (redis); the Perl side's lock format (``locks.record``):
    ``record`` (excl, link; mkdir's ``pidfile``), ``target`` (symlink), ``pidfile``
    (mkdir).  ``is_singleton=True``: one object per path; ``thread_local=False``: one
    count shared by every thread, which any thread releases (``locks.compat``);
    ``reentrant=False``: its holder's ``acquire()`` raises ``DuplicateLockError`` (flufl.lock's).
    """

    def __init__(
        self,
        name: str | os.PathLike[str] = "lockdir",
        *,
        method: str | None = None,
        timeout: float | _Unset | None = UNSET,
        retry: int | _Unset | None = UNSET,
        wait: float = 1.0,
        stale: float = 180.0,
        shared: bool = False,
        root: str | os.PathLike[str] | None = None,
        poll: float | None = None,
        url: str | None = None,
        mode: int | None = None,
        held: str | os.PathLike[str] | None = None,
        record: str | None = None,
        target: str | None = None,
        pidfile: str | None = None,
        auto_refresh: float | None = None,
        data: bool | None = None,
        is_singleton: bool = False,
        thread_local: bool = True,
        reentrant: bool = True,
    ) -> None:
        self._timeout, retry, wait, stale = patience(timeout, retry, wait, stale)
        self.poll = poll_seconds(poll)
        method, path, url = locate(name, method, url, root)
        method = method or DEFAULT_METHOD
        options: dict[str, Any] = {}
        if mode is not None:
            options["mode"] = mode
        if held is not None:
            options["held"] = resolve_held(held, root)
        if data is not None:
            options["data"] = data
        if url is not None:
            options["url"] = url
        self.name = os.fspath(name)
        self.method = method
        self.retry = retry
        self.wait = float(wait)
        self.is_singleton = is_singleton  # (``locks.compat``: one object per path)
        self.thread_local = thread_local  # False: one count shared by every thread (compat)
        if not thread_local:
            _compat.refuse_non_reentrant(reentrant)
        self.reentrant = reentrant  # False: the holder's acquire() raises (flufl.lock's)
        self._stale = float(stale)
        self.shared = shared
        self.path = path
        cls = REGISTERED.get(method) or backend_class(method)
        self.formats: dict[str, str] = {}
        if record is not None or target is not None or pidfile is not None:
            self.formats = perl_formats(method, cls.options, record, target, pidfile)
        options.update(self.formats)
        for option in options:
            if option not in cls.options:
                raise TypeError(f"lock method {method!r} takes no option {option!r}")
        self._backend = cls(path, stale=self._stale, shared=shared, **options)
        self._owner_thread: int | None = None
        self._since = 0.0
        # releases still owed by each holder thread's ``with`` blocks after a cleanup,
        # a hand-off or a forced release (thread ident -> count)
        self._abandoned: dict[int, int] = {}
        self._shares: dict[object, int] = {}  # thread_local=False: holds per thread token
        self._lost = ""  # why ``fork()`` lost the hold: the first of those releases raises
        #: the error of the last release, while it failed and the lock is still held
        self._release_failed: OSError | None = None
        # -- lifetime (issue 25): re-entrancy count, refresh, the auto_refresh thread --
        self.auto_refresh: float | None = None
        if auto_refresh is not None:
            every = check_seconds("auto_refresh", auto_refresh, zero=False)
            if every >= self._stale:
                raise ValueError(
                    f"auto_refresh must be shorter than stale ({self._stale:g} s),"
                    f" not {auto_refresh!r}: a lock refreshed that late is broken first"
                )
            if type(self._backend).refresh is Backend.refresh:
                raise TypeError(f"lock method {method!r} cannot be refreshed")
            if data and held is not None and "{" in os.fspath(held):
                raise ValueError(
                    "auto_refresh cannot be used with data=True and a held= template: a"
                    " refresh renames the data file to the held name rendered then, under"
                    " a port working on it; call refresh() between steps and read"
                    " held_path again after it"
                )
            self.auto_refresh = every
        self._count = 0
        self._next_break = 0.0
        self._mutex = RLock()  # a refresh and a release never overlap
        self._deferred = 0  # a release a signal handler asked for mid-refresh: 1, 2 with force
        self._releasing = 0  # the thread in the middle of release(): a handler's is a no-op
        #: one holder thread, the others wait (issue 34); made at the first acquire()
        self._gate: _threadsafe.Gate | None = None
        self._stop: Any = None  # the auto_refresh thread's stop event while it runs

    # -- state (``is_locked``, ``state``, ``repr()``: ``locks.compat.Settable``) ----------
    @property
    def lock_counter(self) -> int:
        """How many times the holding thread has taken this lock (filelock's name); 0 if free."""
        return self._count

    @property
    def timeout(self) -> float | None:
        """Seconds ``acquire()`` waits by default, None for ever (set -1 or None for that)."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:  # issue 34: checked as the argument is
        self._timeout = check_timeout(value)

    @property
    def fencing_token(self) -> int | None:
        """The method's fencing token for the current hold (Redis), else None."""
        return self._backend.fencing_token

    @property
    def backend(self) -> Backend:
        """The method's primitive operations (for tools such as ``perlcompat locks``)."""
        return self._backend

    # -- acquire / release ---------------------------------------------
    def patience(self) -> float | None:
        """Seconds ``acquire()`` waits by default (``timeout``), None for ever."""
        return self.timeout

    def acquire(
        self,
        timeout: float | _Unset | None = UNSET,
        poll_interval: float | None = None,
        *,
        blocking: bool = True,
    ) -> Acquired:
        """Take the lock within *timeout* seconds or raise ``LockTimeout`` (a TimeoutError).

        *timeout* is finite seconds >= 0, or None or -1 for ever (filelock's
        convention); not given, the object's patience (:meth:`patience`).
        ``blocking=False`` makes one try; *poll_interval* is this call's ``poll``
        (filelock's names).  Taken again by the thread that holds it, the lock
        counts one more hold (released at the last :meth:`release`).  Returns
        an :class:`Acquired`, so ``with lk.acquire(timeout=1):`` releases on exit.
        """
        self._acquire(timeout, poll_interval, blocking)
        return Acquired(self)

    def _acquire(
        self, timeout: float | _Unset | None, poll: float | None, blocking: bool, perl: bool = False
    ) -> None:
        """:meth:`acquire` (*poll* its *poll_interval*); *perl*: for ``lock()``'s own object."""
        me = get_ident()
        if not perl:
            _threadsafe.refuse_reentry(self)  # issue 34: a signal handler mid-take/release
            if not self.thread_local:  # one count shared by every thread (filelock's)
                return _compat.acquire_shared(self, timeout, poll, blocking)
        held = self._owner_thread == me and _cleanup.holder(self.method, self.path) is self
        if held and (self.reentrant or _threadsafe.take_again(self)):
            self._release_failed = None  # its holder takes it again: held, not pending
            self._count += 1
            _debug("lock %r taken again by its holder (count %d)", self.path, self._count)
            return
        if not blocking:
            timeout = 0
        timeout = self._timeout if isinstance(timeout, _Unset) else check_timeout(timeout)
        poll = self.poll if poll is None else check_seconds("poll_interval", poll, zero=False)
        pending = owned_here(self.method, self.path)
        if pending is not None and pending._release_failed is None:
            if perl or in_perl_sub():  # lock() refuses at once; a Lock object waits (34)
                raise DuplicateLockError(f"this thread already holds the lock {self.path!r}")
            pending = None  # held by another Lock object of this thread: busy, as anyone's
        deadline = None if timeout is None else time.monotonic() + timeout
        if perl:  # lock()'s own object: no other thread can reach it, no gate to wait for
            return self._wait_take(me, pending, deadline, timeout, poll)
        with _threadsafe.taking(self, deadline, timeout):  # issue 34: other threads wait
            self._wait_take(me, pending, deadline, timeout, poll)

    def _wait_take(
        self,
        me: int,
        pending: Lock | None,
        deadline: float | None,
        timeout: float | None,
        poll: float | None,
    ) -> None:
        """Take the lock, at once or by tries until *deadline*; LockTimeout if it stays busy."""
        backend = self._backend
        backend.deadline = deadline
        self._next_break = 0.0
        self._retried = None
        if pending is None and self._take(me):
            return  # the first try, at once: a free lock needs no wait set up
        # redis: block until a release wakes us
        block = backend.wait_for_release if backend.waits_for_release else None
        cap = _retry.cap_for(self.wait)
        at_once = pending is not None  # (else the first try was made above)
        for _ in _retry.tries(deadline, cap=cap, poll=poll, block=block, at_once=at_once):
            if pending is not None and pending.is_locked and not pending._finish_release():
                continue  # our own failed release is still pending: busy, as for anyone's lock
            if self._take(me):
                return
        failed = pending._release_failed if pending is not None else None
        raise self._timed_out(timeout, failed)

    def _take(self, me: int) -> bool:
        """One attempt (and, at most every ``BREAK_EVERY`` s, a stale break); True if taken."""
        backend = self._backend
        # a stopping signal waits until a lock just taken is tracked (then removed)
        _cleanup.enter()
        try:
            try:
                taken = backend.try_acquire()
                if not taken and time.monotonic() >= self._next_break:
                    self._next_break = time.monotonic() + BREAK_EVERY
                    taken = backend.break_stale() and backend.try_acquire()
            except OSError as exc:
                taken = _compat.busy_or_raise(self, exc)  # (flufl.lock's retry_errnos)
            if taken:
                self._owner_thread = me
                self._count = 1
                self._since = time.monotonic()
                self._abandoned.pop(me, None)
                self._lost = ""
                _cleanup.track(self)
                self._start_refresher()
        finally:
            _cleanup.leave()
        if taken:
            _debug("acquired %s lock %r", self.method, self.path)
        return taken

    def _timed_out(self, timeout: float | None, failed: OSError | None = None) -> LockTimeout:
        reason = self._backend.why_busy()
        if failed is not None:
            reason = f"this thread's release of it failed and is pending ({failed})"
        elif self._retried is not None:  # (this call's last one)
            retried = f"a try failed ({self._retried}; retry_errnos)"
            reason = f"{reason}; {retried}" if reason else retried
        detail = f": {reason}" if reason else ""
        exc = LockTimeout(f"lock {self.path!r} is busy (waited {timeout or 0:g} s){detail}")
        exc.lock_file = self.path
        return exc

    def release(self, force: bool = False) -> None:
        """Release the lock; ExpiredLockError if it was held past ``stale``.

        A lock taken again by its holder is released at the last ``release()``
        (or at once with *force*, filelock's name).  Only the thread that took
        the lock may release it (NotLockedError otherwise).  If the method fails
        (OSError), the lock stays held by this object.  After a signal or exit
        cleanup released it (``locks.cleanup``), or ``perlcompat.fork()`` handed
        it to the child, or after a ``release(force=True)``, the holder's remaining
        ``release()`` calls (one per hold counted then) are no-ops instead of
        NotLockedError (the first raises ExpiredLockError if ``fork()`` lost the hold);
        ``release(force=True)`` of a lock not held does nothing.
        """
        me = get_ident()
        if self._releasing == me:  # re-entered from a signal handler mid-release: the
            return  # release under way finishes it
        if not self.thread_local:  # any thread releases (``locks.compat``)
            return _compat.release_shared(self, force, me)
        # (no call between that test and this claim: no signal handler runs in between)
        mine = self._owner_thread == me
        if mine:
            self._releasing = me
        try:
            self._release(force, me)
        finally:
            if mine:
                self._releasing = 0

    def _release(self, force: bool, me: int) -> None:
        """:meth:`release`, claimed by its holder thread *me* against signal handlers."""
        gate = self._gate  # (None: never shared by threads, as ``lock()``'s own object)
        lost, self._lost = self._lost, ""
        owner = self._owner_thread
        owed = self._abandoned.get(me, 0) if owner != me else 0
        if owed or (force and owner is None):  # a no-op per hold counted; force: always (34)
            if force or owed == 1:
                self._abandoned.pop(me, None)
            else:
                self._abandoned[me] = owed - 1
            if lost:
                raise ExpiredLockError(lost)
            return
        if owner is None:
            raise NotLockedError(f"lock {self.path!r} is not held by this Lock")
        if (
            self._owner_thread != me or _cleanup.holder(self.method, self.path) is not self
        ):  # (an ended thread's lock is not that of a thread given the same ident)
            raise NotLockedError(f"lock {self.path!r} is held by another thread")
        if self._count > 1 and not force:
            self._count -= 1
            return
        if self._mutex._is_owned():  # type: ignore[attr-defined,unused-ignore]  # mid-refresh
            self._deferred = max(self._deferred, 2 if force else 1)  # done after the refresh
            return
        if gate is not None:
            gate.step = _threadsafe.RELEASE
        owed = self._count if force else 0  # issue 34: then each hold's own release is a no-op
        _cleanup.enter()  # a stopping signal waits until the release is complete
        try:
            with self._mutex:  # not in the middle of a refresh
                held_for = time.monotonic() - self._since
                # first the lock itself: if that raises, this object still holds it
                try:
                    still_ours = self._backend.release()
                except OSError as exc:
                    self._release_failed = exc
                    raise
                self._release_failed = None
                self._disown()
                if owed:
                    self._abandoned[me] = owed
        finally:
            if gate is not None:
                gate.end_step()  # (left already by _disown if released)
            _cleanup.leave()
        _debug("released %s lock %r (held %.3g s)", self.method, self.path, held_for)
        if not still_ours:
            message = f"lock {self.path!r} was broken or replaced while held ({held_for:.3g} s)"
        elif held_for > self._stale:
            message = (
                f"lock {self.path!r} was held {held_for:.3g} s, "
                f"past its stale limit {self._stale:g} s"
            )
        else:
            return
        from . import log as _log

        _log.warning("%s", message)
        raise (ExpiredLockError if still_ours else BrokenLockError)(message)

    def _finish_release(self) -> bool:
        """Retry a release that failed; True once this object no longer holds the lock.

        A retry that fails again keeps the hold (False) until it is older than
        ``stale``: then the hold is dropped with a WARNING (the lock stays on
        disk, breakable by anyone as stale) and True is returned.
        """
        try:
            self.release(force=True)
        except ExpiredLockError:
            pass  # released, or found broken: logged by release()
        except OSError as exc:
            held_for = time.monotonic() - self._since
            if held_for <= self._stale:
                return False
            self._release_failed = None
            self._forget()
            from . import log as _log

            _log.warning(
                "lock %r: its release failed (%s) and it was held %.3g s, past its stale"
                " limit %g s; this process no longer holds it (left on disk, breakable as stale)",
                self.path,
                exc,
                held_for,
                self._stale,
            )
        return True

    def extend(self, seconds: float | None = None) -> None:
        """Renew a lease-based lock (redis) to *seconds* (default ``stale``) from now.

        Raises ExpiredLockError if the lease was already lost, NotLockedError if not held.
        """
        _compat.extend(self, seconds)

    def refresh(self, stale: float | None = None, *, force: bool = False) -> None:
        """Make the held lock young again for every age rule, perlcompat's and Perl's.

        The file methods set the lock's mtime to now (what ``stale`` and a Perl
        sub's ``-M $lock``/``(stat $lock)[9]`` read; a held rename marker's ctime
        with it; a TOP?LOCK first line's time; a per-holder held name is renamed to
        the name rendered now) and re-state the owner record as
        this process; a Redis lease is extended to ``stale``; a ``flock`` lock
        does not age.  Only a lock still ours is touched: one broken or
        replaced meanwhile is left as it is (ExpiredLockError).  NotLockedError
        if this object does not hold it (with *force*: nothing).  Any thread may call
        it.  *stale* sets ``stale`` first, held or not (flufl.lock's ``refresh(lifetime)``).
        """
        if stale is not None:
            self.stale = stale  # (checked; set even when not held, as flufl.lock does)
        if self._owner_thread is None:
            if force:
                return
            raise NotLockedError(f"lock {self.path!r} is not held by this Lock")
        _cleanup.enter()  # a stopping signal's cleanup waits for the mutex we hold
        try:
            fresh = self._refresh_held()
        finally:
            _cleanup.leave()
            deferred, self._deferred = self._deferred, 0  # a handler's release, now
            if deferred:
                self.release(force=deferred == 2)
        if fresh is False:
            raise BrokenLockError(
                f"lock {self.path!r} was broken or replaced while held; not refreshed"
            )

    def _refresh_held(self, stop: Any = None) -> bool | None:
        """Refresh under the mutex: True, False if no longer ours, None if released (or *stop*)."""
        if self._mutex._is_owned():  # type: ignore[attr-defined,unused-ignore]  # (a handler)
            return None
        with self._mutex:
            if self._owner_thread is None or (stop is not None and stop.is_set()):
                return None
            if not self._backend.refresh():
                return False
            self._since = time.monotonic()
        _debug("refreshed %s lock %r", self.method, self.path)
        return True

    def _start_refresher(self) -> None:
        """Start the ``auto_refresh`` thread for the hold just taken (if asked for)."""
        if self.auto_refresh is not None:
            self._stop = _threadsafe.start_refresher(self, self.auto_refresh)

    def _stop_refresher(self) -> None:
        stop, self._stop = self._stop, None
        if stop is not None:
            stop.set()

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Perl's die keeps the lock until exit, which writes every handle out first: an
        # exception leaving the block writes out what the open handles buffered before
        # the lock goes, or the next holder reads old data that our late flush overwrites
        handle = sys.modules.get("perlcompat.perl.handle") if kind is not None else None
        try:
            if handle is not None:
                handle.flush_all()
        finally:
            _threadsafe.release_under(self, value)  # issue 34: the body's exception goes on

    async def acquire_async(
        self,
        timeout: float | _Unset | None = UNSET,
        poll_interval: float | None = None,
        *,
        blocking: bool = True,
    ) -> Acquired:
        """``acquire()`` for asyncio: between tries it awaits ``asyncio.sleep``.

        Same arguments and time-out as :meth:`acquire`; each try is one
        non-blocking attempt (a Redis one, a network round trip, runs in a
        worker thread), and the event loop's thread owns the lock.  Not
        re-entrant: while this lock (or this path, by another ``Lock`` of this
        thread) is held, for instance by another task of the loop, it waits for
        the release, as ``asyncio.Lock`` does.
        """
        if not self.thread_local:  # one count shared by every thread (``locks.compat``)
            return await _compat.acquire_shared_async(self, timeout, poll_interval, blocking)
        return await _threadsafe.acquire_async(self, timeout, poll_interval, blocking)

    async def __aenter__(self) -> Lock:
        await self.acquire_async()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _threadsafe.release_under(self, value)  # issue 34: the body's exception goes on

    def __call__(self, func: F) -> F:
        """Use the lock as a decorator: hold it around each call of *func*."""
        return _compat.decorate(self, func)

    def _abandon(self) -> bool:
        """Release without raising, for cleanup at exit or on a signal; True if it was ours."""
        if self._owner_thread is None:
            return False
        got = self._mutex.acquire(True, 1.0)  # the auto_refresh thread finishes its refresh
        try:
            if self._owner_thread is not None:
                self._abandoned[self._owner_thread] = self._count
            self._disown()
            try:
                return self._backend.abandon()
            except OSError:
                return False
        finally:
            if got:
                self._mutex.release()

    def _forget(self) -> None:
        """In a child of ``os.fork()``: the parent holds this lock, not us; drop it unreleased."""
        self._mutex = RLock()  # the copy may be held by a thread the child lacks
        if self._gate is not None:
            self._gate.reset_unless_mine()  # so may the gate
        self._stop = None  # the auto_refresh thread is the parent's
        self._disown()
        self._backend.forget()

    def _disown(self) -> None:
        """This object no longer holds the lock: not owned, not tracked for cleanup."""
        _cleanup.untrack(self)  # (by its owner thread: first)
        self._owner_thread = None
        self._count = 0
        self._stop_refresher()
        if self._gate is not None:
            self._gate.leave()  # the next thread may take this object now


def _debug(message: str, *args: object) -> None:
    """A DEBUG record, only where the program imported ``logging`` (so never on a CGI's path)."""
    logging = sys.modules.get("logging")
    if logging is not None and not getattr(logging.__spec__, "_initializing", False):
        from . import log as _log

        _log.debug(message, *args)
