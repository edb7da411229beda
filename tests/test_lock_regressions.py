"""Regressions from the lock-method review (issue 3), each with real processes or signals.

* SIGINT caught by the program inside ``with Lock(...)``: the lock stays held;
* a forward wall-clock step does not make a live holder with a recorded start look dead;
* an expired symlink holder thread never unlinks the link another thread of its process made;
* a FIFO planted beside or as a lock never hangs the process (open with O_NONBLOCK);
* a release waits for a remover and never releases unguarded;
* the rename method never truncates a marker that is a hard link to another file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from perlutil import Child

from perlcompat import ExpiredLockError, lock, unlock
from perlcompat.locks import guards as _guards, owner as _owner, stale as _stale
from perlcompat.locks.api import Lock

CATCHER = """
import os, sys
from perlcompat import lock
from perlcompat.locks.api import Lock
with Lock(sys.argv[1], retry=1):
    try:
        print("in", flush=True)  # inside the try: SIGINT may land as soon as this is written
        sys.stdin.readline()  # interrupted by SIGINT
        print("not interrupted", flush=True)
    except KeyboardInterrupt:
        print("caught", os.path.isdir(sys.argv[1]), flush=True)
    sys.stdin.readline()  # still in the critical section until told to leave
print("left", os.path.isdir(sys.argv[1]), flush=True)
"""


def test_caught_sigint_inside_with_keeps_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    child = Child.python(CATCHER, str(path))
    try:
        child.expect("in")
        child.proc.send_signal(signal.SIGINT)
        child.expect("caught True")  # nothing was released behind the program's back
        assert lock(str(path), retry=1, wait=0.1) == 0  # nobody else gets in meanwhile
        child.send("leave")
        child.expect("left False")  # the ``with`` exit released it
        status, _out, err = child.wait()
        assert status == 0, err
    finally:
        child.kill()
    assert not path.exists()


HOLD_EXCL = """
import sys
from perlcompat import lock
print(lock(sys.argv[1], method="excl"), flush=True)
sys.stdin.readline()
"""


def test_clock_step_does_not_make_a_live_holder_dead(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    child = Child.python(HOLD_EXCL, str(path))
    try:
        child.expect("1")
        st = os.stat(path)
        os.utime(path, (st.st_atime - 5, st.st_mtime - 5))  # as if the clock stepped +5 s
        contender = Lock(str(path), method="excl", stale=60)
        found = contender.backend.describe()
        assert found is not None and found["pid"] == child.proc.pid
        assert found["alive"] is True
        assert lock(str(path), method="excl", stale=60, retry=1, wait=0.2) == 0
        assert os.path.exists(path)
    finally:
        child.kill()


def test_recorded_start_decides_alone_and_slack_is_wide() -> None:
    pid = os.getpid()
    start = _owner.start_time(pid)
    assert start is not None
    # a lock "made" long before we started, by a clock step: the matching start decides
    assert _owner.alive(pid, _owner.hostname(), start, created=0.0) is True
    assert _owner.alive(pid, _owner.hostname(), start + 1, created=time.time()) is False
    began = _owner.started_at(start)
    assert began is not None
    # no start recorded: only a process started well after the lock is judged a reused pid
    assert _owner.alive(pid, None, None, created=began - 5) is True
    assert _owner.alive(pid, None, None, created=began - _owner.START_SLACK - 5) is False


def test_expired_symlink_thread_does_not_unlink_its_successors_link(tmp_path: Path) -> None:
    path = str(tmp_path / "sl")
    first = Lock(path, method="symlink", stale=0.2).acquire()
    got, done = threading.Event(), threading.Event()
    second = Lock(path, method="symlink", stale=0.2, retry=None, wait=0.05)

    def successor() -> None:
        second.acquire()  # breaks the expired link of the first thread
        got.set()
        done.wait(10)
        with contextlib.suppress(ExpiredLockError):  # raised only if held past 0.2 s
            second.release()  # by its own thread: only the holder's thread may release

    thread = threading.Thread(target=successor)
    thread.start()
    try:
        assert got.wait(10)
        with pytest.raises(ExpiredLockError):
            first.release()
        assert os.path.islink(path)  # the successor's link (same pid target) is still there
        assert lock(path, method="symlink", stale=60, retry=1, wait=0.05) == 0
    finally:
        done.set()
        thread.join()
    assert not second.is_locked
    assert not os.path.lexists(path)  # its own link: removed


FIFOS = """
import os, signal, stat, sys
from perlcompat import lock, unlock
base = sys.argv[1]
# mkdir: a FIFO at <lock>.owner, free lock: taken without a record, the FIFO left alone
os.mkfifo(base + "/a.owner")
print("mkdir", lock(base + "/a"), unlock(base + "/a"), flush=True)
# mkdir: a held lock (made by "Perl") whose owner path is a FIFO: the waiter looks, gives up
os.mkdir(base + "/b")
os.mkfifo(base + "/b.owner")
print("look", lock(base + "/b", retry=1, wait=0.3), flush=True)
# rename: the free marker is a FIFO: refused, and given back
os.mkfifo(base + "/c")
print("rename", lock(base + "/c", method="rename"), stat.S_ISFIFO(os.lstat(base + "/c").st_mode),
      os.path.lexists(base + "/c.locked"), flush=True)
