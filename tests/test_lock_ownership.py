"""Who may release a lock, and answers instead of hangs or crashes (issue 11).

* only the thread that took a lock releases it (``unlock()`` from another
  thread returns 0 with ENOLCK and leaves the lock);
* NaN/infinite/negative seconds are refused with a ValueError naming the argument;
* a release waits a bounded time for the remover lock (another program's
  ``flock -x DIR``), then releases a lock that is not stale and leaves one
  that is (the object still holds it then);
* a directory that can be written but not read (0733): unlock works and a
  dead lock there ages out;
* a pid that no process can have (>= 2**31) is an unknown owner, not a crash.

Checks that need an unprivileged user run in a forked child that drops to
uid/gid 65534 when the tests run as root (root bypasses permission checks).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from perlutil import Child, as_unprivileged, shared_directory

from perlcompat import (
    OS_ERROR,
    NotLockedError,
    Semaphore,
    lock,
    sem_acquire,
    sem_release,
    unlock,
)
from perlcompat.locks import cleanup as _cleanup, guards as _guards, owner as _owner
from perlcompat.locks.api import Lock

FLOCK = shutil.which("flock") or "/usr/bin/flock"


# -- 1. ownership is per process and thread -------------------------------------


def test_unlock_from_a_thread_that_does_not_hold_leaves_the_lock(tmp_path: Path) -> None:
    path = str(tmp_path / "lockdir")
    assert lock(path) == 1  # thread A
    results: dict[str, object] = {}

    def thread_b() -> None:
        results["lock"] = lock(path, retry=1, wait=0.1)
        results["unlock"] = unlock(path)
        results["errno"] = int(OS_ERROR)
        try:
            Lock(path).release()
        except NotLockedError as exc:
            results["release"] = exc.errno

    def thread_c() -> None:
        results["c"] = lock(path, retry=1, wait=0.1)

    for body in (thread_b, thread_c):
        worker = threading.Thread(target=body)
        worker.start()
        worker.join(30)
    assert results == {
        "lock": 0,
        "unlock": 0,
        "errno": errno.ENOLCK,
        "release": errno.ENOLCK,
        "c": 0,  # C did not get in while A is inside
    }
    assert os.path.isdir(path)
    assert unlock(path) == 1  # A's own unlock still works
    assert not os.path.exists(path)


def run_in_a_thread_with_the_ident_of(ident: int, native: int, work: Callable[[], None]) -> None:
    """Run *work* in a new thread that has the ended thread *ident*'s ident (idents are reused).

    An ident is the address of a thread's stack: glibc reuses the stack of a thread whose
    kernel task (*native*) is gone.  Wait for that, then start threads that stay alive, so
    that each takes another cached stack, until one has the ident."""
    task = f"/proc/self/task/{native}"
    deadline = time.monotonic() + 30
    while os.path.exists(task) and time.monotonic() < deadline:
        time.sleep(0.001)  # polls the kernel's own record of the task
    release = threading.Event()
    found: list[Callable[[], None]] = []
    done = threading.Event()
    threads: list[threading.Thread] = []

    def attempt(started: threading.Event) -> None:
        if threading.get_ident() == ident:
            found.append(work)
            started.set()
            try:
                work()
            finally:
                done.set()
            return
        started.set()
        release.wait()

    try:
        for _ in range(64):
            started = threading.Event()
            thread = threading.Thread(target=attempt, args=(started,))
            thread.start()
            threads.append(thread)
            started.wait()
            if found:
                done.wait()
                return
    finally:
        release.set()
        for thread in threads:
            thread.join()
    pytest.fail("no new thread was given the ended thread's ident")


def test_a_thread_given_an_ended_threads_ident_does_not_hold_its_locks(tmp_path: Path) -> None:
    """A thread that ends holding a lock keeps it until exit; a later thread given the same
    ident (Python reuses them) neither unlocks it nor takes it again as its holder."""
    path = str(tmp_path / "lk")
    shared = Lock(str(tmp_path / "obj"), timeout=0)
    ended: list[int] = []

    def take() -> None:
        ended.append(threading.get_ident())
        ended.append(threading.get_native_id())
        assert lock(path, retry=1) == 1
        shared.acquire()
        assert sem_acquire(str(tmp_path / "sem"), 1) == 1

    thread = threading.Thread(target=take)
    thread.start()
    thread.join()
    seen: dict[str, object] = {}

    def reuse() -> None:
        seen["lock"] = (lock(path, retry=1), int(OS_ERROR))
        seen["unlock"] = (unlock(path), int(OS_ERROR))
        with pytest.raises(NotLockedError):
            shared.release()
        with pytest.raises(TimeoutError):
            shared.acquire()
        seen["sem_release"] = (sem_release(str(tmp_path / "sem")), int(OS_ERROR))
        seen["sem_acquire"] = (sem_acquire(str(tmp_path / "sem"), 1, retry=1), int(OS_ERROR))

    run_in_a_thread_with_the_ident_of(ended[0], ended[1], reuse)
    assert seen == {
        "lock": (0, errno.EAGAIN),
        "unlock": (0, errno.ENOLCK),
        "sem_release": (0, errno.ENOLCK),
        "sem_acquire": (0, errno.EWOULDBLOCK),
    }
    assert os.path.isdir(path) and shared.is_locked
    _cleanup.release_all()  # the exit hook releases what the ended thread held
    assert not os.path.exists(path) and not shared.is_locked
    assert _cleanup.tracked() == []
    for key, slot in list(_cleanup._held.items()):  # (no cleanup frees a semaphore's slot)
        if key[0] == _cleanup.SEMAPHORE and key[1] == str(tmp_path / "sem"):
            slot._forget()  # the ended thread's slot (issue 34: not this thread's to release)
            del _cleanup._held[key]


def test_lock_release_from_another_thread_raises_and_keeps_the_lock(tmp_path: Path) -> None:
    held = Lock(str(tmp_path / "lk"), method="excl").acquire()
    caught: list[BaseException] = []

    def other() -> None:
        try:
            held.release()
        except BaseException as exc:
            caught.append(exc)

    worker = threading.Thread(target=other)
    worker.start()
    worker.join(30)
    assert len(caught) == 1 and isinstance(caught[0], NotLockedError)
    assert "another thread" in str(caught[0])
    assert held.is_locked and (tmp_path / "lk").exists()
    held.release()
    assert not (tmp_path / "lk").exists()


# -- 2. NaN, infinity, negative seconds -------------------------------------------

BAD_SECONDS = """
import sys, threading
from perlcompat import Lock, Semaphore, lock
nan, inf = float("nan"), float("inf")
busy, sem = sys.argv[1], sys.argv[2]
holder = Lock(busy)
taken = threading.Event()
def hold():  # another thread holds both: the lock and the one slot are busy
    holder.acquire()
    Semaphore(sem, 1).acquire()
    taken.set()
    threading.Event().wait()
