"""Stale-lock recovery: by age, by dead owner, race-free, never a fresh lock.

* seed 000's five-step race, replayed step by step: the second remover must not
  remove the fresh lock (and a naive check-then-rmdir remover does);
* takeover trials: many processes race to break the same stale lock, round
  after round; an O_EXCL marker inside the critical section proves no overlap;
* kill -9 of a holder: recovered at once when the lock names its owner,
  after ``stale`` when it does not (a Perl-made lock);
* owner judgement: reused pid (start time), EPERM is alive, other host unknown.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from perlutil import Child

from perlcompat import OS_ERROR, ExpiredLockError, lock, unlock
from perlcompat.locks import guards as _guards, owner as _owner, remover as _remover
from perlcompat.locks.api import Lock
from perlcompat.locks.methods.flock import is_flocked as flock_held

FORK = multiprocessing.get_context("fork")
STALE_METHODS = ["mkdir", "symlink", "excl", "toplock", "rename"]
OLD = time.time() - 1000


def lock_exists(path: Path, method: str) -> bool:
    if method == "flock":
        return path.exists() and flock_held(str(path))
    if method == "rename":
        return os.path.lexists(str(path) + ".locked")
    return os.path.lexists(path)


def _crash_holding(path: str, method: str) -> None:
    Lock(path, method=method).acquire()
    os._exit(0)  # dies holding it: no release, no atexit


def plant_dead_owner(path: Path, method: str) -> None:
    """Leave a lock whose owner record names a process that died holding it."""
    child = FORK.Process(target=_crash_holding, args=(str(path), method))
    child.start()
    child.join(10)
    assert child.exitcode == 0 and lock_exists(path, method)


def plant_aged(path: Path, method: str) -> None:
    """Leave an old lock naming no owner, as a Perl or shell script would."""
    if method == "mkdir":
        path.mkdir()
    elif method == "symlink":
        path.symlink_to(".")
    elif method == "excl":
        path.write_bytes(b"")
    elif method == "toplock":
        path.write_bytes(b"%d<>%d<>" % (10**31, OLD))
    else:
        raise AssertionError(method)
    os.utime(path, (OLD, OLD), follow_symlinks=False)


# -- seed 000's five steps -------------------------------------------------------


@pytest.mark.parametrize("method", STALE_METHODS)
def test_five_step_race_leaves_the_fresh_lock_alone(
    tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lk"
    if method == "rename":
        plant_dead_owner(path, method)
        monkeypatch.setattr(_remover, "FIRST_LOOK", 0.0)
    else:
        plant_aged(path, method)
    a, b, c = (Lock(str(path), method=method, stale=60).backend for _ in range(3))
    real_guard = _guards.guard
    steps: list[str] = []

    def interleave(lock_path: str, exclusive: bool) -> int | None:
        if not steps:  # 1, 2: A and B have both seen the old lock; B now goes on
            steps.append("A removes")
            assert a.break_stale()  # 3. A removes the stale lock
            steps.append("C locks")
            assert c.try_acquire()  # 4. C makes a fresh lock
        return real_guard(lock_path, exclusive)

    monkeypatch.setattr(_guards, "guard", interleave)
    assert b.break_stale() is False  # 5. B looks again and leaves C's lock alone
    assert steps == ["A removes", "C locks"]
    assert lock_exists(path, method)
    assert c.release() is True


def test_five_step_race_does_remove_the_fresh_lock_with_seed_003s_check(tmp_path: Path) -> None:
    """Control: the same interleaving against seed 003's check-then-rmdir loses C's lock."""
    path = tmp_path / "lk"
    plant_aged(path, "mkdir")
    c = Lock(str(path), stale=60).backend

    def seed_003_remover(interleave: bool) -> None:
        if os.stat(path).st_mtime < time.time() - 180:  # 1, 2: both see it old
            if interleave:
                os.rmdir(path)  # 3. A removes it
                assert c.try_acquire()  # 4. C locks
            os.rmdir(path)  # 5. B removes C's fresh lock

    seed_003_remover(interleave=True)
    assert not path.exists()
    assert c.release() is False


def test_a_release_waits_for_a_remover_that_holds_the_second_lock(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    held = Lock(str(path)).acquire()
    guard = _guards.guard(str(path), exclusive=True)  # a remover between its look and rmdir
    assert guard is not None
    assert _guards.guard(str(path), exclusive=True) is None  # a second remover gives up
    release = Child.python(
        "import sys\n"
        "from perlcompat.locks import guards as _guards\n"
        "print('start', flush=True)\n"
        "fd = _guards.release_guard(sys.argv[1], patience=60)\n"
        "print('guarded', fd is not None, flush=True)\n",
        str(path),
    )
    try:
        release.expect("start")
        assert release.proc.stdout is not None
        ready, _, _ = select.select([release.proc.stdout], [], [], 0.3)
        assert not ready  # still waiting for the remover
    finally:
        _guards.unguard(guard)
    release.expect("guarded True")
    assert release.wait()[0] == 0
    shared = _guards.release_guard(str(path))
    assert shared is not None
    _guards.unguard(shared)
    held.release()


# -- many contenders break the same stale lock ---------------------------------


def _contender(
    path: str, method: str, marker: str, counter: str, rounds: int, planted: object, done: object
) -> None:
    overlaps = 0
    for _ in range(rounds):
        planted.wait()  # type: ignore[attr-defined]
        # the planted locks are broken for their dead owner or their age (1000 s); the
        # stale limit only has to spare a live holder stalled on a loaded machine
        # (toplock's whole-second time makes a fresh lock look up to 1 s older)
        lk = Lock(path, method=method, retry=200, wait=0.05, stale=10.0)
        lk.acquire()
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            own = True
        except FileExistsError:
            overlaps += 1
            own = False
        with open(counter, "r+") as stream:
            value = int(stream.read())
            stream.seek(0)
            stream.write(str(value + 1))
            stream.truncate()
        time.sleep(0.001)  # widen the critical section
        if own:
            os.unlink(marker)
        lk.release()
        done.wait()  # type: ignore[attr-defined]
    os._exit(10 + overlaps if overlaps else 0)


@pytest.mark.parametrize("method", STALE_METHODS)
def test_takeover_trials_many_contenders_no_overlap(tmp_path: Path, method: str) -> None:
    procs, rounds = 8, 16
    path, marker, counter = tmp_path / "lk", tmp_path / "marker", tmp_path / "counter"
    counter.write_text("0")
    planted, done = FORK.Barrier(procs + 1), FORK.Barrier(procs + 1)
    workers = [
        FORK.Process(
            target=_contender,
            args=(str(path), method, str(marker), str(counter), rounds, planted, done),
        )
        for _ in range(procs)
    ]
    for worker in workers:
        worker.start()
    try:
        for round_ in range(rounds):
            if round_ % 2 and method != "rename":
                plant_aged(path, method)
            else:
                plant_dead_owner(path, method)
            planted.wait(timeout=30)
            done.wait(timeout=60)
            assert not lock_exists(path, method)
    finally:
        for worker in workers:
            worker.join(10)
            if worker.exitcode is None:
                worker.kill()
    assert [w.exitcode for w in workers] == [0] * procs
    assert int(counter.read_text()) == procs * rounds


# -- kill -9 -----------------------------------------------------------------------

HOLD = """
import sys, time
from perlcompat import lock
assert lock(sys.argv[1], method=sys.argv[2]) == 1
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("method", [*STALE_METHODS, "flock"])
def test_kill_9_holder_that_names_itself_is_recovered_at_once(tmp_path: Path, method: str) -> None:
    path = tmp_path / "lk"
    holder = Child.python(HOLD, str(path), method)
    holder.expect("locked")
    holder.proc.kill()
    holder.proc.wait()
    assert lock_exists(path, method) is (method != "flock")  # left behind, but for flock
    began = time.monotonic()
    assert lock(str(path), method=method, stale=180, retry=20, wait=0.1) == 1
    assert time.monotonic() - began < 1.5  # not after 180 s: its owner is dead
    assert unlock(str(path), method=method) == 1


