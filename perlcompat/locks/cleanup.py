"""The registry of held locks, released when this process is stopped (the Perl signal trap).

**The registry.**  Every lock this process holds is in one place, here, by
(method, path, holding thread): ``track(lock)`` and ``untrack(lock)`` (called by
``locks.api.Lock``) add and drop a ``Lock``, :func:`holder` finds the one this
thread holds at a path (``Lock``'s ownership checks, ``unlock()``), and
``sem_acquire`` keeps its slots here under the kind :data:`SEMAPHORE`
(:func:`hold`, :func:`drop`; the kernel frees a slot, so it is never released
here).  A thread that ends holding a lock leaves it held until exit, no thread's: a
later thread given the same ident (Python reuses them) does not hold it.

**Cleanup.**  The package's exit hook (``perlcompat._at_exit``, registered
by ``import perlcompat``, so it runs after the script's own ``atexit`` handlers, as Perl runs
END blocks first) calls :func:`release_all`.  The first ``track`` installs,
from the main thread, a handler for each of SIGHUP, SIGINT, SIGPIPE,
SIGQUIT and SIGTERM that is not ignored (Python ignores SIGPIPE: a signal that
stops nothing needs no cleanup, and the locks stay held).

At exit, the open ``PerlFile`` handles are flushed and closed before any lock is
released (what a script wrote reaches its file before another process may
take the lock), as Perl's global destruction flushes handles.

Locks are released eagerly only when the process is certain to die: on a
signal whose previous disposition was SIG_DFL, every held lock is released,
each only if it is still ours (the Perl locking article's ``$$ == readlink``), then SIG_DFL is
restored and the signal sent again, so a death by signal stays a death by that
signal (exit status, core dump).  A ``Lock`` released this way counts as
released: its ``release()`` or ``with`` exit is then a no-op.

When the previous handler is a Python callable (SIGINT's
``default_int_handler``, or the program's own), it is just called and nothing
is released here: the program may catch the ``KeyboardInterrupt`` (or ignore
the signal) and carry on inside its critical section, so releasing first
would let a second process in while it still works.  Its ``with`` exits,
``release()`` calls and, at normal interpreter exit (an uncaught exception
included), the ``atexit`` hook release the locks instead.

A stopping signal that arrives while the main thread is between taking a
lock and tracking it, or inside a release, is held back until that step is
complete (``enter``/``leave``), so no lock is left behind half-released.

The handlers stay installed after the last release and then only chain.  A
handler installed later by the program replaces ours (no cleanup then).  A
child of ``os.fork()`` holds none of its parent's locks or semaphore slots and
never releases them; ``perlcompat.fork()`` (``locks.fork``) names the locks it hands to the
child instead (:func:`handing_off`).
"""

from __future__ import annotations

import os
from _thread import _local, get_ident

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from types import FrameType
    from typing import Any

    from .api import Lock
else:  # the C module: ``signal`` would import ``enum`` on a CGI's every request
    import _signal

#: the signals after which the Perl locking article removes its lock.
SIGNALS = ("SIGHUP", "SIGINT", "SIGPIPE", "SIGQUIT", "SIGTERM")

#: the registry: (method or SEMAPHORE, path, holding thread) -> what holds it, oldest first
_held: dict[tuple[str, str, int], Any] = {}
#: the same keys -> the holding thread's token (thread idents are reused once a thread ends)
_tokens: dict[tuple[str, str, int], object] = {}
_thread = _local()  # ``token``: one object per thread, gone with it
_orphans = 0  # the last key number given to what a thread that ended held (-1, -2, ...)
#: the registry's kind for ``sem_acquire``'s slots (not a lock method: no ``Lock`` has it).
SEMAPHORE = "semaphore"
_previous: dict[int, Any] = {}
_atexit_done = False
_main_ident = -1
_depth = 0  # steps in progress in the main thread that a signal must not split
_pending: list[int] = []
_handed: set[int] = set()  # ids of the locks a ``perlcompat.fork()`` child keeps
_handed_by = -1  # the thread that forks with them (the one a child of that fork runs)


def enter() -> None:
    """Begin a step (take-and-track, release) that a stopping signal must not split."""
    global _depth
    if get_ident() == _main_ident:
        _depth += 1


def leave() -> None:
    """End such a step; a signal held back meanwhile is handled now."""
    global _depth
    if get_ident() == _main_ident and _depth:
        _depth -= 1
        if not _depth and _pending:
            signum = _pending[0]
            _pending.clear()
            _on_signal(signum, None)


def _token() -> object:
    """This thread's token: a thread that reuses an ended thread's ident has another."""
    try:
        token: object = _thread.token
        return token
    except AttributeError:
        token = _thread.token = object()
        return token


def hold(kind: str, path: str, holder_: object) -> None:
    """Register *holder_* as what this thread holds at *path* (a lock of *kind*)."""
    key = (kind, path, get_ident())
    _held[key] = holder_
    _tokens[key] = _token()
    _watch_forks()


def holder(kind: str, path: str) -> Any:
    """What this thread holds at *path* (a lock of *kind*: a ``Lock``, a semaphore), else None.

    What a thread that has ended held is not this thread's, though this one may have been
    given the same ident: it is set apart (:func:`_orphan`), held until released at exit.
    """
    key = (kind, path, get_ident())
    found = _held.get(key)
    if found is not None:
        token = _tokens.get(key)
        if token is None:
            _tokens[key] = _token()  # taken for this thread by a worker (``acquire_async``)
        elif token is not getattr(_thread, "token", None):  # (:func:`_token`, not made here)
            _orphan(key)
            return None
    return found


