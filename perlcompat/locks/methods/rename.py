"""The rename lock (the inverse marker of the Perl locking article): held while it is moved away.

A marker file sits at ``path`` while the lock is free.  Taking the lock is
``rename(path, held)`` (``held`` defaults to ``path + ".locked"``, the Perl locking article's
``$lockfile2``); rename is atomic, so exactly one process moves it and the
others get ENOENT.  Release renames it back.  The holder writes its record into
the marker (``perlcompat rename pid=.. host=.. start=.. token=..``) and empties
it again before giving it back, so a free marker names nobody.

If neither name exists (first use), the marker is created already held, with
O_EXCL under the remover lock of ``locks.stale``, and only after looking at
``held`` and then ``path``: a second marker would let two processes hold.

A lock is stale when the held marker's ctime (set by the rename) is older than
``stale`` seconds, or at once when its record names a dead process on this
host; a record counts only if the marker was not renamed after it was written
(ctime not newer than mtime).  Breaking a stale lock renames the marker back
to ``path`` (one remover at a time, identity re-checked right before).
Release gives the marker back only if it still carries this holder's record.

On Windows a rename opens the source and then renames the open file: two
contenders that both opened the free marker both succeed (the second renames
it onto the name it already has; seen under wine).  There acquirers take the
remover lock of ``locks.stale`` exclusively around the rename, so they take turns;
a Windows Perl doing the Perl locking article's rename is not excluded by it.  Markers are
opened with FILE_SHARE_DELETE (``locks.winfile``) so a waiter reading one never
stops its holder renaming it back, and the age of a held marker is its NTFS
change time (``st_ctime`` is the creation time there).
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import sys
import time

from ...perl.fsinfo import check_method
from .. import owner as _owner
from ..contract import register
from ..stale import (
    O_BINARY,
    O_CLOEXEC,
    O_NOFOLLOW,
    O_NONBLOCK,
    StaleBackend,
    busy,
    guard,
    is_record,
    kind_error,
    links_error,
    lstat,
    not_a_lock,
    read_fd,
    read_same,
    read_small,
    remove_same,
    root_and_not_mine,
    unguard,
)
from ..winfile import busy_create, change_time, open_file, retry_busy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..stale import Owner

#: default suffix of the marker's name while held.
HELD_SUFFIX = ".locked"

#: O_NONBLOCK: a FIFO planted as the marker must not hang us (a stopping signal waits).
_WRITE = os.O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK


def _marker_problem(path: str, st: os.stat_result, *, free: bool) -> OSError | None:
    """Why the object *st* at *path* cannot be a rename marker (kind, links, owner), or None."""
    if not stat_module.S_ISREG(st.st_mode):
        return kind_error(path, st, "regular file")
    problem = links_error(path, st, RenameBackend.method)
    if problem is None and free and root_and_not_mine(st):
        problem = not_a_lock(
            path, RenameBackend.method, f"belongs to uid {st.st_uid}, and we are root", errno.EPERM
        )
    return problem


@register
class RenameBackend(StaleBackend):
    """A marker file at ``path``, renamed to ``held`` while the lock is held."""

    method = "rename"
    options = ("held",)

    def __init__(
        self,
        path: str,
        *,
        stale: float,
        shared: bool = False,
        held: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(path, stale=stale, shared=shared)
        if held:
            self.held = os.path.join(os.path.dirname(path), os.fspath(held))
        else:
            self.held = path + HELD_SUFFIX
        if self.held == path:
            raise ValueError(f"held name of the rename lock {path!r} must differ from it")
        self._mine: os.stat_result | None = None
        self._token = ""
        check_method(path, self.method, stacklevel=4)  # not safe across hosts: warn once

    # -- acquire / release -------------------------------------------------
    def try_acquire(self) -> bool:
        """Rename the marker to the held name; True if we moved it (or made it held).

        The marker is judged before it is moved (and again, by descriptor, after):
        anything but a lock marker is refused there and never renamed away.
        Nothing is renamed onto an existing held name (rename would replace it):
        a marker at both names is busy until the held one is stale.
        """
        if sys.platform == "win32":
            # Windows renames by handle: open the source, then rename the open file.  Two
            # contenders that both opened the marker both "succeed" (the second renames
            # the file onto the name it already has), so acquirers take turns there.
            fd = guard(self.path, exclusive=True)
            if fd is None:
                return False
            try:
                return self._rename_to_held(guarded=True)
            finally:
                unguard(fd)
        return self._rename_to_held(guarded=False)

    def _rename_to_held(self, guarded: bool) -> bool:
        st = lstat(self.path)
        if st is None:
            return self._first_use(guarded)
        if not self._judge(self.path, st, free=True):
            return False  # it changed while we looked: look again
        if lstat(self.held) is not None:
            return False  # only a rename of this very marker can make it appear now
        try:
            os.rename(self.path, self.held)
        except FileNotFoundError:
            return self._first_use(guarded)
        except PermissionError as exc:
            if busy_create(self.path, exc):
                return False  # Windows: someone has the free marker open for a moment
            raise
        return self._claim(st)

    def _judge(self, path: str, st: os.stat_result, *, free: bool) -> bool:
        """Raise OSError if the marker *st* at *path* is not a lock marker; False if it changed.

        A marker is a regular file with one link holding nothing or one rename
        record.  A free one (which we are about to write into) must also be
        owned by root when we are root: root never writes into another user's file.
        """
        problem = _marker_problem(path, st, free=free)
        if problem is not None:
            raise problem
        if st.st_size:
            data = read_same(path, st)
            if data is None:
                return False
            if not is_record(data, self.method):
                raise not_a_lock(
                    path, self.method, f"holds {st.st_size} bytes that are not a lock record"
                )
        return True

    def _first_use(self, guarded: bool) -> bool:
        if lstat(self.held) is not None:
            return False  # held by someone
        directory = os.path.dirname(self.path) or "."
        if not os.path.isdir(directory):
            raise FileNotFoundError(
                errno.ENOENT, f"lock directory {directory!r} does not exist", self.path
            )
        fd = None if guarded else guard(self.path, exclusive=True)
        if fd is None and not guarded:
            return False
        try:
            if lstat(self.held) is not None or lstat(self.path) is not None:
                return False
            try:
                marker = open_file(self.held, _WRITE | os.O_CREAT | os.O_EXCL, 0o644)
            except OSError as exc:
                if busy(exc, self.held):
                    return False
                raise
            self._sign(marker)
            return True
        finally:
            unguard(fd)

    def _claim(self, judged: os.stat_result) -> bool:
        """Sign the marker we just moved, if it is still the one we judged; else give it back."""
        try:
            marker = open_file(self.held, _WRITE)
        except OSError as exc:
            os.rename(self.held, self.path)
            raise OSError(
                exc.errno, f"lock marker {self.path!r} is not a regular file ({exc.strerror})"
            ) from None
        try:
            st = os.fstat(marker)
            data = read_fd(marker) if st.st_size else b""
            problem = _marker_problem(self.path, st, free=True)
            same_one = (st.st_dev, st.st_ino, st.st_size) == (
                judged.st_dev,
                judged.st_ino,
                judged.st_size,
            )
            if problem is None and not (data == b"" or is_record(data, self.method)):
                problem = not_a_lock(
                    self.path, self.method, f"holds {st.st_size} bytes that are not a lock record"
                )
        except BaseException:
            os.close(marker)
            raise
        if problem is not None or not same_one:
            os.close(marker)
            os.rename(self.held, self.path)  # give back what we took, untouched
            if problem is not None:
                raise problem
            return False
        self._sign(marker)
        return True

    def _sign(self, marker: int) -> None:
        """Write our record into the held marker *marker* (then closed) and remember it."""
        token = _owner.nonce()
        data = _owner.record(self.method, token=token).encode()
        try:
            os.write(marker, data)
            os.ftruncate(marker, len(data))
            st = os.fstat(marker)
        finally:
            os.close(marker)
        self._mine = st
        self._token = token

    def _held_path(self) -> str:
        return self.held

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        return self._record_is_ours(st, mine, self.held, self.method)

    def _touch(self, st: os.stat_result) -> os.stat_result | None:
        """Refresh: our record written again into the held marker (its ctime and mtime now)."""
        marker = open_file(self.held, _WRITE)
        try:
            now = os.fstat(marker)
        except BaseException:
            os.close(marker)
            raise
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            os.close(marker)
            return None
        try:  # a reader sees empty (an unknown owner) or a whole record, never a torn one
            os.ftruncate(marker, 0)
        except BaseException:
            os.close(marker)
            raise
        self._sign(marker)  # closes it; names this process (a ``perlcompat.fork()`` child)
        return self._mine

    def _undo(self) -> None:
        """Empty the marker and rename it back to the free name."""
        self._clear()  # if that fails, the record is ignored anyway (its ctime is newer)
        retry_busy(os.rename, self.held, self.path)

    def _clear(self) -> bool:
        """Empty the held marker, so a free marker names nobody; False if that failed.

        Only a marker that holds one rename record, has one link and (when we
        are root) is root's is written to.
        """
        try:
            marker = open_file(self.held, _WRITE)
        except OSError:
            return False
        try:
            st = os.fstat(marker)
            if (
                not st.st_size
                or _marker_problem(self.held, st, free=True) is not None
                or not is_record(read_fd(marker), self.method)
            ):
                return False
            os.ftruncate(marker, 0)
        except OSError:
            return False
        finally:
            os.close(marker)
        return True

    # -- on disk -----------------------------------------------------------
    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """A missing *path* whose ``<path>.locked`` is a marker (empty, or a record) is held."""
        if st is not None:
            return False  # a free marker is no lock
        held = path + HELD_SUFFIX
        twin = lstat(held)
        if twin is None or not stat_module.S_ISREG(twin.st_mode):
            return False
        return not twin.st_size or is_record(read_small(held), cls.method)

    @classmethod
    def part_of(cls, path: str) -> str | None:
        """The held rename lock whose marker *path* (``<lock>.locked``) is, else None."""
        if not path.endswith(HELD_SUFFIX) or len(path) == len(HELD_SUFFIX):
            return None
        lock = path[: -len(HELD_SUFFIX)]
        return lock if cls.detect(lock, lstat(lock)) else None

    @classmethod
    def parts(cls, path: str) -> tuple[str, ...]:
        """The held marker and the breaker file beside the lock *path*."""
        return (path + HELD_SUFFIX, *super().parts(path))

    # -- stale hooks -------------------------------------------------------
    def _lstat(self) -> os.stat_result | None:
        return lstat(self.held)

    def _check(self, st: os.stat_result) -> None:
        self._judge(self.held, st, free=False)

    def _age(self, st: os.stat_result) -> float:
        if sys.platform == "win32":  # st_ctime is the creation time there, kept by rename
            return time.time() - (change_time(self.held) or st.st_mtime)
        return time.time() - st.st_ctime

    def _stamp_ns(self, st: os.stat_result) -> int:
        return st.st_ctime_ns

    def _move_target(self) -> str:
        # the free name: moving the marker there is the removal, in one step, so there is
        # never a moment with no marker under either name (a first use would make another)
        return self.path

    def _discard(self, moved: str, st: os.stat_result) -> None:
        """Nothing: the move freed it.  Its old record counts for nobody (see ``locks.owner``)."""

    def _owner(self, st: os.stat_result) -> Owner:
        if st.st_ctime_ns > st.st_mtime_ns:
            return None, None, None  # renamed since the record was written: not this hold's
        return _owner.owner_of(_owner.parse(read_small(self.held) or b"", self.method))

    def _remove(self, st: os.stat_result) -> bool:
        if lstat(self.path) is not None:  # a marker at the free name too: never rename onto it
            return remove_same(self.held, st)
        return remove_same(self.held, st, self._give_back)

    def _give_back(self, held: str) -> None:
        """Empty the stale marker at *held* and rename it to the free name."""
        self._clear()
        os.rename(held, self.path)
