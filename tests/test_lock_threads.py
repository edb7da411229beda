"""One ``Lock`` or ``Semaphore`` object shared by threads; a lock re-entered from a signal handler.

Issue 34:

* one ``Lock`` object (or the ``@Lock(...)`` decorator) shared by threads serializes them:
  one holder, the others wait (threading's and portalocker's rule), no
  DuplicateLockError/NotLockedError, exact counts, and the lock is free afterwards
  for another process;
* one ``Semaphore`` object shared by threads gives each thread its own slot and
  loses none;
* ``release()`` (or ``acquire()``) re-entered from a signal handler installed after
  the first lock, in the middle of this thread's release, refresh or take, never
  waits for itself.

The thread tests shorten the interpreter's switch interval so that threads
interleave inside the lock's own steps; each run is a few hundred calls.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from perlcompat import LockTimeout, NotLockedError, Semaphore
from perlcompat.locks.api import Lock

THREADS = 4
CALLS = 150


@pytest.fixture()
def interleaved() -> Iterator[None]:
    """Threads switch every 10 µs: a race inside a lock's step shows up in a few calls."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def run_threads(work: Callable[[], None]) -> list[str]:
    """Run *work* in THREADS threads at once; the errors they raised, by name."""
    errors: list[str] = []
    start = threading.Barrier(THREADS)

    def body() -> None:
        start.wait()
        try:
            work()
        except Exception as exc:  # collected, asserted empty
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=body) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    return errors


def free_for_another_process(path: str, method: str) -> bool:
    """True if another process takes the lock at *path* at once (one try)."""
    code = (
        "import sys\n"
        "from perlcompat.locks.api import Lock\n"
        "lk = Lock(sys.argv[1], method=sys.argv[2], timeout=0)\n"
        "try:\n"
        "    lk.acquire()\n"
        "except TimeoutError:\n"
        "    sys.exit(3)\n"
        "lk.release()\n"
    )
    done = subprocess.run([sys.executable, "-c", code, path, method], timeout=120)
    assert done.returncode in (0, 3)
    return done.returncode == 0


# -- 1. one Lock object, many threads ------------------------------------------------


@pytest.mark.parametrize("method", ["flock", "mkdir", "excl"])
def test_a_decorator_shared_by_threads_serializes_them(
    tmp_path: Path, method: str, interleaved: None
) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method=method, timeout=60)
    state = {"count": 0, "inside": 0, "most": 0}

    @lk
    def bump() -> None:
        state["inside"] += 1
        state["most"] = max(state["most"], state["inside"])
        count = state["count"]
        time.sleep(0)  # another thread runs here if it got in too
        state["count"] = count + 1
        state["inside"] -= 1

    def work() -> None:
        for _ in range(CALLS):
            bump()
            time.sleep(0)

    errors = run_threads(work)
    assert errors == []
    assert state["count"] == THREADS * CALLS
    assert state["most"] == 1
    assert not lk.is_locked
    assert lk.lock_counter == 0
    assert free_for_another_process(path, method)


def test_a_with_block_shared_by_threads_counts_exactly(tmp_path: Path, interleaved: None) -> None:
    path = str(tmp_path / "lk")
    lk = Lock(path, method="flock", timeout=60)
    counter = tmp_path / "counter"
    counter.write_text("0")

    def work() -> None:
        for _ in range(CALLS):
            with lk:
                assert lk.is_locked
                value = int(counter.read_text())
                counter.write_text(str(value + 1))

    assert run_threads(work) == []
    assert counter.read_text() == str(THREADS * CALLS)
    assert free_for_another_process(path, "flock")


def test_another_thread_waits_for_the_holder_then_gets_the_object(tmp_path: Path) -> None:
    lk = Lock(str(tmp_path / "lk"), method="flock", timeout=60)
    taken = threading.Event()
    let_go = threading.Event()
    seen: dict[str, object] = {}

    def holder() -> None:
        with lk:
            taken.set()
            let_go.wait(60)

    def other() -> None:
        try:
            lk.acquire(timeout=0.05)
        except LockTimeout as exc:
            seen["busy"] = str(exc)
        try:
            lk.release()
        except NotLockedError as exc:
            seen["release"] = str(exc)
        let_go.set()
        with lk:  # waits for the holder's release
            seen["held"] = lk.is_locked, lk.lock_counter

    first = threading.Thread(target=holder)
    first.start()
    assert taken.wait(60)
    second = threading.Thread(target=other)
    second.start()
    second.join(120)
    first.join(120)
    assert "another thread" in str(seen["busy"])
    assert "another thread" in str(seen["release"])
    assert seen["held"] == (True, 1)
    assert not lk.is_locked


def test_the_holder_thread_still_reenters(tmp_path: Path) -> None:
    lk = Lock(str(tmp_path / "lk"), method="flock", timeout=60)
    with lk, lk:
        assert lk.lock_counter == 2
    assert not lk.is_locked


# -- 2. one Semaphore object, many threads ---------------------------------------------


