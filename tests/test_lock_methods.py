"""lock()/unlock() and Lock for every lock-file method: semantics, hammers, bad input.

Hammers run real processes (fork) that take the lock, create a marker file with
O_EXCL inside the critical section (it fails if two holders ever overlap),
read-increment-write a counter and release; the counter must be exact.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from perlutil import CHILD_ENV

import perlcompat
from perlcompat import (
    OS_ERROR,
    DuplicateLockError,
    ExpiredLockError,
    LockError,
    lock,
    unlock,
)
from perlcompat.locks import owner as _owner
from perlcompat.locks.api import Lock, NotLockedError, detect_method, find_locks
from perlcompat.locks.methods.flock import is_flocked as flock_held

METHODS = ["mkdir", "symlink", "excl", "rename", "toplock", "flock"]
FORK = multiprocessing.get_context("fork")


def lock_exists(path: Path, method: str) -> bool:
    """True if a lock of *method* is held at *path* (by anyone)."""
    if method == "flock":
        return path.exists() and flock_held(str(path))
    if method == "rename":
        return os.path.lexists(str(path) + ".locked")
    return os.path.lexists(path)


# -- basic semantics -------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_lock_excludes_a_second_process_and_unlock_frees_it(tmp_path: Path, method: str) -> None:
    path = tmp_path / "lk"
    assert lock(str(path), method=method) == 1
    assert lock_exists(path, method)
    assert detect_method(str(path)) == method
    info = Lock(str(path), method=method).backend.describe()
    assert info is not None
    assert (info["method"], info["path"], info["pid"]) == (method, str(path), os.getpid())
    # flock keeps no record: its age is how long the holder process has run
    limit = 60.0
    if method == "flock":
        began = _owner.started_at(_owner.start_time(os.getpid()) or 0)
        assert began is not None
        limit = time.time() - began + 2
    assert info["alive"] is True and 0 <= info["age"] < limit
    code = (
        "import sys; from perlcompat import lock, OS_ERROR;"
        "print(lock(sys.argv[1], method=sys.argv[2], retry=2, wait=0.05), int(OS_ERROR))"
    )
    busy = subprocess.run(
        [sys.executable, "-c", code, str(path), method],
        env=CHILD_ENV,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert busy.stdout.split() == ["0", str(errno.EWOULDBLOCK)]
    assert unlock(str(path), method=method) == 1
    assert OS_ERROR == 0
    assert not lock_exists(path, method)
    assert Lock(str(path), method=method).backend.describe() is None
    freed = subprocess.run(
        [sys.executable, "-c", code, str(path), method],
        env=CHILD_ENV,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert freed.stdout.split() == ["1", "0"]


@pytest.mark.parametrize("method", ["mkdir", "symlink", "excl", "rename", "toplock"])
def test_lock_leaves_nothing_inside_and_mkdir_dir_is_empty(tmp_path: Path, method: str) -> None:
    path = tmp_path / "lk"
    with Lock(str(path), method=method):
        if method == "mkdir":
            assert path.is_dir() and os.listdir(path) == []
        if method == "symlink":
            assert os.readlink(path) == str(os.getpid())
        if method == "toplock":
            first = path.read_text().split("\n")[0].split("<>")
            assert len(first) == 3 and first[1].isdigit() and first[2] == ""
    assert not lock_exists(path, method)


def test_unlock_of_a_lock_not_ours_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    path.mkdir()  # someone else's lock directory
    assert unlock(str(path)) == 0
    assert OS_ERROR == errno.ENOLCK
    assert path.is_dir()
    with pytest.raises(NotLockedError):
        Lock(str(path)).release()


@pytest.mark.parametrize("method", METHODS)
def test_same_thread_twice_is_a_duplicate_at_once(tmp_path: Path, method: str) -> None:
    """lock() refuses a name this thread holds at once; a second Lock object waits (issue 34)."""
    path = str(tmp_path / "lk")
    first = Lock(path, method=method).acquire()
    with pytest.raises(TimeoutError):
        Lock(path, method=method, timeout=0.1).acquire()
    began = time.monotonic()
    assert lock(path, method=method) == 0
    assert OS_ERROR == errno.EDEADLK
    assert time.monotonic() - began < 1.0
    first.release()


def test_context_manager_decorator_and_several_named_locks(tmp_path: Path) -> None:
    a, b = Lock(str(tmp_path / "a")), Lock(str(tmp_path / "b"), method="flock")
    calls = []

    @a
    def work() -> None:
        calls.append(a.is_locked and (tmp_path / "a").is_dir())

    work()
    with a, b:
        assert a.is_locked and b.is_locked
        assert {p for p, _ in find_locks(tmp_path)} >= {str(tmp_path / "a")}
    assert calls == [True]
    assert not a.is_locked and not (tmp_path / "a").exists()


def test_release_after_stale_limit_raises_expired(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    held = Lock(str(path), stale=0.05).acquire()
    time.sleep(0.1)  # hold past the stale limit (what is under test, not synchronization)
    with pytest.raises(ExpiredLockError):
        held.release()
    assert not path.exists()  # still ours, so it was removed


def test_flock_shared_locks_share_and_exclude_writers(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    reader = Lock(path, method="flock", shared=True).acquire()
    code = (
        "import sys; from perlcompat.locks.api import Lock, LockError\n"
        "def try_(shared):\n"
        "    lk = Lock(sys.argv[1], method='flock', shared=shared, retry=1, wait=0.05)\n"
        "    try:\n"
        "        lk.acquire(); lk.release(); return 'got'\n"
        "    except LockError:\n"
        "        return 'busy'\n"
        "print(try_(True), try_(False))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, path],
        env=CHILD_ENV,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert out.stdout.split() == ["got", "busy"]
    reader.release()
    with pytest.raises(ValueError, match="cannot take shared"):
        Lock(path, method="mkdir", shared=True)


# -- hammers ----------------------------------------------------------------------


def _hammer(
    index: int, path: str, method: str, counter: str, marker: str, cycles: int, go: object
) -> None:
    perl_shape = index % 2 == 0  # half use lock()/unlock(), half Lock
    lk = Lock(path, method=method, retry=400, wait=0.05)
    overlaps = 0
    go.wait()  # type: ignore[attr-defined]
    for _ in range(cycles):
        if perl_shape:
            if not lock(path, method=method, retry=400, wait=0.05):
                raise SystemExit(f"lock failed: {OS_ERROR}")
        else:
            lk.acquire()
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.close(fd)
        except FileExistsError:
            overlaps += 1
        with open(counter, "r+") as stream:
            value = int(stream.read())
            stream.seek(0)
            stream.write(str(value + 1))
            stream.truncate()
        os.unlink(marker)
        if perl_shape:
            assert unlock(path, method=method) == 1
        else:
            lk.release()
    raise SystemExit(10 + overlaps if overlaps else 0)


@pytest.mark.parametrize("method", METHODS)
def test_hammer_exact_count_no_overlap(tmp_path: Path, method: str) -> None:
    procs, cycles = 4, 150
    counter, marker = tmp_path / "counter", tmp_path / "marker"
    counter.write_text("0")
    go = FORK.Barrier(procs)
    workers = [
        FORK.Process(
            target=_hammer,
            args=(i, str(tmp_path / "lk"), method, str(counter), str(marker), cycles, go),
        )
        for i in range(procs)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0] * procs
    assert int(counter.read_text()) == procs * cycles
    assert not lock_exists(tmp_path / "lk", method)


# -- several locks, opposite order -------------------------------------------------

OPPOSITE = """
import sys, time
from perlcompat import lock, unlock, OS_ERROR
first, second, mine, theirs = sys.argv[1:5]
assert lock(first, retry=3, wait=0.1) == 1
open(mine, "w").close()
while not __import__("os").path.exists(theirs):
    time.sleep(0.001)
