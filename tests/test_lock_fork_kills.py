"""``perlcompat.fork()`` when one side is SIGKILLed mid hand-off: never two holders.

The child re-signs each lock (its record then names the child) and tells the parent,
which then drops it.  Killed at the exact step (a hook wrapping ``locks.fork._take_over``):

* the child dies after re-signing, before telling: the parent must not go on holding a lock
  whose record names a dead process (a waiter breaks it): it re-signs it before ``fork()``
  returns, or, if it cannot (the lock was broken meanwhile), it has lost it;
* the parent dies before a slow child re-signs: a waiter breaks the lock (its record names
  the dead parent) and holds it; the child's take-over fails, and it must not hold then.

A lost lock is not held (``is_locked`` False) and its release raises ExpiredLockError,
touching nothing on disk.  A random-kill run (SIGALRM's default action, 0-4 ms after the
fork, in the parent or the child) checks the same with a critical section that detects
any overlap.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from perlutil import Child, run_python

import perlcompat

METHODS = ["mkdir", "excl", "symlink", "rename"]

#: holds the lock; its child re-signs it and is SIGKILLed before telling the parent.
CHILD_KILLED_AFTER_RESIGNING = """
import os, signal, sys
from perlcompat import ExpiredLockError, Lock, fork
import perlcompat.locks.fork as forkmod
path, method = sys.argv[1], sys.argv[2]
lk = Lock(path, method=method)
lk.acquire()
real = forkmod._take_over
def take_over(lock_):
    real(lock_)  # the child re-signs the lock: its record names the child
    os.kill(os.getpid(), signal.SIGKILL)  # and dies before it tells the parent
forkmod._take_over = take_over
pid = fork()
status = os.waitpid(pid, 0)[1]
print(status & 0x7F, lk.is_locked, flush=True)
sys.stdin.readline()
try:
    lk.release()
    print("released", flush=True)
except ExpiredLockError as exc:
    print("expired", "lost in fork()" in str(exc), flush=True)
"""

#: waits up to argv[3] seconds (a dead holder's lock is broken after a first look at it):
#: "1" and held until a line comes, then "released"; else "0".
WAITER = """
import sys
from perlcompat import Lock, LockTimeout
path, method, patience = sys.argv[1], sys.argv[2], float(sys.argv[3])
lk = Lock(path, method=method)
try:
    lk.acquire(timeout=patience)
except LockTimeout:
    print(0, flush=True)
    sys.exit(0)
