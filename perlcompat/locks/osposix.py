"""The platform seam on POSIX (Linux, the BSDs, macOS): the OS operations of ``locks.osapi``.

What every function does, and what ``oswindows`` does instead, is in ``locks.osapi``.
Here a holder is judged by ``kill(pid, 0)`` and ``/proc``; a file is opened with
``os.open``, renamed and removed while others have it open, read and written with
``pread``/``pwrite``, and its times set through a descriptor; a directory can be
opened (its flock is the remover guard) and fsynced.  Linux-only bits (the boot id,
the pid namespace, the inode generation) answer "" or None on the other systems.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import sys

from ..perl.osflags import O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK

assert sys.platform != "win32"  # (mypy: this module is checked for POSIX only)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    T = TypeVar("T")

#: seconds ``oswindows.retry_busy`` retries; nothing is retried here.
BUSY_PATIENCE = 2.0

#: ``oswindows.HOLD_OPEN``: nothing here needs a held lock file kept open.
HOLD_OPEN = False


# -- processes ---------------------------------------------------------------------------
def nodename() -> str:
    """This host's name as ``uname -n`` prints it."""
    return os.uname().nodename


def clock_ticks() -> float:
    """Clock ticks per second of ``/proc/<pid>/stat``'s start times (``SC_CLK_TCK``)."""
    try:
        return float(os.sysconf("SC_CLK_TCK")) or 100.0
    except (ValueError, OSError):
        return 100.0


def process_exists(pid: int) -> bool | None:
    """``kill(pid, 0)``: True if *pid* runs (EPERM: another user's), False if gone, None: unsure."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # EPERM: it exists, it belongs to someone else
    except OSError as exc:
        return False if exc.errno == errno.ESRCH else None
    return True


def pids_known() -> bool:
    """True: a holder on this host is judged by its pid here."""
    return True


def boot_and_pidns() -> tuple[str, str]:
    """(boot id without dashes, pid namespace inode) from Linux's /proc; "" where unknown."""
    boot = pidns = ""
    if sys.platform == "linux":
        try:
            with open("/proc/sys/kernel/random/boot_id", "rb") as stream:
                boot = stream.read(64).strip().decode("ascii", "replace").replace("-", "")
        except OSError:
            pass
        try:
            link = os.readlink("/proc/self/ns/pid")
            pidns = link[link.find("[") + 1 : link.rfind("]")]
        except OSError:
            pass
    return boot, pidns


def fork_process() -> int:
    """``os.fork()``."""
    return os.fork()


# -- files -------------------------------------------------------------------------------
def open_file(path: str, flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags, mode)``: others may remove or rename an open file here."""
    return os.open(path, flags, mode)


def retry_busy(func: Callable[..., T], *args: str) -> T:
    """``func(*args)``: nothing here refuses a delete or rename of a file others hold open."""
    return func(*args)


def append_lock(fd: int) -> None:
    """Nothing: an O_APPEND write is atomic here."""


def append_unlock(fd: int) -> None:
    """Nothing (see :func:`append_lock`)."""


def remove_file(path: str) -> None:
    """``os.unlink(path)``."""
    os.unlink(path)


def while_readers(patience: float, func: Callable[..., T], *args: str) -> T:
    """``func(*args)``: a reader never blocks a rename or an open here (*patience* unused)."""
    return func(*args)


def busy_create(path: str, exc: PermissionError) -> bool:
    """False: a refused create is refused here (no deleted-but-open names linger)."""
    return False


def looks_can_be_refused() -> bool:
    """False: a stat or read of a file another process holds open answers at once here."""
    return False


def renames_open_files() -> bool:
    """True: a file may be renamed (or renamed over) while it is open here."""
    return True


def renames_by_handle() -> bool:
    """False: rename(2) renames the name, atomically; two renamers cannot both succeed."""
    return False


def has_symlinks() -> bool:
    """True: any user may make a symlink here."""
    return True


def changed_at(path: str, st: os.stat_result) -> float:
    """When *st* (the file at *path*) last changed status (a rename sets it): its ``st_ctime``."""
    return st.st_ctime


def change_time(path: str) -> float | None:
    """None: ``st_ctime`` is the change time here (see ``oswindows.change_time``)."""
    return None


#: ``pread(fd, limit, offset)``, ``pwrite(fd, data, offset)``: the C functions themselves,
#: so a lock's path runs no Python frame of the seam for them.
pread = os.pread
pwrite = os.pwrite
#: ``remove_directory(path)``: ``os.rmdir`` (nothing here refuses it while others look).
remove_directory = os.rmdir


def utime_open(fd: int, path: str) -> None:
    """Set the times of the open file *fd* (which *path* names) to now, through *fd*."""
    os.utime(fd)


def touch(path: str, st: os.stat_result) -> os.stat_result | None:
    """``locks.files.touch``: through a descriptor checked to be *st*, else by path unfollowed."""
    if not stat_module.S_ISLNK(st.st_mode):
        try:
            fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        except OSError:
            fd = -1  # unreadable (a 0300 directory): by path below
        if fd >= 0:
            try:
                before = os.fstat(fd)
                if (before.st_dev, before.st_ino) != (st.st_dev, st.st_ino):
                    return None
                os.utime(fd)
                return os.fstat(fd)
            finally:
                os.close(fd)
    if _same_inode(path, st) is None:
        return None
    os.utime(path, follow_symlinks=False)
    return _same_inode(path, st)


def _same_inode(path: str, st: os.stat_result) -> os.stat_result | None:
    """The lstat of *path* if it still holds *st*'s inode, else None."""
    try:
        now = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return now if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) else None


