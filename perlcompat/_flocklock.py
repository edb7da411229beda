"""The flock lock (seed 000's "lock file"): a file held with ``flock(LOCK_EX)``.

The recommended method wherever no Perl script needs a lock directory: the
kernel grants the lock to one holder (or, with ``shared=True``, LOCK_SH to many
readers), and frees it when the holder closes the file or dies, kill -9
included, so a flock lock is never stale and never needs breaking.  It is the
same lock as Perl's ``open(LOCK, "> $lockfile"); flock(LOCK, 2)``, so Perl
scripts doing that on the same file are excluded too.

The file is opened with ``O_CREAT | O_NOFOLLOW`` and never truncated or removed
(removing a flock file lets two processes lock two different inodes); a
planted symlink fails with ELOOP.  An exclusive holder writes a fixed-width
record at offset 0 (``perlcompat flock pid=.. host=.. start=.. since=..``) for
``perlcompat locks``.  ``stale`` does not apply: a live holder is never
broken; releasing after ``stale`` still raises ``ExpiredLockError``.

On shared storage where flock(2) is local to each host (sshfs, SMB/CIFS, NFS
without lock forwarding: ``_fsinfo``) the first lock on each file system warns
with ``SharedStorageWarning``: there it does not exclude other hosts.
"""

from __future__ import annotations

import os
import stat as stat_module
import sys
import time

from . import _owner
from ._api import Backend as _Base
from ._flock import LOCK_EX, LOCK_NB, LOCK_SH, LOCK_UN, lock_fd
from ._fsinfo import check_flock
from ._stale import O_BINARY, O_CLOEXEC, O_NOFOLLOW, kind_error, lstat, read_small

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: size of the owner record written at offset 0 by an exclusive holder.
RECORD_SIZE = 128

_OPEN = os.O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_BINARY


class Backend(_Base):
    """A lock file at ``path`` held with flock (LOCK_EX, or LOCK_SH when shared)."""

    method = "flock"
    can_share = True

    def __init__(self, path: str, *, stale: float, shared: bool = False, **options: Any) -> None:
        super().__init__(path, stale=stale, shared=shared, **options)
        self._fd: int | None = None

    def _open(self) -> tuple[int, bool]:
        """Open the lock file; (descriptor, writable)."""
        try:
            return os.open(self.path, os.O_RDWR | _OPEN, 0o666), True
        except PermissionError:
            if not os.path.lexists(self.path):
                raise
        # an existing file we may not write: flock(2) locks a read-only descriptor too
        return os.open(self.path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_BINARY), False

    def try_acquire(self) -> bool:
        """One LOCK_NB attempt; True if the flock is now ours."""
        fd, writable = self._open()
        try:
            lock_fd(fd, (LOCK_SH if self.shared else LOCK_EX) | LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        try:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode):
                raise kind_error(self.path, st, "regular file")
            if st.st_nlink == 0:  # removed while we locked it: that inode locks nobody out
                lock_fd(fd, LOCK_UN)
                os.close(fd)
                return False
            check_flock(fd, stacklevel=4)  # shared storage: other hosts are not excluded
            if writable and not self.shared:
                self._write_record(fd, st.st_size)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def _write_record(self, fd: int, size: int) -> None:
        text = _owner.record("flock", since=f"{time.time():.3f}")
        data = text[:-1].ljust(RECORD_SIZE - 1).encode() + b"\n"
        try:
            if sys.platform == "win32":
                _write_at_zero(fd, data)
            else:
                os.pwrite(fd, data, 0)
            if size > RECORD_SIZE:
                os.ftruncate(fd, RECORD_SIZE)
        except OSError:
            pass  # the record is advisory

    def release(self) -> bool:
        """Unlock and close; True (a flock cannot be taken from its holder)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return False
        try:
            lock_fd(fd, LOCK_UN)
        finally:
            os.close(fd)
        return True

    def break_stale(self) -> bool:
        """Never anything to do: the kernel frees a dead holder's flock."""
        return False

    def fileno(self) -> int | None:
        """The descriptor that holds the flock while held, else None."""
        return self._fd

    def _forget(self) -> None:
        """Close our descriptor in a forked child without unlocking the parent's flock."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def describe(self) -> dict[str, Any] | None:
        """Describe the lock (None if the file is absent or nobody holds its flock)."""
        st = lstat(self.path)
        if st is None:
            return None
        if not stat_module.S_ISREG(st.st_mode):
            raise kind_error(self.path, st, "regular file")
        if not held(self.path):
            return None
        fields = _owner.parse(read_small(self.path, RECORD_SIZE) or b"", "flock")
        pid, host, _start = _owner.owner_of(fields)
        since = None
        if fields is not None:
            try:
                since = float(fields.get("since", ""))
            except ValueError:
                since = None
        return {
            "method": self.method,
            "path": self.path,
            "pid": pid,
            "host": host,
            "alive": True,
            "age": max(0.0, time.time() - (st.st_mtime if since is None else since)),
        }


def held(path: str) -> bool:
    """True if some process holds a flock (shared or exclusive) on the file at *path*."""
    try:
        fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_BINARY)
    except OSError:
        return False
    try:
        lock_fd(fd, LOCK_EX | LOCK_NB)
    except BlockingIOError:
        return True
    else:
        lock_fd(fd, LOCK_UN)
        return False
    finally:
        os.close(fd)


def _write_at_zero(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, data)