print("holding", lock(base + "/d"), flush=True)
os.kill(os.getpid(), signal.SIGTERM)  # a SIGTERM still stops it and cleans up
"""


def test_a_fifo_at_a_lock_side_path_never_hangs(tmp_path: Path) -> None:
    child = Child([sys.executable, "-u", "-c", FIFOS, str(tmp_path)], timeout=15)
    try:
        status, out, err = child.wait()  # a hang is a TimeoutExpired here
    finally:
        child.kill()
    assert status == -signal.SIGTERM, err
    assert out.splitlines() == ["mkdir 1 1", "look 0", "rename 0 True False", "holding 1"]
    assert stat.S_ISFIFO(os.lstat(tmp_path / "a.owner").st_mode)  # not ours: never replaced
    assert stat.S_ISFIFO(os.lstat(tmp_path / "b.owner").st_mode)  # only looked at
    assert not (tmp_path / "d").exists()


HOLD_MKDIR = """
import sys
from perlcompat import lock, unlock
print(lock(sys.argv[1]), flush=True)
sys.stdin.readline()
print("unlock", unlock(sys.argv[1]), flush=True)
"""


def test_a_stale_holder_waits_for_a_busy_remover_and_never_releases_unguarded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lk"
    held = Lock(str(path), stale=0.2).acquire()
    time.sleep(0.3)  # past stale: a remover may judge it stale and remove it
    guard = _guards.guard(str(path), exclusive=True)  # a remover between its look and rmdir
    assert guard is not None
    try:
        began = time.monotonic()
        with pytest.raises(OSError) as caught:
            held.release()
        assert time.monotonic() - began >= _guards.RELEASE_WAIT  # it waited for the remover
        assert caught.value.errno == errno.EWOULDBLOCK
        assert "remover lock" in str(caught.value)
        assert path.is_dir() and held.is_locked  # left to the remover; still ours
    finally:
        _guards.unguard(guard)
    with pytest.raises(ExpiredLockError):
        held.release()  # guarded now: removed, and reported as held past stale
    assert not path.exists()


def test_a_release_whose_guard_cannot_be_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = Lock(str(tmp_path / "fresh")).acquire()
    old = Lock(str(tmp_path / "old"), stale=0.2).acquire()
    time.sleep(0.3)

    def refuse(_path: str) -> int:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(_guards, "_guard_open", refuse)
    monkeypatch.setattr(_stale, "_shared_now", lambda directory: None)  # (its open refused too)
    fresh.release()  # not stale: no remover can be about to remove it, so released anyway
    assert not (tmp_path / "fresh").exists()
    with pytest.raises(OSError) as caught:
        old.release()
    assert caught.value.errno == errno.EACCES
    assert "remover lock" in str(caught.value)
    assert (tmp_path / "old").is_dir()  # stale: not removed unguarded; it is breakable
    monkeypatch.undo()
    with pytest.raises(ExpiredLockError):
        old.release()
    assert not (tmp_path / "old").exists()


def test_rename_refuses_a_marker_that_is_a_hard_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    marker = tmp_path / "marker"
    os.link(victim, marker)
    child = Child.python(
        "import sys\n"
        "from perlcompat import OS_ERROR, lock\n"
        "print(lock(sys.argv[1], method='rename'), int(OS_ERROR), flush=True)\n",
        str(marker),
    )
    status, out, err = child.wait()
    assert status == 0, err
    assert out == f"0 {errno.EPERM}\n"
    assert victim.read_bytes() == b"precious\n"  # never truncated or signed
    assert marker.exists() and not (tmp_path / "marker.locked").exists()  # given back


FORK_RECIPE = """
import os, sys
from perlcompat import Lock, LockError

r, w = os.pipe()
if os.fork() == 0:  # the background job takes the lock itself
    os.close(r)
    try:
        lock = Lock(sys.argv[1], retry=0).acquire()
    except LockError:
        os.write(w, b"busy")
        os._exit(1)
    os.write(w, b"ok")
    os.close(w)
    try:
        sys.stdin.read()  # the work: until the test closes our stdin
    finally:
        lock.release()
    os.write(1, b"released\\n")
    os._exit(0)
os.close(w)
answer = os.read(r, 4)
print("started" if answer == b"ok" else "busy", flush=True)
"""


def test_fork_recipe_keeps_one_holder(tmp_path: Path) -> None:
    # docs/locks.md "Fork and exit": the child takes the lock and tells the parent, which
    # answers and exits; the lock stays taken until the child releases it.
    path = str(tmp_path / "lockdir")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    job = subprocess.Popen(
        [sys.executable, "-c", FORK_RECIPE, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert job.stdout is not None and job.stdin is not None
    assert job.stdout.readline() == b"started\n"
    assert job.wait(timeout=30) == 0  # the parent has exited; its child works on
    second = subprocess.run(
        [sys.executable, "-c", FORK_RECIPE, path],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert second.stdout == b"busy\n"
    assert lock(path, retry=0) == 0
    job.stdin.close()
    assert job.stdout.readline() == b"released\n"
    assert lock(path, retry=0) == 1
    assert unlock(path) == 1
