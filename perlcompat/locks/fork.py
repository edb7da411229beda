"""``fork()``: Perl's ``fork``, with the calling thread's locks handed to the child.

The CGI idiom ``lock(); if (fork) { exit } work(); unlock()`` (answer the
browser, keep working in the child) keeps the lock in Perl: nobody removes the
lock directory until the child's ``rmdir``, and a flocked handle the child
inherited stays locked.  ``os.fork()`` does not do that with perlcompat's locks:
its child holds none of its parent's locks and the parent's exit hook releases
them (``locks.cleanup``); that stays so.  ``perlcompat.fork()`` hands them over:

* in the child, every lock the calling thread holds (``lock()``, ``Lock``) is the
  child's, refreshed so that its owner record names the child (``Lock.refresh``:
  a waiter judging the holder by its pid sees a live one), and its
  ``auto_refresh`` thread runs again;
* in the parent those locks are dropped unreleased, only after the child has
  re-signed them (a pipe says when), so no waiter ever sees a lock that names
  a dead parent; a later ``release()`` or ``with`` exit is a no-op there, and
  an ``unlock()`` returns 0 (``$!`` = ENOLCK).  A stopping signal that reaches
  either process meanwhile waits until the locks are handed over
  (``locks.cleanup``), so no cleanup removes a lock the other one holds.

A child killed outright before it acknowledged a lock leaves it the parent's, and
the parent re-signs it before ``fork()`` returns (the child may have re-signed it
just before it died, and a waiter would break a lock that names a dead process).
A take-over that fails, in the child or in that parent (the lock was broken
meanwhile: the other process died and a waiter judged it dead), loses the lock:
``is_locked`` is False, a WARNING is logged, and the holder's next ``release()``
raises ``ExpiredLockError`` as for a lock broken while held.  So there is never more
than one holder, whichever process is killed at whichever step.

Locks taken by other threads stay the parent's, as with ``os.fork()``.  A
``Lock(path, thread_local=False)`` this thread took holds of goes to the child
with those holds only (its balanced ``with`` exits there release it); the other
threads' holds become no-op releases in the parent; one held only by other
threads stays the parent's.  A
TOP?LOCK line cannot name the child in place: its id becomes random digits,
so that holder is then judged by age only.
"""

from __future__ import annotations

import errno
import os
import time
from _thread import RLock, get_ident

from ..perl.errno import set_errno
from . import cleanup as _cleanup, osapi as _osapi

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .api import Lock


def fork() -> int | None:
    """Perl's ``fork``: the child's pid in the parent, 0 in the child, None and ``$!`` on failure.

    The locks this thread holds go to the child (see the module docstring).
    Where there is no fork (Windows: Perl emulates it with threads, Python has
    none) it is None with ``$!`` = ENOSYS, and every lock stays this process's.
    """
    me = get_ident()
    held = _cleanup.tracked()
    mine = [lock_ for lock_ in held if lock_.thread_local and lock_._owner_thread == me]
    shared = _shared_of_this_thread([lock_ for lock_ in held if not lock_.thread_local])
    if not mine and not shared:
        return _fork()
    pid: int | None = None
    _cleanup.enter()  # a stopping signal waits until the locks are handed over
    try:
        pid = _hand_over(mine + [lock_ for lock_, _share in shared])
    finally:
        _cleanup.leave()
        for lock_, share in shared:
            if pid == 0 and lock_._owner_thread is not None:  # the child holds this thread's
                lock_._count = share  # holds only: its balanced exits release it
                lock_._shares = {_cleanup._token(): share}
            gate = lock_._gate
            if gate is not None:
                gate.leave()
    return pid


def _shared_of_this_thread(candidates: list[Lock]) -> list[tuple[Lock, int]]:
    """The ``thread_local=False`` locks this thread took holds of, each with their number.

    Each stays closed to the other threads (its gate held) until the hand-over is done,
    and is moved to this thread, whichever thread released it last (the registry of held
    locks is per thread).  The parent's other threads' holds are then owed no-ops there.
    """
    from .compat import share_of
    from .threadsafe import gate_of

    found = []
    for lock_ in candidates:
        gate = gate_of(lock_)
        share = 0
        while lock_._owner_thread is not None:  # (not: another thread's wait to take it)
            if gate.take(time.monotonic() + 0.05):  # another thread's count or release
                share = share_of(lock_) if lock_._owner_thread is not None else 0
                break
        if not share:
            gate.leave()
            continue
        _cleanup.untrack(lock_)
        lock_._owner_thread = get_ident()
        _cleanup.track(lock_)
        found.append((lock_, share))
    return found


