"""The thin Windows paths of the lock methods, run here with sys.platform faked.

On Windows ``os.kill(pid, 0)`` would terminate the process, so owners are
"unknown" there (locks recover by age); the remover lock is a ``<lock>.breaker``
file (a directory cannot be opened there), which ``find_locks`` skips.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from perlcompat.locks import guards as _guards, owner as _owner, remover as _remover
from perlcompat.locks.api import Lock, find_locks


def test_owner_is_unknown_on_windows_and_kill_is_never_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: calls.append(pid))
    monkeypatch.setattr(sys, "platform", "win32")
    assert _owner.alive(os.getpid()) is None
    assert _owner.alive(12345, None, 1, 0.0) is None
    assert calls == []


def test_hostname_on_windows_comes_from_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(_owner, "_host", None)
    monkeypatch.setattr(socket, "gethostname", lambda: "WIN BOX")
    assert _owner.hostname() == "WIN_BOX"  # no spaces: records are space-separated


def test_remover_lock_is_a_breaker_file_on_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "lk")
    monkeypatch.setattr(sys, "platform", "win32")
    first = _guards.guard(path, exclusive=True)
    assert first is not None
    try:
        assert (tmp_path / "lk.breaker").is_file()
        assert _guards.guard(path, exclusive=True) is None  # one remover at a time
    finally:
        _guards.unguard(first)
    monkeypatch.undo()
    held = Lock(path, method="excl").acquire()
    assert find_locks(tmp_path) == [(path, "excl")]  # the .breaker file is not a lock
    held.release()


def test_windows_age_only_recovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lk"
    path.write_text(f"perlcompat excl pid=999999 host={_owner.hostname()} token=x\n")
    monkeypatch.setattr(sys, "platform", "win32")
    backend = Lock(str(path), method="excl", stale=60).backend
    monkeypatch.setattr(_remover, "FIRST_LOOK", 0.0)
    assert backend.break_stale() is False  # a dead pid is not known dead on Windows
    os.utime(path, (1, 1))
    assert backend.break_stale() is True  # but age still recovers it
