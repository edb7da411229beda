"""perlcompat.locks.osapi (oswindows): lock files others may read while their holder removes them.

Under Windows (scripts/test-windows.sh) this is the point: a file opened by
``open_file`` can be deleted and renamed by another handle, which a file opened
by ``os.open`` cannot.  On Linux the same assertions hold trivially.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from perlcompat.locks.osapi import busy_create, open_file, retry_busy

WINDOWS = sys.platform == "win32"
O_BINARY = getattr(os, "O_BINARY", 0)


def test_a_reader_does_not_stop_the_holder_deleting_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY, 0o644)
    os.write(fd, b"perlcompat excl pid=1\n")
    os.close(fd)
    reader = open_file(path, os.O_RDONLY | O_BINARY)
    try:
        assert os.read(reader, 100) == b"perlcompat excl pid=1\n"
        os.unlink(path)  # WinError 32 with os.open's reader
        if os.path.lexists(path):  # delete pending while the reader has it open
            with pytest.raises(OSError) as taken:
                open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY)
            assert isinstance(taken.value, FileExistsError) or (
                isinstance(taken.value, PermissionError) and busy_create(path, taken.value)
            )
    finally:
        os.close(reader)
    assert not os.path.lexists(path)
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY)
    os.close(fd)


def test_a_reader_does_not_stop_the_holder_renaming_the_file(tmp_path: Path) -> None:
    path, held = str(tmp_path / "lk"), str(tmp_path / "lk.locked")
    os.close(open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY))
    reader = open_file(path, os.O_RDONLY | O_BINARY)
    try:
        os.rename(path, held)
        os.rename(held, path)
    finally:
        os.close(reader)
    assert os.path.isfile(path)


def test_os_open_reader_blocks_removal_on_windows(tmp_path: Path) -> None:
    """Why open_file exists: what a plain ``os.open`` reader does to a delete."""
    path = str(tmp_path / "lk")
    os.close(open_file(path, os.O_WRONLY | os.O_CREAT | O_BINARY))
    reader = os.open(path, os.O_RDONLY | O_BINARY)
    try:
        if WINDOWS:
            with pytest.raises(PermissionError):
                os.unlink(path)
        else:
            os.unlink(path)
    finally:
        os.close(reader)


def test_append_goes_to_the_end_through_every_descriptor(tmp_path: Path) -> None:
    path = str(tmp_path / "toplock")
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | O_BINARY
    first, second = open_file(path, flags), open_file(path, flags)
    try:
        os.write(first, b"a<>1<>\n")
        os.write(second, b"b<>2<>\n")
        os.write(first, b"c<>3<>\n")
        os.lseek(second, 0, os.SEEK_SET)
        assert os.read(second, 100) == b"a<>1<>\nb<>2<>\nc<>3<>\n"
    finally:
        os.close(first)
        os.close(second)


def test_exclusive_create_and_missing_file_errors(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    os.close(open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY))
    with pytest.raises(FileExistsError):
        open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_BINARY)
    with pytest.raises(FileNotFoundError):
        open_file(str(tmp_path / "missing"), os.O_RDONLY | O_BINARY)
    assert busy_create(path, PermissionError(13, "Access is denied")) is WINDOWS
    assert busy_create(str(tmp_path / "missing"), PermissionError(13, "x")) is False


def test_descriptor_is_not_inherited(tmp_path: Path) -> None:
    fd = open_file(str(tmp_path / "lk"), os.O_WRONLY | os.O_CREAT | O_BINARY)
    try:
        assert os.get_inheritable(fd) is False
    finally:
        os.close(fd)


def test_retry_busy_waits_for_a_reader_without_share_delete(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    os.close(open_file(path, os.O_WRONLY | os.O_CREAT | O_BINARY))
    reader = os.open(path, os.O_RDONLY | O_BINARY)
    closer = threading.Timer(0.2, os.close, (reader,))
    closer.start()
    try:
        retry_busy(os.unlink, path)
    finally:
        closer.join()
    assert not os.path.lexists(path)


def test_change_time_follows_a_rename_on_windows(tmp_path: Path) -> None:
    """The rename lock's age: NTFS ChangeTime moves on rename; st_ctime (creation) does not."""
    import time

    from perlcompat.locks.osapi import change_time

    path, held = str(tmp_path / "lk"), str(tmp_path / "lk.locked")
    os.close(open_file(path, os.O_WRONLY | os.O_CREAT | O_BINARY))
    os.utime(path, (1, 1))  # an old marker
    os.rename(path, held)
    changed = change_time(held)
    if WINDOWS:
        assert changed is not None
        assert abs(changed - time.time()) < 60
    else:
        assert changed is None
        assert abs(os.stat(held).st_ctime - time.time()) < 60


# -- the lock methods that delete or rename their lock file -------------------------

REMOVED = ["excl", "rename", "toplock"]


def _lock_file(path: str, method: str) -> str:
    return path + ".locked" if method == "rename" else path


