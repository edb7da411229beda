"""The exclusive-create lock, ``(set -C; : > f)`` (the shell locks article): held while it exists.

``open(O_CREAT | O_EXCL | O_NOFOLLOW)`` fails if anything exists at the path
(a planted symlink included, whose target is never touched), so exactly one
process creates the file.  The holder writes one line into it:
``perlcompat excl pid=.. host=.. start=.. token=..``.  An empty file, as a shell
script's ``set -C`` makes, is a lock with an unknown owner.  Nothing else is a
lock: a file holding anything but one such record (a data file, however old;
read twice, alike: sshfs gives every file at a name one inode number, and a
client's page cache can show one file's bytes under the next one's size),
or with more than one hard link, is refused at once and never removed; so is,
when we are root, an empty file that belongs to another user (it may be theirs,
not a lock: root would remove it; a record proves a lock whoever owns it).

A lock is stale when the file is older than ``stale`` seconds (mtime), or at
once when its record names a dead process on this host (ESRCH, a zombie, or a
pid reused by a process with another start time).  Stale files are removed by
``locks.stale`` (one remover at a time, identity re-checked right before the
``unlink``).  Release removes the file only if it is still the one this holder
made.
"""

from __future__ import annotations

import os
import stat as stat_module
import time
from errno import EPERM

from .. import owner as _owner
from ..contract import register
from ..stale import (
    O_BINARY,
    O_CLOEXEC,
    O_NOFOLLOW,
    OTHERS_EMPTY_GRACE,
    StaleBackend,
    busy,
    is_record,
    kind_error,
    links_error,
    not_a_lock,
    read_same,
    read_small,
    root_and_not_mine,
)
from ..winfile import busy_create, open_file, retry_busy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..stale import Owner

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY


#: how much of a file ``detect`` reads for a record.
DETECT_LIMIT = 65536


@register
class ExclBackend(StaleBackend):
    """A file created with O_EXCL at ``path``, the holder's record inside."""

    method = "excl"

    def __init__(self, path: str, *, stale: float, shared: bool = False) -> None:
        super().__init__(path, stale=stale, shared=shared)
        self._mine: os.stat_result | None = None
        self._token = ""

    def try_acquire(self) -> bool:
        """Create the file exclusively; True if we created it."""
        try:
            fd = open_file(self.path, _CREATE, 0o644)
        except OSError as exc:
            if busy(exc, self.path):
                return False  # EEXIST, or a network file system's EPERM/EACCES collision
            if isinstance(exc, PermissionError) and busy_create(self.path, exc):
                return False  # Windows: the last holder's file, deleted, still open somewhere
            raise
        token = _owner.nonce()
        try:
            os.write(fd, _owner.record(self.method, token=token).encode())
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            os.unlink(self.path)
            raise
        os.close(fd)
        self._mine = st
        self._token = token
        return True

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        return self._record_is_ours(st, mine, self.path, self.method)

    def _undo(self) -> None:
        retry_busy(os.unlink, self.path)

    def _check(self, st: os.stat_result) -> None:
        if not stat_module.S_ISREG(st.st_mode):
            raise kind_error(self.path, st, "regular file")
        problem = links_error(self.path, st, self.method)
        if problem is not None:
            raise problem
        if (  # an empty file proves nothing once its maker had time to write its record
            not st.st_size
            and root_and_not_mine(st)
            and time.time() - st.st_mtime > OTHERS_EMPTY_GRACE
        ):
            raise not_a_lock(
                self.path,
                self.method,
                f"is empty, belongs to uid {st.st_uid}, and we are root",
                EPERM,
            )
        if st.st_size:
            data = read_same(self.path, st)
            if (
                data is not None
                and not is_record(data, self.method)
                and read_same(self.path, st) == data  # a second read agrees (see above)
            ):
                raise not_a_lock(
                    self.path, self.method, f"holds {st.st_size} bytes that are not a lock record"
                )

    def _owner(self, st: os.stat_result) -> Owner:
        return _owner.owner_of(_owner.parse(read_small(self.path) or b"", self.method))

    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """A regular file holding an excl owner record is an excl lock."""
        if st is None or not stat_module.S_ISREG(st.st_mode):
            return False
        return _owner.parse(read_small(path, DETECT_LIMIT) or b"", cls.method) is not None