def held_at(path: str, method: str | None = None) -> Lock | None:
    """The ``Lock`` by which this thread holds *path* (with *method*, or with any), else None.

    Of several (one name locked with two methods), the first method in
    ``locks.contract.METHODS`` order.
    """
    if method is not None:
        found: Lock | None = holder(method, path)
        return found
    me = get_ident()
    kinds = []
    for kind, held_path, thread in _held:
        if held_path == path and thread == me and kind != SEMAPHORE:
            kinds.append(kind)
    if len(kinds) > 1:
        from .contract import names

        order = names()
        kinds.sort(key=lambda kind: order.index(kind) if kind in order else len(order))
    for kind in kinds:
        found = holder(kind, path)
        if found is not None:
            return found
    return None


def _orphan(key: tuple[str, str, int]) -> None:
    """Set apart what an ended thread held at *key*: no thread's, released at exit."""
    global _orphans
    _orphans -= 1
    held = _held.pop(key)
    _tokens.pop(key, None)
    _held[key[0], key[1], _orphans] = held
    if key[0] != SEMAPHORE:
        held._owner_thread = _orphans  # its release() is refused: not the caller's


def drop(kind: str, path: str) -> Any:
    """Forget what this thread holds at *path* (a lock of *kind*); it, or None."""
    if holder(kind, path) is None:
        return None
    key = (kind, path, get_ident())
    _tokens.pop(key, None)
    return _held.pop(key)


def track(lock_: Lock) -> None:
    """Remember that its owner thread holds *lock_*; install the handlers on first use.

    (An ``acquire_async`` attempt runs in a worker thread for the event loop's thread.)
    """
    me = get_ident()
    owner = lock_._owner_thread
    key = (lock_.method, lock_.path, me if owner is None else owner)
    _held[key] = lock_
    if key[2] == me:
        _tokens[key] = _token()
    else:
        _tokens.pop(key, None)  # set by the owner thread's first look (:func:`holder`)
    if not _previous:  # (inherited by a forked child: installed there too)
        _install()


def untrack(lock_: Lock) -> None:
    """Forget *lock_* (released normally; called while its owner thread is still set)."""
    owner = lock_._owner_thread
    key = (lock_.method, lock_.path, get_ident() if owner is None else owner)
    if _held.get(key) is lock_:
        del _held[key]
        _tokens.pop(key, None)


def tracked() -> list[Lock]:
    """The locks tracked for cleanup (the ``Lock`` objects this process holds), oldest first."""
    return [value for key, value in list(_held.items()) if key[0] != SEMAPHORE]


def release_all() -> None:
    """Release every lock this process holds, newest first; never raises."""
    while True:
        keys = [key for key in _held if key[0] != SEMAPHORE]
        if not keys:
            return
        lock_ = _held.pop(keys[-1])
        _tokens.pop(keys[-1], None)
        try:
            lock_._abandon()
        except Exception:  # cleanup must reach every lock
            continue


def _watch_forks() -> None:
    """Register :func:`_forget_all` to run in every forked child (once)."""
    global _atexit_done
    if not _atexit_done:  # (release_all runs at exit from perlcompat._at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_all)
        _atexit_done = True


def _install() -> None:
    global _main_ident
    _watch_forks()
    for name in SIGNALS:
        number = getattr(_signal, name, None)
        if number is None or number in _previous:
            continue
        current = _signal.getsignal(number)
        if current == _signal.SIG_IGN or current is _on_signal:
            continue
        try:
            _signal.signal(number, _on_signal)
        except ValueError:
            return  # not the main thread: only it may set handlers; atexit still works
        except OSError:
            continue
        _main_ident = get_ident()
        _previous[number] = current


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Let the signal do what it would have done; release our locks first if it kills us."""
    if _depth:
        _pending.append(signum)  # the main thread is mid-step: finish it first
        return
    previous = _previous.get(signum)
    if callable(previous):
        previous(signum, frame)  # may be caught: ``with``/release()/atexit release
        return
    if previous == _signal.SIG_IGN:
        return
    release_all()  # SIG_DFL (or unknown): the process dies now
    _signal.signal(signum, _signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # only if the signal did not end us (blocked in this thread)


def handing_off(locks: list[Lock]) -> None:
    """Name the locks the child of the coming fork keeps (``perlcompat.fork()``); [] after.

    Only a fork from this thread hands them over (an ``os.fork()`` from another
    thread meanwhile does not).
    """
    global _handed_by
    _handed.clear()
    _handed.update(id(lock_) for lock_ in locks)
    _handed_by = get_ident()


def _forget_all() -> None:
    """In a forked child: the parent's locks are not ours; drop them without releasing.

    Only the locks :func:`handing_off` named (a ``perlcompat.fork()``) stay held.  The
    semaphore slots are the parent's too: the child closes its copies of their
    descriptors (the slot stays the parent's), so its ``sem_release`` cannot free one.
    """
    global _depth, _main_ident
    me = get_ident()
    keep = _handed if me == _handed_by else set()
    # a child starts with no pending signal (POSIX), and in no step of the parent's main
    # thread (forked by another thread mid-step, it would hold its signals back for ever),
    # but for the hand-off of a ``perlcompat.fork()``, which it completes (``locks.fork``)
    _pending.clear()
    if me != _main_ident:
        # forked by another thread: that thread is the child's main thread (its signal
        # handlers run there), and the hand-off its one step in progress
        _main_ident = me
        _depth = 1 if keep else 0
    elif not keep:
        _depth = 0
    for lock_ in tracked():
        if id(lock_) not in keep:
            lock_._forget()
            untrack(lock_)
    for key, held in list(_held.items()):
        if key[0] == SEMAPHORE:
            del _held[key]
            _tokens.pop(key, None)
            held._forget()
