"""Semaphore: never more than n holders across Python and Perl processes, n reached, crash-safe."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, PERL, Child

from perlcompat import (
    OS_ERROR,
    Die,
    LockError,
    Semaphore,
    alarm,
    die,
    local_sig,
    sem_acquire,
    sem_release,
)
from perlcompat.locks.api import DuplicateLockError, NotLockedError


@pytest.fixture(autouse=True)
def no_leftover_alarm():  # type: ignore[no-untyped-def]
    """A failed test must not leave a real SIGALRM armed for the next one."""
    yield
    alarm(0)


# Each holder, on entry: claims marker file slot-<i> with O_EXCL (two holders of one
# slot would collide), then under flock on counter.lck does count += 1, max = max(max,
# count), total += 1; it stays inside until max has reached n (or 5 s pass), so n is
# reached whenever the semaphore admits n; on exit it undoes both.
PY_WORKER = r"""
import fcntl, os, sys, time
from perlcompat import Semaphore
name, n, k, box = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def counter(delta):
    with open(os.path.join(box, "counter.lck"), "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        path = os.path.join(box, "counter")
        count, top, total = map(int, open(path).read().split())
        count += delta
        top = max(top, count)
        total += delta > 0
        with open(path, "w") as out:
            out.write(f"{count} {top} {total}\n")
        return top

sys.stdin.readline()
for _ in range(k):
    with Semaphore(name, n, retry=None) as sem:
        marker = os.path.join(box, f"slot-{sem.slot}")
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        top = counter(+1)
        give_up = time.monotonic() + 5
        while top < n and time.monotonic() < give_up:
            time.sleep(0.002)
            top = counter(0)
        os.unlink(marker)
        counter(-1)
print("done")
"""

PERL_WORKER = r"""
use Fcntl qw(:flock O_RDWR O_CREAT O_EXCL O_WRONLY);
use Time::HiRes qw(sleep time);
my ($name, $n, $k, $box) = @ARGV;
sub counter {
    my ($delta) = @_;
    open(my $lk, ">>", "$box/counter.lck") or die "lck: $!";
    flock($lk, LOCK_EX) or die "flock: $!";
    open(my $in, "<", "$box/counter") or die "counter: $!";
    my ($count, $top, $total) = split ' ', scalar <$in>;
    close $in;
    $count += $delta;
    $top = $count if $count > $top;
    $total++ if $delta > 0;
    open(my $out, ">", "$box/counter") or die "counter: $!";
    print $out "$count $top $total\n";
    close $out;
    close $lk;
    return $top;
}
my $go = <STDIN>;
for (1 .. $k) {
    my ($fh, $slot);
    until ($fh) {
        for my $i (0 .. $n - 1) {
            sysopen(my $s, "$name.$i", O_RDWR | O_CREAT) or die "slot: $!";
            if (flock($s, LOCK_EX | LOCK_NB)) { ($fh, $slot) = ($s, $i); last }
            close $s;
        }
        sleep(0.002) unless $fh;
    }
    sysopen(my $m, "$box/slot-$slot", O_CREAT | O_EXCL | O_WRONLY) or die "marker: $!";
    close $m;
    my $top = counter(1);
    my $give_up = time + 5;
    while ($top < $n && time < $give_up) { sleep(0.002); $top = counter(0) }
    unlink("$box/slot-$slot") or die "unlink: $!";
    counter(-1);
    close $fh;
}
print "done\n";
"""

HOLD_SLOTS = r"""
alarm 20;  # a broken perlcompat fails the test instead of hanging it
use Fcntl qw(:flock O_RDWR O_CREAT);
my ($name, $n, $want) = @ARGV;
my @held;
for my $i (0 .. $n - 1) {
    last if @held == $want;
    sysopen(my $s, "$name.$i", O_RDWR | O_CREAT) or die "slot: $!";
    push @held, $s if flock($s, LOCK_EX | LOCK_NB);
}
print scalar(@held), "\n";
my $go = <STDIN>;
"""


def hammer(tmp_path: Path, n: int, python: int, perl: int, k: int) -> list[int]:
    """Run *python* + *perl* workers doing *k* holds each; return [count, max, total]."""
    box = tmp_path / "box"
    box.mkdir()
    (box / "counter").write_text("0 0 0\n")
    name = str(tmp_path / "sem")
    args = [name, str(n), str(k), str(box)]
    argvs = [[sys.executable, "-c", PY_WORKER, *args]] * python
    argvs += [[PERL, "-e", PERL_WORKER, "--", *args]] * perl
    procs = [
        subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=CHILD_ENV,
        )
        for argv in argvs
    ]
    for proc in procs:  # all started: let them go together
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out, err) == (0, b"done\n", b"")
    assert sorted(os.listdir(box)) == ["counter", "counter.lck"]  # every marker removed
    return [int(x) for x in (box / "counter").read_text().split()]


def test_many_processes_never_more_than_n_and_n_reached(tmp_path: Path) -> None:
    count, top, total = hammer(tmp_path, n=3, python=6, perl=0, k=6)
    assert (count, top, total) == (0, 3, 36)


def test_python_and_perl_share_the_slots(tmp_path: Path) -> None:
    count, top, total = hammer(tmp_path, n=2, python=4, perl=3, k=5)
    assert (count, top, total) == (0, 2, 35)


def test_n_equal_one_is_a_mutex(tmp_path: Path) -> None:
    count, top, total = hammer(tmp_path, n=1, python=3, perl=2, k=8)
    assert (count, top, total) == (0, 1, 40)


# -- crash safety ----------------------------------------------------------------


@pytest.mark.parametrize("holder", ["python", "perl"])
def test_killed_holder_frees_its_slot(tmp_path: Path, holder: str) -> None:
    name = str(tmp_path / "sem")
    if holder == "python":
        child = Child.python(
            "import sys\nfrom perlcompat import Semaphore\n"
            "s = Semaphore(sys.argv[1], 2).acquire()\ns2 = Semaphore(sys.argv[1], 2).acquire()\n"
            "print(2)\nsys.stdin.readline()",
            name,
        )
    else:
        child = Child.perl(HOLD_SLOTS, name, "2", "2")
    child.expect("2")
    sem = Semaphore(name, 2)
    assert not sem.try_acquire()
    with pytest.raises(LockError, match="all 2 slots busy"):
        sem.acquire(timeout=0.05)
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait(10)
    start = time.monotonic()
    sem.acquire(timeout=5)
    assert time.monotonic() - start < 0.5  # freed by the kernel, no stale wait
    assert Semaphore(name, 2).try_acquire()
    sem.release()
    child.kill()


def test_perl_holding_slots_leaves_exactly_the_rest(tmp_path: Path) -> None:
    name = str(tmp_path / "sem")
    child = Child.perl(HOLD_SLOTS, name, "5", "3")
    child.expect("3")
    sems = [Semaphore(name, 5) for _ in range(3)]
    assert [s.try_acquire() for s in sems] == [True, True, False]
    held = {s.slot for s in sems[:2]}
    assert len(held) == 2
    child.send("release")
    assert child.wait()[0] == 0
    assert sems[2].acquire(timeout=5) is sems[2]
    for s in sems:
        s.release()


def test_threads_are_separate_holders(tmp_path: Path) -> None:
    name = str(tmp_path / "sem")
    first = Semaphore(name, 1).acquire()
    results: list[bool] = []
    worker = threading.Thread(target=lambda: results.append(Semaphore(name, 1).try_acquire()))
    worker.start()
    worker.join()
    assert results == [False]
    first.release()
    assert Semaphore(name, 1).try_acquire()


# -- object and functional forms ---------------------------------------------------


def test_context_manager_releases_on_exception(tmp_path: Path) -> None:
    name = str(tmp_path / "sem")
    sem = Semaphore(name, 1)
    with pytest.raises(ZeroDivisionError), sem:
        assert sem.is_locked and sem.slot == 0
        1 / 0  # noqa: B018
    assert not sem.is_locked and sem.slot is None
    assert Semaphore(name, 1).try_acquire()


def test_double_acquire_and_release_are_refused(tmp_path: Path) -> None:
    sem = Semaphore(str(tmp_path / "sem"), 2).acquire()
    with pytest.raises(DuplicateLockError):
        sem.acquire()
    sem.release()
    with pytest.raises(NotLockedError):
        sem.release()


def test_sem_acquire_and_release_return_perl_values(tmp_path: Path) -> None:
    name = str(tmp_path / "sem")
    assert sem_acquire(name, 2) == 1
    assert sem_acquire(name, 2) == 0
    assert OS_ERROR == errno.EDEADLK
    assert Semaphore(name, 2).try_acquire()  # the second slot is still free for others
    assert sem_release(name) == 1
    assert sem_release(name) == 0
    assert OS_ERROR == errno.ENOLCK


def test_sem_acquire_gives_up_after_retry_minus_one_waits(tmp_path: Path) -> None:
    name = str(tmp_path / "sem")
    child = Child.perl(HOLD_SLOTS, name, "1", "1")
    child.expect("1")
    start = time.monotonic()
    assert sem_acquire(name, 1, retry=4, wait=0.1) == 0  # (4 - 1) * 0.1 s, like lock()
    took = time.monotonic() - start
    assert OS_ERROR == errno.EWOULDBLOCK
    assert str(OS_ERROR) == "Resource temporarily unavailable"
    assert 0.29 <= took < 0.6
    child.kill()


def test_sem_acquire_waits_for_a_release(tmp_path: Path) -> None:
    name = str(tmp_path / "sem")
    child = Child.perl(HOLD_SLOTS, name, "1", "1")
    child.expect("1")
    releaser = threading.Timer(0.2, child.send, ["release"])
    releaser.start()
    start = time.monotonic()
    assert sem_acquire(name, 1) == 1  # default patience 5 x 1 s
    assert 0.2 <= time.monotonic() - start < 1.0
    assert sem_release(name) == 1
    releaser.join()
    child.wait()


@pytest.mark.parametrize("where", ["main", "worker"])
def test_alarm_interrupts_a_waiting_semaphore(tmp_path: Path, where: str) -> None:
    name = str(tmp_path / "sem")
    child = Child.perl(HOLD_SLOTS, name, "1", "1")
    child.expect("1")

    def block() -> None:
        with local_sig("ALRM", lambda *a: die("time out")):
            alarm(0.3)
            Semaphore(name, 1, retry=None).acquire()

    errors: list[BaseException] = []

    def run() -> None:
        try:
            block()
        except BaseException as exc:
            errors.append(exc)

    start = time.monotonic()
    if where == "main":
        run()
    else:
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(10)
    assert len(errors) == 1 and isinstance(errors[0], Die), errors
    assert "time out" in str(errors[0])
    assert 0.29 <= time.monotonic() - start < 0.6
    alarm(0)
    child.kill()


# -- bad input and planted files ---------------------------------------------------


@pytest.mark.parametrize("n", [0, -1, True, 1.5, "3"])
def test_bad_n_is_refused(tmp_path: Path, n: object) -> None:
    with pytest.raises(ValueError, match="semaphore size n must be a whole number"):
        Semaphore(str(tmp_path / "sem"), n)  # type: ignore[arg-type]


def test_bad_name_is_refused() -> None:
    with pytest.raises(ValueError, match="lock name is empty"):
        Semaphore("", 2)
    with pytest.raises(ValueError, match="retry must be"):
        Semaphore("x", 2, retry=-1)


def test_planted_symlink_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    name = str(tmp_path / "sem")
    os.symlink(victim, name + ".0")
    with pytest.raises(OSError) as caught:
        Semaphore(name, 1).acquire(timeout=0)
    assert caught.value.errno == errno.ELOOP
    assert sem_acquire(name, 1, retry=0) == 0
    assert OS_ERROR == errno.ELOOP
    assert victim.read_text() == "precious\n"


def test_slot_files_are_kept_and_not_truncated(tmp_path: Path) -> None:
    name = str(tmp_path / "sem")
    Path(name + ".0").write_text("note\n")
    with Semaphore(name, 1):
        pass
    assert Path(name + ".0").read_text() == "note\n"


def test_repr_and_slot_paths(tmp_path: Path) -> None:
    sem = Semaphore(str(tmp_path / "sem"), 3)
    assert sem.slot_path(2) == str(tmp_path / "sem") + ".2"
    assert "not held" in repr(sem)
    with sem:
        assert f"holding slot {sem.slot}" in repr(sem)


# -- the slot descriptor is close-on-exec; the wait is locks.retry's ------------------


def test_a_slot_is_not_inherited_by_a_program_the_holder_starts(tmp_path: Path) -> None:
    """A program started while a slot is held (close_fds=False, or fork + exec) must not
    keep the slot's descriptor, so it never holds the slot after the holder is gone."""
    import fcntl

    sem = Semaphore(str(tmp_path / "sem"), 1).acquire()
    hold = sem._mine()
    assert hold is not None
    fd = hold.fd
    assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    look = "import os, sys; print(os.path.exists(f'/proc/self/fd/{sys.argv[1]}'))"
    out = subprocess.run(
        [sys.executable, "-c", look, str(fd)],
        close_fds=False,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "False"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: exec a program that reports the slot descriptor's fate
        try:
            os.dup2(write, 1)
            os.execv(sys.executable, [sys.executable, "-c", look, str(fd)])
        finally:
            os._exit(127)
    os.close(write)
    with os.fdopen(read) as answer:
        assert answer.read().strip() == "False"
    assert os.waitpid(pid, 0)[1] == 0
    sem.release()


def test_semaphore_and_lock_import_no_random(tmp_path: Path) -> None:
    """The CGI path (lock, unlock, a semaphore's wait) imports no ``random``: os.urandom."""
    code = (
        "import sys\n"
        "from perlcompat import Semaphore, lock, unlock\n"
        "assert lock(sys.argv[1] + '/lk') == 1 and unlock(sys.argv[1] + '/lk') == 1\n"
        "held = Semaphore(sys.argv[1] + '/sem', 1).acquire()\n"
        "try:\n"
        "    Semaphore(sys.argv[1] + '/sem', 1).acquire(timeout=0.05)\n"
        "except TimeoutError:\n"
        "    pass\n"
        "held.release()\n"
        "print('random' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_semaphore_patience_is_retry_minus_one_waits_on_the_lock_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The semaphore waits through locks.retry: (retry-1)*wait, pauses via perl.clock.pause."""
    from perlcompat.locks import retry as _retry
    from perlcompat.perl import clock as _clock

    now = [1000.0]
    pauses: list[float] = []

    class FakeTime:
        @staticmethod
        def monotonic() -> float:
            return now[0]

    def pause(seconds: float, *, alarm: bool = True) -> None:
        assert alarm  # the semaphore's waits honour alarm()
        pauses.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(_retry, "time", FakeTime)
    monkeypatch.setattr(_clock, "pause", pause)
    tries: list[float] = []

    def busy(self: Semaphore) -> bool:
        tries.append(now[0])
        return False

    monkeypatch.setattr(Semaphore, "try_acquire", busy)
    with pytest.raises(LockError):
        Semaphore(str(tmp_path / "sem"), 2, retry=5, wait=1).acquire()
    assert sum(pauses) == pytest.approx(4.0)
    assert tries[-1] - tries[0] == pytest.approx(4.0)
    assert max(pauses) <= _retry.MAX * 1.5 and len(tries) > 50


def test_a_forked_child_neither_takes_nor_frees_its_parents_slot(tmp_path: Path) -> None:
    """A child of ``os.fork()`` holds none of its parent's slots: its ``sem_acquire`` waits
    like anyone's (not EDEADLK), its ``sem_release`` and ``release()`` free nothing, so a
    Perl script still finds both one-slot semaphores held by the parent."""
    code = (
        "import os, sys\n"
        "from perlcompat import OS_ERROR, NotLockedError, Semaphore, sem_acquire, sem_release\n"
        "one, two = sys.argv[1], sys.argv[2]\n"
        "assert sem_acquire(one, 1) == 1\n"
        "sem = Semaphore(two, 1).acquire()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    got = [sem_acquire(one, 1, retry=1), int(OS_ERROR)]\n"
        "    got += [sem_release(one), int(OS_ERROR)]\n"
        "    try:\n"
        "        sem.release()\n"
        "        got.append('released')\n"
        "    except NotLockedError:\n"
        "        got.append('refused')\n"
        "    os.write(1, (' '.join(map(str, got)) + '\\n').encode())\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "sys.stdout.flush()\n"
        "print(sys.stdin.readline().strip(), flush=True)\n"  # the Perl side has looked
        "sem_release(one)\n"
        "sem.release()\n"
    )
    perl_try = (
        "use Fcntl qw(:flock O_RDWR O_CREAT);"
        ' for my $name (@ARGV) { sysopen(my $fh, "$name.0", O_RDWR|O_CREAT) or die $!;'
        " print flock($fh, LOCK_EX|LOCK_NB) ? 'free ' : 'held '; close($fh) } print \"\\n\";"
    )
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    child = Child.python(code, one, two)
    assert child.readline().split() == [
        "0",
        str(errno.EWOULDBLOCK),
        "0",
        str(errno.ENOLCK),
        "refused",
    ]
    looked = subprocess.run([PERL, "-e", perl_try, one, two], capture_output=True, check=True)
    assert looked.stdout.decode().split() == ["held", "held"]
    child.send("looked")
    status, out, err = child.wait()
    assert status == 0, err
    assert out.strip() == "looked"
    looked = subprocess.run([PERL, "-e", perl_try, one, two], capture_output=True, check=True)
    assert looked.stdout.decode().split() == ["free", "free"]