def test_a_semaphore_shared_by_threads_loses_no_slot(tmp_path: Path, interleaved: None) -> None:
    name = str(tmp_path / "sem")
    sem = Semaphore(name, THREADS, retry=None)
    in_use: set[int] = set()
    guard = threading.Lock()

    def work() -> None:
        for _ in range(CALLS):
            with sem:
                slot = sem.slot
                assert slot is not None
                with guard:
                    assert slot not in in_use  # each thread its own slot
                    in_use.add(slot)
                time.sleep(0)
                with guard:
                    in_use.discard(slot)
            assert not sem.is_locked

    assert run_threads(work) == []
    others = [Semaphore(name, THREADS) for _ in range(THREADS)]
    assert [other.try_acquire() for other in others] == [True] * THREADS
    for other in others:
        other.release()


# -- 3. re-entered from a signal handler ---------------------------------------------

# The handler is installed after the first lock (so it replaces perlcompat's own for
# TERM); the step in the middle of which it runs sends the signal to this process.
SIGNAL_SCRIPT = """
import os, signal, sys
from perlcompat.locks.api import Lock
path, method, name, step, call = sys.argv[1:]
lk = Lock(path, method=method, timeout=5)
lk.acquire(); lk.release()
signum = getattr(signal, name)
seen = []
def handler(number, frame):
    try:
        lk.acquire() if call == "acquire" else lk.release()
        seen.append("returned")
    except Exception as exc:
        seen.append(type(exc).__name__)
signal.signal(signum, handler)
backend = lk.backend
real = getattr(backend, step)
def interrupted(*args):
    setattr(backend, step, real)  # once
    os.kill(os.getpid(), signum)
    return real(*args)
setattr(backend, step, interrupted)
if step == "try_acquire":
    with lk:
        pass
else:
    lk.acquire()
    if step == "refresh":
        lk.refresh()  # the handler's release is done when the refresh returns
    if lk.is_locked:
        lk.release()
again = Lock(path, method=method, timeout=0)
again.acquire()
again.release()
print(" ".join(seen), lk.is_locked)
"""


@pytest.mark.parametrize("signame", ["SIGUSR1", "SIGALRM", "SIGTERM"])
@pytest.mark.parametrize(
    ("method", "step", "call", "expected"),
    [
        ("flock", "release", "release", "returned False"),  # the release under way finishes
        ("mkdir", "release", "release", "returned False"),
        ("mkdir", "refresh", "release", "returned False"),  # deferred to the refresh's end
        ("flock", "try_acquire", "acquire", "DuplicateLockError False"),  # refused at once
    ],
)
def test_a_signal_handler_reentering_the_lock_never_waits_for_itself(
    tmp_path: Path, signame: str, method: str, step: str, call: str, expected: str
) -> None:
    args = [str(tmp_path / "lk"), method, signame, step, call]
    try:
        done = subprocess.run(
            [sys.executable, "-c", SIGNAL_SCRIPT, *args], capture_output=True, timeout=120
        )
    except subprocess.TimeoutExpired:  # (killed by subprocess.run)
        pytest.fail(f"{call}() from a {signame} handler mid-{step} hung")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == expected.split()
    assert not os.path.exists(tmp_path / "lk") or method == "flock"


def test_two_objects_of_one_path_never_both_look_locked(tmp_path: Path, interleaved: None) -> None:
    """``is_locked`` turns False when the release starts, before another object can take it."""
    path = str(tmp_path / "lk")
    first, second = Lock(path, method="flock", timeout=60), Lock(path, method="flock", timeout=60)

    def work(mine: Lock, other: Lock) -> Callable[[], None]:
        def loop() -> None:
            for _ in range(CALLS):
                with mine:
                    assert mine.is_locked
                    assert not other.is_locked

        return loop

    pairs = [(first, second), (second, first)] * (THREADS // 2)
    errors: list[str] = []
    threads = [threading.Thread(target=_collect(work(m, o), errors)) for m, o in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert not first.is_locked and not second.is_locked


def _collect(work: Callable[[], None], errors: list[str]) -> Callable[[], None]:
    def body() -> None:
        try:
            work()
        except Exception as exc:  # collected, asserted empty
            errors.append(f"{type(exc).__name__}: {exc}")

    return body


@pytest.mark.parametrize("method", ["flock", "mkdir"])
def test_a_forced_release_leaves_each_threads_with_exit_a_no_op(
    tmp_path: Path, method: str
) -> None:
    """Thread A forces the release inside ``with lk:``; thread B then takes the same object:
    A's ``with`` exit is A's own owed no-op, not NotLockedError, and B's hold stays whole."""
    lk = Lock(str(tmp_path / "x.lock"), method=method, timeout=30)
    forced, b_holds, a_left = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def a() -> None:
        try:
            with lk:
                lk.release(force=True)
                forced.set()
                assert b_holds.wait(30)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            a_left.set()

    def b() -> None:
        try:
            assert forced.wait(30)
            with lk:
                b_holds.set()
                assert a_left.wait(30)
                assert lk.is_locked
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert not lk.is_locked
    with lk:  # free again, for this thread too
        pass
