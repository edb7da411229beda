"""The remover: removes a file lock when it is stale, race-free, locally and on shared storage.

One :class:`Remover` per ``locks.stale.StaleBackend`` does every removal of it; the
lock's hooks (``locks.stale``) judge what is there, the remover decides and removes.

Removing a stale lock is check-then-act, and the Perl locking article shows the five steps that
go wrong: A and B both see an old lock, A removes it, C makes a fresh one, B
removes C's.  Three rules close that here:

1. **One remover at a time** (the lock swap's second lock in the Perl locking
   article, the shell locks article's single remover).  A remover holds an
   exclusive ``flock`` on the lock's directory (on Windows, and where the
   directory can be written but not read, e.g. mode 0733, on a
   ``<lock>.breaker`` file beside the lock).  The kernel drops it if the
   remover dies, so the second lock never goes stale itself.  A
   remover takes it with LOCK_NB: one that finds it busy gives up this round
   and tries again on its next wait.
2. **Look again, then compare identity.**  Holding it, the remover judges the
   lock from scratch (age, owner) and, immediately before ``rmdir``/``unlink``,
   ``lstat``\\ s the path once more and compares device, inode, mtime and ctime
   with what it judged.  Any difference: nothing is removed.
3. **Holders release under a shared flock on the same directory** (or
   breaker file), so between the remover's last look and its removal no
   perlcompat holder can release (and so no successor can create a fresh lock
   at the path).  A stale lock is stale because its owner is dead or past its
   ``stale`` age; the only window left is a *Perl* holder, alive and past
   ``stale``, that releases with a bare ``rmdir``/``unlink`` in the
   microseconds between that ``lstat`` and the removal.

**A release never waits long** for that flock: ``locks.stale`` says how it goes
on when other programs hold it.

**ESTALE while judging means "look again".**  On a network file system a look
at the lock (``lstat``, the open of its owner record) gets ESTALE when another
host replaced or removed it as we looked the name up: :meth:`Remover.break_stale` then
removes nothing and returns False, so the waiter tries again within its
patience; a moved lock that cannot be looked at is put back (``locks.netfs``).
A release that cannot look at its own lock still raises.

The remover lock of rule 1 is a ``RemoverGuard`` (``locks.guards``), chosen
by :func:`remover_guard`: this flock locally, ``locks.netfs.RemoverLock`` on
shared storage, where the remover also judges twice and moves the lock away
before removing it (rules 2 to 5 of ``locks.netfs``).  One that cannot be taken
at all (NFS refuses the flock) raises ``OSError``: the stale lock is reported,
never silently left for ever.  The file primitives (looks, ``remove_same``) are
in ``locks.files``.

Processes that can read the directory use its flock, processes that cannot
use the breaker file; the two do not exclude each other, so between them rule
3 reduces to rule 2 (identity compared right before removal).

**Root breaks only where no one else can move things.**  As root, a stale
lock is broken only in a directory that no other user can write, or rename
(it or a parent): elsewhere ``break_stale`` raises ``OSError`` (EPERM), as
logrotate refuses such a directory without its ``su`` line
(``locks.safedir.refuse_as_root``).

A lock is stale when it is older than ``stale`` seconds, or when its owner
record names a process on this host that is dead (see ``locks.owner``).  A fresh
lock with a live or unknown owner is never removed.  Waiters look at a lock's
owner at most every :data:`RELOOK` seconds and only after it has been held
:data:`FIRST_LOOK` seconds, so busy hand-offs cost one ``lstat`` per wait.
"""

from __future__ import annotations

import errno
import os
import time

