"""The flock lock (the Perl locking article's "lock file"): a file held with ``flock(LOCK_EX)``.

The recommended method wherever no Perl script needs a lock directory: the
kernel grants the lock to one holder (or, with ``shared=True``, LOCK_SH to many
readers), and frees it when the holder closes the file or dies, kill -9
included, so a flock lock is never stale and never needs breaking.  It is the
same lock as Perl's ``open(LOCK, "> $lockfile"); flock(LOCK, 2)``, so Perl
scripts doing that on the same file are excluded too.

Any existing regular file can be the lock, a data file included (Perl's
``open(DATA, "+< f"); flock(DATA, 2)``): it is opened with ``O_NOFOLLOW``
(never ``O_TRUNC``), never truncated, written or removed (removing a flock file
lets two processes lock two different inodes); a planted symlink fails with
ELOOP, a directory with EISDIR, a FIFO or device with EEXIST, all at once.

Nothing is ever written into the lock file, not even into one perlcompat
created (``O_EXCL``, empty, when the path is absent): the path is often a log
or data file that a Perl appender (``open(F, ">>log"); flock(F, 2)``) may
create and write between our create and our flock.  ``perlcompat locks``
names the holder from ``/proc/locks`` (:func:`flock_holders`); where the
system does not list flocks (Windows, other kernels) the holder is unknown.
The age is the holder's run time (its start time from ``/proc``), else unknown.
``stale`` does not apply: a live holder is never broken; releasing after
``stale`` still raises ``ExpiredLockError``.

On shared storage where flock(2) is local to each host (sshfs, SMB/CIFS, NFS
without lock forwarding: ``perl.fsinfo``) the first lock on each file system warns
with ``SharedStorageWarning``: there it does not exclude other hosts.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import time

from ...perl.consts import LOCK_EX, LOCK_NB, LOCK_SH, LOCK_UN
from ...perl.flock import lock_fd
from ...perl.fsinfo import check_flock
from ...perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from .. import osapi as _osapi, owner as _owner
from ..contract import Backend, register
from ..files import kind_error, lstat, open_error, read_small

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..contract import Description

#: O_NONBLOCK: opening a FIFO planted at the path must not block.
#: how much of a file ``detect`` reads for a record.
DETECT_LIMIT = 65536
_OPEN = O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
_CREATE = os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN


@register
class FlockBackend(Backend):
    """A lock file at ``path`` held with flock (LOCK_EX, or LOCK_SH when shared)."""

    method = "flock"
    catch_all = True
    can_share = True

    def __init__(self, path: str, *, stale: float, shared: bool = False) -> None:
        super().__init__(path, stale=stale, shared=shared)
        self._fd: int | None = None

    def _open(self) -> tuple[int, bool]:
        """Open the lock file, creating it if absent; (descriptor, whether we created it)."""
        for _ in range(100):
            try:
                try:
                    return os.open(self.path, os.O_RDWR | _OPEN), False
                except FileNotFoundError:
                    try:
                        return os.open(self.path, _CREATE, 0o666), True
                    except FileExistsError:
                        continue  # made meanwhile by someone else: open theirs
                except PermissionError:  # a file we may not write: flock(2) locks it read-only
                    return os.open(self.path, os.O_RDONLY | _OPEN), False
            except OSError as exc:
                raise open_error(self.path, exc, "regular file") from None
        raise OSError(errno.EAGAIN, f"lock file {self.path!r} keeps appearing and vanishing")

    #: how far up the stack the shared-storage warning points (the caller of acquire()).
    _stacklevel = 4

    def _taken(self, fd: int) -> None:
        """What to do once the flock on *fd* is ours (nothing here; raising gives it back)."""

    def try_acquire(self) -> bool:
        """One LOCK_NB attempt; True if the flock is now ours."""
        fd, _created = self._open()
        try:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode):
                raise kind_error(self.path, st, "regular file")
            lock_fd(fd, (LOCK_SH if self.shared else LOCK_EX) | LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        try:
            st = os.fstat(fd)
            if st.st_nlink == 0:  # removed while we locked it: that inode locks nobody out
                lock_fd(fd, LOCK_UN)
                os.close(fd)
                return False
            check_flock(fd, stacklevel=self._stacklevel)  # shared storage: other hosts too
        except BaseException:
            os.close(fd)
            raise
        try:
            self._taken(fd)
        except BaseException:
            lock_fd(fd, LOCK_UN)
            os.close(fd)
            raise
        self._fd = fd
        return True

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

    def refresh(self) -> bool:
        """Nothing to make young: a flock does not age (True while held)."""
        return self._fd is not None

    def fileno(self) -> int | None:
        """The descriptor that holds the flock while held, else None."""
        return self._fd

    def forget(self) -> None:
        """Close our descriptor in a forked child without unlocking the parent's flock."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """Any regular file without another method's record: anything can be flocked.

        Perl's ``open(LOCK, "> f")`` makes an empty one; a data file flocked in
        place is one too.  It is never broken: it is a lock only while held.
        """
        if st is None or not stat_module.S_ISREG(st.st_mode):
            return False
        record = _owner.parse(read_small(path, DETECT_LIMIT) or b"")
        return record is None or record["kind"] == cls.method

    def describe(self) -> Description | None:
        """Describe the lock (None if the file is absent or nobody holds its flock)."""
        st = lstat(self.path)
        if st is None:
            return None
        if not stat_module.S_ISREG(st.st_mode):
            raise kind_error(self.path, st, "regular file")
        pids = flock_holders(st)
        if not (is_flocked(self.path) if pids is None else pids):
            return None
        pid = pids[0] or None if pids else None  # pid 0: outside our pid namespace
        ticks = _owner.start_time(pid) if pid else None
        began = _owner.started_at(ticks) if ticks is not None else None
        return {
            "method": self.method,
            "path": self.path,
            "pid": pid,
            "host": _owner.hostname() if pid else None,
            "alive": True,
            "age": None if began is None else max(0.0, time.time() - began),
        }


def is_flocked(path: str) -> bool:
    """True if some process holds a flock (shared or exclusive) on the file at *path*.

    Looks without locking (:func:`flock_holders`) where the system says who
    holds what; elsewhere it tries LOCK_EX|LOCK_NB and unlocks at once, which
    another process's own LOCK_NB attempt can see as "busy" for that instant.
    """
    st = lstat(path)
    if st is None or not stat_module.S_ISREG(st.st_mode):
        return False
    pids = flock_holders(st)
    if pids is not None:
        return bool(pids)
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN)  # (a FIFO swapped in since the lstat: no wait)
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


#: where Linux lists every file lock: ``1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF``.
PROC_LOCKS = "/proc/locks"


def flock_holders(st: os.stat_result) -> list[int] | None:
    """Pids holding flock(2) on the file *st* (from /proc/locks), None where it cannot tell.

    Entries are matched by device (``major:minor`` in hex) and inode; waiters
    (``->`` lines) hold nothing.  Where a filesystem reports another device
    in /proc/locks than in ``stat`` (btrfs subvolumes, overlayfs), an entry
    with the same inode counts if that process has the file open
    (``/proc/PID/fd``), or if its descriptors cannot be read.  A holder
    outside our pid namespace is listed as pid 0.
    """
    device = _osapi.proc_locks_device(st)
    if device is None:
        return None  # (Windows: no /proc/locks)
    try:
        with open(PROC_LOCKS, "rb") as stream:
            text = stream.read()
    except OSError:
        return None
    inode = b":%d" % st.st_ino
    exact: list[int] = []
    maybe: list[int] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] != b"FLOCK" or not fields[4].isdigit():
            continue  # not a flock(2) lock, or a waiter ("N: -> FLOCK ...")
        if fields[5] == device:
            exact.append(int(fields[4]))
        elif fields[5].endswith(inode) and fields[5].count(b":") == 2:
            maybe.append(int(fields[4]))
    return exact or [pid for pid in maybe if _has_open(pid, st)]


def _has_open(pid: int, st: os.stat_result) -> bool:
    """True if *pid* has the file *st* open, or if we may not look at its descriptors."""
    directory = f"/proc/{pid}/fd"
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return False  # gone
    except OSError:
        return True
    for name in names:
        try:
            other = os.stat(f"{directory}/{name}")
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False
