"""The path of one lock (issue 33): what the shorter path keeps.

The mkdir lock keeps its directory open while held, instead of reading the inode
generation twice: a directory made at the path after ours was removed (a Perl sub
breaking our lock) cannot get our inode number, and our release leaves it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from perlcompat import OS_ERROR, lock, unlock
from perlcompat.locks.api import ExpiredLockError, Lock


def _reuses_inodes(directory: Path) -> bool:
    """True if a directory made right after another is removed gets its inode (ext4 does)."""
    probe = directory / "probe"
    for _ in range(5):
        probe.mkdir()
        before = probe.stat().st_ino
        probe.rmdir()
        probe.mkdir()
        again = probe.stat().st_ino
        probe.rmdir()
        if again == before:
            return True
    return False


def test_a_held_mkdir_lock_keeps_its_inode_number_its_own(tmp_path: Path) -> None:
    if not _reuses_inodes(tmp_path):
        pytest.skip("this file system does not give a freed inode number to the next directory")
    path = tmp_path / "lockdir"
    for _ in range(3):
        assert lock(str(path)) == 1
        before = path.stat().st_ino
        os.rmdir(path)  # what a Perl sub that judged it stale does, then its own mkdir
        os.mkdir(path)
        assert path.stat().st_ino != before  # ours is still open: its number is not free
        assert unlock(str(path)) == 0
        assert int(OS_ERROR) == errno.ETIMEDOUT  # broken while held
        assert path.is_dir()  # the other holder's lock is left
        os.rmdir(path)


def test_the_held_directory_is_closed_at_release_and_in_a_forked_child(tmp_path: Path) -> None:
    path = str(tmp_path / "lockdir")

    def open_on_it() -> int:
        found = 0
        for name in os.listdir("/proc/self/fd"):
            try:
                found += os.path.realpath(f"/proc/self/fd/{name}") == path
            except OSError:
                continue
        return found

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd here")
    held = Lock(path)
    held.acquire()
    assert open_on_it() == 1
    pid = os.fork()
    if pid == 0:  # a child of os.fork() does not hold its parent's lock: drops the descriptor
        os._exit(0 if open_on_it() == 0 and os.path.isdir(path) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    held.release()
    assert open_on_it() == 0
    assert not os.path.exists(path)


def _open_on(path: str) -> int:
    """How many descriptors of this process name *path* (by /proc/self/fd)."""
    found = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            found += os.path.realpath(f"/proc/self/fd/{name}") == path
        except OSError:
            continue
    return found


def test_a_failed_release_keeps_the_directory_held_open(tmp_path: Path) -> None:
    """The held directory is closed just before its rmdir; a rmdir that fails (a file put
    inside) opens it again, so the lock stays held with its inode number its own."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd here")
    path = tmp_path / "lockdir"
    held = Lock(str(path))
    held.acquire()
    (path / "junk").write_bytes(b"x")
    with pytest.raises(OSError) as failed:
        held.release()
    assert failed.value.errno == errno.ENOTEMPTY
    assert held.is_locked
    assert _open_on(str(path)) == 1  # held open again
    (path / "junk").unlink()
    if _reuses_inodes(tmp_path):
        before = path.stat().st_ino
        os.rmdir(path)  # a Perl sub breaking it now, then its own mkdir
        os.mkdir(path)
        assert path.stat().st_ino != before  # ours is open again: its number is not free
        with pytest.raises(ExpiredLockError):  # broken while held
            held.release()
        assert path.is_dir()  # the other holder's lock is left
        os.rmdir(path)
    else:
        held.release()
    assert not held.is_locked
    assert _open_on(str(path)) == 0
    assert not path.exists()


def test_the_lock_variables_are_read_at_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``PERLCOMPAT_LOCK_ROOT``/``_POLL`` (read in one look-up of ``os.environ``'s dict)
    take effect at the next call, set, changed or removed, by any means."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PERLCOMPAT_LOCK_ROOT", str(first))
    assert lock("x.lock") == 1
    assert (first / "x.lock").is_dir()
    assert unlock("x.lock") == 1
    os.environ["PERLCOMPAT_LOCK_ROOT"] = str(second)  # (monkeypatch restores it)
    assert lock("x.lock") == 1
    assert (second / "x.lock").is_dir()
    assert unlock("x.lock") == 1
    del os.environ["PERLCOMPAT_LOCK_ROOT"]
    assert lock("x.lock") == 1
    assert (tmp_path / "x.lock").is_dir()
    assert unlock("x.lock") == 1
    monkeypatch.setenv("PERLCOMPAT_LOCK_POLL", "soon")
    with pytest.raises(ValueError, match="PERLCOMPAT_LOCK_POLL"):
        lock("x.lock")
    assert not (tmp_path / "x.lock").exists()
