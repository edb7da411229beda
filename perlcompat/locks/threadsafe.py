"""One ``Lock`` object shared by threads, and re-entered from a signal handler.

**The gate.**  A ``Lock`` object has one holder thread at a time, as a
``threading.Lock`` or portalocker's lock has: the thread that takes it holds its
:class:`Gate` from the start of its ``acquire()`` until its last ``release()``,
and another thread's ``acquire()`` waits for the gate (within its own
patience, a pending ``alarm()`` honoured: ``locks.retry``) before it tries the
lock at all.  So one backend is never driven by two threads at once, and the
holder's re-entrancy (nested ``with lk:``) is untouched.  The gate is a
``_thread.RLock``: it knows, atomically, whether the calling thread holds it,
so a signal handler that re-enters the lock in the thread that is in the
middle of taking or releasing it (:attr:`Gate.step`) is recognised and never
waits for itself.  A thread that ended holding the object leaves the gate
held (as it leaves the lock held until exit: ``locks.cleanup``); a later
thread given the same ident is told apart by a per-thread token.

``Lock`` calls :func:`refuse_reentry` first in ``acquire()``, waits in
:func:`taking` and marks its steps with :class:`Step`; the ``auto_refresh``
thread is :func:`keep_fresh`.

A ``Lock`` gets its gate at its first ``acquire()`` (:func:`gate_of`): the object
``lock()`` makes for one call is never shared, and never needs one.

**The mutex.**  A refresh (``Lock.refresh()``, the ``auto_refresh`` thread) and
a release never overlap: ``Lock._mutex``, a ``_thread.RLock``, which knows
whether the calling thread holds it: a ``release()`` re-entered from a signal
handler in the middle of this thread's ``refresh()`` is deferred
(``Lock._deferred``) and done when the refresh returns, instead of waiting for
itself for ever.

**Async.**  :func:`acquire_async` is ``Lock.acquire_async``: tasks of one loop
take turns through the gate, and the holding task may take the lock again.
"""

from __future__ import annotations

from _thread import RLock, allocate_lock, get_ident

from . import retry as _retry
from .cleanup import _token as token  # this thread's token: an ended thread's ident has another
from .errors import DuplicateLockError, LockTimeout
from .options import _Unset, check_timeout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .acquired import Acquired
    from .api import Lock

#: :attr:`Gate.step` while the gate's thread is inside ``acquire()`` / ``release()``.
TAKE = 1
RELEASE = 2


def _owned(lock: RLock) -> bool:
    """True if the calling thread holds *lock* (atomic: the C lock's own owner check)."""
    return bool(lock._is_owned())  # type: ignore[attr-defined]


class Gate:
    """Which thread holds a ``Lock`` object; the others wait for it."""

    __slots__ = ("_lock", "_token", "step")

    def __init__(self) -> None:
        self._lock = RLock()
        self._token: object = None
        #: TAKE or RELEASE while the holding thread is in that step, else 0
        self.step = 0

    def stepping(self) -> int:
        """The step this thread is in the middle of (a signal handler re-entering it), else 0.

        Held by this thread without a token: it is between taking the gate and
        claiming it, or between giving up its claim and leaving it (TAKE).
        """
        if not _owned(self._lock):
            return 0
        claim = self._token
        if claim is None:
            return TAKE
        return self.step if claim is token() else 0

    def held_here(self) -> bool:
        """True if this thread holds the gate (whatever its token)."""
        return _owned(self._lock)

    def take(self, deadline: float | None) -> bool:
        """Hold the gate, waiting for another thread's release until *deadline*; False if not.

        Held already by this thread (left so by a cleanup from another thread): True
        at once.  Held by a thread that ended with this thread's ident: busy until
        *deadline* (that hold lasts until exit).
        """
        me = token()
        if _owned(self._lock):
            if self._token is me:
                self.step = TAKE
                return True
            for _ in _retry.tries(deadline):
                pass
            return False
        got = False

        def block(left: float | None) -> None:
            nonlocal got
            got = self._lock.acquire(True, -1 if left is None else left)

        try:
            for _ in _retry.tries(deadline, block=block):
                if got or self._lock.acquire(False):
                    got = True
                    # (no call in between: a handler sees both or, before, no token: stepping())
                    self._token = me
                    self.step = TAKE
                    return True
        except BaseException:  # an ALRM handler raised after the wait got the gate
            if got and self._token is not me:
                self._lock.release()
            raise
        return False

    def try_take(self) -> bool:
        """Hold the gate if no thread does (this one included); never waits."""
        me = token()
        if _owned(self._lock):
            if self._token is not me or self.step:
                return False
        elif not self._lock.acquire(False):
            return False
        self._token = me  # (with the step: a handler sees both, or no token: stepping())
        self.step = TAKE
        return True

    def end_step(self) -> None:
        """The step is over (the gate kept, or already left)."""
        if _owned(self._lock):
            self.step = 0

    def leave(self) -> None:
        """Let the next thread in, if this thread holds the gate (else nothing)."""
        if _owned(self._lock):
            self.step = 0
            self._token = None  # (from here a handler of this thread sees stepping())
            try:
                self._lock.release()
            except RuntimeError:  # left already, by a cleanup in a signal handler
                return

    def reset_unless_mine(self) -> None:
        """In a forked child: a gate held by a thread the child lacks is free again."""
        if not _owned(self._lock):
            self._lock = RLock()
            self._token = None
            self.step = 0


