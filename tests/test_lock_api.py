"""Lock speaks Python's conventions; lock()/unlock() keep seed 003's shape (issues 15, 18).

* ``Lock(timeout=)``/``acquire(timeout=)`` in seconds, None or -1 for ever;
  a time-out raises ``LockTimeout``, also a ``TimeoutError``;
* every option is a typed keyword, no ``**options`` (mypy catches a misspelled one);
* the ``perlcompat`` logger records stale removals and expired locks, and a
  lock cycle never imports ``logging``;
* patience is ``(retry - 1) * wait``, as the sub's 5 tries with 4 sleeps;
  ``poll=`` waits at the sub's cadence (counted on a fake clock, no sleeps);
* ``unlock(name)`` releases this thread's lock whatever its method.
"""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from perlutil import raised_in_thread

import perlcompat
from perlcompat import OS_ERROR, Lock, LockError, LockTimeout, Semaphore, lock, unlock
from perlcompat.locks import api as _api, retry as _retry

REAL_JITTER = _retry.jitter

# -- a fake clock: the wait loop's time and pauses, no real sleeping ----------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.pauses: list[float] = []
        self.tries: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def pause(self, seconds: float, *, alarm: bool = True) -> None:
        assert alarm  # lock()'s waits honour alarm()
        self.pauses.append(seconds)
        self.now += seconds

    def busy(self, *args: object) -> bool:
        self.tries.append(self.now)
        return False


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()

    class FakeTime:
        monotonic = staticmethod(fake.monotonic)

    monkeypatch.setattr(_api, "time", FakeTime)
    monkeypatch.setattr(_retry, "time", FakeTime)
    from perlcompat.perl import clock as _clock

    monkeypatch.setattr(_clock, "pause", fake.pause)
    from perlcompat.locks.methods import mkdir as _mkdir

    monkeypatch.setattr(_mkdir.MkdirBackend, "try_acquire", fake.busy)
    monkeypatch.setattr(_mkdir.MkdirBackend, "break_stale", lambda self: False)
    monkeypatch.delenv("PERLCOMPAT_LOCK_POLL", raising=False)
    monkeypatch.setattr(_retry, "jitter", lambda: 1.0)  # the jitter's mean; tested below
    return fake


@pytest.mark.parametrize(("retry", "tries"), [(5, 5), (2, 2), (1, 1), (0, 1)])
def test_patience_is_the_subs_tries_and_sleeps(
    clock: FakeClock, tmp_path: Path, retry: int, tries: int
) -> None:
    # seed 003: `while (!mkdir) { return 0 if --$retry <= 0; sleep 1 }`: 5 tries, 4 sleeps
    assert lock(str(tmp_path / "lk"), retry=retry, wait=1, poll=1) == 0
    assert int(OS_ERROR) == errno.EWOULDBLOCK
    assert len(clock.tries) == tries
    assert clock.pauses == [1.0] * (tries - 1)
    assert clock.tries[-1] - clock.tries[0] == (tries - 1) * 1.0