threading.Thread(target=hold, daemon=True).start()
taken.wait()
cases = {
    "lock wait nan": lambda: lock(busy, wait=nan),
    "lock wait inf": lambda: lock(busy, wait=inf),
    "lock wait -1": lambda: lock(busy, wait=-1),
    "lock stale nan": lambda: lock(busy, stale=nan),
    "lock stale inf": lambda: lock(busy, stale=inf),
    "acquire timeout nan": lambda: Lock(busy).acquire(timeout=nan),
    "acquire timeout inf": lambda: Lock(busy).acquire(timeout=inf),
    "acquire timeout -5": lambda: Lock(busy).acquire(timeout=-5),
    "semaphore wait nan": lambda: Semaphore(sem, 1, wait=nan).acquire(),
    "semaphore timeout nan": lambda: Semaphore(sem, 1).acquire(timeout=nan),
    "semaphore wait inf": lambda: Semaphore(sem, 1, wait=inf).acquire(),
    "extend nan": lambda: holder.extend(nan),
}
for name, case in cases.items():
    try:
        case()
        print(name, "returned", flush=True)
    except ValueError as exc:
        print(name, "ValueError", str(exc).split()[0], flush=True)
print("forever", Lock(busy, retry=None).patience(), flush=True)
"""


def test_nan_and_infinite_seconds_are_refused_naming_the_argument(tmp_path: Path) -> None:
    child = Child.python(BAD_SECONDS, str(tmp_path / "busy"), str(tmp_path / "sem"))
    try:
        status, out, err = child.wait()  # the old code never returned from the first case
    finally:
        child.kill()
    assert status == 0, err
    assert out.splitlines() == [
        "lock wait nan ValueError wait",
        "lock wait inf ValueError wait",
        "lock wait -1 ValueError wait",
        "lock stale nan ValueError stale",
        "lock stale inf ValueError stale",
        "acquire timeout nan ValueError timeout",
        "acquire timeout inf ValueError timeout",
        "acquire timeout -5 ValueError timeout",
        "semaphore wait nan ValueError wait",
        "semaphore timeout nan ValueError timeout",
        "semaphore wait inf ValueError wait",
        "extend nan ValueError seconds",
        "forever None",  # retry=None (and timeout=None) still mean "for ever"
    ]


def test_timeout_none_and_default_still_work(tmp_path: Path) -> None:
    held = Lock(str(tmp_path / "lk"), retry=1, wait=0.01).acquire(timeout=None)
    with pytest.raises(OSError):
        Lock(str(tmp_path / "lk"), retry=1, wait=0.01).acquire()  # same thread: EDEADLK
    held.release()
    sem = Semaphore(str(tmp_path / "s"), 1)
    sem.acquire(timeout=None)
    sem.release()


# -- 3. the release waits a bounded time for the remover lock ---------------------


class DirFlock:
    """util-linux ``flock -x DIR`` holding the directory's flock until closed.

    It lets go by itself after *limit* seconds, so code that waits for it
    unboundedly (the old release) finishes late instead of hanging the test.
    """

    def __init__(self, directory: Path, limit: float = 15) -> None:
        self.proc = subprocess.Popen(
            [FLOCK, "-x", str(directory), "-c", "echo held; exec cat >/dev/null"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == b"held\n"
        self.watchdog = threading.Timer(limit, self.close)
        self.watchdog.start()

    def close(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()
        self.proc.wait(30)

    def __enter__(self) -> DirFlock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.watchdog.cancel()
        self.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def test_unlock_does_not_wait_for_another_programs_flock_on_the_directory(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "lockdir")
    with DirFlock(tmp_path):
        assert lock(path) == 1
        began = time.monotonic()
        assert (unlock(path), int(OS_ERROR)) == (1, 0)
        took = time.monotonic() - began
    assert took < 5  # the old code waited for the other program: 15 s here
    assert took >= _guards.RELEASE_WAIT  # it did wait for a remover first
    assert not os.path.exists(path)  # not stale, so released unguarded (identity re-checked)


def test_a_stale_lock_is_left_when_the_remover_lock_stays_busy(tmp_path: Path) -> None:
    path = str(tmp_path / "lockdir")
    assert lock(path, stale=0.2) == 1
    time.sleep(0.3)  # the lock is now past its stale age (it is breakable)
    with DirFlock(tmp_path):
        began = time.monotonic()
        assert (unlock(path), int(OS_ERROR)) == (0, errno.EWOULDBLOCK)
        assert time.monotonic() - began < _guards.RELEASE_WAIT + 5
        assert os.path.isdir(path)  # a remover may be between its look and its removal
    # the release failed, so the lock is still held by its Lock: unlock again
    assert (unlock(path), int(OS_ERROR)) == (0, errno.ETIMEDOUT)  # released, but expired
    assert not os.path.exists(path)
    assert (unlock(path), int(OS_ERROR)) == (0, errno.ENOLCK)


def test_a_failed_release_keeps_the_lock_held_by_its_object(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    held = Lock(str(path), method="excl", stale=0.2).acquire()
    time.sleep(0.3)
    with DirFlock(tmp_path):
        with pytest.raises(OSError) as caught:
            held.release()
        assert caught.value.errno == errno.EWOULDBLOCK
        assert held.is_locked  # the lock is on disk, so the object still holds it
        assert path.exists()
    with pytest.raises(OSError) as expired:
        held.release()
    assert expired.value.errno == errno.ETIMEDOUT  # held past stale, but removed now
    assert not held.is_locked and not path.exists()


def test_a_failed_unlock_does_not_wedge_later_locks_of_that_name(tmp_path: Path) -> None:
    # issue 22 item 8: after one failed unlock every later lock() of the name returned
    # EDEADLK at once, for ever; now the next lock() finishes the pending release first
    path = str(tmp_path / "lockdir")
    assert lock(path, stale=0.2) == 1
    time.sleep(0.3)  # past stale: a release waits for the remover lock, then gives up
    with DirFlock(tmp_path):
        assert (unlock(path), int(OS_ERROR)) == (0, errno.EWOULDBLOCK)
    assert os.path.isdir(path)  # still ours, still on disk
    assert (lock(path, retry=1), int(OS_ERROR)) == (1, 0)  # was (0, EDEADLK)
    assert (lock(path, retry=1), int(OS_ERROR)) == (0, errno.EDEADLK)  # a real nested lock
    assert (unlock(path), int(OS_ERROR)) == (1, 0)
    assert not os.path.exists(path)
    assert (unlock(path), int(OS_ERROR)) == (0, errno.ENOLCK)


def test_a_pending_release_is_busy_until_stale_then_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "lockdir")
    held = Lock(path, stale=0.5).acquire()

    def refused() -> None:
        raise OSError(errno.EIO, "the release cannot remove it")

    monkeypatch.setattr(held.backend, "_undo", refused)  # every release of it fails
    with pytest.raises(OSError) as caught:
        held.release()
    assert caught.value.errno == errno.EIO and held.is_locked
    # within stale: our own lock is still on disk, so lock() waits as on a busy one
    assert (lock(path, retry=1, stale=0.5), int(OS_ERROR)) == (0, errno.EWOULDBLOCK)
    with pytest.raises(OSError) as busy:
        Lock(path, stale=0.5).acquire(timeout=0)
    assert "release of it failed and is pending" in str(busy.value)
    assert held.is_locked and os.path.isdir(path)
    time.sleep(0.6)  # the hold is now past stale: anyone may break it
    # the hold is dropped (WARNING) and the lock broken as anyone's stale lock
    assert (lock(path, retry=20, wait=0.05, stale=0.5), int(OS_ERROR)) == (1, 0)
    assert not held.is_locked
    assert "no longer holds it" in caplog.text
    assert (unlock(path), int(OS_ERROR)) == (1, 0)
    assert not os.path.exists(path)
    with pytest.raises(NotLockedError):
        held.release()  # its hold was dropped


def test_release_guard_waits_for_a_short_remover_and_is_bounded(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    remover = _guards.guard(path, exclusive=True)
    assert remover is not None
    timer = threading.Timer(0.05, _guards.unguard, (remover,))
    timer.start()
    shared = _guards.release_guard(path, patience=60)  # waits for the remover to finish
    timer.join()
    assert shared is not None
    _guards.unguard(shared)
    remover = _guards.guard(path, exclusive=True)
    try:
        began = time.monotonic()
        with pytest.raises(OSError) as caught:
            _guards.release_guard(path, patience=0.2)
        assert caught.value.errno == errno.EWOULDBLOCK
        assert 0.2 <= time.monotonic() - began < 5
    finally:
        _guards.unguard(remover)


# -- 4. a directory that can be written but not read ------------------------------


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory under /tmp that an unprivileged uid can reach."""
    with shared_directory() as base:
        yield base


