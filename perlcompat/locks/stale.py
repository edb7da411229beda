"""The hook protocol of the lock-file methods: one lock object at a path, its stale removal.

:class:`StaleBackend` is a lock that is one object at a path (a directory, a
symlink, a marker or lock file).  A method subclasses it and tells it, through a
few hooks, what its lock looks like; this class builds ``release``, ``refresh``,
``break_stale`` and ``describe`` on them, and its one ``locks.remover.Remover``
does every stale removal (one remover at a time, judged again and compared
right before removal; on shared storage the rules of ``locks.netfs``).

The hooks, with their defaults:

* **looking at the lock**: ``_lstat()`` (the lock object now, None if free),
  ``_check(st)`` (raise OSError if it is nothing this method makes), ``_owner(st)``
  (pid, host, start ticks), ``_age(st)`` (seconds since it was made; ``_stamp_ns``
  the storage time stamp it counts from, ``_glance`` a cheap look for a
  busy wait);
* **removing a stale one**: ``_remove(st)`` (unlink it if the path still holds
  exactly it); on shared storage ``_fingerprint`` (what must not change between
  the judgement and the removal), ``_move_target`` (where the handshake moves it:
  a fresh name, the lock's free name, or None to remove it in place) and
  ``_discard`` (remove it, moved);
* **our own lock**: ``_held_path()`` (where it is while held), ``_still_mine``,
  ``_undo`` (remove it; required), ``_touch`` (make it young: a refresh) and
  ``_after_release``.

**A release never waits long.**  Holders release under a shared flock on the lock's
directory (rule 3 of ``locks.remover``), so no perlcompat remover is between its
look and its removal; taken at once when free (:func:`_shared_now`), else through
``Remover.release_flock``.  Other programs can hold a directory's flock too (``flock -x
DIR cmd``, a backup tool), for as long as they like, so a release waits for it at
most ``locks.guards.RELEASE_WAIT`` seconds (a perlcompat remover holds it
exclusively only for a look and a removal: microseconds).  If it is still busy then,
or cannot be opened at all, the release looks at its lock again: if the path still
holds exactly the holder's own lock and that lock is not older than ``stale``, it is
released anyway, because no remover can be between its look and its removal of it (a
remover removes only a stale lock, and a lock's age only grows, so one not stale now
was not stale when the remover looked).  A lock past ``stale`` is left in place and
the release raises ``OSError``: it is breakable, so a remover may be about to remove
it, and the next waiter breaks it once the flock is free.  What this gives up: a
remover that uses a *smaller* ``stale`` than the holder (or a wall clock stepped
back between the two looks) and stalls for longer than ``RELEASE_WAIT`` between its
look and its removal.  A release that cannot look at its own lock raises.
"""

from __future__ import annotations

import os
import stat as stat_module
import time

from ..perl.consts import LOCK_NB, LOCK_SH
from ..perl.flock import lock_fd
from ..perl.fsinfo import is_network
from ..perl.osflags import O_CLOEXEC, O_DIRECTORY
from . import osapi as _osapi, owner as _owner
from .contract import Backend
from .files import identity, lstat, read_small, remove_same, touch
from .guards import BREAKER_SUFFIX
from .remover import Remover

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .contract import Description
    from .files import Identity

    Owner = tuple["int | None", "str | None", "int | None"]