def test_poll_jitter_keeps_the_cadence_on_average(
    clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    factors = iter([0.5, 1.4999, 0.75, 1.25, 1.0, 1.0])
    monkeypatch.setattr(_retry, "jitter", lambda: next(factors))
    with pytest.raises(LockTimeout):
        Lock(str(tmp_path / "lk"), timeout=4, poll=1.0).acquire()
    # 0.5 + 1.4999 + 0.75 + 1.25 = 3.9999, then the rest of the patience: one more try
    assert clock.pauses[:4] == pytest.approx([0.5, 1.4999, 0.75, 1.25])
    assert clock.pauses[4] == pytest.approx(0.0001)
    assert len(clock.tries) == 6
    assert all(0.5 <= REAL_JITTER() < 1.5 for _ in range(1000))


def test_default_backoff_gives_up_after_retry_minus_one_waits(
    clock: FakeClock, tmp_path: Path
) -> None:
    start = clock.now
    assert lock(str(tmp_path / "lk"), retry=5, wait=1) == 0
    assert clock.now - start == pytest.approx(4.0)
    assert len(clock.tries) > 50  # short pauses: a release is seen within milliseconds
    assert max(clock.pauses) <= _api.BACKOFF_MAX * 1.5


def test_poll_from_the_environment(
    clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERLCOMPAT_LOCK_POLL", "0.5")
    with pytest.raises(LockTimeout):
        Lock(str(tmp_path / "lk"), timeout=2).acquire()
    assert clock.pauses == [0.5] * 4
    assert len(clock.tries) == 5
    monkeypatch.setenv("PERLCOMPAT_LOCK_POLL", "soon")
    with pytest.raises(ValueError, match="PERLCOMPAT_LOCK_POLL"):
        Lock(str(tmp_path / "lk"))
    with pytest.raises(ValueError, match="poll"):
        Lock(str(tmp_path / "lk"), poll=0)


def test_timeout_in_seconds(clock: FakeClock, tmp_path: Path) -> None:
    start = clock.now
    with pytest.raises(LockTimeout):
        Lock(str(tmp_path / "lk"), timeout=2.5).acquire()
    assert clock.now - start == pytest.approx(2.5)
    start = clock.now
    with pytest.raises(LockTimeout):
        Lock(str(tmp_path / "lk"), timeout=2.5).acquire(timeout=0.75)
    assert clock.now - start == pytest.approx(0.75)
    with pytest.raises(ValueError, match="not both"):
        Lock(str(tmp_path / "lk"), timeout=1, retry=3)
    with pytest.raises(ValueError, match="timeout"):
        Lock(str(tmp_path / "lk"), timeout=-2)
    assert Lock(str(tmp_path / "lk"), timeout=None).patience() is None
    assert Lock(str(tmp_path / "lk"), timeout=-1).patience() is None
    assert Lock(str(tmp_path / "lk")).patience() == 4.0


def test_time_out_is_a_timeout_error(tmp_path: Path) -> None:
    name = str(tmp_path / "lk")
    with Lock(name):
        exc = raised_in_thread(lambda: Lock(name, timeout=0).acquire())
    assert isinstance(exc, LockTimeout)
    assert isinstance(exc, TimeoutError)
    assert isinstance(exc, LockError)
    assert isinstance(exc, OSError)
    assert exc.errno == errno.EWOULDBLOCK
    assert perlcompat.LockTimeout is LockTimeout
    with Semaphore(str(tmp_path / "s"), 1):
        exc = raised_in_thread(lambda: Semaphore(str(tmp_path / "s"), 1).acquire(timeout=0))
    assert isinstance(exc, LockTimeout)


@pytest.mark.parametrize("forever", [None, -1])
def test_acquire_timeout_none_or_minus_one_waits_for_ever(tmp_path: Path, forever: None) -> None:
    # retry=1 alone would try once; timeout=None/-1 must keep waiting until the release
    name = str(tmp_path / "lk")
    holder = Lock(name).acquire()
    waiter = Lock(name, retry=1, wait=0)
    tries = 0
    waited = threading.Event()
    real_try = waiter._backend.try_acquire

    def counting_try() -> bool:
        nonlocal tries
        tries += 1
        if tries == 20:
            waited.set()
        return real_try()

    waiter._backend.try_acquire = counting_try  # type: ignore[method-assign]
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(acquire_and_release(waiter, forever)))
    thread.start()
    assert waited.wait(60)
    holder.release()
    thread.join(60)
    assert result == ["acquired"]
    assert tries >= 20  # it kept trying past a one-try patience until the release


def acquire_and_release(waiter: Lock, forever: None) -> object:
    try:
        waiter.acquire(timeout=forever)
    except OSError as exc:
        return exc
    waiter.release()
    return "acquired"


def test_options_are_typed_keywords(tmp_path: Path) -> None:
    # no **options anywhere on the way to a backend: mypy then flags a misspelled keyword
    import inspect

    from perlcompat.locks import contract

    functions: list[Callable[..., object]] = [
        Lock.__init__,
        lock,
        unlock,
        contract.Backend.__init__,
    ]
    for name in contract.names():
        functions.append(contract.backend_class(name).__init__)
    for function in functions:
        kinds = [p.kind for p in inspect.signature(function).parameters.values()]
        assert inspect.Parameter.VAR_KEYWORD not in kinds, function.__qualname__
    hints = inspect.signature(Lock.__init__).parameters
    assert {"mode", "held", "url", "poll", "timeout"} <= set(hints)
    with pytest.raises(TypeError, match="hled"):
        Lock(str(tmp_path / "x"), method="rename", hled="y")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="lock method 'mkdir' takes no option 'held'"):
        lock(str(tmp_path / "x"), held="y")
    with pytest.raises(TypeError, match="lock method 'rename' takes no option 'mode'"):
        Lock(str(tmp_path / "x"), method="rename", mode=0o700)