def test_a_writable_unreadable_directory_unlocks_and_recovers_dead_locks(
    shared_dir: Path,
) -> None:
    locks = shared_dir / "locks"
    locks.mkdir()
    dead = locks / "old.lock"
    dead.mkdir()  # seed 003's lock of a process that died an hour ago
    os.utime(dead, (time.time() - 3600, time.time() - 3600))
    # root's 0733 is write+search for the others; as a user, 0333 does it to ourselves
    locks.chmod(0o733 if os.geteuid() == 0 else 0o333)

    def check() -> list[object]:
        out: list[object] = []
        try:
            os.listdir(locks)
            out.append("readable")
        except PermissionError:
            out.append("unreadable")
        out += [lock(str(locks / "new.lock")), unlock(str(locks / "new.lock")), int(OS_ERROR)]
        out += [lock(str(dead), retry=1, wait=0.5), unlock(str(dead)), int(OS_ERROR)]
        return out

    assert as_unprivileged(check) == ["unreadable", 1, 1, 0, 1, 1, 0]
    locks.chmod(0o755)
    assert not (locks / "new.lock").exists() and not dead.exists()


# -- 5. a pid no process can have -------------------------------------------------


def test_a_pid_beyond_2_31_is_an_unknown_owner(tmp_path: Path) -> None:
    (tmp_path / "x.lock").symlink_to("99999999999")
    (tmp_path / "y.lock").symlink_to("\u00b2")  # str.isdigit() but no int()
    assert (lock(str(tmp_path / "x.lock"), method="symlink", retry=1, wait=0.05)) == 0
    assert int(OS_ERROR) == errno.EWOULDBLOCK  # busy: its owner is unknown, it is fresh
    assert lock(str(tmp_path / "y.lock"), method="symlink", retry=1, wait=0.05) == 0
    (tmp_path / "e.lock").write_text("perlcompat excl pid=99999999999 host=h start=1 token=1\n")
    (tmp_path / "m.lock").mkdir()
    assert _owner.alive(2**31) is None and _owner.alive(2**70) is None
    assert _owner.pid_of("99999999999") is None and _owner.pid_of("\u00b2") is None
    assert _owner.pid_of(str(2**31 - 1)) == 2**31 - 1
    result = subprocess.run(
        [sys.executable, "-m", "perlcompat", "locks", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent)),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    import json

    rows = {row["name"]: row for row in json.loads(result.stdout)["locks"]}
    assert rows["x.lock"]["method"] == "symlink" and rows["x.lock"]["pid"] is None
    assert rows["x.lock"]["alive"] is None
    assert rows["e.lock"]["method"] == "excl" and rows["e.lock"]["alive"] is None
    assert set(rows) >= {"x.lock", "e.lock", "m.lock"}


def test_seconds_validation_helper_messages() -> None:
    from perlcompat.perl.clock import check_seconds

    assert check_seconds("wait", 0) == 0.0
    with pytest.raises(ValueError, match=r"^stale must be a number of seconds > 0"):
        check_seconds("stale", 0, zero=False)
    with pytest.raises(ValueError, match=r"^wait must be a finite number"):
        check_seconds("wait", float("-inf"))
    with pytest.raises(ValueError, match=r"^wait must be a number of seconds, not True"):
        check_seconds("wait", True)
