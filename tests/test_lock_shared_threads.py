"""``Lock(path, thread_local=False)`` (filelock's): one count of holds for every thread.

* ``perlcompat.fork()`` hands the child the holds the forking thread took, whichever
  thread touched the lock last; the other threads' holds are no-op releases in the parent;
* a thread given an ended holder thread's ident releases the hold as any other thread;
* after one thread's ``release(force=True)`` every other holder's ``with`` exit is a no-op;
* a release of a lock not held never waits for another thread's pending ``acquire()``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_lock_ownership import run_in_a_thread_with_the_ident_of

from perlcompat import NotLockedError
from perlcompat.locks.api import Lock

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork()")


def run(code: str, *args: str) -> list[str]:
    """Run *code* in a fresh interpreter; its output lines (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")[:-1]


OTHER = (
    "def other_can_take(path):\n"
    "    import subprocess, sys\n"
    "    code = 'import sys\\nfrom perlcompat.locks.api import Lock\\n'"
    " + 'l = Lock(sys.argv[1], timeout=0)\\nl.acquire(); l.release()'\n"
    "    return subprocess.run([sys.executable, '-c', code, path], capture_output=True,"
    " timeout=60).returncode == 0\n"
)

FORK_AFTER_A_WORKERS_NESTED_HOLD = OTHER + (
    "import os, sys, threading\n"
    "import perlcompat\n"
    "from perlcompat.locks.api import Lock\n"
    "path = sys.argv[1]\n"
    "lk = Lock(path, thread_local=False, timeout=5)\n"
    "lk.acquire()\n"
    "t = threading.Thread(target=lambda: (lk.acquire(), lk.release()))\n"
    "t.start(); t.join()\n"
    "pid = perlcompat.fork()\n"
    "if pid:\n"
    "    lk.release()\n"  # (a no-op: the child's now)
    "    os.waitpid(pid, 0)\n"
    "    sys.exit(0)\n"
    "print('child', lk.is_locked, os.path.isdir(path), other_can_take(path), flush=True)\n"
    "lk.release()\n"
    "print('released', lk.is_locked, os.path.isdir(path), flush=True)\n"
)


def test_fork_hands_a_shared_lock_over_whichever_thread_touched_it_last(tmp_path: Path) -> None:
    """Issue 34 (hostile 4): a worker's nested hold given back moved the hold to the
    worker, so fork() did not hand it over: the child worked without the lock."""
    path = str(tmp_path / "lk")
    lines = run(FORK_AFTER_A_WORKERS_NESTED_HOLD, path)
    assert lines == ["child True True False", "released False False"]


FORK_WHILE_A_WORKER_HOLDS = OTHER + (
    "import os, sys, threading\n"
    "import perlcompat\n"
    "from perlcompat.locks.api import Lock\n"
    "path = sys.argv[1]\n"
    "lk = Lock(path, thread_local=False, timeout=5)\n"
    "inside, leave = threading.Event(), threading.Event()\n"
    "errors = []\n"
    "def worker():\n"
    "    try:\n"
    "        with lk:\n"
    "            inside.set(); leave.wait(30)\n"
    "    except Exception as exc:\n"
    "        errors.append(repr(exc))\n"
    "with lk:\n"
    "    t = threading.Thread(target=worker); t.start(); inside.wait(30)\n"
    "    pid = perlcompat.fork()\n"
    "if pid:\n"
    "    leave.set(); t.join()\n"
    "    os.waitpid(pid, 0)\n"
    "    print('parent', errors, lk.is_locked, flush=True)\n"
    "    sys.exit(0)\n"
    "print('child', lk.is_locked, lk.lock_counter, os.path.isdir(path),"
    " other_can_take(path), flush=True)\n"
)


def test_fork_with_a_shared_lock_another_thread_holds_too(tmp_path: Path) -> None:
    """Issue 34 (hostile 5): the child got both threads' holds (left held after its
    balanced with exit) and the parent's worker got NotLockedError at its exit."""
    path = str(tmp_path / "lk")
    lines = run(FORK_WHILE_A_WORKER_HOLDS, path)
    assert lines == ["child False 0 False True", "parent [] False"]


def test_a_thread_reusing_an_ended_holders_ident_releases(tmp_path: Path) -> None:
    """Issue 34 (hostile 3): the holder check compared thread idents only; a thread given
    the ended holder's ident got NotLockedError and the lock stayed held.  The third
    thread is made to have the first one's ident (``run_in_a_thread_with_the_ident_of``)."""
    lk = Lock(str(tmp_path / "lk"), thread_local=False, timeout=5)
    idents: dict[str, int] = {}
    errors: list[str] = []

    def body(name: str, inside: threading.Event | None, go: threading.Event | None) -> None:
        idents[name] = threading.get_ident()
        try:
            with lk:
                if inside is not None:
                    inside.set()
                if go is not None:
                    assert go.wait(30)
        except Exception as exc:
            errors.append(f"{name}: {exc!r}")

    natives: list[int] = []
    t1_in, t1_go, t2_in, t2_go = (threading.Event() for _ in range(4))

    def first() -> None:
        natives.append(threading.get_native_id())
        body("T1", t1_in, t1_go)

    t1 = threading.Thread(target=first)
    t1.start()
    assert t1_in.wait(30)
    t2 = threading.Thread(target=body, args=("T2", t2_in, t2_go))
    t2.start()
    assert t2_in.wait(30)
    t1_go.set()
    t1.join(30)
    assert lk.lock_counter == 1  # T2's hold, taken while T1 held it
    run_in_a_thread_with_the_ident_of(idents["T1"], natives[0], lambda: body("T3", None, None))
    assert idents["T3"] == idents["T1"]
    t2_go.set()
    t2.join(30)
    assert errors == []
    assert not lk.is_locked and lk.lock_counter == 0
    other = Lock(lk.path, timeout=0)
    other.acquire()
    other.release()


def test_force_release_by_one_thread_makes_the_others_exits_no_ops(tmp_path: Path) -> None:
    """Issue 34 (hostile 6): thread B's with exit raised NotLockedError after thread A's
    release(force=True) (the owed no-op releases were A's only)."""
    lk = Lock(str(tmp_path / "lk"), thread_local=False, timeout=5)
    inside, forced = threading.Event(), threading.Event()
    errors: list[str] = []

    def holder() -> None:
        try:
            with lk:
                inside.set()
                assert forced.wait(30)
        except Exception as exc:
            errors.append(repr(exc))

    with lk:
        t = threading.Thread(target=holder)
        t.start()
        assert inside.wait(30)
        lk.release(force=True)
        assert not lk.is_locked
        forced.set()
        t.join(30)
    assert errors == []
    assert lk._abandoned == {}
    with pytest.raises(NotLockedError):
        lk.release()
    with lk:  # taken and released again as usual
        assert lk.lock_counter == 1
    assert not lk.is_locked


def test_release_of_a_shared_lock_not_held_never_waits_for_a_pending_acquire(
    tmp_path: Path,
) -> None:
    """Issue 34 (hostile 8): release(force=True) waited for another thread's acquire()
    (the gate), then released the hold that thread had just got."""
    path = str(tmp_path / "lk")
    busy = Lock(path, timeout=0)
    busy.acquire()  # another object holds the lock: the worker's acquire waits
    lk = Lock(path, thread_local=False, timeout=30, poll=0.01)
    got = threading.Event()
    worker = threading.Thread(target=lambda: (lk.acquire(), got.set()), daemon=True)
    worker.start()
    for _ in range(3000):  # until the worker is inside its wait (holds the gate)
        gate = lk._gate
        if gate is not None and gate.step:
            break
        time.sleep(0.001)
    done = threading.Event()
    results: list[str] = []

    def release() -> None:
        lk.release(force=True)
        try:
            lk.release()
        except NotLockedError:
            results.append("NotLockedError")
        done.set()

    threading.Thread(target=release, daemon=True).start()
    finished = done.wait(10)  # (the worker waits up to 30 s)
    busy.release()
    assert got.wait(30)
    assert finished and results == ["NotLockedError"]
    assert lk.is_locked  # the worker's hold was not released by the forced release
    lk.release()
    worker.join(30)


def test_async_with_counts_one_more_hold_while_another_thread_holds(tmp_path: Path) -> None:
    """Issue 34 (hostile 12): a sync acquire() counted one more hold, but ``async with lk``
    on the same thread waited out its timeout (LockTimeout)."""
    import asyncio

    lk = Lock(str(tmp_path / "lk"), thread_local=False, timeout=2)
    held, done = threading.Event(), threading.Event()

    def worker() -> None:
        with lk:
            held.set()
            assert done.wait(30)

    t = threading.Thread(target=worker)
    t.start()
    assert held.wait(30)
    counts: list[int] = []

    async def main() -> None:
        async with lk:
            counts.append(lk.lock_counter)
            async with lk:
                counts.append(lk.lock_counter)
        counts.append(lk.lock_counter)

    try:
        asyncio.run(main())
    finally:
        done.set()
        t.join(30)
    assert counts == [2, 3, 1]
    assert not lk.is_locked

    async def alone() -> None:
        async with lk:
            counts.append(lk.lock_counter)

    asyncio.run(alone())
    assert counts[-1] == 1 and not lk.is_locked
    other = Lock(lk.path, timeout=0)
    other.acquire()
    other.release()


FORK_WHILE_ONLY_A_WORKER_HOLDS = (
    "import os, sys, threading\n"
    "import perlcompat\n"
    "from perlcompat.locks.api import Lock\n"
    "path = sys.argv[1]\n"
    "lk = Lock(path, thread_local=False, timeout=5)\n"
    "inside, leave = threading.Event(), threading.Event()\n"
    "def worker():\n"
    "    with lk:\n"
    "        inside.set(); leave.wait(30)\n"
    "t = threading.Thread(target=worker); t.start(); inside.wait(30)\n"
    "pid = perlcompat.fork()\n"
    "if pid == 0:\n"
    "    print('child', lk.is_locked, flush=True)\n"
    "    os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
    "print('parent', lk.is_locked, os.path.isdir(path), flush=True)\n"
    "leave.set(); t.join()\n"
    "print('released', lk.is_locked, os.path.isdir(path), flush=True)\n"
)


def test_fork_leaves_a_shared_lock_only_other_threads_hold_to_the_parent(tmp_path: Path) -> None:
    """A lock the forking thread took no hold of stays the parent's (as a thread-local
    lock of another thread does): the worker's with exit releases it there."""
    path = str(tmp_path / "lk")
    lines = run(FORK_WHILE_ONLY_A_WORKER_HOLDS, path)
    assert lines == ["child False", "parent True True", "released False False"]


def test_an_old_holds_exit_never_releases_a_newer_hold(tmp_path: Path) -> None:
    """After A's release(force=True), C takes the object again while B is still inside:
    B's exit is an owed no-op, never C's release (C stays the holder until its own exit)."""
    lk = Lock(str(tmp_path / "lk"), thread_local=False, timeout=5)
    b_inside, b_go = threading.Event(), threading.Event()
    errors: list[str] = []

    def b() -> None:
        try:
            with lk:
                b_inside.set()
                assert b_go.wait(30)
        except Exception as exc:
            errors.append(repr(exc))

    lk.acquire()
    t = threading.Thread(target=b)
    t.start()
    assert b_inside.wait(30)
    lk.release(force=True)  # A's and B's holds: their releases are owed no-ops now
    lk.release()  # A's own
    with lk:  # C (this thread again: any thread will do) takes it anew
        b_go.set()
        t.join(30)
        assert errors == []
        assert lk.is_locked and lk.lock_counter == 1  # B's exit did not release C's hold
        other = Lock(lk.path, timeout=0)
        with pytest.raises(TimeoutError):
            other.acquire()
    assert not lk.is_locked and lk._abandoned == {}
    other.acquire()
    other.release()
