"""Where Perl interop does not dictate, ``Lock`` follows filelock/portalocker (issue 34).

* a second ``Lock`` object of a path this thread holds waits for it as for anyone's
  (``lock()`` still refuses a nested name at once: tests/test_lock_methods.py);
* after ``release(force=True)`` the ``with`` blocks' own releases are no-ops;
* a release error leaving a ``with`` block does not replace the body's exception;
* ``lk.timeout = -1`` (or None) after construction means for ever, checked as the argument;
* ``async with await lk.acquire_async()`` releases once; the holding task takes it again.

docs/locks.md ("perlcompat and the Python lock libraries") lists each difference kept.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from pathlib import Path

import pytest

from perlcompat import ExpiredLockError, LockTimeout, NotLockedError
from perlcompat.locks.api import Lock


def test_a_second_object_in_the_same_thread_waits_for_the_first(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    first = Lock(path, method="flock", timeout=30)
    second = Lock(path, method="flock", timeout=60)
    first.acquire()
    with pytest.raises(LockTimeout, match="busy"):  # not DuplicateLockError
        second.acquire(timeout=0.05)
    first.release()
    got: list[bool] = []

    def other() -> None:
        with second:
            got.append(second.is_locked)

    worker = threading.Thread(target=other)
    worker.start()
    worker.join(60)
    assert got == [True]
    with first, pytest.raises(LockTimeout):  # and back in this thread, for any method
        second.acquire(timeout=0)


def test_with_exit_after_a_forced_release_is_a_no_op(tmp_path: Path) -> None:
    lk = Lock(str(tmp_path / "lk"), method="flock")
    with lk:
        lk.acquire()
        lk.release(force=True)
        assert not lk.is_locked
    assert not lk.is_locked
    other = Lock(str(tmp_path / "other"), method="flock")
    with pytest.raises(NotLockedError):  # a release of a lock never held still raises
        other.release()
    other.release(force=True)  # unless forced (flufl.lock's unlock(unconditionally=True))


def test_a_release_error_does_not_replace_the_bodys_exception(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "lk"
    lk = Lock(str(path), method="mkdir")
    with pytest.raises(ValueError, match="the body's own") as caught, lk:
        os.rmdir(path)  # another process broke it: the release finds it gone
        os.mkdir(path)
        raise ValueError("the body's own")
    assert "release" in caplog.text and str(path) in caplog.text
    assert any(r.levelno == logging.WARNING for r in caplog.records)
    notes = getattr(caught.value, "__notes__", None)
    if hasattr(BaseException, "add_note"):  # Python 3.11+
        assert notes and "BrokenLockError" in notes[0]  # (an ExpiredLockError)
    os.rmdir(path)
    with pytest.raises(ExpiredLockError), lk:  # without a body exception it raises
        os.rmdir(path)
        os.mkdir(path)


def test_timeout_set_after_construction_is_checked(tmp_path: Path) -> None:
    lk = Lock(str(tmp_path / "lk"), method="flock")
    assert lk.timeout == lk.patience() == 4.0
    lk.timeout = -1
    assert lk.timeout is None and lk.patience() is None  # for ever, not "one try"
    lk.timeout = 2
    assert lk.timeout == 2.0
    with pytest.raises(ValueError, match="timeout"):
        lk.timeout = -5


def test_async_with_await_acquire_and_task_reentry(tmp_path: Path) -> None:
    lk = Lock(str(tmp_path / "lk"), method="flock", timeout=30)

    async def main() -> list[object]:
        seen: list[object] = []
        async with await lk.acquire_async() as held:
            seen.append(held is lk)
            async with lk:  # the holding task takes it again (filelock's re-entrancy)
                seen.append(lk.lock_counter)
            seen.append(lk.is_locked)

            async def other_task() -> bool:
                try:
                    await lk.acquire_async(timeout=0.05)
                except LockTimeout:
                    return False
                return True

            seen.append(await asyncio.create_task(other_task()))  # another task waits
        seen.append(lk.is_locked)
        return seen

    assert asyncio.run(main()) == [True, 2, True, False, False]


def test_a_single_enoent_from_link_is_looked_at_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flufl.lock's rule: one ENOENT from link(2) (an NFS server that lost a name) is tried
    again; two in a row raise."""
    real = os.link
    answers: list[int] = [1]

    def link(src: str, dst: str) -> None:
        if answers and answers.pop():
            raise FileNotFoundError(2, "lost on the server", dst)
        real(src, dst)

    monkeypatch.setattr(os, "link", link)
    lk = Lock(str(tmp_path / "lk"), method="link", timeout=30)
    with lk:
        assert (tmp_path / "lk").is_file()
    answers[:] = [1, 1]
    with pytest.raises(FileNotFoundError):
        lk.acquire()
    assert not (tmp_path / "lk").exists()
    assert not list(tmp_path.iterdir())  # no temp file left behind