@pytest.mark.parametrize("method", REMOVED)
def test_release_while_a_waiter_has_the_lock_file_open(tmp_path: Path, method: str) -> None:
    """A waiter reads the holder's file (owner record, TOP?LOCK line): release still works."""
    from perlcompat import OS_ERROR, lock, unlock

    path = str(tmp_path / "lk")
    assert lock(path, method=method) == 1
    reader = open_file(_lock_file(path, method), os.O_RDONLY | O_BINARY)
    try:
        assert unlock(path, method=method) == 1, f"{int(OS_ERROR)} {OS_ERROR}"
        if os.path.lexists(path) and method != "rename":
            # Windows: deleted but still open here ("delete pending"): busy, not an error
            assert lock(path, method=method, retry=1, wait=0.05) == 0
            assert OS_ERROR == errno.EWOULDBLOCK
    finally:
        os.close(reader)
    assert lock(path, method=method, retry=5, wait=0.2) == 1
    assert unlock(path, method=method) == 1


@pytest.mark.parametrize("method", REMOVED)
def test_release_waits_for_a_reader_without_share_delete(tmp_path: Path, method: str) -> None:
    """A Perl script (or a virus scanner) holding the file for a moment: release retries."""
    from perlcompat import OS_ERROR, lock, unlock

    path = str(tmp_path / "lk")
    assert lock(path, method=method) == 1
    reader = open(_lock_file(path, method), "rb")  # noqa: SIM115 - closed by the timer
    closer = threading.Timer(0.2, reader.close)
    closer.start()
    try:
        assert unlock(path, method=method) == 1, f"{int(OS_ERROR)} {OS_ERROR}"
    finally:
        closer.join()
    assert lock(path, method=method, retry=5, wait=0.2) == 1
    assert unlock(path, method=method) == 1


def test_mkdir_release_while_a_waiter_lists_the_directory(tmp_path: Path) -> None:
    """A waiter checks that a lock directory is empty (scandir): rmdir waits for it."""
    from perlcompat import OS_ERROR, lock, unlock

    path = str(tmp_path / "lockdir")
    assert lock(path) == 1
    listing = os.scandir(path)
    closer = threading.Timer(0.2, listing.close)
    closer.start()
    try:
        assert unlock(path) == 1, f"{int(OS_ERROR)} {OS_ERROR}"
    finally:
        closer.join()
    assert not os.path.lexists(path)


@pytest.mark.parametrize(
    ("method", "kind"),
    [("excl", FileExistsError), ("link", FileExistsError), ("mkdir", NotADirectoryError)],
)
def test_a_data_file_at_the_lock_path_is_refused_at_once(
    tmp_path: Path, method: str, kind: type[OSError]
) -> None:
    """Windows too: ``NotALockError``, a ``LockTimeout`` and the errno's class; file untouched."""
    from perlcompat import Lock, LockTimeout, NotALockError

    path = tmp_path / "data.txt"
    path.write_bytes(b"save me\r\n")
    with pytest.raises(NotALockError) as info:
        Lock(str(path), method=method, timeout=5).acquire()  # a wait ends in a plain LockTimeout
    assert isinstance(info.value, LockTimeout) and isinstance(info.value, kind)
    assert path.read_bytes() == b"save me\r\n"


@pytest.mark.parametrize("method", ["excl", "link", "rename", "toplock"])
def test_an_aged_data_file_at_the_lock_path_is_refused(tmp_path: Path, method: str) -> None:
    """A data file whose times were set (an hour old) is refused at once, never removed.

    Before: wine's ``lstat`` gave such a file's mtime as its change time and ``fstat`` the
    real one, so ``read_same`` never read it "alike": never refused, and excl and link
    removed it as a stale lock (the undecided look had counted as "a lock").
    """
    from perlcompat import Lock, NotALockError

    path = tmp_path / "lk"
    path.write_bytes(b"the only copy of somebody's data\n")
    old = time.time() - 3600
    os.utime(path, (old, old))
    with pytest.raises(NotALockError):
        Lock(str(path), method=method, stale=60, timeout=5).acquire()
    assert path.read_bytes() == b"the only copy of somebody's data\n"


def test_a_busy_link_lock_leaves_no_temp_files(tmp_path: Path) -> None:
    """Each try of the link method makes a temp file and removes it, while it is open.

    Before: on Windows the removal of the ``os.open``-ed temp file failed (quietly), and
    every busy try left its ``.linktmp`` file in the lock's directory.
    """
    from perlcompat import Lock, LockTimeout

    path = str(tmp_path / "lk")
    with Lock(path, method="link"):
        other = Lock(path, method="link")
        with pytest.raises(LockTimeout):
            other.acquire(timeout=0.5)
    assert [name for name in os.listdir(tmp_path) if name.endswith(".linktmp")] == []


@pytest.mark.parametrize("method", ["flock", "toplock"])
def test_a_directory_at_a_lock_files_path_is_refused_at_once(tmp_path: Path, method: str) -> None:
    """A directory where the lock file goes is refused (NotALockError, EISDIR), even with
    EACCES in ``retry_errnos``: never waited on.

    Before: Windows' EACCES for opening a directory came out as a bare PermissionError,
    and with ``retry_errnos = [EACCES]`` the directory was waited on for the patience.
    """
    from perlcompat import Lock, LockedFile, NotALockError

    path = tmp_path / "lk"
    path.mkdir()
    lk = Lock(str(path), method=method, timeout=30)
    lk.retry_errnos = [errno.EACCES]
    with pytest.raises(NotALockError) as caught:
        lk.acquire()
    assert caught.value.errno in (errno.EISDIR, errno.EEXIST)  # ("not a regular file")
    with pytest.raises(NotALockError):  # (Linux opens it read-only: "not a regular file")
        LockedFile(str(path), "r").acquire()
    assert path.is_dir() and os.listdir(path) == []