class StaleBackend(Backend):
    """A lock that is one object at a path, removed when stale by its :class:`Remover`.

    Subclasses implement ``_undo`` and the hooks where the defaults do not fit (the
    module docstring lists them); this class provides ``release``, ``refresh``,
    ``break_stale`` and ``describe`` on top of them.
    """

    def __init__(self, path: str, *, stale: float, shared: bool = False) -> None:
        # ``Backend.__init__``'s fields, set here (a lock's path runs no frame of the contract)
        if shared:
            raise ValueError(f"lock method {self.method!r} cannot take shared locks")
        self.path = path
        self.stale = stale
        self.shared = shared
        self._remover_: Remover | None = None
        directory = _directories.get(path)
        if directory is None:
            directory = os.path.dirname(path) or "."
            if len(_directories) < 256:
                _directories[path] = directory
        self._directory = directory  # (its flock: the release guard)

    @property
    def _remover(self) -> Remover:
        """This lock's :class:`Remover`, made on first use (a lock never broken needs none)."""
        remover = self._remover_
        if remover is None:
            remover = self._remover_ = Remover()
        return remover

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

    def _glance(self, st: os.stat_result) -> tuple[float, Identity]:
        """A cheap look at *st*: a lower bound of :meth:`_age`, what one hold keeps the same."""
        return self._age(st), identity(st)

    def _remove(self, st: os.stat_result) -> bool:
        """Remove the lock *st* if the path still holds exactly it; True if removed.

        By default unlink it (``files.remove_same``: identity compared right before).
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
        remover = None  # (a young lock needs none: ``Remover.release_netfs`` says why)
        if self._age(mine) > self.stale / 2:
            remover = self._remover.release_netfs(self, mine)
        try:
            return self._release_local()
        except FileNotFoundError:  # removed under us (a cached look said it was there)
            self._mine = None
            self._after_release()
            return False
        finally:
            if remover is not None:
                remover.release()

    def _release_local(self) -> bool:
        """The release under this host's remover flock.

        If the remover lock cannot be had within ``guards.RELEASE_WAIT``, a lock
        not older than ``stale`` is released anyway, a staler one is left
        (OSError); see the module docstring.  On OSError we still hold the lock.
        """
        mine = self._mine
        if mine is None:
            return False
        fd = _shared_now(self._directory)
        if fd is None:
            fd = self._remover.release_flock(self, mine)  # waits for a remover, or decides
        try:
            try:
                st: os.stat_result | None = os.lstat(self._held_path())
            except (FileNotFoundError, NotADirectoryError):
                st = None
            if st is None or not self._still_mine(st, mine):
                self._mine = None
                return False
            self._undo()
            self._mine = None
            return True
        finally:
            if fd is not None:
                os.close(fd)
            if self._mine is None:
                self._after_release()

    def holds(self) -> bool:
        """True if the path still holds exactly our lock (one look, as a release makes it)."""
        mine = self._mine
        if mine is None:
            return False
        st = lstat(self._held_path())
        return st is not None and self._still_mine(st, mine)

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
        fd = self._remover.release_flock(self, mine)
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
            if fd is not None:
                os.close(fd)

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

    #: set by ``_check`` when it could not tell what is at the path (it changed as it
    #: was read, or two reads disagreed): judged again on the next look, never removed
    _undecided = False

    def _check_once(self, st: os.stat_result) -> bool:
        """``_check`` the lock *st* unless this very object already passed it; False if
        ``_check`` could not tell what it is (not passed: :meth:`_judged`)."""
        key = identity(st)
        if key == self._passed:
            return True
        if not self._judged(st):
            return False
        self._passed = key
        return True

    def _judged(self, st: os.stat_result) -> bool:
        """``_check(st)``; False if it could not tell what *st* is (``_undecided``)."""
        self._undecided = False
        self._check(st)
        return not self._undecided

    def _is_stale(self, st: os.stat_result, clock_ns: int | None = None) -> bool:
        age = self._age(st)
        if clock_ns is not None:  # shared storage: the storage's clock judges (``locks.netfs``)
            from .netfs import storage_age

            age = storage_age(clock_ns, self._stamp_ns(st), age)
        if age > self.stale:
            return True
        if not _osapi.pids_known():
            return False  # owners are unknown there: do not even open the lock to read one
        pid, host, start = self._owner(st)
        return _owner.alive(pid, host, start, time.time() - age) is False

    def break_stale(self) -> bool:
        """Remove the current lock if stale (age or dead owner), race-free; True if removed.

        The removal is the :class:`Remover`'s (``locks.remover``).
        """
        return self._remover.break_stale(self)

    # -- shared storage (``locks.netfs``): what the remover's rename handshake needs --
    def _stamp_ns(self, st: os.stat_result) -> int:
        """The storage's time stamp (ns) that :meth:`_age` measures from."""
        return st.st_mtime_ns

    def _fingerprint(self, path: str, st: os.stat_result) -> tuple[object, ...]:
        """What must be unchanged between the judgement and the move (``locks.netfs``)."""
        from .netfs import fingerprint

        return fingerprint(path, st)

    def _move_target(self) -> str | None:
        """Where the handshake moves a stale lock: "" for a fresh ``<lock>.breaking.<token>``.

        The lock's own (free) path: the move is the removal.  None: not moved, removed
        in place (``_remove``).
        """
        return ""

    def _discard(self, moved: str, st: os.stat_result) -> None:
        """Remove the stale lock *st*, moved to *moved* by the remover's handshake."""
        os.unlink(moved)

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


def _shared_now(directory: str) -> int | None:
    """The release guard (rule 3) when it can be had at once: the lock's *directory*
    opened and flocked shared without waiting; None otherwise.

    The common case of every release, with no remover at work.  None (a remover holds
    the flock, the directory cannot be opened here: Windows, mode 0733, no descriptor
    left) sends the release to ``Remover.release_flock``, which waits, uses the
    ``.breaker`` file, or decides as the module docstring says.
    """
    try:
        fd = os.open(directory, _OPEN_DIRECTORY)
    except OSError:
        return None
    try:
        lock_fd(fd, _LOCK_SH_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


_OPEN_DIRECTORY = os.O_RDONLY | O_DIRECTORY | O_CLOEXEC
#: lock path -> its directory (``os.path.dirname``), for the paths seen before
_directories: dict[str, str] = {}
_LOCK_SH_NB = LOCK_SH | LOCK_NB


#: device -> on shared storage (``perl.fsinfo.is_network``), looked up once per device.
_network: dict[int, bool] = {}


def on_network(dev: int) -> bool:
    """``perl.fsinfo.is_network(dev)``, remembered for the device."""
    found = _network.get(dev)
    if found is None:
        found = _network[dev] = is_network(dev)
    return found
