"""``perlcompat.fork()``: the CGI ``lock; if (fork) { exit }`` keeps one holder, the child.

The parent takes a lock, forks with ``perlcompat.fork()`` and exits at once
(its exit hook runs); the child keeps working under the lock.  Until the child
unlocks, neither a perlcompat waiter (which judges the holder by its pid) nor
Perl's own sub may take the lock; once it has, both can.  ``os.fork()`` keeps
its documented behaviour: that child does not hold the parent's lock.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from pathlib import Path

import pytest
from perlutil import Child, run_perl, run_python

import perlcompat

#: lock, fork, parent exits; the child says "child <pid>", waits for a line, unlocks.
SCRIPT = """
import os, sys
from perlcompat import fork, lock, unlock
path, method = sys.argv[1], sys.argv[2]
assert lock(path, method=method) == 1
pid = fork()
if pid:
    os.write(1, f"parent {pid}\\n".encode())  # one write each: the child writes too
    sys.exit(0)  # the browser is answered; the exit hook must not release the child's lock
assert pid == 0
os.write(1, b"child\\n")
sys.stdin.readline()
print("unlock", unlock(path, method=method), flush=True)
"""

TRY = """
import sys
from perlcompat import lock, unlock
path, method = sys.argv[1], sys.argv[2]
got = lock(path, method=method, retry=1)
print(got)
if got:
    unlock(path, method=method)
"""

PERL_MKDIR_TRY = r"""
my $dir = shift;
if (mkdir($dir, 0755)) { rmdir($dir); print "took\n" } else { print "busy\n" }
"""


def try_lock(path: Path, method: str) -> str:
    done = run_python(TRY, str(path), method)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().strip()


@pytest.mark.parametrize(
    "method", ["mkdir", "excl", "symlink", "rename", "flock", "toplock", "link"]
)
def test_lock_fork_parent_exits_keeps_one_holder(method: str, tmp_path: Path) -> None:
    path = tmp_path / "lk"
    job = Child.python(SCRIPT, str(path), method)
    try:
        first, second = sorted([job.readline(), job.readline()])
        assert first == "child" and second.startswith("parent ")
        assert job.proc.wait(timeout=30) == 0  # the parent is gone, its exit hook ran
        # the owner record names the live child: no waiter breaks it as a dead holder's
        assert try_lock(path, method) == "0"
        if method == "mkdir":
            assert run_perl(PERL_MKDIR_TRY, str(path)).stdout == b"busy\n"
        info = perlcompat.Lock(str(path), method=method).backend.describe()
        assert info is not None
        assert info["alive"] in (True, None)
        if method not in ("toplock", "flock"):  # a TOP?LOCK line cannot name the child,
            assert info["alive"] is True  # and /proc/locks names the flock's first taker
            assert info["pid"] in (int(second.split()[1]), None)
        job.send("go")
        assert job.readline() == "unlock 1"
        assert job.proc.stdout is not None
        assert job.proc.stdout.read() == b""  # the child has exited (its end of the pipe)
    finally:
        job.kill()
    assert try_lock(path, method) == "1"


def test_with_lock_and_fork_then_exit_in_the_parent(tmp_path: Path) -> None:
    """``with Lock(...)``'s exit in the parent after the hand-off is a no-op, not an error."""
    path = tmp_path / "lk"
    code = (
        "import sys, os\nfrom perlcompat import Lock, fork\n"
        "with Lock(sys.argv[1], auto_refresh=0.5) as lk:\n"
        "    pid = fork()\n"
        "    if pid:\n"
        "        os.write(1, f'parent {lk.is_locked}\\n'.encode())\n"
        "        sys.exit(0)\n"
        "    os.write(1, f'child {lk.is_locked} {lk._stop is not None}\\n'.encode())\n"
        "    sys.stdin.readline()\n"
        "print('released', os.path.exists(sys.argv[1]), flush=True)\n"
    )
    job = Child.python(code, str(path))
    try:
        lines = sorted([job.readline(), job.readline()])
        assert lines == ["child True True", "parent False"]
        assert job.proc.wait(timeout=30) == 0
        assert path.is_dir()
        job.send("go")
        assert job.readline() == "released False"
    finally:
        job.kill()