_making = allocate_lock()  # two threads' first acquire() of one object make one gate


def gate_of(lock: Lock) -> Gate:
    """*lock*'s gate, made at its first use."""
    gate = lock._gate
    if gate is None:
        with _making:
            gate = lock._gate
            if gate is None:
                gate = lock._gate = Gate()
    return gate


def refuse_reentry(lock: Lock) -> None:
    """DuplicateLockError if this thread is in the middle of taking or releasing *lock*.

    Only a signal handler (or another asyncio task of this thread) can get here then:
    waiting would wait for itself.
    """
    if lock._releasing == get_ident():  # a hold counted now would never be released
        exc = LockTimeout(
            f"lock {lock.path!r}: acquire() re-entered (from a signal handler?) while its"
            " thread is releasing it"
        )
        exc.lock_file = lock.path
        raise exc
    gate = lock._gate
    if gate is not None and gate.stepping():
        raise DuplicateLockError(
            f"lock {lock.path!r}: acquire() re-entered (from a signal handler?) while this"
            " thread is taking or releasing it"
        )


class Step:
    """``with Step(lock):`` the gate's thread is taking *lock*; the gate stays only with a hold."""

    __slots__ = ("lock",)

    def __init__(self, lock: Lock) -> None:
        self.lock = lock
        gate_of(lock).step = TAKE

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        gate = gate_of(self.lock)
        if self.lock._owner_thread != get_ident():
            gate.leave()  # not taken: the next thread goes in
        else:
            gate.end_step()


def taking(lock: Lock, deadline: float | None, timeout: float | None) -> Step:
    """Wait for *lock*'s gate until *deadline*, then :class:`Step`; LockTimeout if it stays busy."""
    if not gate_of(lock).take(deadline):
        exc = LockTimeout(
            f"lock {lock.path!r} is busy (waited {timeout or 0:g} s): another thread of this"
            " process holds it through this Lock object"
        )
        exc.lock_file = lock.path
        raise exc
    return Step(lock)


def release_under(lock: Lock, exc: BaseException | None) -> None:
    """Release *lock* leaving a ``with`` block; with the body's *exc*, an error of the release
    is logged (WARNING) and noted on *exc*, which goes on (filelock, portalocker)."""
    if exc is None:
        lock.release()
        return
    try:
        lock.release()
    except Exception as error:  # the body's exception is the one the program sees
        from . import log as _log

        _log.warning("lock %r: its release after an exception failed: %r", lock.path, error)
        note = getattr(exc, "add_note", None)  # Python 3.11+
        if note is not None:
            note(f"and the release of lock {lock.path!r} failed: {error!r}")


def held_by_this_task(lock: Lock) -> bool:
    """True if the running asyncio task holds *lock* (:func:`note_task`): it may take it again."""
    task = getattr(lock, "_task", None)
    if task is None or lock._owner_thread != get_ident() or not lock.is_locked:
        return False
    import asyncio

    return task() is asyncio.current_task()


def note_task(lock: Lock) -> None:
    """Remember which asyncio task took *lock* (weakly)."""
    import asyncio
    import weakref

    current = asyncio.current_task()
    lock._task = None if current is None else weakref.ref(current)  # type: ignore[attr-defined]


