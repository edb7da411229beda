"""Race-free removal of stale locks, shared by the lock-file methods.

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

**A release never waits long.**  Other programs can hold a flock on a
directory too (``flock -x DIR cmd``, a backup tool), for as long as they like,
so a release polls for the shared flock for at most :data:`RELEASE_WAIT`
seconds; a perlcompat remover holds it exclusively only for a look and a
removal (microseconds).  If it is still busy then, or cannot be opened at all,
the release looks at its lock again: if the path still holds exactly the
holder's own lock and that lock is not older than ``stale``, it is released
anyway, because no remover can be between its look and its removal of it (a
remover removes only a stale lock, and a live holder's lock is stale only past
``stale``; a lock's age only grows, so one not stale now was not stale when
the remover looked).  A lock past ``stale`` is left in place and the release
raises ``OSError``: it is breakable, so a remover may be about to remove it,
and the next waiter breaks it once the flock is free.  What this gives up: a
remover that uses a *smaller* ``stale`` than the holder (or a wall clock
stepped back between the two looks) and stalls for longer than
:data:`RELEASE_WAIT` between its look and its removal.

**ESTALE while judging means "look again".**  On a network file system a look
at the lock (``lstat``, the open of its owner record) gets ESTALE when another
host replaced or removed it as we looked the name up: ``break_stale`` then
removes nothing and returns False, so the waiter tries again within its
patience; a moved lock that cannot be looked at is put back (``locks.netfs``).
A release that cannot look at its own lock still raises.

The remover lock of rule 1 is a :class:`RemoverGuard` (``locks.guards``), chosen
by :func:`remover_guard`: this flock locally, ``locks.netfs.RemoverLock`` on
shared storage.  One that cannot be taken at all (NFS refuses the flock) raises
``OSError``: the stale lock is reported, never silently left for ever.  The file
primitives (looks, :func:`remove_same`) are in ``locks.files``.

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
import stat as stat_module
import sys
import time

from ..perl.fsinfo import is_network
from . import owner as _owner
from .contract import Backend
from .files import (
    identity,
    lstat,
    read_small,
    remove_same,
    touch,
)
from .guards import (
    BREAKER_SUFFIX,
    FlockGuard,
    RemoverGuard,
    count_removal,
    release_guard,
    unguard,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .contract import Description
    from .files import Identity

    Owner = tuple["int | None", "str | None", "int | None"]

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


class StaleBackend(Backend):
    """A lock that is one object at a path, broken when stale under :func:`remover_guard`.

    Subclasses provide ``_lstat``, ``_check`` and ``_owner`` (and ``_remove`` where an unlink
    is not the removal); this class provides ``break_stale`` and ``describe`` on top of them.
    """

    def __init__(self, path: str, *, stale: float, shared: bool = False) -> None:
        super().__init__(path, stale=stale, shared=shared)
        self._watch = Watch()

    # -- on disk: the breaker file beside a lock is a piece of it --------
    @classmethod
    def part_of(cls, path: str) -> str | None:
        """The lock whose (empty) breaker file *path* is, else None."""
        if not path.endswith(BREAKER_SUFFIX) or len(path) == len(BREAKER_SUFFIX):
            return None
        st = lstat(path)
        if st is None or not stat_module.S_ISREG(st.st_mode) or st.st_size:
            return None
        return path[: -len(BREAKER_SUFFIX)]

    @classmethod
    def parts(cls, path: str) -> tuple[str, ...]:
        """The breaker file beside the lock *path*."""
        return (path + BREAKER_SUFFIX,)

    # -- hooks -----------------------------------------------------------
    def _lstat(self) -> os.stat_result | None:
        """Stat the lock object (not following symlinks); None if there is no lock."""
        return lstat(self.path)

    def _check(self, st: os.stat_result) -> None:
        """Raise OSError if *st* is not something this method makes."""

    def _owner(self, st: os.stat_result) -> Owner:
        """Return (pid, host, start ticks) named by the lock *st*, Nones if unknown."""
        return None, None, None

    def _age(self, st: os.stat_result) -> float:
        """Seconds since the lock *st* was made."""
        return time.time() - st.st_mtime

    def _quick_age(self, st: os.stat_result) -> float:
        """A cheap lower bound of :meth:`_age`, from *st* alone."""
        return self._age(st)

    def _key(self, st: os.stat_result) -> Identity:
        """What stays the same while one holder holds (for :class:`Watch`)."""
        return identity(st)

    def _remove(self, st: os.stat_result) -> bool:
        """Remove the lock *st* if the path still holds exactly it; True if removed.

        By default unlink it (:func:`remove_same`: identity compared right before).
        """
        return remove_same(self.path, st)

    # -- release: our own lock, under the release guard -------------------
    #: what we made when we took the lock (set by ``try_acquire``)
    _mine: os.stat_result | None = None
    #: the nonce in our owner record, if the method writes one
    _token = ""

    def _held_path(self) -> str:
        """Where our lock object is while held."""
        return self.path

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        """True if *st* is the lock object we made (*mine*)."""
        return identity(st) == identity(mine)

    def _undo(self) -> None:
        """Remove our lock object (the path holds exactly it; the guard is held)."""
        raise NotImplementedError

    def _after_release(self) -> None:
        """Tidy up after a release, whether or not the lock was still ours."""

    def release(self) -> bool:
        """Remove our lock if the path still holds exactly it; False if it was broken.

        On shared storage a lock held past half its stale age is released under
        the remover lock (``locks.netfs``); a lock found gone at the last step was broken.
        """
        mine = self._mine
        if mine is None:
            return False
        remover = self._netfs_release_guard(mine)
        try:
            return self._release_local()
        except FileNotFoundError:  # removed under us (a cached look said it was there)
            self._mine = None
            self._after_release()
            return False
        finally:
            if remover is not None:
                remover.release()

    def _owner_guard(self, mine: os.stat_result) -> int | None:
        """The release guard for a release or refresh of our lock *mine*; None to go unguarded.

        If the guard cannot be had, a lock not older than ``stale`` goes on
        unguarded (no remover is about to remove it); a staler one raises the
        OSError (a remover may be between its look and its removal).
        """
        try:
            return release_guard(self.path)
        except OSError:
            st = lstat(self._held_path())
            if st is not None and self._still_mine(st, mine) and self._age(st) > self.stale:
                raise
            return None

    def _release_local(self) -> bool:
        """The release under this host's remover flock.

        If the remover lock cannot be had within :data:`RELEASE_WAIT`, a lock
        not older than ``stale`` is released anyway, a staler one is left
        (OSError); see the module docstring.  On OSError we still hold the lock.
        """
        mine = self._mine
        if mine is None:
            return False
        fd = self._owner_guard(mine)
        try:
            st = lstat(self._held_path())
            if st is None or not self._still_mine(st, mine):
                self._mine = None
                return False
            self._undo()
            self._mine = None
            return True
        finally:
            unguard(fd)
            if self._mine is None:
                self._after_release()

    # -- refresh: our lock made young again (``Lock.refresh``), under the release guard --
    def refresh(self) -> bool:
        """Set our lock's times to now (re-signing its record: :meth:`_touch`); False if not ours.

        Under the release guard as a release is, so no perlcompat remover is
        between its look and its removal; the new times change the lock's
        identity, so a remover that judged it before gives up.  A lock not ours
        any more is not touched.  If the guard cannot be had, a lock past
        ``stale`` is left (OSError), as at release.
        """
        mine = self._mine
        if mine is None:
            return False
        fd = self._owner_guard(mine)
        try:
            st = lstat(self._held_path())
            if st is None or not self._still_mine(st, mine):
                return False
            fresh = self._touch(st)
            if fresh is None:
                return False
            self._mine = fresh
            return True
        finally:
            unguard(fd)

    def _touch(self, st: os.stat_result) -> os.stat_result | None:
        """Make our lock object *st* young (times now); its new stat, None if it changed."""
        return touch(self._held_path(), st)

    def _record_is_ours(
        self, st: os.stat_result, mine: os.stat_result, record_path: str, method: str
    ) -> bool:
        """Same inode as *mine*, and unchanged or still carrying our token in *record_path*.

        On shared storage the token alone decides: client inode numbers are not stable.
        """
        if (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino) and not is_network(st.st_dev):
            return False
        if identity(st) == identity(mine):
            return True
        fields = _owner.parse(read_small(record_path) or b"", method)
        return fields is not None and fields.get("token") == self._token

    # -- judging -----------------------------------------------------------
    #: identity of the last lock object that passed ``_check`` (it is not checked again)
    _passed: Identity | None = None

    def _check_once(self, st: os.stat_result) -> None:
        """``_check`` the lock *st* unless this very object already passed it."""
        key = identity(st)
        if key != self._passed:
            self._check(st)
            self._passed = key

    def _is_stale(self, st: os.stat_result, clock_ns: int | None = None) -> bool:
        age = self._age(st)
        if clock_ns is not None:  # shared storage: the storage's clock judges (``locks.netfs``)
            from .netfs import storage_age

            age = storage_age(clock_ns, self._stamp_ns(st), age)
        if age > self.stale:
            return True
        if sys.platform == "win32":
            return False  # owners are unknown there: do not even open the lock to read one
        pid, host, start = self._owner(st)
        return _owner.alive(pid, host, start, time.time() - age) is False

    def break_stale(self) -> bool:
        """Remove the current lock if stale (age or dead owner), race-free; True if removed.

        A look that gets ESTALE (network file systems: the name was replaced or
        removed by another host as we looked it up) removes nothing: False, and
        the waiter looks again on its next try.
        """
        try:
            return self._break_stale()
        except OSError as exc:
            if exc.errno != errno.ESTALE:
                raise
            return False

    def _break_stale(self) -> bool:
        st = self._lstat()
        if st is None:
            return False
        self._check_once(st)
        if self._quick_age(st) <= self.stale and not self._watch.due(self._key(st)):
            return False
        if not self._is_stale(st):
            return False
        from .safedir import refuse_as_root

        refuse_as_root(self.path)
        remover = remover_guard(self.path, st)
        if remover.cached and self._settling():
            return False
        if not remover.acquire():
            return False
        count_removal(+1)
        try:
            st = self._lstat()
            if st is None:
                return False
            self._check(st)
            age = self._age(st)
            pid, host, _start = self._owner(st)
            if not self._is_stale(st, remover.clock_ns):
                return False
            if not (self._move_away(st, remover) if remover.cached else self._remove(st)):
                return False
        finally:
            count_removal(-1)
            remover.release()
        from . import log as _log

        why = f"older than {self.stale:g} s" if age > self.stale else "its owner is dead"
        _log.warning(
            "removed stale %s lock %r (%s; age %.3g s, pid %s, host %s)",
            self.method,
            self.path,
            why,
            age,
            pid,
            host,
        )
        return True

    # -- shared storage (``locks.netfs``): remover lock, storage clock, rename handshake --
    #: (fingerprint, monotonic time) of a lock judged stale once on shared storage
    _suspect: tuple[tuple[object, ...], float] | None = None

    def _stamp_ns(self, st: os.stat_result) -> int:
        """The storage's time stamp (ns) that :meth:`_age` measures from."""
        return st.st_mtime_ns

    def _record_extra(self) -> bytes:
        """Owner data kept outside the lock object, compared by the handshake (mkdir)."""
        return b""

    def _fingerprint(self, path: str, st: os.stat_result) -> tuple[object, ...]:
        """What must be unchanged between the judgement and the move (``locks.netfs``)."""
        from .netfs import fingerprint

        return fingerprint(path, st, self._record_extra())

    def _move_target(self) -> str:
        """Where the handshake moves a stale lock; "" for a fresh ``<lock>.breaking.<token>``."""
        return ""

    def _discard(self, moved: str, st: os.stat_result) -> None:
        """Remove the stale lock *st*, moved to *moved* by :meth:`_move_away`."""
        os.unlink(moved)

    def _settling(self) -> bool:
        """True within ``SETTLE`` s of judging a lock stale once (rule 3 of ``locks.netfs``)."""
        suspect = self._suspect
        return suspect is not None and time.monotonic() - suspect[1] < SETTLE

    def _move_away(self, st: os.stat_result, remover: RemoverGuard) -> bool:
        """The removal on shared storage, under *remover*: rules 3 and 4 of ``locks.netfs``.

        The lock *st*, judged stale, is removed only if it was judged so unchanged
        ``SETTLE`` seconds ago, and then by a rename handshake; True if removed.
        """
        from .netfs import moved_name, put_back

        suspect = self._suspect
        held = self._held_path()
        judged = self._fingerprint(held, st)
        if suspect is None or suspect[0] != judged:
            self._suspect = (judged, time.monotonic())  # stale twice, SETTLE apart
            return False
        self._suspect = None
        if not remover.still_mine():
            return False
        moved = self._move_target() or moved_name(self.path)
        try:
            os.rename(held, moved)
        except OSError:
            return False  # gone (released) meanwhile
        try:
            now = lstat(moved)
            if now is None:
                return False
            changed = self._fingerprint(moved, now) != judged
        except OSError as exc:
            if exc.errno != errno.ESTALE:
                raise
            now, changed = st, True  # what we moved cannot be looked at: as if fresh
        if changed:
            put_back(moved, held, now)  # a fresh lock: the look came from a cache
            return False
        self._discard(moved, now)
        return True

    def _netfs_release_guard(self, mine: os.stat_result) -> Any:
        """On shared storage, for a lock held past half its stale age: the remover lock.

        Rule 5 of ``locks.netfs``; None where not needed.  Raises OSError (the lock is
        kept) if a remover holds it longer than ``RELEASE_WAIT`` and the lock is stale.
        """
        if self._age(mine) <= self.stale / 2 or not is_network(mine.st_dev):
            return None
        from .netfs import RELEASE_WAIT as NETFS_WAIT, RemoverLock

        remover = RemoverLock(self.path)
        if remover.wait(NETFS_WAIT):
            return remover
        if self._age(mine) > self.stale:
            raise OSError(errno.EWOULDBLOCK, f"a remover is breaking the stale lock {self.path!r}")
        return None  # not stale: no remover judges it so

    def describe(self) -> Description | None:
        """Describe the lock at the path (None if there is none), for ``perlcompat locks``."""
        st = self._lstat()
        if st is None:
            return None
        self._check(st)
        age = self._age(st)
        pid, host, start = self._owner(st)
        return {
            "method": self.method,
            "path": self.path,
            "pid": pid,
            "host": host,
            "alive": _owner.alive(pid, host, start, time.time() - age),
            "judged": _owner.judged(pid, host),
            "age": age,
        }
