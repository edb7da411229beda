"""The mkdir lock (seed 003's ``sub lock``, the default method): a directory held while it exists.

``mkdir(2)`` checks and creates in one step, so of any number of processes
exactly one creates the directory and holds the lock; ``rmdir`` releases it.
The directory stays **empty**, so a Perl script running seed 003's
``sub lock``/``sub unlock`` on the same path excludes us and is excluded by
us, and its bare ``rmdir`` unlock still works.

Only an *empty* directory is a lock: a non-empty one at the path (``.``,
``/tmp``, a data directory) is refused at once with ENOTEMPTY, never waited on
nor removed.

Who holds it is written *beside* the directory, never inside: the file
``<lock>.owner`` holds ``perlcompat mkdir pid=.. host=.. start=.. dir=DEV:INO:MTIME
token=..``.  It is rewritten in place by each holder (no create/unlink per
hold: on a disk those cost as much as the mkdir itself), blanked at release,
and left there.  Only an owner file is written: something else at that path
(a data file, a FIFO, a symlink, a hard link to another file) is left alone and
the hold keeps no record (it then recovers by age, like a Perl-made lock).
A record counts only while it names the directory that is there (device,
inode and mtime), so a record left by an earlier holder is ignored; a
directory made by Perl has none.

A lock is stale when its mtime is older than ``stale`` (seed 003's
``(stat($dir))[9] < time - 180``), or at once when its record names a dead
process on this host.  Stale locks are removed by ``locks.stale``: one remover at a
time, identity re-checked right before the ``rmdir``.  Release removes the
directory only if it is still the one this holder made.  On Windows a release
whose ``rmdir`` meets a sharing violation (another process looking at the
directory at that instant) retries it for a moment (``locks.winfile.retry_busy``).
"""

from __future__ import annotations

import errno
import os
import stat as stat_module

from .. import owner as _owner
from ..contract import register
from ..stale import (
    O_BINARY,
    O_CLOEXEC,
    O_NOFOLLOW,
    O_NONBLOCK,
    StaleBackend,
    busy,
    is_record,
    kind_error,
    lstat,
    not_a_lock,
    read_fd,
    read_small,
    remove_same,
    same,
    unlink_quietly,
    write_at_zero,
)
from ..winfile import retry_busy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..stale import Owner

#: suffix of the owner file kept beside the lock directory.
OWNER_SUFFIX = ".owner"
#: the owner record is padded to this size, so rewriting it never truncates.
RECORD_SIZE = _owner.RECORD_SIZE

#: O_NONBLOCK: a FIFO planted at the owner path must not hang us (a stopping signal waits).
_OPEN_OWNER = os.O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
_CREATE_OWNER = _OPEN_OWNER | os.O_CREAT | os.O_EXCL
_BLANK = _owner.padded()


def _tag(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}"


def is_owner_file(data: bytes | None) -> bool:
    """True if *data* (a whole file) is what an mkdir owner file holds: empty, blank or a record."""
    return data == b"" or is_record(data, MkdirBackend.method, blank=True)


def _empty_dir(path: str) -> bool:
    """False if the directory *path* has an entry (True if it is empty or cannot be read)."""
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return True  # unreadable (mode 0733): only rmdir can tell, and it refuses a full one


