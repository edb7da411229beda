"""The platform seam on Windows: the OS operations of ``locks.osapi``, kernel32 through ctypes.

What every function does, and what ``osposix`` does instead, is in ``locks.osapi``.
Imported only on Windows (``locks.osapi`` picks it there), so ctypes is never loaded elsewhere.

**No process table.** ``os.kill(pid, 0)`` would terminate the process on Windows, so a
holder's pid is never asked about: owners are "unknown" and locks recover by age.

**Lock files opened so their holder can still delete or rename them.** Windows refuses
to delete or rename a file that another process has open without FILE_SHARE_DELETE,
and Python's ``os.open`` (the C runtime's ``_wopen``) never passes that flag.  So a
waiter that merely reads a lock file (its owner record, a TOP?LOCK line) made the
holder's release fail with a sharing violation, and the lock stayed until it went
stale.  :func:`open_file` opens lock and side files with ``CreateFileW`` and
FILE_SHARE_READ|WRITE|DELETE and wraps the handle in a C runtime descriptor, so
``os.read``/``os.write``/``os.fstat``/``os.close`` work on it as on any other.
``O_APPEND`` asks for FILE_APPEND_DATA without FILE_WRITE_DATA, so Windows itself
appends every write at the end (the C runtime's ``O_APPEND`` seeks, then writes: two
appenders can overwrite each other).  A symlink is opened itself, never its target
(always: a lock file is never followed, as with O_NOFOLLOW).  The handle is not
inherited (O_CLOEXEC).

A file deleted while others have it open stays "delete pending" until they close it:
its name is still there (creating it again fails with EEXIST, or EACCES on some
Windows versions) for those microseconds (:func:`busy_create`).  :func:`retry_busy`
retries a delete or rename that still hits a sharing violation (a Perl script or a
virus scanner holding the file without FILE_SHARE_DELETE) for :data:`BUSY_PATIENCE`
seconds; :func:`while_readers` retries a rename over a file that readers hold open,
and a read while ``MoveFileEx`` holds the file, for as long as ``replace_file`` allows.

**Times.** ``st_ctime`` is the creation time, which a rename keeps
(:func:`change_time` reads the NTFS change time); there is no ``utime`` through a
descriptor and no ``pread``; a directory cannot be opened, so the remover guard is a
``<lock>.breaker`` file and a directory is not fsynced.
"""

from __future__ import annotations

import errno
import os
import sys

assert sys.platform == "win32"  # (mypy: this module is checked for Windows only)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

#: seconds a delete or rename is retried while another process holds the file.
BUSY_PATIENCE = 2.0

#: a holder keeps its lock file open until it has removed it (``methods.toplock``):
#: wine unlinks a file whose delete was delayed by name once the last handle of its
#: inode number closes, and Linux reuses that number at once for the next lock file.
HOLD_OPEN = True

_kernel32: Any = None


def _windows_api() -> Any:
    """kernel32 through ctypes, with the prototypes used here (loaded once)."""
    global _kernel32
    if _kernel32 is None:
        import ctypes
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        kernel32.CreateFileW.argtypes = [
            wintypes.LPCWSTR,
            wintypes.DWORD,
            wintypes.DWORD,
            ctypes.c_void_p,
            wintypes.DWORD,
            wintypes.DWORD,
            wintypes.HANDLE,
        ]
        kernel32.CreateFileW.restype = wintypes.HANDLE
        kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
        kernel32.GetFileInformationByHandleEx.argtypes = [
            wintypes.HANDLE,
            ctypes.c_int,
            ctypes.c_void_p,
            wintypes.DWORD,
        ]
        _kernel32 = kernel32
    return _kernel32


# -- processes ---------------------------------------------------------------------------
def nodename() -> str:
    """This host's name (``socket.gethostname()``)."""
    import socket

    return socket.gethostname()


def clock_ticks() -> float:
    """100: there is no ``/proc`` start time to convert here."""
    return 100.0


def process_exists(pid: int) -> bool | None:
    """None: never asked (``os.kill`` would terminate the process)."""
    return None


def pids_known() -> bool:
    """False: a holder is judged by its lock's age only here."""
    return False


def boot_and_pidns() -> tuple[str, str]:
    """("", ""): no boot id, no pid namespaces."""
    return "", ""


def fork_process() -> int:
    """OSError ENOSYS: Perl emulates fork with threads here; Python has none."""
    raise OSError(errno.ENOSYS, "fork is not available on Windows")