PERL_HOLD = {
    "mkdir": 'mkdir($ARGV[0], 0755) or die "$!";',
    "excl": 'use Fcntl; sysopen(my $l, $ARGV[0], O_WRONLY|O_CREAT|O_EXCL) or die "$!";',
    # seed 001's real ids are "30 digits or more" (a short number is not taken for a lock id)
    "toplock": 'open(L, ">>$ARGV[0]") or die; print L join("", map { int(rand(10)) } 1 .. 32),'
    ' "<>", time, "<>"; close(L);',
    "symlink": 'symlink($$, $ARGV[0]) or die "$!";',
}


@pytest.mark.parametrize("method", ["mkdir", "excl", "toplock"])
def test_kill_9_perl_holder_is_recovered_only_after_stale(tmp_path: Path, method: str) -> None:
    path = tmp_path / "lk"
    holder = Child.perl(PERL_HOLD[method] + ' print "locked\\n"; sleep(60);', str(path))
    holder.expect("locked")
    # when the lock says it was made: toplock's line has perl's whole-second time, so it
    # looks up to 1 s older than it is (hence a stale limit well above the first attempt)
    made = int(path.read_text().split("<>")[1]) if method == "toplock" else path.stat().st_mtime
    holder.proc.kill()
    holder.proc.wait()
    stale = 3.0
    assert lock(str(path), method=method, stale=stale, retry=3, wait=0.05) == 0
    assert OS_ERROR == errno.EWOULDBLOCK  # no owner named: only age can tell
    assert lock(str(path), method=method, stale=stale, retry=200, wait=0.05) == 1
    assert time.time() - made >= stale  # not broken before it was older than stale
    assert unlock(str(path), method=method) == 1