@register
class MkdirBackend(StaleBackend):
    """A lock directory at ``path`` (mode 0755 like seed 003), owner file beside it."""

    method = "mkdir"
    options = ("mode",)

    def __init__(self, path: str, *, stale: float, shared: bool = False, mode: int = 0o755) -> None:
        super().__init__(path, stale=stale, shared=shared)
        self.mode = mode
        self.owner_path = path + OWNER_SUFFIX
        self._mine: os.stat_result | None = None
        self._token = ""
        self._owner_fd = -1

    # -- acquire / release -------------------------------------------------
    def try_acquire(self) -> bool:
        """Make the directory; True if we made it (it is then ours)."""
        try:
            os.mkdir(self.path, self.mode)
        except OSError as exc:
            if busy(exc, self.path):
                return False
            raise
        st = lstat(self.path)
        if st is None:
            return False  # removed at once by someone else (seed 003's racy stale check)
        self._token = _owner.nonce()
        self._sign(_owner.record(self.method, dir=_tag(st), token=self._token))
        self._mine = st
        return True

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        return self._record_is_ours(st, mine, self.owner_path, self.method)

    def _undo(self) -> None:
        self._unsign()
        retry_busy(os.rmdir, self.path)  # Windows: a waiter may be listing it for a moment

    def _after_release(self) -> None:
        self._close_owner()

    def forget(self) -> None:
        """In a forked child: drop the parent's hold without touching the directory."""
        self._mine = None
        self._close_owner()

    # -- on disk -----------------------------------------------------------
    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """An *empty* directory is an mkdir lock (a lock directory stays empty)."""
        if st is None or not stat_module.S_ISDIR(st.st_mode):
            return False
        try:
            return not os.listdir(path)
        except OSError:
            return False

    @classmethod
    def part_of(cls, path: str) -> str | None:
        """The lock whose owner file *path* is (blank or an mkdir record), else None."""
        if not path.endswith(OWNER_SUFFIX) or len(path) == len(OWNER_SUFFIX):
            return None
        st = lstat(path)
        if st is None or not stat_module.S_ISREG(st.st_mode) or not st.st_size:
            return None  # an empty file is anybody's (a flock lock file, perhaps)
        if not is_owner_file(read_small(path)):
            return None
        return path[: -len(OWNER_SUFFIX)]

    @classmethod
    def parts(cls, path: str) -> tuple[str, ...]:
        """The owner file and the breaker file beside the lock *path*."""
        return (path + OWNER_SUFFIX, *super().parts(path))

    # -- owner file --------------------------------------------------------
    def _sign(self, text: str) -> None:
        """Write our record into the owner file beside the directory (advisory: best effort).

        The file is rewritten in place (padded, never truncated on open) and kept
        open while held.  An owner file that is not a plain file of ours with one
        link is replaced instead of written through; anything that is not an
        owner file (empty, blank or an mkdir record) is left alone, unrecorded.
        """
        data = _owner.padded(text)
        try:
            fd = os.open(self.owner_path, _OPEN_OWNER)
        except FileNotFoundError:
            try:
                fd = os.open(self.owner_path, _CREATE_OWNER, 0o644)
            except OSError:
                return
        except OSError:  # not ours to write (another user's, a symlink): replace an owner file
            if is_owner_file(read_small(self.owner_path)):
                self._replace_owner(data)
            return
        try:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode) or not is_owner_file(read_fd(fd)):
                os.close(fd)
                return
            uid = getattr(os, "geteuid", None)
            if st.st_nlink != 1 or (uid is not None and st.st_uid != uid()):
                os.close(fd)
                self._replace_owner(data)
                return
            write_at_zero(fd, data)
            if st.st_size > len(data):
                os.ftruncate(fd, len(data))
        except OSError:
            os.close(fd)
            return
        self._owner_fd = fd

    def _replace_owner(self, data: bytes) -> None:
        temp = f"{self.owner_path}.{os.getpid()}.{_owner.nonce()}"
        try:
            fd = os.open(temp, _CREATE_OWNER, 0o644)
        except OSError:
            return
        try:
            os.write(fd, data)
            os.replace(temp, self.owner_path)
        except OSError:
            os.close(fd)
            unlink_quietly(temp)
            return
        self._owner_fd = fd

    def _unsign(self) -> None:
        """Blank our record, so it cannot name a later directory that reuses the inode."""
        if self._owner_fd >= 0:
            try:
                write_at_zero(self._owner_fd, _BLANK)
            except OSError:
                return

    def _close_owner(self) -> None:
        fd, self._owner_fd = self._owner_fd, -1
        if fd >= 0:
            os.close(fd)

    # -- stale hooks -------------------------------------------------------
    def _check(self, st: os.stat_result) -> None:
        if not stat_module.S_ISDIR(st.st_mode):
            raise kind_error(self.path, st, "directory")
        if not _empty_dir(self.path):
            raise not_a_lock(
                self.path, self.method, "is a directory that is not empty", errno.ENOTEMPTY
            )

    def _owner(self, st: os.stat_result) -> Owner:
        fields = _owner.parse(read_small(self.owner_path) or b"", self.method)
        if fields is None or fields.get("dir") != _tag(st):
            return None, None, None
        return _owner.owner_of(fields)

    def _remove(self, st: os.stat_result) -> bool:
        if not same(self.path, st):
            return False
        self._blank_owner_file(st)
        return remove_same(self.path, st, os.rmdir)

    def _record_extra(self) -> bytes:
        return read_small(self.owner_path) or b""

    def _discard(self, moved: str, st: os.stat_result) -> None:
        self._blank_owner_file(st)
        os.rmdir(moved)

    def _blank_owner_file(self, st: os.stat_result) -> None:
        """Blank the owner file if its record names the directory *st* (being removed)."""
        fields = _owner.parse(read_small(self.owner_path) or b"", self.method)
        if fields is None or fields.get("dir") != _tag(st):
            return
        try:
            fd = os.open(self.owner_path, _OPEN_OWNER)
        except OSError:
            return
        try:
            st = os.fstat(fd)
            if stat_module.S_ISREG(st.st_mode) and st.st_nlink == 1 and is_owner_file(read_fd(fd)):
                write_at_zero(fd, _BLANK)
        except OSError:
            pass
        finally:
            os.close(fd)
