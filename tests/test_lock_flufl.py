"""``Lock`` in flufl.lock's shape (issue 34, ``locks.state``, ``locks.compat``).

* ``Lock(path, reentrant=False)``: the holder's second ``acquire()`` raises
  ``DuplicateLockError`` (flufl.lock's ``AlreadyLockedError``) while its hold is still the
  lock on disk; a hold another process broke meanwhile is dropped and the lock taken anew;
* ``is_locked`` of a hold older than ``stale`` looks at the lock: False once broken;
* a release (or refresh) of a broken hold raises ``BrokenLockError``, an
  ``ExpiredLockError`` and a ``NotLockedError`` (flufl.lock's ``unlock()`` raises that);
* ``lk.state`` is flufl.lock's ``LockState``; ``repr()`` is flufl.lock's, with the method.
"""

from __future__ import annotations

import asyncio
import errno
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from perlutil import as_unprivileged, require_root, shared_directory

import perlcompat
from perlcompat import (
    BrokenLockError,
    DuplicateLockError,
    ExpiredLockError,
    LockState,
    LockTimeout,
    NotALockError,
    NotLockedError,
)
from perlcompat.locks.api import Lock
from perlcompat.locks.files import LOOK

HOLD = (
    "import os, sys\n"
    "from perlcompat.locks.api import Lock\n"
    "lk = Lock(sys.argv[1], method='link', stale=float(sys.argv[2]), timeout=30)\n"
    "lk.acquire()\n"
    "print('held', flush=True)\n"
    "if sys.argv[3] == 'die':\n"
    "    os._exit(0)  # no cleanup: the lock stays, naming a dead process\n"
    "sys.stdin.readline()\n"
    "lk.release()\n"
)


def holder(path: str, stale: float = 60.0, how: str = "hold") -> subprocess.Popen[str]:
    """Another process that takes the link lock *path* (and, with how="die", exits holding it)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, path, str(stale), how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def done(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(60) == 0


def break_it(path: str) -> None:
    """Another process breaks the stale link lock *path* (its own stale: 0.05 s) and releases."""
    code = (
        "import sys\n"
        "from perlcompat.locks.api import Lock\n"
        "lk = Lock(sys.argv[1], method='link', stale=0.05, timeout=30)\n"
        "lk.acquire()\n"
        "lk.release()\n"
    )
    subprocess.run([sys.executable, "-c", code, path], check=True, timeout=60)


def age(path: str, seconds: float) -> None:
    """Make the lock at *path* look *seconds* old (its mtime, what the age rules read)."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


def test_reentrant_false_refuses_the_holders_second_acquire(tmp_path: Path) -> None:
    """Before: ``reentrant`` was no keyword of Lock (TypeError); the second acquire counted."""
    path = str(tmp_path / "lk")
    lk = Lock(path, method="link", reentrant=False, timeout=0)
    lk.acquire()
    with pytest.raises(DuplicateLockError, match="already held by this Lock"):
        lk.acquire()
    with pytest.raises(DuplicateLockError), lk:
        pass
    assert lk.is_locked and lk.lock_counter == 1
    lk.release()  # one release frees it
    assert not lk.is_locked and not os.path.exists(path)
    with lk:
        assert lk.is_locked
    assert not os.path.exists(path)


def test_reentrant_false_takes_a_lock_broken_while_held_anew(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method="link", reentrant=False, stale=60, timeout=5)
    lk.acquire()
    age(path, 1)
    break_it(path)  # (another process's stale: 0.05 s)
    lk.acquire()  # the broken hold is dropped (logged), the lock taken again
    assert "broken or replaced while held" in caplog.text
    assert lk.is_locked and lk.lock_counter == 1
    assert lk.state is LockState.ours
    lk.release()  # the new hold: no error
    assert not os.path.exists(path)


