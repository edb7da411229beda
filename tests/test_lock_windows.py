"""How the lock code answers the platform seam (``locks.osapi``), here with the seam patched.

Windows has no process table to ask (``os.kill(pid, 0)`` would terminate the process),
so owners are "unknown" there and locks recover by age; a directory cannot be opened,
so the remover lock is a ``<lock>.breaker`` file, which ``find_locks`` skips.  The
seam's Windows answers themselves are checked under wine (tests/windows/test_win_seam.py);
here the seam is patched to give them and the lock code above it is checked.  The seam
itself: one module per platform with the same functions, picked in one place.
"""

from __future__ import annotations

import ast
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perlcompat.locks import guards as _guards, osapi, osposix, owner as _owner, remover as _remover
from perlcompat.locks.api import Lock, find_locks

LOCKS = Path(osapi.__file__).parent


def no_process_table(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Patch the seam as Windows answers: no pid is ever asked about; return the kill calls."""
    calls: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: calls.append(pid))
    monkeypatch.setattr(osapi, "process_exists", lambda pid: None)
    monkeypatch.setattr(osapi, "pids_known", lambda: False)
    return calls


def test_owner_is_unknown_without_a_process_table(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = no_process_table(monkeypatch)
    assert _owner.alive(os.getpid()) is None
    assert _owner.alive(12345, None, 1, 0.0) is None
    assert _owner.judged(os.getpid(), None) == "age only: no process table"
    assert calls == []
    monkeypatch.undo()
    assert _owner.alive(os.getpid()) is True
    assert _owner.judged(os.getpid(), None) == "pid"


def test_the_posix_process_check(tmp_path: Path) -> None:
    """``osposix.process_exists``: this process yes, a reaped child no."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert osposix.process_exists(os.getpid()) is True
    assert osposix.process_exists(child.pid) is False


def test_host_names_lose_their_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_owner, "_host", None)
    monkeypatch.setattr(osapi, "nodename", lambda: "WIN BOX")  # Windows allows spaces there
    assert _owner.hostname() == "WIN_BOX"  # no spaces: records are space-separated


def test_remover_lock_is_a_breaker_file_where_directories_cannot_be_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "lk")
    monkeypatch.setattr(osapi, "open_directory", lambda directory: None)
    first = _guards.guard(path, exclusive=True)
    assert first is not None
    try:
        assert (tmp_path / "lk.breaker").is_file()
        assert _guards.guard(path, exclusive=True) is None  # one remover at a time
    finally:
        _guards.unguard(first)
    held = Lock(path, method="excl").acquire()
    assert find_locks(tmp_path) == [(path, "excl")]  # the .breaker file is not a lock
    held.release()


def test_age_only_recovery_without_a_process_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lk"
    path.write_text(f"perlcompat excl pid=999999 host={_owner.hostname()} token=x\n")
    backend = Lock(str(path), method="excl", stale=60).backend
    monkeypatch.setattr(_remover, "FIRST_LOOK", 0.0)
    calls = no_process_table(monkeypatch)
    assert backend.break_stale() is False  # a dead pid is not known dead there
    os.utime(path, (1, 1))
    assert backend.break_stale() is True  # but age still recovers it
    assert calls == []


def test_fork_without_fork_is_none_with_enosys(monkeypatch: pytest.MonkeyPatch) -> None:
    import perlcompat

    def no_fork() -> int:
        raise OSError(errno.ENOSYS, "fork is not available on Windows")

    monkeypatch.setattr(osapi, "fork_process", no_fork)
    assert perlcompat.fork() is None
    assert int(perlcompat.OS_ERROR) == errno.ENOSYS


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    names |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id.isupper() and target.id != "TYPE_CHECKING"
    }
    names |= {  # an OS function bound as it is (``pread = os.pread``: no frame of ours)
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return {name for name in names if not name.startswith("_")}


def _picked() -> set[str]:
    """The names ``osapi`` takes from the platform module it picked (``X = _platform.X``)."""
    found: set[str] = set()
    for node in ast.parse((LOCKS / "osapi.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            value = node.value
            if isinstance(value.value, ast.Name) and value.value.id == "_platform":
                found |= {
                    t.id for t in node.targets if isinstance(t, ast.Name) and t.id == value.attr
                }
    return found


def test_both_platform_modules_implement_the_same_seam() -> None:
    posix, windows = _functions(LOCKS / "osposix.py"), _functions(LOCKS / "oswindows.py")
    assert posix - {"ACL_XATTR"} == windows
    assert _picked() == windows
    assert all(f"``{name}" in (osapi.__doc__ or "") for name in windows - {"BUSY_PATIENCE"})


def test_the_posix_import_path_never_loads_the_windows_module_nor_ctypes(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from perlcompat import lock, unlock, replace_file, read_file, Lock\n"
        f"d = {str(tmp_path)!r}\n"
        "assert lock(d + '/lk') == 1 and unlock(d + '/lk') == 1\n"
        "for m in ('excl', 'rename', 'toplock', 'symlink', 'flock'):\n"
        "    Lock(d + '/' + m, method=m).acquire().release()\n"
        "replace_file(d + '/f', 'x'); read_file(d + '/f')\n"
        "print(sorted(m for m in sys.modules if m in ('ctypes', 'perlcompat.locks.oswindows')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