began = time.monotonic()
got = lock(second, retry=3, wait=0.1)
print(got, int(OS_ERROR), round(time.monotonic() - began, 2), flush=True)
"""


def test_opposite_order_ends_in_0_never_a_hang(tmp_path: Path) -> None:
    p, q = str(tmp_path / "P"), str(tmp_path / "Q")
    a = subprocess.Popen(
        [sys.executable, "-c", OPPOSITE, p, q, str(tmp_path / "a"), str(tmp_path / "b")],
        env=CHILD_ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    b = subprocess.Popen(
        [sys.executable, "-c", OPPOSITE, q, p, str(tmp_path / "b"), str(tmp_path / "a")],
        env=CHILD_ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    out_a, _ = a.communicate(timeout=20)
    out_b, _ = b.communicate(timeout=20)
    results = [out_a.split(), out_b.split()]
    # each holds what the other wants: at least one gives up with EWOULDBLOCK in ~0.3 s
    assert any(r[:2] == ["0", str(errno.EWOULDBLOCK)] for r in results), results
    assert all(float(r[2]) < 5 for r in results), results
    assert (a.returncode, b.returncode) == (0, 0)
    # both exited: their atexit cleanup removed every lock
    assert not os.path.exists(p) and not os.path.exists(q)


# -- bad input ---------------------------------------------------------------------


def test_bad_names_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        lock("")
    with pytest.raises(ValueError, match="empty"):
        Lock("   ")
    with pytest.raises(ValueError, match="escapes the lock root"):
        lock("../outside", root=str(tmp_path / "root"))
    with pytest.raises(ValueError, match="escapes the lock root"):
        lock(str(tmp_path / "elsewhere"), root=str(tmp_path / "root"))
    with pytest.raises(ValueError, match="unknown lock method"):
        lock(str(tmp_path / "x"), method="nfs")
    with pytest.raises(TypeError, match="colour"):
        Lock(str(tmp_path / "x"), method="excl", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="lock method 'symlink' takes no option 'mode'"):
        Lock(str(tmp_path / "x"), method="symlink", mode=0o700)
    (tmp_path / "root").mkdir()
    assert lock("inside", root=str(tmp_path / "root")) == 1
    assert (tmp_path / "root" / "inside").is_dir()
    assert unlock("inside", root=str(tmp_path / "root")) == 1


@pytest.mark.parametrize("method", METHODS)
def test_missing_directory_gives_0_and_enoent(tmp_path: Path, method: str) -> None:
    path = str(tmp_path / "no-such-dir" / "lk")
    began = time.monotonic()
    assert lock(path, method=method) == 0
    assert OS_ERROR == errno.ENOENT
    assert time.monotonic() - began < 1.0  # an error, not a busy lock waited out
    with pytest.raises(FileNotFoundError):
        Lock(path, method=method).acquire()
    assert not (tmp_path / "no-such-dir").exists()


def _try_all(directory: str, as_nobody: bool, out: object) -> None:
    if as_nobody:  # root writes anywhere: ask as an unprivileged user instead
        os.setgid(65534)
        os.setuid(65534)
    results = [
        (lock(f"{directory}/lk-{m}", method=m, retry=1, wait=0.05), int(OS_ERROR)) for m in METHODS
    ]
    out.send(results)  # type: ignore[attr-defined]


def test_unwritable_directory_gives_0_and_eacces() -> None:
    import shutil
    import tempfile

    locked = tempfile.mkdtemp(prefix="perlcompat-ro-")  # in /tmp: traversable by everyone
    as_nobody = os.geteuid() == 0
    os.chmod(locked, 0o755 if as_nobody else 0o555)
    receiver, sender = FORK.Pipe(duplex=False)
    child = FORK.Process(target=_try_all, args=(locked, as_nobody, sender))
    try:
        child.start()
        assert receiver.poll(30)
        results = receiver.recv()
        child.join(10)
        assert results == [(0, errno.EACCES)] * len(METHODS)
        assert os.listdir(locked) == []
    finally:
        os.chmod(locked, 0o755)
        shutil.rmtree(locked)


@pytest.mark.parametrize("method", ["mkdir", "excl", "rename", "toplock", "flock"])
def test_planted_symlink_is_refused_and_its_target_untouched(tmp_path: Path, method: str) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    before = victim.stat()
    path = tmp_path / "lk"
    path.symlink_to(victim)
    began = time.monotonic()
    assert lock(str(path), method=method) == 0
    assert OS_ERROR == errno.ELOOP
    assert time.monotonic() - began < 1.0
    with pytest.raises(OSError, match="symlink") as caught:
        Lock(str(path), method=method).acquire()
    assert caught.value.errno == errno.ELOOP
    assert victim.read_bytes() == b"precious\n"
    assert victim.stat().st_mtime_ns == before.st_mtime_ns
    assert os.readlink(path) == str(victim)
    # a dangling symlink is refused the same way and never created through
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "would-be-created")
    assert lock(str(dangling), method=method) == 0
    assert not (tmp_path / "would-be-created").exists()


def test_symlink_method_treats_any_symlink_as_a_lock_and_never_follows(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    path = tmp_path / "lk"
    path.symlink_to(victim)  # seed 000's first version links to "." or anything
    assert lock(str(path), method="symlink", retry=2, wait=0.05) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    assert victim.read_bytes() == b"precious\n"
    assert os.readlink(path) == str(victim)


@pytest.mark.parametrize("method", ["symlink", "excl", "toplock", "rename"])
def test_wrong_kind_of_object_at_the_path_is_an_error(tmp_path: Path, method: str) -> None:
    path = tmp_path / "lk"
    if method == "rename":
        (tmp_path / "lk.locked").mkdir()
    else:
        path.mkdir()
    assert lock(str(path), method=method, retry=2, wait=0.05) == 0
    assert OS_ERROR in (errno.EEXIST, errno.EISDIR, errno.ENOTDIR)


def test_public_names_are_exported() -> None:
    for name in ("lock", "unlock", "Lock", "LockError", "ExpiredLockError"):
        assert getattr(perlcompat, name) is not None
    assert issubclass(DuplicateLockError, LockError)


@pytest.mark.parametrize("method", ["mkdir", "flock"])
def test_another_thread_waits_like_another_process(tmp_path: Path, method: str) -> None:
    import threading

    path = str(tmp_path / "lk")
    first = Lock(path, method=method).acquire()
    taken = threading.Event()
    result: list[bool] = []

    def other() -> None:
        lk = Lock(path, method=method, retry=100, wait=0.05)
        lk.acquire()
        taken.set()
        result.append(lock_exists(Path(path), method))
        lk.release()

    thread = threading.Thread(target=other)
    thread.start()
    assert not taken.wait(0.2)  # still waiting while we hold it
    first.release()
    thread.join(10)
    assert taken.is_set() and result == [True]


def test_toplock_check_again_before_the_rename(tmp_path: Path) -> None:
    from perlcompat.locks.methods.toplock import rename_if_holding, still_holding

    path, work, data = tmp_path / "test.lock", tmp_path / "work.tmp", tmp_path / "work.dat"
    lk = Lock(str(path), method="toplock", stale=600).acquire()
    assert still_holding(lk)
    work.write_text("new\n")
    assert rename_if_holding(lk, str(work), str(data)) == 1
    assert data.read_text() == "new\n" and not work.exists()
    # a seed 001 remover deletes our file and another writer's line comes first
    os.unlink(path)
    path.write_text(f"{'7' * 32}<>{int(time.time())}<>")
    work.write_text("newer\n")
    assert not still_holding(lk)
    assert rename_if_holding(lk, str(work), str(data)) == 0
    assert OS_ERROR == errno.ENOLCK
    assert data.read_text() == "new\n" and work.exists()
    with pytest.raises(ExpiredLockError):
        lk.release()
    assert path.exists()  # the other writer's lock is left alone
    with pytest.raises(TypeError, match="not a toplock"):
        still_holding(Lock(str(tmp_path / "d")))


@pytest.mark.skipif(sys.platform == "win32", reason="the remover lock is a flock on the directory")
def test_toplock_rename_if_holding_gives_0_when_the_directory_is_flocked(tmp_path: Path) -> None:
    """Another program's flock on the lock's directory past the release wait: 0 and ``$!``."""
    from perlutil import Child

    from perlcompat.locks.methods.toplock import rename_if_holding

    path, work, data = tmp_path / "test.lock", tmp_path / "work.tmp", tmp_path / "work.dat"
    lk = Lock(str(path), method="toplock", stale=600).acquire()
    work.write_text("new\n")
    other = Child.perl(
        "use Fcntl qw(:flock O_RDONLY); sysopen(my $d, $ARGV[0], O_RDONLY) or die $!;"
        " flock($d, LOCK_EX) or die $!; print qq(held\n); <STDIN>;",
        str(tmp_path),
    )
    try:
        other.expect("held")
        assert rename_if_holding(lk, str(work), str(data)) == 0
        assert OS_ERROR == errno.EWOULDBLOCK
        assert work.exists() and not data.exists()
    finally:
        other.wait()
    assert rename_if_holding(lk, str(work), str(data)) == 1
    assert OS_ERROR == 0 and data.read_text() == "new\n"
    lk.release()