def test_reentrant_false_is_refused_with_thread_local_false(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reentrant=False needs thread_local=True"):
        Lock(str(tmp_path / "lk"), reentrant=False, thread_local=False)


def test_reentrant_false_in_asyncio(tmp_path: Path) -> None:
    lk = Lock(str(tmp_path / "lk"), method="link", reentrant=False, timeout=0)

    async def main() -> None:
        async with lk:
            with pytest.raises(DuplicateLockError):
                await lk.acquire_async()
            assert lk.lock_counter == 1

    asyncio.run(main())
    assert not lk.is_locked and not (tmp_path / "lk").exists()


def test_is_locked_looks_at_a_hold_past_stale_only(tmp_path: Path) -> None:
    """Before: ``is_locked`` stayed True after another process broke the lock."""
    path = str(tmp_path / "lk")
    lk = Lock(path, method="link", stale=0.2)
    looks: list[bool] = []
    holds = type(lk.backend).holds

    def counted(backend: object) -> bool:
        looks.append(True)
        return holds(backend)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(lk.backend), "holds", counted)
        lk.acquire()
        assert lk.is_locked and looks == []  # a young hold: no look
        lk._since -= 1  # (the hold is 1 s older: past its stale)
        assert lk.is_locked and looks == [True]  # looked: still ours
        age(path, 1)
        break_it(path)
        assert not lk.is_locked
    with pytest.raises(BrokenLockError) as caught:
        lk.release()
    assert isinstance(caught.value, ExpiredLockError)
    assert isinstance(caught.value, NotLockedError)  # flufl.lock's unlock() raises that
    assert not lk.is_locked and not os.path.exists(path)


def test_a_refresh_of_a_broken_lock_raises_broken_lock_error(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method="link", stale=60)
    lk.acquire()
    age(path, 1)
    break_it(path)
    with pytest.raises(NotLockedError, match="broken or replaced while held"):
        lk.refresh()
    with pytest.raises(BrokenLockError):
        lk.release()


def test_broken_lock_error_is_public_and_pickles() -> None:
    error = BrokenLockError("lock 'x' was broken or replaced while held")
    assert (
        BrokenLockError.__module__ == "perlcompat" and perlcompat.BrokenLockError is error.__class__
    )
    assert error.errno == ExpiredLockError.default_errno
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is BrokenLockError and again.args == error.args


def test_state_of_our_own_lock(tmp_path: Path) -> None:
    """Before: Lock had no ``state`` (AttributeError)."""
    path = str(tmp_path / "lk")
    lk = Lock(path, method="link", stale=60)
    assert lk.state is LockState.unlocked
    lk.acquire()
    assert lk.state is LockState.ours
    lk._since -= 61  # (held longer than its stale)
    assert lk.state is LockState.ours_expired
    age(path, 61)
    break_it(path)
    assert lk.state is LockState.unlocked  # broken, and the breaker released
    with pytest.raises(BrokenLockError):
        lk.release()
    assert [s.value for s in LockState] == [1, 2, 3, 4, 5, 6]  # flufl.lock's values
    assert [s.name for s in LockState] == [
        "unlocked",
        "ours",
        "ours_expired",
        "stale",
        "theirs_expired",
        "unknown",
    ]


def test_state_of_another_processs_lock(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method="link", stale=60)
    proc = holder(path)
    try:
        assert lk.state is LockState.unknown  # alive, young: nothing to infer
        lk.stale = 0.05  # (its age is not faked: the holder's start must precede its lock)
        deadline = time.monotonic() + 30
        while lk.state is LockState.unknown and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lk.state is LockState.theirs_expired  # older than this object's stale
    finally:
        done(proc)
    assert lk.state is LockState.unlocked
    holder(path, how="die").wait(60)
    assert lk.state is LockState.stale  # its process is gone: any waiter breaks it
    with lk:  # (and so does this one)
        assert lk.state is LockState.ours


