"""``flock`` on Windows, run here with a fake portalocker: flag translation and errors.

Windows cannot run on this machine, so the Windows path is kept thin (it only
translates Perl's numbers and portalocker's exceptions) and is checked against a
fake ``portalocker`` whose flag values are the Windows ones (EX=1, SH=2), so a
Perl number passed through untranslated would show.
"""

from __future__ import annotations

import enum
import errno
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

import perlcompat
from perlcompat import (
    LOCK_EX,
    LOCK_NB,
    LOCK_SH,
    LOCK_UN,
    OS_ERROR,
    close,
    open_,
    print_,
)
from perlcompat.perl import flock_windows as win


class FakeFlags(enum.IntFlag):
    """portalocker's LockFlags with the values it has on Windows."""

    EXCLUSIVE = 0x1
    SHARED = 0x2
    NON_BLOCKING = 0x4
    UNBLOCK = 0x0


class LockException(Exception):
    LOCK_FAILED = 1


class AlreadyLocked(LockException):
    pass


class FakeWin32Locker:
    """Records calls; ``busy`` makes LockFileEx report ERROR_LOCK_VIOLATION."""

    instances: ClassVar[list[FakeWin32Locker]] = []

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, object]] = []
        self.busy = False
        self.fail_with: BaseException | None = None
        FakeWin32Locker.instances.append(self)

    def lock(self, file_obj: int, flags: FakeFlags) -> None:
        self.calls.append(("lock", file_obj, flags))
        if self.fail_with is not None:
            raise self.fail_with
        if self.busy and flags & FakeFlags.NON_BLOCKING:
            raise AlreadyLocked(LockException.LOCK_FAILED, "The process cannot access the file")

    def unlock(self, file_obj: int) -> None:
        self.calls.append(("unlock", file_obj, None))
        if self.fail_with is not None:
            raise self.fail_with


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.SimpleNamespace]:
    """Install the fake portalocker and a fresh locker cache."""
    package = types.ModuleType("portalocker")
    package.LockFlags = FakeFlags  # type: ignore[attr-defined]
    exceptions = types.ModuleType("portalocker.exceptions")
    exceptions.LockException = LockException  # type: ignore[attr-defined]
    exceptions.AlreadyLocked = AlreadyLocked  # type: ignore[attr-defined]
    inner = types.ModuleType("portalocker.portalocker")
    inner.Win32Locker = FakeWin32Locker  # type: ignore[attr-defined]
    package.exceptions = exceptions  # type: ignore[attr-defined]
    package.portalocker = inner  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "portalocker", package)
    monkeypatch.setitem(sys.modules, "portalocker.exceptions", exceptions)
    monkeypatch.setitem(sys.modules, "portalocker.portalocker", inner)
    monkeypatch.setattr(win, "_locker", None)
    FakeWin32Locker.instances.clear()
    yield types.SimpleNamespace(locker=lambda: win._get_locker())


@pytest.mark.parametrize(
    ("operation", "flags"),
    [
        (LOCK_EX, FakeFlags.EXCLUSIVE),
        (LOCK_SH, FakeFlags.SHARED),
        (LOCK_EX | LOCK_NB, FakeFlags.EXCLUSIVE | FakeFlags.NON_BLOCKING),
        (LOCK_SH | LOCK_NB, FakeFlags.SHARED | FakeFlags.NON_BLOCKING),
        (2, FakeFlags.EXCLUSIVE),  # flock(OUT, 2)
        (5, FakeFlags.SHARED | FakeFlags.NON_BLOCKING),
        (6, FakeFlags.EXCLUSIVE | FakeFlags.NON_BLOCKING),
    ],
)
def test_perl_numbers_are_translated_to_portalocker_flags(
    fake: types.SimpleNamespace, operation: int, flags: FakeFlags
) -> None:
    assert win.translate(operation) == flags
    win.lock_fd(7, operation)
    assert fake.locker().calls == [("lock", 7, flags)]


def test_translation_is_not_a_pass_through(fake: types.SimpleNamespace) -> None:
    assert int(win.translate(LOCK_EX)) != LOCK_EX  # Perl's 2 is portalocker's SHARED there
    assert win.translate(LOCK_EX) == FakeFlags.EXCLUSIVE


@pytest.mark.parametrize("operation", [LOCK_UN, LOCK_UN | LOCK_NB, 8])
def test_unlock_calls_unlock(fake: types.SimpleNamespace, operation: int) -> None:
    win.lock_fd(9, operation)
    assert fake.locker().calls == [("unlock", 9, None)]


