"""Seed 000's signal trap: a process stopped by a signal or by exit removes the locks it holds.

Each child holds one lock of every method, says "locked", and is then sent a
real signal.  Its locks must be gone, and it must still die by that signal
(exit status -N), or run the handler the program had installed before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, Child

from perlcompat.locks.methods.flock import is_flocked as flock_held

METHODS = ["mkdir", "symlink", "excl", "rename", "toplock", "flock"]

HOLDER = """
import os, signal, sys, time
from perlcompat import lock
directory, mode = sys.argv[1], sys.argv[2]
if mode == "chain":
    def handler(signum, frame):
        with open(os.path.join(directory, "handled"), "w") as stream:
            stream.write(str(signum))
        sys.exit(3)
    signal.signal(signal.SIGTERM, handler)
for method in sys.argv[3:]:
    assert lock(os.path.join(directory, method), method=method) == 1
print("locked", flush=True)
if mode == "exit":
    sys.exit(0)
if mode == "fork":
    pid = os.fork()
    if pid == 0:
        sys.exit(0)  # the child's exit must not release its parent's locks
    os.waitpid(pid, 0)
    print("forked", flush=True)
time.sleep(60)
"""


def held_locks(directory: Path) -> list[str]:
    """The methods whose lock in *directory* is still there."""
    found = []
    for method in METHODS:
        path = directory / method
        if method == "flock":
            there = path.exists() and flock_held(str(path))
        elif method == "rename":
            there = os.path.lexists(str(path) + ".locked")
        else:
            there = os.path.lexists(path)
        if there:
            found.append(method)
    return found


def start(directory: Path, mode: str) -> Child:
    child = Child.python(HOLDER, str(directory), mode, *METHODS)
    child.expect("locked")
    assert held_locks(directory) == METHODS
    return child


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"])
def test_signal_removes_our_locks_and_still_kills(tmp_path: Path, signame: str) -> None:
    number = getattr(signal, signame)
    child = start(tmp_path, "plain")
    child.proc.send_signal(number)
    status, _out, err = child.wait()
    assert status == -number, err  # a death by signal stays a death by that signal
    assert held_locks(tmp_path) == []
    # what free locks leave: the flock file, the free rename marker, mkdir's owner file
    assert sorted(os.listdir(tmp_path)) == ["flock", "mkdir.owner", "rename"]


def test_previous_handler_is_chained(tmp_path: Path) -> None:
    child = start(tmp_path, "chain")
    child.proc.send_signal(signal.SIGTERM)
    status, _out, err = child.wait()
    assert status == 3, err
    assert (tmp_path / "handled").read_text() == str(int(signal.SIGTERM))
    assert held_locks(tmp_path) == []


def test_normal_exit_removes_our_locks(tmp_path: Path) -> None:
    child = Child.python(HOLDER, str(tmp_path), "exit", *METHODS)
    status, out, err = child.wait()
    assert (status, out) == (0, "locked\n"), err
    assert held_locks(tmp_path) == []


def test_a_forked_child_does_not_release_its_parents_locks(tmp_path: Path) -> None:
    child = start(tmp_path, "fork")
    child.expect("forked")
    assert held_locks(tmp_path) == METHODS
    child.proc.send_signal(signal.SIGTERM)
    status, _out, _err = child.wait()
    assert status == -signal.SIGTERM
    assert held_locks(tmp_path) == []


def test_kill_9_leaves_locks_behind(tmp_path: Path) -> None:
    child = start(tmp_path, "plain")
    child.proc.kill()
    child.wait()
    assert held_locks(tmp_path) == [m for m in METHODS if m != "flock"]


def test_sigpipe_stays_ignored_and_does_not_release(tmp_path: Path) -> None:
    code = (
        "import os, signal, sys\n"
        "from perlcompat import lock\n"
        "assert lock(sys.argv[1]) == 1\n"
        "os.kill(os.getpid(), signal.SIGPIPE)\n"
        "print(signal.getsignal(signal.SIGPIPE) is signal.SIG_IGN, os.path.isdir(sys.argv[1]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "lk")],
        env=CHILD_ENV,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert out.stdout.split() == ["True", "True"]  # Python ignores SIGPIPE: nothing to clean
    assert not (tmp_path / "lk").exists()  # released at exit


def test_released_lock_after_cleanup_is_a_quiet_no_op() -> None:
    import tempfile

    from perlcompat.locks import cleanup as _cleanup
    from perlcompat.locks.api import Lock

    with tempfile.TemporaryDirectory() as directory:
        lk = Lock(os.path.join(directory, "lk"))
        with lk:
            assert lk in _cleanup.tracked()
            _cleanup.release_all()  # what a signal or exit does
            assert not os.path.exists(os.path.join(directory, "lk"))
        assert not lk.is_locked


DEFERRED = """
import os, signal, sys
from perlcompat import lock
from perlcompat.locks import cleanup as _cleanup
assert lock(sys.argv[1]) == 1
_cleanup.enter()  # as Lock.release does around its steps
os.kill(os.getpid(), signal.SIGTERM)
print("finished the step", os.path.isdir(sys.argv[1]), flush=True)
_cleanup.leave()
print("not reached", flush=True)
"""


def test_a_signal_inside_a_release_step_waits_for_it(tmp_path: Path) -> None:
    child = Child.python(DEFERRED, str(tmp_path / "lk"))
    status, out, err = child.wait()
    assert status == -signal.SIGTERM, err
    assert out == "finished the step True\n"
    assert not (tmp_path / "lk").exists()


def test_a_child_forked_by_a_thread_mid_step_still_dies_by_sigterm(tmp_path: Path) -> None:
    """A child forked by another thread while the main thread is mid-step (a take, a
    release) starts in no step: its stopping signals are not held back for ever."""
    code = (
        "import os, signal, sys, threading\n"
        "from perlcompat import lock\n"
        "from perlcompat.locks import cleanup\n"
        "assert lock(sys.argv[1]) == 1\n"  # the handlers are installed
        "cleanup.enter()\n"  # the main thread mid-step, as inside a release
        "got = []\n"
        "def forker():\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        signal.alarm(5)\n"  # ends it only if SIGTERM was held back
        "        signal.pause()\n"
        "        os._exit(0)\n"
        "    got.append(pid)\n"
        "t = threading.Thread(target=forker)\n"
        "t.start()\n"
        "t.join()\n"
        "cleanup.leave()\n"
        "print(os.waitpid(got[0], 0)[1] & 0x7F, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "lk")],
        capture_output=True,
        timeout=60,
        env=CHILD_ENV,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == str(int(signal.SIGTERM))
