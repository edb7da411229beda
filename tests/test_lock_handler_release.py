"""A release re-entered from a signal handler, and a DEBUG record while ``logging`` is half
imported: neither may leave two holders, a leaked lock or a spurious failure (issue 34).

The signal is delivered at an exact point of the main thread's ``release()`` (its first
check of the refresh mutex), by a stand-in mutex that raises it there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from perlutil import CHILD_ENV

MUTEX = """
import signal
armed = [False]
class Mutex:  # the lock's mutex, but a SIGUSR1 lands at its first owner check
    def __init__(self, real): self.real = real
    def _is_owned(self):
        if armed[0]:
            armed[0] = False
            signal.raise_signal(signal.SIGUSR1)
        return self.real._is_owned()
    def acquire(self, *a): return self.real.acquire(*a)
    def release(self): return self.real.release()
    def __enter__(self): return self.real.__enter__()
    def __exit__(self, *a): return self.real.__exit__(*a)
"""

SHARED = (
    MUTEX
    + """
import os, subprocess, sys, threading
from perlcompat import Lock
path, method = sys.argv[1], sys.argv[2]
lk = Lock(path, method=method, timeout=10)
b_go, b_has, b_done = threading.Event(), threading.Event(), threading.Event()
seen = {}
def b():
    b_go.wait()
    lk.acquire()
    b_has.set()
    b_done.wait()
    seen["b_still_holds"] = lk.is_locked
    lk.release()
thread = threading.Thread(target=b)
thread.start()
def handler(sig, frame):
    lk.release()  # the handler releases what the main thread is releasing
    b_go.set()
    b_has.wait(0.5)  # B may take it now (it cannot while the main thread's release runs)
signal.signal(signal.SIGUSR1, handler)
lk._mutex = Mutex(lk._mutex)
lk.acquire()
armed[0] = True
lk.release()
b_go.set()
b_has.wait(30)
TAKE = "import sys, perlcompat; print(perlcompat.lock(sys.argv[1], method=sys.argv[2], retry=1))"
other = subprocess.run(
    [sys.executable, "-c", TAKE, path, method], capture_output=True, text=True, timeout=60
)
seen["other_process_took_it"] = other.stdout.strip()
b_done.set()
thread.join()
print(seen["b_still_holds"], seen["other_process_took_it"])
"""
)

FUNCTIONS = (
    MUTEX
    + """
import os, sys
from perlcompat import OS_ERROR, lock, unlock
from perlcompat.locks import cleanup
path, method = sys.argv[1], sys.argv[2]
got = {}
def handler(sig, frame):
    got["handler"] = unlock(path, method=method)
signal.signal(signal.SIGUSR1, handler)
assert lock(path, method=method) == 1
held = cleanup.held_at(path, method)
held._mutex = Mutex(held._mutex)
armed[0] = True
main = unlock(path, method=method)
print(got["handler"], main, int(OS_ERROR), lock(path, method=method, retry=1))
"""
)

HALF_IMPORTED = """
import sys, types
from perlcompat import lock, unlock
from perlcompat.locks.api import Lock
path = sys.argv[1]
spec = types.SimpleNamespace(_initializing=True)
half = types.ModuleType("logging")
half.__spec__ = spec  # another thread is still running ``import logging``
real = sys.modules.get("logging")
sys.modules["logging"] = half
try:
    took = lock(path)
    with Lock(path + "2"):
        pass
    freed = unlock(path)
finally:
    if real is not None:
        sys.modules["logging"] = real
    else:
        del sys.modules["logging"]