# -- files -------------------------------------------------------------------------------
def open_file(path: str, flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags, mode)`` through ``CreateFileW``, sharing delete and rename."""
    import ctypes
    import msvcrt
    from ctypes import wintypes

    kernel32 = _windows_api()

    read_data, write_data, append_data = 0x1, 0x2, 0x4
    read_attributes, write_attributes, synchronize = 0x80, 0x100, 0x100000
    access = read_attributes | synchronize
    kind = flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
    if kind in (os.O_RDONLY, os.O_RDWR):
        access |= read_data
    if kind in (os.O_WRONLY, os.O_RDWR):
        access |= write_attributes | (append_data if flags & os.O_APPEND else write_data)
    if flags & os.O_CREAT and flags & os.O_EXCL:
        disposition = 1  # CREATE_NEW
    elif flags & os.O_CREAT:
        disposition = 4  # OPEN_ALWAYS
    else:
        disposition = 3  # OPEN_EXISTING
    if flags & os.O_TRUNC:
        raise ValueError("open_file never truncates a lock file (O_TRUNC)")
    attributes = 0x80  # FILE_ATTRIBUTE_NORMAL
    if flags & os.O_CREAT and not mode & 0o200:
        attributes = 0x1  # FILE_ATTRIBUTE_READONLY, as _wopen does
    attributes |= 0x00200000  # FILE_FLAG_OPEN_REPARSE_POINT: never follow a link
    share = 0x1 | 0x2 | 0x4  # FILE_SHARE_READ | WRITE | DELETE
    handle = kernel32.CreateFileW(path, access, share, None, disposition, attributes, None)
    if handle is None or handle == wintypes.HANDLE(-1).value:
        code = ctypes.get_last_error()
        raise OSError(0, ctypes.FormatError(code).rstrip(" .\r\n"), path, code)
    crt_flags = os.O_NOINHERIT | (os.O_RDONLY if kind == os.O_RDONLY else 0)
    try:
        return msvcrt.open_osfhandle(handle, crt_flags)
    except BaseException:
        kernel32.CloseHandle(handle)
        raise


def retry_busy(func: Callable[..., T], *args: str) -> T:
    """``func(*args)`` (``os.unlink``, ``os.rename``), retried for :data:`BUSY_PATIENCE` s
    while another process holds the file without FILE_SHARE_DELETE (PermissionError)."""
    from .retry import deadline_after, tries

    busy: PermissionError | None = None
    # one step of a release or a removal: an ALRM handler must not cut it (alarm=False)
    for _ in tries(deadline_after(BUSY_PATIENCE), first=0.0005, growth=2, cap=0.01, alarm=False):
        try:
            return func(*args)
        except PermissionError as exc:
            if getattr(exc, "winerror", None) not in (5, 32):
                raise
            busy = exc
    assert busy is not None  # tries() yields at least once
    raise busy


def while_readers(patience: float, func: Callable[..., T], *args: str) -> T:
    """``func(*args)`` (``os.replace``, a read), retried on PermissionError for up to *patience*
    seconds while readers hold the file (a pending ``alarm()`` honoured)."""
    from .retry import deadline_after, tries

    busy: PermissionError | None = None
    for _ in tries(deadline_after(patience), first=0.0005, growth=2, cap=0.01):
        try:
            return func(*args)
        except PermissionError as exc:
            busy = exc
    assert busy is not None  # tries() yields at least once
    raise busy


def busy_create(path: str, exc: PermissionError) -> bool:
    """True if *exc* from creating *path* means another process's file is still there
    (a deleted file others still have open), not a real permission problem."""
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


def looks_can_be_refused() -> bool:
    """True: a stat of a file another process holds open can come back without a file id
    (``st_ino`` 0), and a read can hit a sharing violation, for a moment."""
    return True


def renames_open_files() -> bool:
    """False: an open file cannot be renamed, nor renamed over, here."""
    return False


def renames_by_handle() -> bool:
    """True: a rename opens its source first, so two renamers of one file can both succeed."""
    return True


def has_symlinks() -> bool:
    """False: making a symlink needs a privilege here."""
    return False


def changed_at(path: str, st: os.stat_result) -> float:
    """When the file at *path* last changed status: its NTFS change time, else its mtime."""
    return change_time(path) or st.st_mtime


def change_time(path: str) -> float | None:
    """*path*'s ChangeTime (seconds since the epoch; a rename sets it); None if unreadable.

    ``os.stat``'s ``st_ctime`` is the creation time on Windows, which a rename
    keeps; the NTFS change time is what ``st_ctime`` is on POSIX.
    """
    import ctypes
    from ctypes import wintypes

    class BasicInfo(ctypes.Structure):
        _fields_ = (
            ("creation", ctypes.c_int64),
            ("access", ctypes.c_int64),
            ("write", ctypes.c_int64),
            ("change", ctypes.c_int64),
            ("attributes", wintypes.DWORD),
        )

    kernel32 = _windows_api()
    # FILE_READ_ATTRIBUTES, share all, OPEN_EXISTING, OPEN_REPARSE_POINT|BACKUP_SEMANTICS
    handle = kernel32.CreateFileW(path, 0x80, 0x7, None, 3, 0x00200000 | 0x02000000, None)
    if handle is None or handle == wintypes.HANDLE(-1).value:
        return None
    try:
        info = BasicInfo()
        if not kernel32.GetFileInformationByHandleEx(
            handle, 0, ctypes.byref(info), ctypes.sizeof(info)
        ):  # FileBasicInfo
            return None
    finally:
        kernel32.CloseHandle(handle)
    ticks: int = info.change  # 100 ns ticks since 1601
    return ticks / 1e7 - 11644473600.0


def pread(fd: int, limit: int, offset: int) -> bytes:
    """Up to *limit* bytes of *fd* from *offset* (seek, read: no ``pread`` here)."""
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, limit)


def pwrite(fd: int, data: bytes, offset: int) -> int:
    """Write *data* at *offset* of *fd* (seek, write: no ``pwrite`` here)."""
    os.lseek(fd, offset, os.SEEK_SET)
    return os.write(fd, data)


#: the byte ``append_lock`` takes: far above Perl's ``flock`` range (0..0xFFFF0000)
_APPEND_BYTE = (0x7FFFFFFF, 0xFFFFFFFE)  # OffsetHigh, Offset


_overlapped: Any = None


def _append_byte(fd: int, lock: bool) -> None:
    import ctypes
    import msvcrt

    global _overlapped
    if _overlapped is None:

        class Overlapped(ctypes.Structure):
            _fields_ = [
                ("Internal", ctypes.c_void_p),
                ("InternalHigh", ctypes.c_void_p),
                ("Offset", ctypes.c_uint32),
                ("OffsetHigh", ctypes.c_uint32),
                ("hEvent", ctypes.c_void_p),
            ]

        _overlapped = Overlapped
    kernel32 = _windows_api()
    where = _overlapped(None, None, _APPEND_BYTE[1], _APPEND_BYTE[0], None)
    handle = msvcrt.get_osfhandle(fd)
    if lock:  # LOCKFILE_EXCLUSIVE_LOCK, waiting: held only for one append and read
        done = kernel32.LockFileEx(ctypes.c_void_p(handle), 2, 0, 1, 0, ctypes.byref(where))
    else:
        done = kernel32.UnlockFileEx(ctypes.c_void_p(handle), 0, 1, 0, ctypes.byref(where))
    if not done:
        code = ctypes.get_last_error()
        raise OSError(0, ctypes.FormatError(code).rstrip(" .\r\n"), None, code)


def append_lock(fd: int) -> None:
    """Take one byte lock of the lock file *fd* beyond any data, around an append and its read.

    A handle opened for appending only appends atomically on Windows, but not
    under wine (3 processes x 1,500 appends: 176 lines lost): contenders of
    ``methods.toplock`` take this byte first, so appends never overwrite.
    """
    _append_byte(fd, True)


def append_unlock(fd: int) -> None:
    """Drop :func:`append_lock`'s byte."""
    _append_byte(fd, False)