def start_refresher(lock: Lock, every: float) -> Any:
    """Start the ``auto_refresh`` thread of *lock* (:func:`keep_fresh`); its stop event."""
    import threading
    import weakref

    stop = threading.Event()
    name = f"perlcompat auto_refresh {lock.path}"
    # a weak reference: the thread never keeps a dropped (singleton) object alive
    args = (weakref.ref(lock), stop, every, lock.path)
    thread = threading.Thread(target=keep_fresh, args=args, name=name)
    thread.daemon = True  # dies with the process
    thread.start()
    return stop


def keep_fresh(ref: Callable[[], Lock | None], stop: Any, every: float, path: str) -> None:
    """The ``auto_refresh`` thread: refresh the lock *ref* gives every *every* s until *stop*.

    It stops at the release (or a cleanup, or a fork hand-off), and when the lock
    is found broken or replaced (a WARNING; the release then raises ExpiredLockError).
    An OSError of one refresh (a remover busy for long) is logged, and retried next time.
    """
    from . import log as _log

    while not stop.wait(every):
        lock = ref()  # (held only while it refreshes)
        if lock is None:
            return
        try:
            fresh = lock._refresh_held(stop)
        except OSError as exc:
            _log.warning("auto_refresh of %r failed (again in %g s): %s", path, every, exc)
            continue
        finally:
            del lock
        if fresh is None:
            return
        if not fresh:
            _log.warning("lock %r was broken or replaced while held; auto_refresh stops", path)
            return


def async_patience(
    lock: Lock, timeout: float | _Unset | None, poll_interval: float | None, blocking: bool
) -> tuple[float | None, float | None, float | None]:
    """(timeout, poll, deadline) of an ``acquire_async`` call's arguments, checked.

    *timeout* unset: the lock's own; ``blocking=False``: one try (0); *poll_interval*
    None: the lock's ``poll``.  The deadline is ``locks.retry.deadline_after(timeout)``.
    """
    from ..perl.clock import check_seconds

    if not blocking:
        timeout = 0
    seconds = lock.timeout if isinstance(timeout, _Unset) else check_timeout(timeout)
    poll = lock.poll
    if poll_interval is not None:
        poll = check_seconds("poll_interval", poll_interval, zero=False)
    return seconds, poll, _retry.deadline_after(seconds)


async def acquire_async(
    lock: Lock, timeout: float | _Unset | None, poll_interval: float | None, blocking: bool
) -> Acquired:
    """``Lock.acquire_async``: tries between ``asyncio.sleep``s; the holding task may re-enter."""
    from .acquired import Acquired
    from .cleanup import holder

    # issue 34: its holder task takes it again (reentrant=False: refused, or taken anew)
    if held_by_this_task(lock) and (lock.reentrant or take_again(lock)):
        lock._count += 1
        return Acquired(lock)
    timeout, poll, deadline = async_patience(lock, timeout, poll_interval, blocking)
    lock._next_break = 0.0
    lock._retried = None  # (an earlier call's retry_errnos error is not this one's)
    me = get_ident()
    async for _ in _retry.tries_async(deadline, poll=poll):
        if lock._owner_thread is None and holder(lock.method, lock.path) is None:
            if not gate_of(lock).try_take():  # issue 34: another thread (or task) is in it
                continue
            with Step(lock):  # issue 34
                lock._backend.deadline = deadline
                if await _take_async(lock, me):
                    note_task(lock)
                    return Acquired(lock)
    raise lock._timed_out(timeout)


def take_again(lock: Lock) -> bool:
    """The holder's ``acquire()`` of a ``reentrant=False`` lock: ``locks.state.take_again``
    (loaded then)."""
    from . import state

    return state.take_again(lock)


async def _take_async(lock: Lock, me: int) -> bool:
    """One attempt for :func:`acquire_async`, owned by the thread *me* (the loop's)."""
    import asyncio

    from .contract import URL_METHOD

    if lock.method != URL_METHOD:
        return lock._take(me)  # a few system calls: no need to leave the loop
    attempt = asyncio.ensure_future(asyncio.to_thread(lock._take, me))
    try:
        return await asyncio.shield(attempt)
    except asyncio.CancelledError:
        # the attempt runs on in its thread: wait for it, through repeated cancels too,
        # and give back a grant it got for this waiter that is gone
        while not attempt.done():
            try:
                await asyncio.wait((attempt,))
            except asyncio.CancelledError:
                continue
        if not attempt.cancelled() and attempt.exception() is None and attempt.result():
            lock.release()
        raise
