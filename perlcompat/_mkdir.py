"""The mkdir lock (seed 003's ``sub lock``, the default method): a directory held while it exists.

``mkdir(2)`` checks and creates in one step, so of any number of processes
exactly one creates the directory and holds the lock; ``rmdir`` releases it.
The directory stays **empty**, so a Perl script running seed 003's
``sub lock``/``sub unlock`` on the same path excludes us and is excluded by
us, and its bare ``rmdir`` unlock still works.

Who holds it is written *beside* the directory, never inside: the file
``<lock>.owner`` holds ``perlcompat mkdir pid=.. host=.. start=.. dir=DEV:INO:MTIME
token=..``.  It is rewritten in place by each holder (no create/unlink per
hold: on a disk those cost as much as the mkdir itself), blanked at release,
and left there.  A record counts only while it names the directory that is
there (device, inode and mtime), so a record left by an earlier holder is
ignored; a directory made by Perl has none.

A lock is stale when its mtime is older than ``stale`` (seed 003's
``(stat($dir))[9] < time - 180``), or at once when its record names a dead
process on this host.  Stale locks are removed by ``_stale``: one remover at a
time, identity re-checked right before the ``rmdir``.  Release removes the
directory only if it is still the one this holder made.
"""

from __future__ import annotations

import os
import stat as stat_module

from . import _owner
from ._stale import (
    O_BINARY,
    O_CLOEXEC,
    O_NOFOLLOW,
    O_NONBLOCK,
    StaleBackend,
    busy,
    kind_error,
    lstat,
    read_small,
    same,
    unlink_quietly,
    write_at_zero,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._stale import Owner

#: suffix of the owner file kept beside the lock directory.
OWNER_SUFFIX = ".owner"
#: the owner record is padded to this size, so rewriting it never truncates.
RECORD_SIZE = 160

#: O_NONBLOCK: a FIFO planted at the owner path must not hang us (a stopping signal waits).
_OPEN_OWNER = os.O_WRONLY | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
_BLANK = b" " * (RECORD_SIZE - 1) + b"\n"


def _tag(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}"


class Backend(StaleBackend):
    """A lock directory at ``path`` (mode 0755 like seed 003), owner file beside it."""

    method = "mkdir"

    def __init__(
        self, path: str, *, stale: float, shared: bool = False, mode: int = 0o755, **options: Any
    ) -> None:
        super().__init__(path, stale=stale, shared=shared, **options)
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
        self._sign(_owner.record("mkdir", dir=_tag(st), token=self._token))
        self._mine = st
        return True

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        return self._record_is_ours(st, mine, self.owner_path, "mkdir")

    def _undo(self) -> None:
        self._unsign()
        os.rmdir(self.path)

    def _after_release(self) -> None:
        self._close_owner()

    def _forget(self) -> None:
        """In a forked child: drop the parent's hold without touching the directory."""
        self._mine = None
        self._close_owner()

    # -- owner file --------------------------------------------------------
    def _sign(self, text: str) -> None:
        """Write our record into the owner file beside the directory (advisory: best effort).

        The file is rewritten in place (padded, never truncated on open) and kept
        open while held; one that is not a plain file of ours with one link is
        replaced instead of written through.
        """
        data = text[:-1].ljust(RECORD_SIZE - 1).encode() + b"\n"
        try:
            fd = os.open(self.owner_path, _OPEN_OWNER, 0o644)
        except OSError:
            self._replace_owner(data)
            return
        try:
            st = os.fstat(fd)
            uid = getattr(os, "geteuid", None)
            if (
                not stat_module.S_ISREG(st.st_mode)
                or st.st_nlink != 1
                or (uid is not None and st.st_uid != uid())
            ):
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
            fd = os.open(temp, _OPEN_OWNER | os.O_EXCL, 0o644)
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

    def _owner(self, st: os.stat_result) -> Owner:
        fields = _owner.parse(read_small(self.owner_path) or b"", "mkdir")
        if fields is None or fields.get("dir") != _tag(st):
            return None, None, None
        return _owner.owner_of(fields)

    def _remove(self, st: os.stat_result) -> bool:
        if not same(self.path, st):
            return False
        fields = _owner.parse(read_small(self.owner_path) or b"", "mkdir")
        if fields is not None and fields.get("dir") == _tag(st):
            self._blank_owner_file()
        if not same(self.path, st):
            return False
        try:
            os.rmdir(self.path)
        except OSError:
            return False
        return True

    def _record_extra(self) -> bytes:
        return read_small(self.owner_path) or b""

    def _discard(self, moved: str, st: os.stat_result) -> None:
        fields = _owner.parse(read_small(self.owner_path) or b"", "mkdir")
        if fields is not None and fields.get("dir") == _tag(st):
            self._blank_owner_file()
        os.rmdir(moved)

    def _blank_owner_file(self) -> None:
        try:
            fd = os.open(
                self.owner_path, os.O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
            )
        except OSError:
            return
        try:
            if stat_module.S_ISREG(os.fstat(fd).st_mode):
                write_at_zero(fd, _BLANK)
        except OSError:
            pass
        finally:
            os.close(fd)