def remove_file(path: str) -> None:
    """Delete the lock file *path* under a unique name: renamed beside itself, then deleted.

    Each step is retried as :func:`retry_busy`.  wine defers a delete while
    another process holds the file open and then unlinks by name whatever file
    has the same inode number, which Linux file systems reuse at once: a lock
    file made meanwhile at *path* was removed under its holder.  A unique name
    has no successor.  If that last delete fails, the renamed file stays.
    """
    gone = f"{path}.{os.getpid()}-{os.urandom(6).hex()}.gone"
    retry_busy(os.rename, path, gone)
    try:  # noqa: SIM105
        retry_busy(os.unlink, gone)
    except OSError:
        pass  # released all the same: nothing is left at *path*


def remove_directory(path: str) -> None:
    """``os.rmdir``, retried as :func:`retry_busy` retries (a waiter listing it for a moment)."""
    retry_busy(os.rmdir, path)


def utime_open(fd: int, path: str) -> None:
    """Set the times of the open file *fd* to now, by its *path* (no utime through a descriptor)."""
    os.utime(path)


def touch(path: str, st: os.stat_result) -> os.stat_result | None:
    """``locks.files.touch``: by path (no utime through a descriptor, no symlink locks here)."""
    os.utime(path)
    try:
        now = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return now if now.st_ino == st.st_ino else None


def generation(path: str) -> int | None:
    """None: no inode generations here."""
    return None


def proc_locks_device(st: os.stat_result) -> bytes | None:
    """None: there is no ``/proc/locks``."""
    return None


# -- directories -------------------------------------------------------------------------
def open_directory(path: str) -> int | None:
    """None: a directory cannot be opened here (the remover guard is a ``.breaker`` file)."""
    return None


def fsync_directory(path: str) -> None:
    """Nothing: a directory cannot be opened here."""


# -- replace_file's temp files -----------------------------------------------------------
def hold_temp_file(fd: int) -> None:
    """Nothing: temp files are never cleaned here (a writer's pid cannot be judged)."""


def copy_owner_and_mode(fd: int, old: os.stat_result, target: str) -> None:
    """Nothing: no POSIX owner, mode or ACL to copy here."""
