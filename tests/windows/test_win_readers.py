"""Reading a file that replace_file rewrites, without a lock (a display CGI).

On Windows ``os.replace`` (``MoveFileEx``) opens the new file with DELETE access,
renames it and closes it: for that moment a plain ``open()``, which does not share
delete, fails with ``PermissionError`` (the hammer met it once in 9000 reads under
wine).  ``read_file`` opens sharing delete and retries.  The handle a rename holds
is made here with ``CreateFileW`` (DELETE access, everything shared), so the race
is shown every time.  On Linux the same calls simply succeed.
"""

from __future__ import annotations

import errno
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from perlcompat import OS_ERROR, read_file, replace_file

WINDOWS = sys.platform == "win32"


@contextmanager
def held(path: Path, access: int, share: int) -> Iterator[None]:
    """Hold *path* open with *access* and *share* (Windows; elsewhere nothing)."""
    if sys.platform != "win32":
        yield
        return
    import ctypes

    from perlcompat.locks.oswindows import _windows_api

    kernel32 = _windows_api()
    handle = kernel32.CreateFileW(str(path), access, share, None, 3, 0, None)
    assert handle not in (None, ctypes.c_void_p(-1).value), ctypes.get_last_error()
    try:
        yield
    finally:
        kernel32.CloseHandle(handle)


DELETE, SYNCHRONIZE, GENERIC_READ = 0x10000, 0x100000, 0x80000000
SHARE_ALL, SHARE_NONE = 0x7, 0x0


def test_read_file_reads_while_a_rename_holds_the_file(tmp_path: Path) -> None:
    path = tmp_path / "count.dat"
    replace_file(str(path), "41")
    with held(path, DELETE | SYNCHRONIZE, SHARE_ALL):  # what MoveFileEx holds
        if WINDOWS:  # why read_file exists
            with pytest.raises(PermissionError):
                open(path, "rb").close()
        assert read_file(str(path)) == "41"
        assert OS_ERROR == 0


def test_read_file_waits_for_a_holder_that_shares_nothing(tmp_path: Path) -> None:
    path = tmp_path / "count.dat"
    path.write_bytes(b"7\n8")
    opened, close_it = threading.Event(), threading.Event()

    def holder() -> None:
        with held(path, GENERIC_READ, SHARE_NONE):
            opened.set()
            close_it.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert opened.wait(30)
    timer = threading.Timer(0.3, close_it.set)
    start = time.monotonic()
    timer.start()
    try:
        assert read_file(str(path), lines=True) == ["7\n", "8"]
    finally:
        close_it.set()
        thread.join()
        timer.join()
    if WINDOWS:  # it waited for the holder to close
        assert time.monotonic() - start >= 0.25


def test_read_file_gives_up_and_sets_errno(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows: a refused open is retried for ``WINDOWS_RENAME_PATIENCE`` s; POSIX: refused."""
    from perlcompat.locks import osapi, replace as _replace

    path = tmp_path / "count.dat"
    path.write_bytes(b"1")
    calls: list[str] = []

    def refuse(name: str, flags: int, mode: int = 0o666) -> int:
        calls.append(name)
        raise PermissionError(errno.EACCES, "Access is denied", name)

    monkeypatch.setattr(osapi, "open_file", refuse)
    monkeypatch.setattr(_replace, "WINDOWS_RENAME_PATIENCE", 0.2)
    start = time.monotonic()
    with pytest.raises(PermissionError):
        read_file(str(path))
    if WINDOWS:
        assert time.monotonic() - start >= 0.2
        assert len(calls) > 3
    else:
        assert len(calls) == 1
    assert OS_ERROR == errno.EACCES


def test_read_file_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_file(str(tmp_path / "missing"))
    assert OS_ERROR == errno.ENOENT
    with pytest.raises(IsADirectoryError) as raised:
        read_file(str(tmp_path))
    assert raised.value.errno == errno.EISDIR
    with pytest.raises(ValueError):
        read_file("")
    if not WINDOWS:  # (wine's os.symlink creates nothing)
        (tmp_path / "link").symlink_to(tmp_path / "sjis")
        with pytest.raises(OSError) as raised:
            read_file(str(tmp_path / "link"))
        assert raised.value.errno == errno.ELOOP
    (tmp_path / "sjis").write_bytes(b"\x93\xfa\x96\x7b\n")
    assert read_file(str(tmp_path / "sjis"), encoding=None) == b"\x93\xfa\x96\x7b\n"
    text = read_file(str(tmp_path / "sjis"))
    assert isinstance(text, str)
    assert text.encode("utf-8", "surrogateescape") == b"\x93\xfa\x96\x7b\n"