print(1, flush=True)
sys.stdin.readline()
lk.release()
print("released", flush=True)
"""


@pytest.mark.parametrize("method", METHODS)
def test_a_child_killed_after_re_signing_leaves_one_holder(method: str, tmp_path: Path) -> None:
    """Before: the parent kept ``is_locked`` True under a record naming its dead child, and
    the waiter broke the lock: two holders (4/4 methods)."""
    path = tmp_path / "lk"
    job = Child.python(CHILD_KILLED_AFTER_RESIGNING, str(path), method)
    waiter = None
    try:
        status, held = job.readline().split()
        assert status == str(int(signal.SIGKILL))
        # held: a waiter breaks a lock naming a dead process within ms (before: at once);
        # lost: the waiter must get it, however loaded the machine
        waiter = Child.python(WAITER, str(path), method, "2" if held == "True" else "30")
        took = waiter.readline()
        assert (held, took) in (("True", "0"), ("False", "1")), (held, took)
        if held == "True":  # re-signed: the record names the parent, alive
            info = perlcompat.Lock(str(path), method=method).backend.describe()
            assert info is not None and info["alive"] is True, info
        job.send("go")
        if held == "True":
            assert job.readline() == "released"
        else:  # lost: its release raises, and leaves the waiter's lock alone
            assert job.readline() == "expired True"
            waiter.send("go")
            assert waiter.readline() == "released"
        assert job.proc.wait(timeout=30) == 0
    finally:
        job.kill()
        if waiter is not None:
            waiter.kill()


#: holds the lock and forks; the hook SIGKILLs the parent before the child re-signs, and a
#: waiter breaks the lock and holds it; then the child's take-over runs.
PARENT_KILLED_BEFORE_THE_CHILD_RE_SIGNS = """
import os, signal, subprocess, sys
from perlcompat import ExpiredLockError, Lock, fork
import perlcompat.locks.fork as forkmod
path, method, waiter_code = sys.argv[1], sys.argv[2], sys.argv[3]
lk = Lock(path, method=method)
lk.acquire()
r, w = os.pipe()  # end of file in the child once the parent is gone
waiters = []
real = forkmod._take_over
def take_over(lock_):
    os.close(w)
    os.kill(os.getppid(), signal.SIGKILL)
    os.read(r, 1)
    waiter = subprocess.Popen(
        [sys.executable, "-c", waiter_code, path, method, "30"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    waiters.append(waiter)
    assert waiter.stdout.readline() == b"1\\n"  # it broke the dead parent's lock: it holds
    real(lock_)  # the slow child takes the lock over only now
forkmod._take_over = take_over
pid = fork()
print("child", pid, lk.is_locked, flush=True)
try:
    lk.release()
    print("released", flush=True)
except ExpiredLockError as exc:
    print("expired", "lost in fork()" in str(exc), flush=True)
waiter = waiters[0]
waiter.stdin.write(b"go\\n")
waiter.stdin.flush()
print("waiter unlock", waiter.stdout.readline().decode().strip(), flush=True)
waiter.wait()
"""


@pytest.mark.parametrize("method", METHODS)
def test_a_parent_killed_before_a_slow_child_re_signs_leaves_one_holder(
    method: str, tmp_path: Path
) -> None:
    """Before: the child's take-over failed with a WARNING only, and ``fork()`` returned
    with ``is_locked`` True while the waiter held the lock (4/4 methods)."""
    path = tmp_path / "lk"
    done = run_python(PARENT_KILLED_BEFORE_THE_CHILD_RE_SIGNS, str(path), method, WAITER)
    assert done.returncode == -signal.SIGKILL, done.stderr  # the parent
    lines = done.stdout.decode().splitlines()
    assert lines == ["child 0 False", "expired True", "waiter unlock released"], done.stderr
    assert b"was lost in fork(): the child could not re-sign it" in done.stderr


#: ROUNDS rounds: a program takes the lock and forks, one side is killed by SIGALRM's
#: default action 0-4 ms after the fork; each side that holds then runs the critical
#: section, and so does this driver once it takes the lock.  The section holds an
#: exclusive flock on a detector file with LOCK_NB: a second holder inside finds it taken.
#: stale=2: a kill between a record's truncation and its rewrite leaves a lock of unknown
#: owner, recovered by age only; a live holder would have to stall 2 s in a 10 ms section.
RANDOM_KILLS = r"""
import errno, fcntl, os, random, signal, sys, time
from perlcompat import ExpiredLockError, Lock, fork
base, method, rounds, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
victim = {"who": "", "delay": 0.0}

def arm():  # in every child of a fork: a timer whose SIGALRM kills it, if it is the victim
    if victim["who"] == "child":
        signal.setitimer(signal.ITIMER_REAL, victim["delay"])

os.register_at_fork(after_in_child=arm)

def section(lk, detector):
    fd = os.open(detector, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("overlap", method, detector, flush=True)
    time.sleep(0.01)  # the work under the lock
    os.close(fd)
    try:
        lk.release()
    except ExpiredLockError:
        pass  # lost meanwhile: it was not in the section alone, the detector says so

killed = {"parent": 0, "child": 0}
for n in range(rounds):
    path, detector = f"{base}/lk{n}", f"{base}/section{n}"
    who, delay = rng.choice(["parent", "child"]), rng.uniform(0.0, 0.004)
    program = os.fork()
    if program == 0:
        lk = Lock(path, method=method, stale=2)
        lk.acquire()
        victim.update(who=who, delay=delay)
        if who == "parent":
            signal.setitimer(signal.ITIMER_REAL, delay)
        fork()
        if lk.is_locked:
            section(lk, detector)
        os._exit(0)
    status = os.waitpid(program, 0)[1]
    if who == "parent" and status & 0x7F == signal.SIGALRM:
        killed["parent"] += 1
    lk = Lock(path, method=method, stale=2)
    lk.acquire(timeout=30)  # free, or broken once its holder is dead (or 2 s old)
    section(lk, detector)
print("done", killed["parent"], flush=True)
"""


@pytest.mark.parametrize("method", METHODS)
def test_random_kills_after_fork_never_overlap(method: str, tmp_path: Path) -> None:
    """30 rounds per method (120 in all), the parent or the child killed 0-4 ms after the
    fork: no two holders are ever inside the critical section together."""
    done = run_python(RANDOM_KILLS, str(tmp_path), method, "30", "33", timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert not [line for line in lines if line.startswith("overlap")], lines
    assert lines[-1].startswith("done ") and int(lines[-1].split()[1]) > 0, lines
