"""Lock files on Windows: opened so their holder can still delete or rename them.

Windows refuses to delete or rename a file that another process has open
without FILE_SHARE_DELETE, and Python's ``os.open`` (the C runtime's ``_wopen``)
never passes that flag.  So a waiter that merely reads a lock file (its owner
record, a TOP?LOCK line) made the holder's release fail with a sharing
violation, and the lock stayed until it went stale.  :func:`open_file` opens
lock and side files with ``CreateFileW`` and FILE_SHARE_READ|WRITE|DELETE
(through ctypes) and wraps the handle in a C runtime descriptor, so
``os.read``/``os.write``/``os.fstat``/``os.close`` work on it as on any other.
``O_APPEND`` asks for FILE_APPEND_DATA without FILE_WRITE_DATA, so Windows
itself appends every write at the end (the C runtime's ``O_APPEND`` seeks, then
writes: two appenders can overwrite each other).  A symlink is opened itself,
never its target (always: a lock file is never followed, as with O_NOFOLLOW).
The handle is not inherited (O_CLOEXEC).

A file deleted while others have it open stays "delete pending" until they
close it: its name is still there (creating it again fails with EEXIST, or
EACCES on some Windows versions) for those microseconds.  :func:`retry_busy`
retries a delete or rename that still hits a sharing violation (a Perl script
or a virus scanner holding the file without FILE_SHARE_DELETE) for a moment.

Elsewhere these are ``os.open`` and a plain call.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

#: seconds a delete or rename is retried while another process holds the file.
BUSY_PATIENCE = 2.0
#: decided once, at import (tests that fake ``sys.platform`` keep the real files)
_WINDOWS = sys.platform == "win32"

_kernel32: Any = None


def _windows_api() -> Any:
    """kernel32 through ctypes, with the prototypes used here (loaded once)."""
    global _kernel32
    if _kernel32 is None and sys.platform == "win32":
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


def open_file(path: str, flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags, mode)``, sharing delete and rename with others on Windows."""
    if not _WINDOWS:
        return os.open(path, flags, mode)
    return _open_windows(path, flags, mode)


def _open_windows(path: str, flags: int, mode: int) -> int:
    if sys.platform == "win32":  # (for mypy: the Windows API exists only there)
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
    raise AssertionError("unreachable")  # pragma: no cover


def retry_busy(func: Callable[..., T], *args: str) -> T:
    """Call ``func(*args)`` (``os.unlink``, ``os.rename``), retried on Windows for a moment
    while another process holds the file without FILE_SHARE_DELETE (PermissionError)."""
    if not _WINDOWS:
        return func(*args)
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


def busy_create(path: str, exc: PermissionError) -> bool:
    """True if *exc* from creating *path* means another process's file is still there
    (a deleted file others still have open), not a real permission problem."""
    if not _WINDOWS:
        return False
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


def change_time(path: str) -> float | None:
    """Windows: *path*'s ChangeTime (seconds since the epoch; a rename sets it); else None.

    ``os.stat``'s ``st_ctime`` is the creation time on Windows, which a rename
    keeps; the NTFS change time is what ``st_ctime`` is on POSIX.  None when it
    cannot be read (not Windows, no such file).
    """
    if sys.platform == "win32":
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
    return None