def test_state_of_a_file_that_is_no_lock(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    path.write_text("save me")
    assert Lock(str(path), method="link").state is LockState.unknown
    assert path.read_text() == "save me"


def test_repr_is_flufls_with_the_method(tmp_path: Path) -> None:
    """Before: ``<Lock '...' method=link unlocked>``."""
    lk = Lock(str(tmp_path / "test.lck"), method="link", stale=15)
    shape = r"<Lock '.*test\.lck' method=link \[{}: 0:00:15\] pid={} at 0x[0-9a-f]+>"
    assert re.fullmatch(shape.format("unlocked", os.getpid()), repr(lk))
    with lk:
        assert re.fullmatch(shape.format("locked", os.getpid()), repr(lk))
    assert re.fullmatch(shape.format("unlocked", os.getpid()), repr(lk))


def _file(path: Path) -> None:
    path.write_text("save me")


def _full_dir(path: Path) -> None:
    path.mkdir()
    (path / "data.txt").write_text("save me")


def _symlink(path: Path) -> None:
    (path.parent / "target").write_text("save me")
    path.symlink_to(path.parent / "target")


NO_LOCKS = [
    ("link", _file, FileExistsError, errno.EEXIST),
    ("excl", _file, FileExistsError, errno.EEXIST),
    ("rename", _file, FileExistsError, errno.EEXIST),
    ("symlink", _file, FileExistsError, errno.EEXIST),
    ("mkdir", _file, NotADirectoryError, errno.ENOTDIR),
    ("mkdir", _full_dir, NotALockError, errno.ENOTEMPTY),
    ("mkdir", _symlink, NotALockError, errno.ELOOP),
    ("flock", _full_dir, IsADirectoryError, errno.EISDIR),
]


@pytest.mark.parametrize(("method", "make", "kind", "number"), NO_LOCKS)
def test_a_path_holding_no_lock_is_refused_at_once_as_a_time_out(
    tmp_path: Path, method: str, make: Any, kind: type[OSError], number: int
) -> None:
    """flufl.lock's ``except TimeOutError`` handles it; no wait, the file untouched.

    Before: a bare ``OSError``, no ``LockTimeout``.  A wait would end in a plain
    ``LockTimeout`` (``$!`` EWOULDBLOCK) and fail here, not hang the run.
    """
    path = tmp_path / "lk"
    make(path)
    lk = Lock(str(path), method=method, timeout=5)
    with pytest.raises(NotALockError) as info:
        lk.acquire()
    exc = info.value
    assert isinstance(exc, (LockTimeout, TimeoutError, kind))
    assert isinstance(exc, LockTimeout) and isinstance(exc, kind)
    assert exc.errno == number and exc.lock_file == str(path)
    assert str(path) in str(exc)
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is type(exc) and copy.errno == number
    assert not lk.is_locked
    target = path.parent / "target" if make is _symlink else path
    if target.is_dir():
        assert (target / "data.txt").read_text() == "save me"
    else:
        assert target.read_text() == "save me"
    assert perlcompat.lock(str(path), method=method, retry=3, wait=1) == 0  # Perl's 0, $!
    assert number == perlcompat.OS_ERROR


def test_retry_errnos_is_flufls_property(tmp_path: Path) -> None:
    lk = Lock(str(tmp_path / "lk"), method="link")
    assert lk.retry_errnos == []
    lk.retry_errnos = [errno.EIO, errno.ESTALE]
    assert lk.retry_errnos == [errno.EIO, errno.ESTALE]
    got = lk.retry_errnos
    got.append(errno.EACCES)  # a copy, as flufl.lock's
    assert lk.retry_errnos == [errno.EIO, errno.ESTALE]
    del lk.retry_errnos
    assert lk.retry_errnos == []
    with pytest.raises(ValueError, match=r"errno numbers.*'EIO'"):
        lk.retry_errnos = ["EIO"]  # type: ignore[list-item]
    with pytest.raises(ValueError, match="-5"):
        lk.retry_errnos = [-5]
    with pytest.raises(TypeError, match="a list of errno numbers, not 5"):
        lk.retry_errnos = 5  # type: ignore[assignment]
    assert lk.retry_errnos == []


@pytest.mark.privileged
def test_retry_errnos_makes_a_failed_read_of_the_lock_a_busy_try() -> None:
    """A read of the lock path failing with a listed errno is tried again within the patience.

    Here another user's link lock file we may not read (EACCES): raised at once without
    ``retry_errnos``, a busy try with it (the ``LockTimeout`` names it).  A step that makes
    the lock (the missing directory's ENOENT) still raises, and so does a refusal.
    Before: ``PermissionError`` whatever ``retry_errnos`` held.
    """
    require_root("a lock file of root's read as another user")
    with shared_directory() as shared:
        _read_as_another_user(shared)


def _read_as_another_user(shared: Path) -> None:
    base = shared / "locks"
    base.mkdir()
    base.chmod(0o777)
    path = base / "lk"
    path.write_text("perlcompat link pid=1 host=elsewhere\n")
    path.chmod(0o600)

    def take() -> tuple[str, ...]:
        lk = Lock(str(path), method="link")
        try:
            lk.acquire(timeout=30)
            return ("taken",)
        except OSError as exc:
            first = (type(exc).__name__, str(exc.errno), str(exc))
        lk.retry_errnos = [errno.EACCES, errno.ENOENT, errno.EEXIST]
        try:
            lk.acquire(timeout=0.3)
            return ("taken",)
        except OSError as exc:
            second = (type(exc).__name__, str(exc))
        missing = Lock(str(base / "later" / "lk"), method="link")
        missing.retry_errnos = [errno.ENOENT]
        try:
            missing.acquire(timeout=30)
            return ("taken",)
        except OSError as exc:
            third = type(exc).__name__
        return (*first, *second, third)

    got = as_unprivileged(take)
    assert isinstance(got, tuple) and len(got) == 6, got
    assert got[:2] == ("PermissionError", str(errno.EACCES)) and "cannot read" in got[2]
    assert got[3] == "LockTimeout"
    assert re.search(r"a try failed \(\[Errno 13\] cannot read .*; retry_errnos\)", got[4])
    assert got[5] == "FileNotFoundError"
    assert path.read_text() == "perlcompat link pid=1 host=elsewhere\n"
    assert sorted(os.listdir(base)) == ["lk"]  # no temp file left behind


def test_a_refusal_is_never_retried(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    path.write_text("save me")
    lk = Lock(str(path), method="link")
    lk.retry_errnos = [errno.EEXIST, errno.EACCES]
    with pytest.raises(NotALockError):
        lk.acquire(timeout=5)  # (a wait: a plain LockTimeout)
    assert path.read_text() == "save me"


def test_a_time_out_names_no_error_of_an_earlier_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``LockTimeout`` names the last ``retry_errnos`` error of its own call only.

    Before: ``acquire_async`` never forgot one of an earlier ``acquire()``: a lock merely
    held by another object timed out "a try failed ([Errno 2] ...)".
    """
    path = tmp_path / "lk"
    lk = Lock(str(path), method="link")
    lk.retry_errnos = [errno.EIO]
    real = lk._backend.try_acquire

    def unreadable() -> bool:  # a read of the lock path failing with EIO (files.LOOK)
        exc = OSError(errno.EIO, "Input/output error")
        setattr(exc, LOOK, True)
        raise exc

    monkeypatch.setattr(lk._backend, "try_acquire", unreadable)
    with pytest.raises(LockTimeout, match=r"a try failed \(\[Errno 5\]"):
        lk.acquire(timeout=0)
    monkeypatch.setattr(lk._backend, "try_acquire", real)
    other = Lock(str(path), method="link")  # another object of this thread: busy
    with other:
        with pytest.raises(LockTimeout) as info:
            asyncio.run(lk.acquire_async(timeout=0))
        assert "a try failed" not in str(info.value)
        with pytest.raises(LockTimeout) as info:
            lk.acquire(timeout=0)
        assert "a try failed" not in str(info.value)
        backend = lk._backend
        tries: list[int] = []

        def flaky() -> bool:  # a passing EIO reading the lock, at the first try only
            tries.append(1)
            if len(tries) == 1:
                exc = OSError(errno.EIO, "Input/output error")
                setattr(exc, LOOK, True)
                raise exc
            return real()

        monkeypatch.setattr(backend, "try_acquire", flaky)
        with pytest.raises(LockTimeout, match=r"a try failed \(\[Errno 5\]"):
            lk.acquire(timeout=0.3, poll_interval=0.01)  # named, though later tries were busy
        assert len(tries) > 1
    assert not lk.is_locked and not path.exists()


def test_a_not_a_lock_error_made_without_an_errno_is_eexist() -> None:
    """Not LockTimeout's EWOULDBLOCK ("busy"): the path is taken by something else."""
    assert NotALockError("lock path 'x' holds data").errno == errno.EEXIST