print(took, freed, lock(path, retry=1))
"""


def run(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=CHILD_ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("method", ["mkdir", "flock", "excl", "symlink", "rename"])
def test_a_handlers_release_mid_release_never_frees_the_next_holders_lock(
    tmp_path: Path, method: str
) -> None:
    # before: the main thread's interrupted release removed B's lock: another process took it
    assert run(SHARED, str(tmp_path / "x.lock"), method).split() == ["True", "0"]


@pytest.mark.parametrize("method", ["mkdir", "flock", "excl"])
def test_unlock_from_a_handler_mid_unlock_is_not_a_broken_lock(tmp_path: Path, method: str) -> None:
    # before: the main unlock() released twice and said 0, $! ETIMEDOUT ("broken")
    assert run(FUNCTIONS, str(tmp_path / "x.lock"), method).split() == ["1", "1", "0", "1"]


def test_a_half_imported_logging_never_breaks_a_lock(tmp_path: Path) -> None:
    # before: the DEBUG record raised AttributeError after the take: the lock stayed held
    assert run(HALF_IMPORTED, str(tmp_path / "x.lock")).split() == ["1", "1", "1"]


# A signal at every line boundary of perlcompat's code (a trace function raises it)
# while the main thread takes, or releases, the lock; the handler does ``with lk:``, or
# gives back a hold of its thread and takes it again.
EVERY_LINE = """
import faulthandler, signal, sys
from collections import Counter
from perlcompat import Lock
from perlcompat.locks.errors import LockError
path, mode, phase, does = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
lk = Lock(path, method="flock", thread_local=(mode == "local"), timeout=None)
other = Lock(path, method="flock", timeout=0)
seen = Counter()
state = {"line": 0, "at": 0}
def handler(signum, frame):
    try:
        if does == "with":
            with lk:
                seen["taken"] += 1
        elif lk.lock_counter:  # gives back a hold of its thread, and takes it again
            lk.release()
            seen["released"] += 1
            lk.acquire()
            seen["retaken"] += 1
    except LockError as exc:
        seen[type(exc).__name__] += 1
def step(frame, event, arg):
    if event == "line":
        state["line"] += 1
        if state["line"] == state["at"]:
            signal.raise_signal(signal.SIGUSR1)
    return step
def in_locks(frame, event, arg):
    return step if "perlcompat" in frame.f_code.co_filename else None
def traced(call):
    sys.settrace(in_locks)
    try:
        call()
    finally:
        sys.settrace(None)
signal.signal(signal.SIGUSR1, handler)
faulthandler.dump_traceback_later(60, exit=True)  # a handler waiting for its own thread
at = 1
while True:
    state["line"], state["at"] = 0, at
    if phase == "take":
        traced(lk.acquire)
        lk.release()
    elif phase == "nested":  # a hold taken again and given back
        lk.acquire()
        traced(lambda: lk.acquire().lock.release())
        lk.release()
    else:
        lk.acquire()
        traced(lk.release)
    gate = lk._gate
    if lk.lock_counter or lk.is_locked or (gate is not None and gate._lock._is_owned()):
        print(f"at line {at}: lock_counter {lk.lock_counter}, is_locked {lk.is_locked}")
        break
    other.acquire()  # free for another Lock object too
    other.release()
    if at > state["line"]:
        break
    at += 1
print(at > 20, " ".join(sorted(seen)))
"""


@pytest.mark.parametrize("does", ["with", "retake"])
@pytest.mark.parametrize("phase", ["take", "release", "nested"])
@pytest.mark.parametrize("mode", ["local", "shared"])
def test_a_handler_using_the_lock_its_thread_takes_or_releases(
    tmp_path: Path, mode: str, phase: str, does: str
) -> None:
    # before: a signal just after the gate's RLock was taken (before its token was set):
    # the handler's acquire() waited for its own thread for ever (timeout None); a signal
    # in release() before its count check: the handler's hold was counted, its release a
    # no-op, and the lock stayed held after the with block (lock_counter 1, is_locked
    # True); thread_local=False: RuntimeError "cannot release un-acquired lock" (the
    # handler left the gate its thread was leaving)
    out = run(EVERY_LINE, str(tmp_path / "x.lock"), mode, phase, does).splitlines()
    assert len(out) == 1, out  # no line left the lock held
    words = out[0].split()
    assert words[0] == "True"  # a signal at each of many lines
    done = {"taken"} if does == "with" else {"released", "retaken"}
    assert done <= set(words[1:]), out  # the handler used the lock at some lines
    refused = set(words[1:]) - done  # and was refused at once at others
    assert refused and refused <= {"DuplicateLockError", "LockTimeout", "NotLockedError"}, out