def test_kill_9_perl_symlink_holder_is_recovered_at_once(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    holder = Child.perl(PERL_HOLD["symlink"] + ' print "locked\\n"; sleep(60);', str(path))
    holder.expect("locked")
    assert os.readlink(path) == str(holder.proc.pid)
    holder.proc.kill()
    holder.proc.wait()
    began = time.monotonic()
    assert lock(str(path), method="symlink", stale=180, retry=20, wait=0.1) == 1
    assert time.monotonic() - began < 1.5
    assert unlock(str(path), method="symlink") == 1


# -- the owner judgement ---------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _write_excl(path: Path, pid: int, start: int | None, host: str | None = None) -> None:
    fields = [f"pid={pid}", f"host={host or _owner.hostname()}"]
    if start is not None:
        fields.append(f"start={start}")
    path.write_text("perlcompat excl " + " ".join(fields) + " token=x\n")


def test_reused_pid_is_detected_by_start_time(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    me, start = os.getpid(), _owner.start_time(os.getpid())
    assert start is not None
    _write_excl(path, me, start)  # names a live process, truly: not stale
    assert lock(str(path), method="excl", stale=180, retry=3, wait=0.05) == 0
    _write_excl(path, me, start + 12345)  # same pid, another start: the pid was reused
    assert _owner.alive(me, None, start + 12345) is False
    assert lock(str(path), method="excl", stale=180, retry=20, wait=0.05) == 1
    assert unlock(str(path), method="excl") == 1


def test_mkdir_owner_file_with_reused_pid_is_recovered(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    path.mkdir()
    st = os.lstat(path)
    tag = f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}"
    start = _owner.start_time(os.getpid()) or 0
    (tmp_path / "lk.owner").write_text(
        f"perlcompat mkdir pid={os.getpid()} host={_owner.hostname()} start={start + 1} "
        f"dir={tag} token=x\n"
    )
    assert lock(str(path), stale=180, retry=20, wait=0.05) == 1
    assert unlock(str(path)) == 1


def test_symlink_pid_taken_by_a_younger_process_is_dead(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    younger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        path.symlink_to(str(younger.pid))
        assert lock(str(path), method="symlink", stale=180, retry=3, wait=0.05) == 0
        made = time.time() - 100  # the link predates the process now using that pid
        os.utime(path, (made, made), follow_symlinks=False)
        assert lock(str(path), method="symlink", stale=180, retry=20, wait=0.05) == 1
        assert unlock(str(path), method="symlink") == 1
    finally:
        younger.kill()
        younger.wait()


def test_eperm_means_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lk"
    dead = _dead_pid()
    _write_excl(path, dead, None)
    assert _owner.alive(dead) is False

    def kill(pid: int, sig: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "kill", kill)
    assert _owner.alive(dead) is True
    assert lock(str(path), method="excl", stale=180, retry=4, wait=0.05) == 0
    assert path.exists()
    monkeypatch.undo()
    assert lock(str(path), method="excl", stale=180, retry=20, wait=0.05) == 1
    assert unlock(str(path), method="excl") == 1


def _ask_alive_as_nobody(pid: int, out: object) -> None:
    os.setgid(65534)
    os.setuid(65534)
    try:
        os.kill(pid, 0)
        raised = "none"
    except PermissionError:
        raised = "EPERM"
    out.send((raised, _owner.alive(pid)))  # type: ignore[attr-defined]


def test_eperm_for_real_from_an_unprivileged_process() -> None:
    if os.geteuid() == 0:
        receiver, sender = FORK.Pipe(duplex=False)
        child = FORK.Process(target=_ask_alive_as_nobody, args=(os.getpid(), sender))
        child.start()
        assert receiver.poll(30)
        assert receiver.recv() == ("EPERM", True)
        child.join(10)
    else:
        with pytest.raises(PermissionError):
            os.kill(1, 0)
        assert _owner.alive(1) is True


def test_zombie_and_other_host_and_no_pid() -> None:
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while (_owner.proc_stat(zombie.pid) or ("?", 0))[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _owner.alive(zombie.pid) is False
    zombie.wait()
    assert _owner.alive(_dead_pid(), "another-host") is None
    assert _owner.alive(None) is None
    assert _owner.alive(os.getpid(), _owner.hostname(), _owner.start_time(os.getpid())) is True


def test_other_host_lock_waits_for_its_age(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    _write_excl(path, _dead_pid(), None, host="another-host")
    assert lock(str(path), method="excl", stale=180, retry=3, wait=0.05) == 0
    os.utime(path, (OLD, OLD))
    assert lock(str(path), method="excl", stale=180, retry=3, wait=0.05) == 1
    assert unlock(str(path), method="excl") == 1


def test_record_round_trip() -> None:
    text = _owner.record("excl", token="abc")
    fields = _owner.parse(text, "excl")
    assert fields is not None and fields["token"] == "abc"
    assert _owner.owner_of(fields) == _owner.me()
    assert _owner.parse(text, "mkdir") is None
    assert _owner.parse(b"12345<>999<>") is None


# -- a live holder past its stale limit ------------------------------------------

TAKE = """
import sys
from perlcompat import lock, unlock
assert lock(sys.argv[1], method=sys.argv[2], stale=5, retry=40, wait=0.05) == 1
print("got", flush=True)
sys.stdin.readline()
assert unlock(sys.argv[1], method=sys.argv[2]) == 1
print("released", flush=True)
"""


@pytest.mark.parametrize("method", ["mkdir", "excl", "symlink"])
def test_broken_past_stale_the_old_holder_gets_expired_and_spares_the_new(
    tmp_path: Path, method: str
) -> None:
    path = tmp_path / "lk"
    old = Lock(str(path), method=method, stale=5).acquire()
    os.utime(path, (OLD, OLD), follow_symlinks=False)  # as if held for 1000 s
    taker = Child.python(TAKE, str(path), method)
    try:
        taker.expect("got")
        with pytest.raises(ExpiredLockError, match="broken or replaced"):
            old.release()
        assert lock_exists(path, method)  # the new holder's lock is untouched
        taker.send("go")
        taker.expect("released")
    finally:
        taker.kill()
    assert not lock_exists(path, method)


def test_unlock_reports_expired_as_etimedout(tmp_path: Path) -> None:
    path = str(tmp_path / "lk")
    assert lock(path, stale=5) == 1
    os.rmdir(path)  # someone broke it
    assert unlock(path) == 0
    assert OS_ERROR == errno.ETIMEDOUT


# -- a remover guard that cannot be taken fails loudly ---------------------------
# On NFS a flock(LOCK_EX) on a directory opened read-only is refused (EBADF), or lockd is
# out of locks (ENOLCK).  Before, the guard took that for "another remover is busy", so a
# stale lock there was never broken and lock() waited out its patience reporting EWOULDBLOCK.
# A port's user expects lock() to give up at once with $! naming the refusal instead: the
# stale lock is not removed (it cannot be removed safely), and nothing waits for ever.


@pytest.mark.parametrize("number", [errno.EBADF, errno.ENOLCK])
@pytest.mark.parametrize("method", ["mkdir", "excl", "symlink"])
def test_a_refused_remover_flock_is_reported_not_taken_for_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, number: int
) -> None:
    path = tmp_path / "lk"
    plant_aged(path, method)
    real_lock_fd = _guards._lock_fd

    def refuse_exclusive(fd: int, operation: int) -> None:
        if operation & 2:  # LOCK_EX, as NFS refuses it on a read-only descriptor
            raise OSError(number, os.strerror(number))
        real_lock_fd(fd, operation)

    monkeypatch.setattr(_guards, "_lock_fd", refuse_exclusive)
    backend = Lock(str(path), method=method, stale=60).backend
    assert isinstance(_remover.remover_guard(str(path), os.lstat(path)), _guards.FlockGuard)
    with pytest.raises(OSError) as caught:
        backend.break_stale()
    assert caught.value.errno == number
    assert "remover lock" in str(caught.value) and str(path) in str(caught.value)
    start = time.monotonic()
    assert lock(str(path), method=method, stale=60, retry=3, wait=5) == 0
    assert int(OS_ERROR) == number  # not EWOULDBLOCK after 10 s of waiting
    assert time.monotonic() - start < 5
    assert os.path.lexists(path)  # the stale lock is left alone, never removed unguarded
    monkeypatch.undo()
    assert lock(str(path), method=method, stale=60, retry=1) == 1  # a working guard breaks it
    assert unlock(str(path), method=method) == 1


def test_a_busy_remover_flock_still_means_try_again(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    plant_aged(path, "mkdir")
    other = _guards.guard(str(path), exclusive=True)  # another remover at work
    try:
        assert Lock(str(path), stale=60).backend.break_stale() is False
    finally:
        _guards.unguard(other)
    assert Lock(str(path), stale=60).backend.break_stale() is True


def test_a_refused_shared_storage_remover_lock_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perlcompat.locks import netfs as _netfs

    path = tmp_path / "lk"
    plant_aged(path, "excl")
    monkeypatch.setattr(_remover, "is_network", lambda dev: True)  # as on NFS/sshfs

    def refuse(lock_path: str, token: str) -> os.stat_result:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(_netfs, "_create", refuse)
    assert isinstance(_remover.remover_guard(str(path), os.lstat(path)), _netfs.RemoverLock)
    with pytest.raises(OSError) as caught:
        Lock(str(path), method="excl", stale=60).backend.break_stale()
    assert caught.value.errno == errno.EROFS
    assert "remover lock" in str(caught.value)
    assert path.exists()
    assert _netfs.RemoverLock(str(path)).wait(0.05) is False  # a release decides by age

    def stale_handle(lock_path: str, token: str) -> os.stat_result:
        raise OSError(errno.ESTALE, os.strerror(errno.ESTALE))

    monkeypatch.setattr(_netfs, "_create", stale_handle)
    assert _netfs.RemoverLock(str(path)).acquire() is False  # "not now": the next wait tries


# -- ESTALE while acquiring: "look again", never a failure (network file systems) ----------


def estale_once(
    monkeypatch: pytest.MonkeyPatch, name: str, hit: Callable[[str, tuple[object, ...]], bool]
) -> list[str]:
    """Make ``os.<name>`` raise ESTALE once, for the first call whose path *hit* picks."""
    real = getattr(os, name)
    raised: list[str] = []

    def flaky(path: object, *args: object, **kwargs: object) -> object:
        text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
        if not raised and text and hit(text, args):
            raised.append(text)
            raise OSError(errno.ESTALE, os.strerror(errno.ESTALE), text)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, name, flaky)
    return raised


def is_create(args: tuple[object, ...]) -> bool:
    return isinstance(args[0], int) and bool(args[0] & os.O_CREAT)


@pytest.mark.parametrize(
    ("look", "name", "record"),
    [
        ("lstat of the lock", "lstat", False),
        ("open of its owner record", "open", True),
        ("exclusive create", "open", None),
    ],
)
def test_estale_while_acquiring_means_look_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, look: str, name: str, record: bool | None
) -> None:
    """sshfs/NFS: a name replaced by another host as we look it up is "busy", not a failure."""
    path = tmp_path / "lk"
    if record is not None:  # a stale lock to break (with or without an owner record)
        path.write_text(_owner.record("excl", token="t") if record else "")
        os.utime(path, (OLD, OLD))
    wanted = str(path)

    def hit(text: str, args: tuple[object, ...]) -> bool:
        return text == wanted and (name == "lstat" or is_create(args) == (record is None))

    raised = estale_once(monkeypatch, name, hit)
    assert lock(wanted, method="excl", stale=60, retry=3, wait=0.1) == 1, int(OS_ERROR)
    assert raised == [wanted], look
    assert unlock(wanted, method="excl") == 1
    assert not path.exists()


CREATES = {"mkdir": "mkdir", "excl": "open", "symlink": "symlink"}


@pytest.mark.parametrize("method", sorted(CREATES))
def test_estale_that_stays_is_an_error_not_a_busy_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """A stale handle of the directory itself (NFS re-exported, working directory removed)
    never clears: ``lock()`` fails at once with ESTALE, as Perl's mkdir would, instead of
    waiting as for a busy lock (for ever with ``timeout=None``)."""
    path, directory = str(tmp_path / "lk"), str(tmp_path)
    gone: list[str] = []
    real_create, real_stat = getattr(os, CREATES[method]), os.stat

    def create(where: object, *args: object, **kwargs: object) -> object:
        if path in (where, *args):  # symlink(target, path)
            gone.append(path)  # from now on the whole directory is a stale handle
            raise OSError(errno.ESTALE, os.strerror(errno.ESTALE), path)
        return real_create(where, *args, **kwargs)

    def stat(where: str, *args: object, **kwargs: object) -> os.stat_result:
        if gone and os.fspath(where) in (directory, path):
            raise OSError(errno.ESTALE, os.strerror(errno.ESTALE), where)
        return real_stat(where, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, CREATES[method], create)
    monkeypatch.setattr(os, "stat", stat)
    started = time.monotonic()
    assert lock(path, method=method, retry=21, wait=0.1) == 0
    assert int(OS_ERROR) == errno.ESTALE, str(OS_ERROR)
    assert gone and time.monotonic() - started < 1.0  # not the 2 s patience


def test_estale_on_the_moved_lock_puts_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shared storage: a moved stale lock that cannot be looked at is put back, not removed."""
    path = tmp_path / "lk"
    plant_aged(path, "excl")
    monkeypatch.setattr(_remover, "is_network", lambda dev: True)  # as on NFS/sshfs
    monkeypatch.setattr(_remover, "SETTLE", 0.0)  # judged twice without waiting
    backend = Lock(str(path), method="excl", stale=60).backend
    assert backend.break_stale() is False  # the first judgement
    moved = f"{path}.breaking."
    raised = estale_once(monkeypatch, "lstat", lambda text, args: text.startswith(moved))
    assert backend.break_stale() is False  # moved, then cannot be confirmed: put back
    assert raised and raised[0].startswith(moved)
    assert path.exists() and os.lstat(path).st_mtime == OLD
    assert sorted(os.listdir(tmp_path)) == ["lk"]
    assert backend.break_stale() is False  # judged afresh: once
    assert backend.break_stale() is True  # and twice: removed
    assert not path.exists()


def test_estale_on_release_is_still_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release that cannot confirm its own lock keeps the lock and says why."""
    path = tmp_path / "lk"
    assert lock(str(path), method="excl") == 1
    raised = estale_once(monkeypatch, "lstat", lambda text, args: text == str(path))
    assert unlock(str(path), method="excl") == 0
    assert int(OS_ERROR) == errno.ESTALE and raised
    assert path.exists()
    assert unlock(str(path), method="excl") == 1  # held still: released on the next call


def test_one_mixed_up_read_of_an_owner_record_is_not_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sshfs gives every file at a name one inode, and its page cache can show the last
    lock's bytes under this one's size: a refusal needs two reads that agree."""
    from perlcompat.locks.methods import excl as _excl

    path = tmp_path / "lk"
    path.write_text(_owner.record("excl", token="t"))
    os.utime(path, (OLD, OLD))  # stale: broken once judged
    real = _excl.read_same
    mixed: list[bytes] = []

    def mixed_up(where: str, st: os.stat_result, limit: int = 4096) -> bytes | None:
        data = real(where, st, limit)
        if data and not mixed:
            mixed.append(data)
            return data[:-1] + b"\0"  # a shorter record's page: a zero where the newline was
        return data

    monkeypatch.setattr(_excl, "read_same", mixed_up)
    assert lock(str(path), method="excl", stale=60, retry=3, wait=0.1) == 1, int(OS_ERROR)
    assert mixed
    assert unlock(str(path), method="excl") == 1
    path.write_bytes(b"counter=12\n")  # a data file reads the same twice: refused at once
    os.utime(path, (OLD, OLD))
    assert lock(str(path), method="excl", stale=60, retry=3, wait=0.1) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert path.read_bytes() == b"counter=12\n"