def generation(path: str) -> int | None:
    """The inode generation of the file or directory *path* (Linux ``FS_IOC_GETVERSION``).

    ext4, XFS and btrfs give every new inode a fresh generation, so a lock that reuses
    a removed lock's inode number is told apart from it.  None where the file system
    (tmpfs, network file systems) or the system has none, or *path* cannot be opened.
    """
    if sys.platform != "linux":
        return None
    import fcntl
    import struct

    request = (2 << 30) | (struct.calcsize("l") << 16) | (ord("v") << 8) | 1
    try:
        fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
    except OSError:
        return None
    try:
        return int(struct.unpack("I", fcntl.ioctl(fd, request, bytes(8))[:4])[0])
    except OSError:
        return None
    finally:
        os.close(fd)


def proc_locks_device(st: os.stat_result) -> bytes | None:
    """How ``/proc/locks`` names the file *st*: ``major:minor:inode`` (major, minor in hex)."""
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}".encode()


# -- directories -------------------------------------------------------------------------
def open_directory(path: str) -> int | None:
    """A read-only descriptor of the directory *path* (to flock); None if we may not read it."""
    try:
        return os.open(path, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    except PermissionError:
        return None  # mode 0733 and the like


def fsync_directory(path: str) -> None:
    """fsync the directory *path* (a rename in it is then on disk)."""
    fd = os.open(path, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- replace_file's temp files -----------------------------------------------------------
#: the extended attribute holding a file's POSIX ACL (Linux).
ACL_XATTR = "system.posix_acl_access"


def hold_temp_file(fd: int) -> None:
    """Take ``flock(LOCK_EX)`` on a new temp file: the mark of a live writer (quietly)."""
    import fcntl

    # a new file: nobody else holds it (a cleaner skips live pids); if this
    # failed anyway, the pid in the name still protects the file
    try:  # noqa: SIM105 - contextlib is not imported on the lock path
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass


def copy_owner_and_mode(fd: int, old: os.stat_result, target: str) -> None:
    """Give the file *fd* *old*'s owner where we may, its permission bits and its POSIX ACL.

    In GNU ``sed -i``'s order: owner, then mode and ACL (a chown may clear
    set-id bits; the ACL sets the group bits).  The ACL is copied as
    ``shutil.copystat`` copies it; one the temp file inherited from a default
    ACL of the directory is removed when *target* has none.
    """
    if not stat_module.S_ISREG(old.st_mode):
        return
    if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except PermissionError:  # only root may give a file away; keep at least the group
            try:  # noqa: SIM105 - contextlib is not imported on the lock path
                os.fchown(fd, -1, old.st_gid)
            except PermissionError:
                pass
    os.fchmod(fd, stat_module.S_IMODE(old.st_mode))
    if not hasattr(os, "getxattr"):
        return
    try:
        acl: bytes | None = os.getxattr(target, ACL_XATTR, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        acl = None
    try:
        if acl is not None:
            os.setxattr(fd, ACL_XATTR, acl)
        else:
            os.removexattr(fd, ACL_XATTR)
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