from ..perl.fsinfo import is_network
from .files import lstat
from .guards import FlockGuard, count_removal, release_guard

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, Protocol

    from .files import Identity
    from .guards import RemoverGuard
    from .netfs import RemoverLock
    from .stale import Owner

    class Judged(Protocol):
        """What the remover asks of a lock: its hooks (``locks.stale.StaleBackend``)."""

        path: str
        method: ClassVar[str]
        stale: float

        def _lstat(self) -> os.stat_result | None: ...
        def _check(self, st: os.stat_result) -> None: ...
        def _check_once(self, st: os.stat_result) -> bool: ...
        def _judged(self, st: os.stat_result) -> bool: ...
        def _glance(self, st: os.stat_result) -> tuple[float, Identity]: ...
        def _age(self, st: os.stat_result) -> float: ...
        def _owner(self, st: os.stat_result) -> Owner: ...
        def _is_stale(self, st: os.stat_result, clock_ns: int | None = None) -> bool: ...
        def _remove(self, st: os.stat_result) -> bool: ...
        def _held_path(self) -> str: ...
        def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool: ...
        def _fingerprint(self, path: str, st: os.stat_result) -> tuple[object, ...]: ...
        def _move_target(self) -> str | None: ...
        def _discard(self, moved: str, st: os.stat_result) -> None: ...


#: a waiter first checks a busy lock's owner after it has been held this long (s).
FIRST_LOOK = 0.02
#: and again at most this often (s).
RELOOK = 0.25
#: on shared storage a lock is removed only if judged stale twice, unchanged, this far apart (s).
SETTLE = 1.0


def remover_guard(path: str, st: os.stat_result) -> RemoverGuard:
    """The remover guard for the lock *st* at *path*: the one place its kind is chosen."""
    if is_network(st.st_dev):
        from .netfs import RemoverLock

        return RemoverLock(path)
    return FlockGuard(path)


class Watch:
    """When a waiter should look closely (owner liveness) at a busy lock."""

    __slots__ = ("ident", "next_look")

    def __init__(self) -> None:
        self.ident: Identity | None = None
        self.next_look = 0.0

    def due(self, ident: Identity) -> bool:
        """True if the lock *ident* deserves an owner check now."""
        now = time.monotonic()
        if ident != self.ident:
            self.ident = ident
            self.next_look = now + FIRST_LOOK
        if now < self.next_look:
            return False
        self.next_look = now + RELOOK
        return True