# -- the perlcompat logger ---------------------------------------------------------


def test_stale_removal_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    name = tmp_path / "lk"
    name.mkdir()
    old = time.time() - 600
    os.utime(name, (old, old))
    with caplog.at_level(logging.INFO, logger="perlcompat"):
        assert lock(str(name), retry=1) == 1
    assert unlock(str(name)) == 1
    records = [r for r in caplog.records if r.name == "perlcompat"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert "removed stale mkdir lock" in records[0].getMessage()
    assert str(name) in records[0].getMessage()


def test_expired_lock_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    held = Lock(str(tmp_path / "lk"), stale=30).acquire()
    held._since -= 31  # held past its stale limit, without sleeping 31 s
    with (
        caplog.at_level(logging.INFO, logger="perlcompat"),
        pytest.raises(perlcompat.ExpiredLockError),
    ):
        held.release()
    [record] = [r for r in caplog.records if r.name == "perlcompat"]
    assert record.levelno == logging.WARNING
    assert "past its stale limit" in record.getMessage()


def test_lock_cycle_never_imports_logging(tmp_path: Path) -> None:
    code = (
        "import sys, perlcompat\n"
        "d = sys.argv[1]\n"
        "assert perlcompat.lock(d + '/a') == 1 and perlcompat.unlock(d + '/a') == 1\n"
        "assert perlcompat.lock(d + '/b', method='flock') == 1\n"
        "assert perlcompat.unlock(d + '/b') == 1\n"
        "with perlcompat.Lock(d + '/c', method='symlink', timeout=1): pass\n"
        "print('logging' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert out.strip() == "False"


# -- unlock() finds this thread's lock whatever its method -------------------------


@pytest.mark.parametrize("method", ["symlink", "excl", "flock", "rename"])
def test_unlock_without_method_releases_any_method(tmp_path: Path, method: str) -> None:
    name = str(tmp_path / "lk")
    assert lock(name, method=method) == 1
    assert unlock(name) == 1
    assert int(OS_ERROR) == 0
    # released: someone else can take it at once
    assert lock(name, method=method, retry=0) == 1
    assert unlock(name, method=method) == 1


def test_unlock_of_a_lock_not_ours_names_its_method(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name = tmp_path / "lk"
    os.symlink(str(os.getppid()), name)  # seed 000's symlink lock, another process's
    with caplog.at_level(logging.INFO, logger="perlcompat"):
        assert unlock(str(name)) == 0
    assert int(OS_ERROR) == errno.ENOLCK
    assert os.path.islink(name)  # never touched
    [record] = [r for r in caplog.records if r.name == "perlcompat"]
    assert "symlink lock" in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="perlcompat"):
        assert unlock(str(tmp_path / "nothing")) == 0  # nothing there: nothing to say
    assert not [r for r in caplog.records if r.name == "perlcompat"]