def _hand_over(mine: list[Lock]) -> int | None:
    """Fork with *mine* held: the child re-signs them, then the parent drops them."""
    for lock_ in mine:
        lock_._mutex.acquire()  # no auto_refresh in the middle of a refresh across the fork
    try:
        done, signed = os.pipe()
    except OSError as exc:
        for lock_ in mine:
            lock_._mutex.release()
        set_errno(exc.errno or errno.EAGAIN)
        return None
    _cleanup.handing_off(mine)
    pid = _fork()
    _cleanup.handing_off([])
    if pid == 0:
        os.close(done)
        try:
            for lock_ in mine:
                try:
                    _take_over(lock_)
                finally:
                    _tell(signed)  # this one is done: the child's now, or lost
        finally:
            os.close(signed)  # the parent may go on (and exit) now
        return 0
    os.close(signed)
    handed = 0
    try:
        while pid is not None and handed < len(mine):
            got = os.read(done, len(mine) - handed)
            if not got:
                break  # the child died before taking the rest over: ours, re-signed below
            handed += len(got)
    finally:
        os.close(done)
        for number, lock_ in enumerate(mine):
            try:
                if number < handed:
                    _hand_off(lock_)
                elif pid is not None:
                    _resign(lock_)
            finally:
                lock_._mutex.release()
    return pid


def _hand_off(lock_: Lock, lost: str = "") -> None:
    """In the parent: the child holds *lock_* now; dropped unreleased.

    The holder's later ``release()`` calls (``with`` exits, one per hold counted) are
    no-ops, as after a cleanup; with *lost* (``fork()`` lost the hold) the first raises.
    """
    if lock_._owner_thread is not None:
        lock_._abandoned[lock_._owner_thread] = lock_._count
    lock_._disown()
    lock_._backend.forget()
    lock_._lost = lost


def _tell(signed: int) -> None:
    """Tell the parent the child is done with one more lock; nothing if it is gone (killed)."""
    try:  # noqa: SIM105 - contextlib is not imported on this path
        os.write(signed, b"1")
    except OSError:  # EPIPE: the parent died; the child goes on with its locks
        pass


def _take_over(lock_: Lock) -> None:
    """In the child: make *lock_* ours (its record names us); lost if that failed."""
    try:
        lock_._mutex = RLock()
        lock_._stop = None
        fresh = lock_._backend.refresh()
        if fresh:
            lock_._since = time.monotonic()
        lock_._start_refresher()
        if fresh:
            return
        why = BROKEN
    except (OSError, ValueError) as exc:  # (ValueError: its record= renders unreadable now)
        why = str(exc)
    _lose(lock_, f"the child could not re-sign it ({why})")


def _resign(lock_: Lock) -> None:
    """In the parent: *lock_*, which the child died before acknowledging, is ours again.

    The child may have re-signed it before it died: its record then names a dead
    process, which a waiter breaks.  So it is re-signed (``Backend.refresh``), and lost if
    that fails (it was broken meanwhile).  This thread holds the lock's mutex.
    """
    try:
        fresh = lock_._backend.refresh()
        why = BROKEN
    except (OSError, ValueError) as exc:
        fresh, why = False, str(exc)
    if fresh:
        lock_._since = time.monotonic()
        return
    _lose(
        lock_, f"the child died before taking it over and the parent could not re-sign it ({why})"
    )


#: why a take-over found the lock no longer ours.
BROKEN = "it was broken meanwhile: its record named a dead process"


def _lose(lock_: Lock, why: str) -> None:
    """*lock_* is this process's no more: not held, and its next release raises (a WARNING)."""
    message = f"lock {lock_.path!r} was lost in fork(): {why}"
    _hand_off(lock_, lost=message)
    from . import log as _log

    _log.warning("%s", message)


def _fork() -> int | None:
    try:
        return _osapi.fork_process()
    except OSError as exc:
        set_errno(exc.errno or errno.EAGAIN)
        return None