def test_os_fork_child_still_holds_nothing(tmp_path: Path) -> None:
    """``os.fork()`` is unchanged: the parent's exit releases; the child cannot unlock."""
    path = tmp_path / "lk"
    code = (
        "import sys, os\nfrom perlcompat import lock, unlock, OS_ERROR\n"
        "assert lock(sys.argv[1]) == 1\n"
        "r, w = os.pipe()\n"
        "if os.fork():\n"
        "    os.close(r)\n"
        "    sys.exit(0)\n"
        "os.close(w)\n"
        "os.read(r, 1)\n"  # end of file: the parent has exited
        "print(unlock(sys.argv[1]), int(OS_ERROR), os.path.exists(sys.argv[1]), flush=True)\n"
    )
    done = run_python(code, str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == ["0", str(errno.ENOLCK), "False"]


def test_fork_without_locks_and_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Perl's values: the pid and 0 without locks too; None and ``$!`` when fork fails."""
    pid = perlcompat.fork()
    if pid == 0:
        os._exit(7)
    assert pid is not None and pid > 0
    assert os.waitpid(pid, 0)[1] >> 8 == 7

    def refuse() -> int:
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refuse)
    assert perlcompat.fork() is None
    assert int(perlcompat.OS_ERROR) == errno.EAGAIN
    assert sys.platform != "win32"


def test_nested_with_and_fork_then_exit_in_the_parent(tmp_path: Path) -> None:
    """Nested ``with lk:`` blocks (a count of 3) all exit quietly in the parent after hand-off."""
    path = tmp_path / "lk"
    code = (
        "import sys, os\nfrom perlcompat import Lock, fork\n"
        "lk = Lock(sys.argv[1])\n"
        "with lk:\n"
        "    with lk.acquire():\n"
        "        with lk:\n"
        "            pid = fork()\n"
        "            if pid:\n"
        "                os.write(1, f'parent {lk.is_locked}\\n'.encode())\n"
        "                sys.exit(0)\n"
        "            os.write(1, f'child {lk.lock_counter}\\n'.encode())\n"
        "            sys.stdin.readline()\n"
        "        os.write(1, f'inner {lk.lock_counter} {os.path.isdir(sys.argv[1])}\\n'.encode())\n"
        "    os.write(1, f'middle {lk.lock_counter}\\n'.encode())\n"
        "print('released', os.path.exists(sys.argv[1]), flush=True)\n"
    )
    job = Child.python(code, str(path))
    try:
        lines = sorted([job.readline(), job.readline()])
        assert lines == ["child 3", "parent False"]
        assert job.proc.wait(timeout=30) == 0  # no NotLockedError from the outer exits
        assert path.is_dir()
        job.send("go")
        assert job.readline() == "inner 2 True"
        assert job.readline() == "middle 1"
        assert job.readline() == "released False"
    finally:
        job.kill()


def test_a_signal_to_the_parent_mid_hand_off_keeps_the_childs_lock(tmp_path: Path) -> None:
    """SIGTERM reaching the parent while the child re-signs waits for the hand-off: the
    parent's cleanup then finds nothing of its own, and the child still holds the lock."""
    path = tmp_path / "lk"
    code = (
        "import os, signal, sys\n"
        "from perlcompat import lock, unlock, fork\n"
        "import perlcompat.locks.fork as forkmod\n"
        "assert lock(sys.argv[1]) == 1\n"
        "r, w = os.pipe()\n"  # end of file in the child once the parent is gone
        "real = forkmod._take_over\n"
        "def take_over(lock_):\n"
        "    os.kill(os.getppid(), signal.SIGTERM)\n"  # the parent is stopped mid hand-off
        "    real(lock_)\n"
        "forkmod._take_over = take_over\n"
        "if fork():\n"
        "    signal.pause()\n"
        "    sys.exit(0)\n"
        "os.close(w)\n"
        "os.read(r, 1)\n"
        "print('child', os.path.isdir(sys.argv[1]), unlock(sys.argv[1]), flush=True)\n"
    )
    done = run_python(code, str(path))
    assert done.returncode == -15, done.stderr  # the parent still dies by its signal
    assert done.stdout.decode().split() == ["child", "True", "1"], done.stderr
    assert not path.exists()


