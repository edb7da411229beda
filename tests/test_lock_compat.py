"""``Lock`` in the Python lock libraries' shapes (issue 34, ``locks.compat``).

* ``is_singleton=True`` (filelock): one object per path and class, ``__init__`` run
  once, a call with other arguments refused naming them;
* ``lk.stale`` set after construction (flufl.lock's ``lifetime``) is the age the
  object's own waits break a lock at; ``refresh(stale)``, ``refresh(force=True)``;
* ``expiration`` (when the hold turns stale), ``details`` (host, pid, path of the
  holder, read from the lock), ``hostname`` (flufl.lock's names).
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from perlcompat import ExpiredLockError, LockTimeout, NotLockedError
from perlcompat.locks.api import Lock


def flock_busy(path: str) -> bool:
    """True if another process cannot flock *path* at once."""
    code = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except BlockingIOError:\n    sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, path], timeout=60, check=False)
    assert done.returncode in (0, 3)
    return done.returncode == 3


@pytest.mark.parametrize("method", ["flock", "excl", "mkdir"])
def test_is_singleton_gives_one_object_per_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.chdir(tmp_path)
    first = Lock(str(tmp_path / "lk"), method=method, is_singleton=True, timeout=2)
    assert first.is_singleton is True
    again = Lock("lk", method=method, is_singleton=True, timeout=2)  # the same path, relative
    assert again is first
    assert Lock(str(tmp_path / "lk"), method=method, timeout=2) is not first
    assert Lock(str(tmp_path / "other"), method=method, is_singleton=True, timeout=2) is not first
    with first:  # filelock's nested construction: re-entrant, released at the outer exit
        with Lock(str(tmp_path / "lk"), method=method, is_singleton=True, timeout=2) as inner:
            assert inner is first and inner.lock_counter == 2
        assert first.is_locked
    assert not first.is_locked


def test_is_singleton_refuses_other_arguments_and_runs_init_once(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    first = Lock(path, method="flock", is_singleton=True, timeout=1)
    with pytest.raises(ValueError, match=r"differing arguments: timeout=2 \(was 1\)"):
        Lock(path, method="flock", is_singleton=True, timeout=2)
    assert Lock(path, method="excl", is_singleton=True, timeout=1) is not first  # another lock
    assert Lock(path, method="flock", is_singleton=True, timeout=1) is first
    calls = []

    class Counted(Lock):
        def __init__(self, name: str, **kwargs: Any) -> None:
            super().__init__(name, method="flock", **kwargs)
            calls.append(name)

    one = Counted(str(tmp_path / "c"), is_singleton=True)
    assert Counted(str(tmp_path / "c"), is_singleton=True) is one
    assert calls == [str(tmp_path / "c")]
    assert Lock(str(tmp_path / "c"), method="flock", is_singleton=True) is not one  # per class


def test_is_singleton_held_flocks_once_and_is_dropped_with_its_last_reference(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method="flock", is_singleton=True)
    with lk, Lock(path, method="flock", is_singleton=True):
        assert flock_busy(path)
    assert not flock_busy(path)
    gone = weakref.ref(lk)
    del lk
    gc.collect()
    assert gone() is None  # the registry keeps no object alive
    assert Lock(path, method="flock", is_singleton=True, timeout=3).timeout == 3  # a new one


def test_is_singleton_made_by_many_threads_at_once_is_one_object(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    made: list[Lock] = []
    start = threading.Barrier(8)

    def make() -> None:
        start.wait(60)
        for _ in range(50):
            made.append(Lock(path, method="flock", is_singleton=True))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(made) == 400
    assert len({id(lk) for lk in made}) == 1


def test_stale_set_after_construction_is_the_age_its_waits_break_at(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    code = (
        "import sys\nfrom perlcompat.locks.api import Lock\n"
        "lk = Lock(sys.argv[1], method='excl', stale=180)\nlk.acquire()\n"
        "print('held', flush=True)\nsys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        old = time.time() - 30
        os.utime(path, (old, old))  # held 30 s: young for stale=180, stale for 5
        lk = Lock(path, method="excl", stale=180)
        with pytest.raises(LockTimeout):
            lk.acquire(timeout=0.3)
        lk.stale = 5
        assert lk.stale == 5.0 and lk.backend.stale == 5.0
        lk.acquire(timeout=30)  # the live holder's 30-s-old lock is broken now
        lk.release()
    finally:
        holder.communicate("", timeout=60)


def test_stale_set_after_construction_is_checked(tmp_path: Path) -> None:
    lk = Lock(str(tmp_path / "lk"), method="excl", auto_refresh=1)
    for bad in (0, -1, float("nan"), "5"):
        with pytest.raises(ValueError, match="stale"):
            lk.stale = bad  # type: ignore[assignment]
    with pytest.raises(ValueError, match="longer than auto_refresh"):
        lk.stale = 0.5
    assert lk.stale == 180.0
    held = Lock(str(tmp_path / "held"), method="excl", stale=180)
    with pytest.raises(ExpiredLockError, match=r"past its stale limit 0\.01"), held:
        held.stale = 0.01
        time.sleep(0.05)  # the hold's age passes the new limit (time, not a signal)


@pytest.mark.parametrize("method", ["link", "excl", "mkdir", "flock"])
def test_expiration_is_when_the_hold_turns_stale(tmp_path: Path, method: str) -> None:
    lk = Lock(str(tmp_path / "lk"), method=method, stale=60)
    with pytest.raises(NotLockedError):
        lk.expiration  # noqa: B018
    before = datetime.now()
    with lk:
        first = lk.expiration
        assert before + timedelta(seconds=59) < first <= datetime.now() + timedelta(seconds=60)
        assert repr(lk) and lk.expiration == first  # the same until a refresh
        time.sleep(0.05)  # time passes (not a synchronisation)
        lk.refresh(stale=120)  # flufl.lock's refresh(lifetime)
        assert lk.stale == 120.0
        assert lk.expiration > first + timedelta(seconds=59)
    with pytest.raises(NotLockedError):
        lk.refresh()
    lk.refresh(force=True)  # not held: nothing (flufl.lock's unconditionally=True)


def test_details_name_who_holds_the_lock_at_the_path(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method="link")
    with pytest.raises(NotLockedError, match="no lock"):
        lk.details  # noqa: B018
    code = (
        "import os, sys\nfrom perlcompat.locks.api import Lock\n"
        "lk = Lock(sys.argv[1], method='link')\nlk.acquire()\n"
        "print(os.getpid(), flush=True)\nsys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        pid = int(holder.stdout.readline())
        assert lk.details == (lk.hostname, pid, path)  # another process's, read from the lock
    finally:
        holder.communicate("", timeout=60)
    with lk:
        assert lk.details == (socket.gethostname(), os.getpid(), path)


@pytest.mark.parametrize("method", ["flock", "excl", "mkdir"])
def test_thread_local_false_shares_one_count_across_threads(tmp_path: Path, method: str) -> None:
    from perlcompat.locks import cleanup

    path = str(tmp_path / "lk")
    lk = Lock(path, method=method, thread_local=False, timeout=30)
    for _ in range(2):  # filelock's test: two threads, each takes it and ends
        worker = threading.Thread(target=lk.acquire)
        worker.start()
        worker.join(60)
    assert lk.lock_counter == 2 and lk.is_locked
    assert cleanup.tracked() == [lk]  # (cleanup at exit or on a signal still finds it)
    with pytest.raises(LockTimeout):
        Lock(path, method=method, timeout=0).acquire()  # another object: busy
    lk.release()
    assert lk.lock_counter == 1 and lk.is_locked
    lk.release()  # by this thread, which did not take it
    assert not lk.is_locked and cleanup.tracked() == []
    with pytest.raises(NotLockedError):
        lk.release()
    Lock(path, method=method, timeout=0).acquire().lock.release()  # free again


def test_thread_local_false_many_threads_end_with_the_lock_free(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method="flock", thread_local=False, timeout=60)
    errors: list[BaseException] = []
    counts: list[int] = []
    start = threading.Barrier(4)

    def work() -> None:
        try:
            start.wait(60)
            for _ in range(150):
                with lk:
                    counts.append(lk.lock_counter)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert len(counts) == 600 and min(counts) >= 1 and max(counts) <= 4
    assert lk.lock_counter == 0 and not lk.is_locked
    assert not flock_busy(path)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_thread_local_false_release_from_a_handler_mid_take_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method="flock", thread_local=False)
    other = Lock(path, method="flock")
    taken = threading.Event()
    done = threading.Event()

    def hold() -> None:
        with other:
            taken.set()
            done.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(60)
    seen: list[BaseException] = []
    entered: list[bool] = []

    def handler(signum: int, frame: object) -> None:
        try:
            lk.release()
        except NotLockedError as exc:
            seen.append(exc)
        gate = lk._gate
        assert gate is not None
        probe = threading.Thread(target=lambda: entered.append(gate.try_take()))
        probe.start()  # another thread must not get into the object mid-take
        probe.join(60)
        done.set()  # the holder lets go: the wait under way gets the lock

    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        lk.acquire(timeout=60)  # the handler's release never took the gate from this wait
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    holder.join(60)
    assert entered == [False]
    assert len(seen) == 1 and "being taken by this thread" in str(seen[0])
    assert lk.lock_counter == 1
    got: list[int] = []
    worker = threading.Thread(target=lambda: got.append(lk.acquire(timeout=5).lock_counter))
    worker.start()
    worker.join(60)
    assert got == [2]  # the gate was left once the wait ended: another thread counts
    lk.release(force=True)
    assert not flock_busy(path)


def test_is_singleton_keys_on_the_lock_it_resolves_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the key was abspath(name): root=a 'y' and root=b 'y' (two locks) raised ValueError,
    # a changed PERLCOMPAT_LOCK_ROOT gave the old lock, a redis key 'q/../jobs' got 'jobs'
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    one = Lock("y", root=str(tmp_path / "a"), method="flock", is_singleton=True, timeout=1)
    two = Lock("y", root=str(tmp_path / "b"), method="flock", is_singleton=True, timeout=1)
    assert one is not two and one.path != two.path
    for same in (str(tmp_path / "a" / "y"), "a/y", "link/y"):
        assert Lock(same, method="flock", is_singleton=True, timeout=1) is one
    monkeypatch.setenv("PERLCOMPAT_LOCK_ROOT", str(tmp_path / "b"))
    assert Lock("z", method="flock").path == str(tmp_path / "b" / "z")
    assert Lock("z", method="flock", is_singleton=True).path == str(tmp_path / "b" / "z")
    monkeypatch.delenv("PERLCOMPAT_LOCK_ROOT")
    url = "redis://127.0.0.1:1/0"  # (no server needed: nothing is locked here)
    jobs = Lock("jobs", url=url, is_singleton=True)
    other = Lock("q/../jobs", url=url, is_singleton=True)
    assert other is not jobs and (jobs.path, other.path) == ("jobs", "q/../jobs")
    assert Lock("jobs", method="redis", url=url, is_singleton=True) is jobs

    class Passing(Lock):  # a subclass passing its arguments through: keyed alike
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)

    first = Passing(name=str(tmp_path / "p1"), method="flock", is_singleton=True)
    second = Passing(name=str(tmp_path / "p2"), method="flock", is_singleton=True)
    assert first is not second
    assert Passing("p1", method="flock", is_singleton=True) is first


@pytest.mark.skipif(sys.platform == "win32", reason="os.fork")
def test_is_singleton_made_in_a_child_forked_while_another_is_made(tmp_path: Path) -> None:
    # the registry's lock, held by another thread at the fork, stayed held in the child
    from perlcompat.locks import compat

    Lock(str(tmp_path / "warm"), method="flock", is_singleton=True)  # (modules imported)
    with compat._making:  # as while another thread runs a singleton's __init__
        pid = os.fork()
        if pid == 0:  # pragma: no cover  (the child)
            code = 1
            try:
                signal.alarm(10)  # a hang ends the child (killed by SIGALRM)
                Lock(str(tmp_path / "child"), method="flock", is_singleton=True)
                code = 7
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7, status


def test_is_singleton_with_auto_refresh_is_dropped_with_its_last_reference(
    tmp_path: Path,
) -> None:
    # the auto_refresh thread held the object: released and dropped, the next call with
    # another timeout raised ValueError (differing arguments)
    path = str(tmp_path / "lk")
    for _ in range(5):
        lk = Lock(path, method="excl", is_singleton=True, timeout=1, auto_refresh=0.02)
        with lk:
            since = lk._since
            deadline = time.monotonic() + 30
            while lk._since == since and time.monotonic() < deadline:
                time.sleep(0.005)  # until the auto_refresh thread has refreshed once
            assert lk._since != since
        gone = weakref.ref(lk)
        del lk
        assert gone() is None
        assert Lock(path, method="excl", is_singleton=True, timeout=2).timeout == 2


def test_refresh_sets_a_checked_stale_held_or_not(tmp_path: Path) -> None:
    # refresh(30, force=True) not held dropped the 30; refresh(nan, force=True) took NaN;
    # refresh(-5) not held raised NotLockedError; stale=1e12 was taken and expiration overflowed
    from perlcompat.locks.options import MAX_STALE

    lk = Lock(str(tmp_path / "lk"), method="excl", stale=180)
    lk.refresh(30, force=True)
    assert lk.stale == 30.0 and lk.backend.stale == 30.0
    for bad in (float("nan"), -5, 0, 1e12, 1e308):
        with pytest.raises(ValueError, match="stale"):
            lk.refresh(bad, force=True)
        with pytest.raises(ValueError, match="stale"):
            lk.refresh(bad)
        with pytest.raises(ValueError, match="stale"):
            lk.stale = bad
    with pytest.raises(NotLockedError):
        lk.refresh(40)
    assert lk.stale == 40.0  # set first, as flufl.lock's refresh(lifetime)
    with pytest.raises(ValueError, match="stale must be at most"):
        Lock(str(tmp_path / "big"), method="excl", stale=MAX_STALE * 2)
    longest = Lock(str(tmp_path / "long"), method="excl", stale=MAX_STALE)
    with longest:
        assert longest.expiration > datetime.now() + timedelta(days=3650)