def test_busy_gives_blocking_io_error(fake: types.SimpleNamespace) -> None:
    fake.locker().busy = True
    with pytest.raises(BlockingIOError) as info:
        win.lock_fd(3, LOCK_EX | LOCK_NB)
    assert info.value.errno == errno.EWOULDBLOCK
    assert isinstance(info.value.__cause__, AlreadyLocked)


def test_other_lock_failures_keep_their_errno(fake: types.SimpleNamespace) -> None:
    locker = fake.locker()
    error = LockException(LockException.LOCK_FAILED, "bad handle")
    error.__cause__ = OSError(errno.EBADF, "Bad file descriptor")
    locker.fail_with = error
    with pytest.raises(OSError) as info:
        win.lock_fd(3, LOCK_EX)
    assert info.value.errno == errno.EBADF
    # a Windows error (ERROR_NOT_LOCKED from UnlockFileEx ...) is EINVAL, as in
    # Perl's win32_flock
    locker.fail_with = LockException(LockException.LOCK_FAILED, "no cause")
    with pytest.raises(OSError) as info:
        win.lock_fd(3, LOCK_UN)
    assert info.value.errno == errno.EINVAL
    assert not isinstance(info.value, BlockingIOError)


def test_one_locker_is_built_and_reused(fake: types.SimpleNamespace) -> None:
    win.lock_fd(1, LOCK_EX)
    win.lock_fd(1, LOCK_UN)
    assert len(FakeWin32Locker.instances) == 1


def test_old_portalocker_gives_a_clear_import_error(
    fake: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(sys.modules["portalocker.portalocker"], "Win32Locker")
    with pytest.raises(ImportError, match=r"portalocker>=3\.2.*pywin32"):
        win.lock_fd(1, LOCK_EX)


# -- flock() itself, loaded as on Windows -------------------------------------------------
@pytest.fixture()
def win_flock(fake: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A private copy of ``perlcompat.perl.flock`` imported with ``sys.platform == "win32"``."""
    monkeypatch.setattr(sys, "platform", "win32")
    source = Path(perlcompat.__file__).parent / "perl" / "flock.py"
    spec = importlib.util.spec_from_file_location("perlcompat.perl._flock_as_windows", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.lock_fd is win.lock_fd
    return module


def test_windows_flock_flushes_translates_and_reports(
    win_flock: types.ModuleType, fake: types.SimpleNamespace, tmp_path: Path
) -> None:
    path = tmp_path / "data"
    fh = open_(">", path)
    assert fh is not None
    print_(fh, "buffered")
    assert win_flock.flock(fh, 2) == 1
    assert path.read_bytes() == b"buffered"  # flushed before locking
    assert win_flock.flock(fh, LOCK_UN) == 1
    locker = fake.locker()
    assert locker.calls == [
        ("lock", fh.fileno(), FakeFlags.EXCLUSIVE),
        ("unlock", fh.fileno(), None),
    ]
    locker.busy = True
    assert win_flock.flock(fh, LOCK_EX | LOCK_NB) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    locker.calls.clear()
    for bad in (LOCK_SH | LOCK_EX, 0, 16, -1, True, "2"):
        assert win_flock.flock(fh, bad) == 0
        assert OS_ERROR == errno.EINVAL
    assert locker.calls == []  # invalid operations never reach LockFileEx
    close(fh)
    assert win_flock.flock(fh, LOCK_EX) == 0
    assert OS_ERROR == errno.EBADF


def test_windows_flock_timeout_polls_with_non_blocking_requests(
    win_flock: types.ModuleType, fake: types.SimpleNamespace, tmp_path: Path
) -> None:
    fh = open_(">", tmp_path / "t")
    assert fh is not None
    locker = fake.locker()
    locker.busy = True
    assert win_flock.flock(fh, LOCK_EX, timeout=0.05) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    assert len(locker.calls) >= 2
    assert all(
        flags == FakeFlags.EXCLUSIVE | FakeFlags.NON_BLOCKING for _, _, flags in locker.calls
    )
    close(fh)


def test_portalockers_win32_range_is_perls() -> None:
    """Perl's win32 flock locks bytes 0..0xFFFF0000; so must portalocker's Win32Locker.

    The class exists only on Windows, so its source is read: the range it hands
    to LockFileEx is ``_lock_bytes_low = -0x10000`` (0xFFFF0000 as a DWORD).
    """
    spec = importlib.util.find_spec("portalocker.portalocker")
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin).read_text()
    start = source.index("class Win32Locker")
    body = source[start : source.index("\n    class ", start + 1)]
    assert "_lock_bytes_low: int = -0x10000" in body
    assert (-0x10000) & 0xFFFFFFFF == 0xFFFF0000
    assert "LockFileEx(" in body and "self._lock_bytes_low" in body