def test_a_child_that_dies_before_taking_over_leaves_the_lock_to_the_parent(
    tmp_path: Path,
) -> None:
    """The child is killed before it re-signs: the parent still holds (and releases) the
    lock, instead of leaving it on disk in nobody's hands."""
    path = tmp_path / "lk"
    code = (
        "import os, sys\n"
        "from perlcompat import Lock, fork\n"
        "import perlcompat.locks.fork as forkmod\n"
        "lk = Lock(sys.argv[1])\n"
        "lk.acquire()\n"
        "forkmod._take_over = lambda lock_: os._exit(3)\n"  # dies before re-signing
        "pid = fork()\n"
        "print(os.waitpid(pid, 0)[1] >> 8, lk.is_locked, flush=True)\n"
        "lk.release()\n"
        "print(os.path.exists(sys.argv[1]), flush=True)\n"
    )
    done = run_python(code, str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == ["3", "True", "False"]


def test_a_signal_to_the_child_mid_take_over_waits_for_it(tmp_path: Path) -> None:
    """SIGTERM to the child while it takes the locks over is held back until it has: the
    parent has handed the lock over, and the child's cleanup releases it as it dies."""
    path = tmp_path / "lk"
    code = (
        "import os, signal, sys\n"
        "from perlcompat import Lock, fork\n"
        "import perlcompat.locks.fork as forkmod\n"
        "lk = Lock(sys.argv[1])\n"
        "lk.acquire()\n"
        "real = forkmod._take_over\n"
        "def take_over(lock_):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    real(lock_)\n"
        "forkmod._take_over = take_over\n"
        "pid = fork()\n"
        "if pid == 0:\n"
        "    os._exit(9)\n"  # not reached: the held-back SIGTERM ends the child first
        "status = os.waitpid(pid, 0)[1]\n"
        "print(status & 0x7F, lk.is_locked, os.path.exists(sys.argv[1]), flush=True)\n"
    )
    done = run_python(code, str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(int(signal.SIGTERM)), "False", "False"]


def test_a_parent_killed_mid_hand_off_leaves_fork_returning_0_in_the_child(
    tmp_path: Path,
) -> None:
    """The parent is SIGKILLed while the child takes over: ``fork()`` still returns 0 in
    the child (no BrokenPipeError from telling a dead parent), which keeps the lock."""
    path = tmp_path / "lk"
    code = (
        "import os, signal, sys\n"
        "from perlcompat import Lock, fork\n"
        "import perlcompat.locks.fork as forkmod\n"
        "lk = Lock(sys.argv[1])\n"
        "lk.acquire()\n"
        "r, w = os.pipe()\n"  # end of file in the child once the parent is gone
        "real = forkmod._take_over\n"
        "def take_over(lock_):\n"
        "    os.close(w)\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n"
        "    os.read(r, 1)\n"
        "    real(lock_)\n"
        "forkmod._take_over = take_over\n"
        "pid = fork()\n"
        "print('child', pid, lk.is_locked, os.path.isdir(sys.argv[1]), flush=True)\n"
        "lk.release()\n"
        "print('released', os.path.exists(sys.argv[1]), flush=True)\n"
    )
    done = run_python(code, str(path))
    assert done.returncode == -signal.SIGKILL  # the parent
    assert done.stdout.decode().splitlines() == ["child 0 True True", "released False"], done.stderr


def test_a_child_forked_by_a_thread_while_main_is_mid_step_dies_by_sigterm(
    tmp_path: Path,
) -> None:
    """``fork()`` by a thread holding a lock while the main thread is mid-step (inside a
    release): in the child that thread is the main one; SIGTERM ends it and releases the
    lock it took over (it was held back for ever: the child outlived it by its alarm)."""
    code = (
        "import os, signal, sys, threading\n"
        "from perlcompat import fork, lock\n"
        "from perlcompat.locks import cleanup\n"
        "assert lock(sys.argv[1] + '.main') == 1\n"  # the handlers are installed
        "cleanup.enter()\n"  # the main thread mid-step, as inside a release
        "got = []\n"
        "def forker():\n"
        "    assert lock(sys.argv[1]) == 1\n"
        "    pid = fork()\n"
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
        "status = os.waitpid(got[0], 0)[1]\n"
        "print(status & 0x7F, os.path.exists(sys.argv[1]), flush=True)\n"
    )
    done = run_python(code, str(tmp_path / "lk"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(int(signal.SIGTERM)), "False"]


def test_a_signal_to_a_threads_child_mid_take_over_waits_for_it(tmp_path: Path) -> None:
    """As for the main thread's ``fork()``: SIGTERM to the child of a thread's ``fork()``
    while it takes the lock over waits until it has; then the child's cleanup removes it
    and the parent holds it no more (the child removed it while the parent kept it)."""
    code = (
        "import os, signal, sys, threading\n"
        "from perlcompat import Lock, fork\n"
        "import perlcompat.locks.fork as forkmod\n"
        "Lock(sys.argv[1] + '.main').acquire()\n"  # the handlers are installed
        "lk = Lock(sys.argv[1])\n"
        "real = forkmod._take_over\n"
        "def take_over(lock_):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    real(lock_)\n"
        "forkmod._take_over = take_over\n"
        "got = []\n"
        "def forker():\n"
        "    lk.acquire()\n"
        "    pid = fork()\n"
        "    if pid == 0:\n"
        "        os._exit(9)\n"  # not reached: the held-back SIGTERM ends the child first
        "    got.append(pid)\n"
        "t = threading.Thread(target=forker)\n"
        "t.start()\n"
        "t.join()\n"
        "status = os.waitpid(got[0], 0)[1]\n"
        "print(status & 0x7F, lk.is_locked, os.path.exists(sys.argv[1]), flush=True)\n"
    )
    done = run_python(code, str(tmp_path / "lk"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(int(signal.SIGTERM)), "False", "False"]