class Remover:
    """The removal of one lock's stale objects, locally or on shared storage (``locks.netfs``).

    The lock's hooks (``locks.stale.StaleBackend``) look and judge; this object takes
    the remover guard, judges again under it, removes (or, on shared storage, moves
    away, compares and removes), and logs.  It also gives the holder's release and
    refresh their guards (:meth:`release_flock`, :meth:`release_netfs`), so that no
    remover is between its look and its removal then.  One per lock, keeping what its
    waits remember (:class:`Watch`, a judgement pending on shared storage); the lock
    is passed to each call.
    """

    __slots__ = ("suspect", "watch")

    def __init__(self) -> None:
        self.watch = Watch()
        #: (fingerprint, monotonic time) of a lock judged stale once on shared storage
        self.suspect: tuple[tuple[object, ...], float] | None = None

    def break_stale(self, lock: Judged) -> bool:
        """Remove the lock at *lock*'s path if stale (age or dead owner), race-free; True if so.

        A look that gets ESTALE (network file systems: the name was replaced or
        removed by another host as we looked it up) removes nothing: False, and
        the waiter looks again on its next try.
        """
        try:
            return self._break(lock)
        except OSError as exc:
            if exc.errno != errno.ESTALE:
                raise
            return False

    def _break(self, lock: Judged) -> bool:
        st = lock._lstat()
        if st is None:
            return False
        if not lock._check_once(st):
            return False  # it could not be told a lock: look again, remove nothing
        quick_age, key = lock._glance(st)
        if quick_age <= lock.stale and not self.watch.due(key):
            return False
        if not lock._is_stale(st):
            return False
        from .safedir import refuse_as_root

        refuse_as_root(lock.path)
        guard = remover_guard(lock.path, st)
        if guard.cached and self._settling():
            return False
        if not guard.acquire():
            return False
        count_removal(+1)
        try:
            st = lock._lstat()
            if st is None:
                return False
            if not lock._judged(st):
                return False
            age = lock._age(st)
            pid, host, _start = lock._owner(st)
            if not lock._is_stale(st, guard.clock_ns):
                return False
            if not (self._move_away(lock, st, guard) if guard.cached else lock._remove(st)):
                return False
        finally:
            count_removal(-1)
            guard.release()
        from . import log as _log

        why = f"older than {lock.stale:g} s" if age > lock.stale else "its owner is dead"
        _log.warning(
            "removed stale %s lock %r (%s; age %.3g s, pid %s, host %s)",
            lock.method,
            lock.path,
            why,
            age,
            pid,
            host,
        )
        return True

    # -- shared storage (``locks.netfs``): storage clock, judged twice, rename handshake --
    def _settling(self) -> bool:
        """True within ``SETTLE`` s of judging a lock stale once (rule 3 of ``locks.netfs``)."""
        suspect = self.suspect
        return suspect is not None and time.monotonic() - suspect[1] < SETTLE

    def _move_away(self, lock: Judged, st: os.stat_result, guard: RemoverGuard) -> bool:
        """The removal on shared storage, under *guard*: rules 3 and 4 of ``locks.netfs``.

        The lock *st*, judged stale, is removed only if it was judged so unchanged
        ``SETTLE`` seconds ago, and then by a rename handshake; True if removed.  A lock
        whose hooks name no place to move it (``_move_target`` None) is removed in place.
        """
        from .netfs import moved_name, put_back

        target = lock._move_target()
        if target is None:
            return lock._remove(st)
        suspect = self.suspect
        held = lock._held_path()
        judged = lock._fingerprint(held, st)
        if suspect is None or suspect[0] != judged:
            self.suspect = (judged, time.monotonic())  # stale twice, SETTLE apart
            return False
        self.suspect = None
        if not guard.still_mine():
            return False
        moved = target or moved_name(lock.path)
        try:
            os.rename(held, moved)
        except OSError:
            return False  # gone (released) meanwhile
        try:
            now = lstat(moved)
            if now is None:
                return False
            changed = lock._fingerprint(moved, now) != judged
        except OSError as exc:
            if exc.errno != errno.ESTALE:
                raise
            now, changed = st, True  # what we moved cannot be looked at: as if fresh
        if changed:
            put_back(moved, held, now)  # a fresh lock: the look came from a cache
            return False
        if moved != lock.path:  # moved onto its free name (rename), the move freed it
            lock._discard(moved, now)
        return True

    # -- a holder's release or refresh: the guards no remover is inside of --
    def release_flock(self, lock: Judged, mine: os.stat_result) -> int | None:
        """The release guard (rule 3) for a release or refresh of *lock* (ours: *mine*); or None.

        If the guard cannot be had, a lock not older than ``stale`` goes on
        unguarded (no remover is about to remove it); a staler one raises the
        OSError (a remover may be between its look and its removal).
        """
        try:
            return release_guard(lock.path)
        except OSError:
            st = lstat(lock._held_path())
            if st is not None and lock._still_mine(st, mine) and lock._age(st) > lock.stale:
                raise
            return None

    def release_netfs(self, lock: Judged, mine: os.stat_result) -> RemoverLock | None:
        """On shared storage, for a lock held past half its stale age: the remover lock.

        Rule 5 of ``locks.netfs``; None where not needed.  Raises OSError (the lock is
        kept) if a remover holds it longer than ``RELEASE_WAIT`` and the lock is stale.
        """
        if lock._age(mine) <= lock.stale / 2 or not is_network(mine.st_dev):
            return None
        from .netfs import RELEASE_WAIT as NETFS_WAIT, RemoverLock

        remover = RemoverLock(lock.path)
        if remover.wait(NETFS_WAIT):
            return remover
        if lock._age(mine) > lock.stale:
            raise OSError(errno.EWOULDBLOCK, f"a remover is breaking the stale lock {lock.path!r}")
        return None  # not stale: no remover judges it so
