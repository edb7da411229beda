"""The platform seam (``locks.osapi``) as each platform answers it, both answers stated.

Under wine this is ``oswindows``; elsewhere ``osposix``.  tests/test_lock_windows.py
checks the lock code above the seam with the seam patched; here nothing is patched
but ``os.kill`` (to see that Windows never calls it).
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from pathlib import Path

import pytest

import perlcompat
from perlcompat import OS_ERROR, replace_file
from perlcompat.locks import guards as _guards, osapi, owner as _owner, remover as _remover
from perlcompat.locks.api import Lock, find_locks

WINDOWS = sys.platform == "win32"


def test_the_seam_picks_this_platforms_module() -> None:
    picked = sys.modules[osapi.open_file.__module__].__name__
    assert picked == ("perlcompat.locks.oswindows" if WINDOWS else "perlcompat.locks.osposix")


def test_owner_judgement(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows: unknown, and ``os.kill`` (which would terminate the process) never called."""
    calls: list[int] = []
    real_kill = os.kill

    def kill(pid: int, sig: int) -> None:
        calls.append(pid)
        real_kill(pid, sig)

    monkeypatch.setattr(os, "kill", kill)
    if WINDOWS:
        assert _owner.alive(os.getpid()) is None
        assert _owner.alive(12345, None, 1, 0.0) is None
        assert _owner.judged(os.getpid(), None) == "age only: no process table"
        assert calls == []
    else:
        assert _owner.alive(os.getpid()) is True
        assert _owner.judged(os.getpid(), None) == "pid"
        assert calls == [os.getpid()]


def test_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_owner, "_host", None)
    if WINDOWS:
        assert _owner.hostname() == socket.gethostname().replace(" ", "_")
    else:
        assert _owner.hostname() == os.uname().nodename.replace(" ", "_")


def test_remover_lock(tmp_path: Path) -> None:
    """Windows: a ``<lock>.breaker`` file (a directory cannot be opened); POSIX: the directory."""
    path = str(tmp_path / "lk")
    first = _guards.guard(path, exclusive=True)
    assert first is not None
    try:
        assert (tmp_path / "lk.breaker").is_file() is WINDOWS
        assert _guards.guard(path, exclusive=True) is None  # one remover at a time
    finally:
        _guards.unguard(first)
    held = Lock(path, method="excl").acquire()
    assert find_locks(tmp_path) == [(path, "excl")]  # a .breaker file is not a lock
    held.release()


def test_a_dead_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows: a dead pid is not known dead, the lock recovers by age; POSIX: at once."""
    path = tmp_path / "lk"
    path.write_text(f"perlcompat excl pid=999999 host={_owner.hostname()} token=x\n")
    backend = Lock(str(path), method="excl", stale=60).backend
    monkeypatch.setattr(_remover, "FIRST_LOOK", 0.0)
    assert backend.break_stale() is not WINDOWS
    if WINDOWS:
        os.utime(path, (1, 1))
        assert backend.break_stale() is True
    assert not path.exists()


def test_fork(tmp_path: Path) -> None:
    """Windows: None and ``$!`` ENOSYS, the lock still this process's; POSIX: a child."""
    path = str(tmp_path / "lk")
    with Lock(path, method="mkdir"):
        pid = perlcompat.fork() if WINDOWS else None
        if WINDOWS:
            assert pid is None
            assert int(OS_ERROR) == errno.ENOSYS
            assert os.path.isdir(path)
    assert not os.path.exists(path)
    if not WINDOWS:
        child = perlcompat.fork()
        if child == 0:
            os._exit(7)
        assert child is not None
        assert os.waitpid(child, 0)[1] >> 8 == 7


def test_replace_file_syncs_the_directory_where_it_can_be_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POSIX: the temp file and the directory are fsynced; Windows: the file only."""
    path = tmp_path / "data.txt"
    path.write_text("old\n")
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    assert replace_file(str(path), "new\n") == 1
    monkeypatch.undo()
    assert path.read_text() == "new\n"
    assert len(synced) == (1 if WINDOWS else 2)


def test_changed_at_follows_a_rename(tmp_path: Path) -> None:
    """The status-change time a rename sets: ``st_ctime`` on POSIX, the NTFS change time
    on Windows (where ``st_ctime`` is the creation time, kept by the rename)."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("x")
    os.utime(first, (1, 1))
    os.rename(first, second)
    st = os.lstat(second)
    changed = osapi.changed_at(str(second), st)
    assert changed > 1000  # the rename's time, not the mtime set to 1
    assert (osapi.change_time(str(second)) is None) is not WINDOWS
