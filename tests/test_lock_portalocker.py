"""portalocker's conventions adopted (issue 34): ``LockedFile`` and ``Semaphore``'s options.

* ``LockedFile(path, mode)`` flocks the data file itself and hands over the open
  handle, portalocker's ``Lock``: the lock is Perl's ``flock`` on that file (live
  ``perl`` processes and Python ones keep one counter exact); "w" empties the file
  only once the lock is held; taken again it gives the same handle and one release
  frees it (``counted=True``: portalocker's ``RLock``).
* ``Semaphore(..., pattern=, timeout=)`` and ``acquire(raise_on_timeout=False)``:
  portalocker's ``BoundedSemaphore`` slot names, its patience in seconds, and None
  when no slot frees up.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest
from perlutil import Child, run_perl, run_python

from perlcompat import LockedFile, LockTimeout, NotLockedError, Semaphore

#: a perl process holding ``flock(F, LOCK_EX)`` on ARGV[0] (opened "+<") until told to go
PERL_HOLD = r"""
use Fcntl qw(:flock);
open(F, '+<', $ARGV[0]) or die "open: $!"; flock(F, LOCK_EX) or die "flock: $!";
print "locked\n"; <STDIN>; close(F); print "released\n";
"""

#: perl's non-blocking flock try on ARGV[0]: prints "got" or "busy"
PERL_TRY = r"""
use Fcntl qw(:flock);
open(F, '<', $ARGV[0]) or die "open: $!"; print flock(F, $ARGV[1] | LOCK_NB) ? "got" : "busy";
"""


def perl_try(path: Path, how: str = "LOCK_EX") -> str:
    """Perl's ``flock(F, LOCK_EX|LOCK_NB)`` (or *how*) on *path*: "got" or "busy"."""
    done = run_perl(PERL_TRY.replace("$ARGV[1]", how), str(path))
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


# -- LockedFile: the lock is Perl's flock on the data file ------------------------------------
def test_w_empties_the_file_only_once_perl_has_let_go(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    data.write_text("perl's data")
    perl = Child.perl(PERL_HOLD, str(data))
    perl.expect("locked")
    try:
        with pytest.raises(LockTimeout):
            LockedFile(data, "w", timeout=0).acquire()
        assert data.read_text() == "perl's data"  # busy: never opened with O_TRUNC
    finally:
        perl.send("go")
    perl.expect("released")
    with LockedFile(data, "w", timeout=30) as fh:
        assert data.read_text() == ""  # emptied now that the lock is ours
        fh.write("x")
        fh.seek(0)
        fh.write("y")  # positioned writes, as open("w") gives
    assert data.read_text() == "y"


def test_perl_waits_for_the_handle_and_the_handle_for_perl(tmp_path: Path) -> None:
    data = tmp_path / "log.txt"
    lk = LockedFile(data, "a")
    fh = lk.acquire()
    fh.write("python\n")
    assert perl_try(data) == "busy"
    fh.close()  # the program's close does not release the lock: release() does
    assert lk.is_locked and perl_try(data) == "busy"
    lk.release()
    assert perl_try(data) == "got"
    assert data.read_text() == "python\n"


#: one read-increment-write of the counter ARGV[0], ARGV[1] times, under Perl's flock
PERL_COUNT = r"""
use Fcntl qw(:flock);
print "ready\n"; <STDIN>;
for (1 .. $ARGV[1]) {
    open(my $c, '+<', $ARGV[0]) or die "open: $!"; flock($c, LOCK_EX) or die "flock: $!";
    my $n = <$c>; seek($c, 0, 0) or die; print $c $n + 1; truncate($c, tell($c)) or die;
    close($c) or die;
}
print "done\n";
"""

#: the same through LockedFile(counter, "r+")
PY_COUNT = r"""
import sys
from perlcompat import LockedFile
lk = LockedFile(sys.argv[1], "r+", timeout=None)
print("ready"); sys.stdin.readline()
for _ in range(int(sys.argv[2])):
    with lk as fh:
        n = int(fh.read())
        fh.seek(0)
        fh.truncate()
        fh.write(str(n + 1))
print("done")
"""


def test_perl_and_python_keep_one_counter_exact(tmp_path: Path) -> None:
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    cycles = 150
    children = [Child.perl(PERL_COUNT, str(counter), str(cycles)) for _ in range(2)]
    children += [Child.python(PY_COUNT, str(counter), str(cycles)) for _ in range(2)]
    for child in children:
        child.expect("ready")
    for child in children:
        child.send("go")
    for child in children:
        child.expect("done")
        status, _out, err = child.wait()
        assert status == 0, err
    assert counter.read_text() == str(4 * cycles)


def test_one_object_shared_by_threads_keeps_a_counter_exact(tmp_path: Path) -> None:
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    lk = LockedFile(counter, "r+", timeout=None)
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(100):
                with lk as fh:
                    n = int(fh.read())
                    fh.seek(0)
                    fh.truncate()
                    fh.write(str(n + 1))
        except BaseException as exc:  # (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert counter.read_text() == "400"


def test_modes_are_opens(tmp_path: Path) -> None:
    data = tmp_path / "data.bin"
    data.write_bytes(b"abc")
    with LockedFile(data, "a") as fh:
        fh.write("x")
        fh.seek(0)
        fh.write("y")  # O_APPEND: both at the end
    assert data.read_bytes() == b"abcxy"
    with LockedFile(data, "a+") as fh:
        fh.seek(0)
        assert fh.read() == "abcxy"
    with LockedFile(data, "rb") as fh:
        assert fh.read() == b"abcxy"
    with LockedFile(data, "w+b") as fh:
        assert fh.read() == b""
        fh.write(b"new")
    assert data.read_bytes() == b"new"
    with LockedFile(data, "r", encoding="ascii", shared=True) as fh:
        assert fh.read() == "new"
        assert perl_try(data, "LOCK_SH") == "got"  # LOCK_SH: readers share it
        assert perl_try(data) == "busy"
    missing = tmp_path / "missing.txt"
    with pytest.raises(FileNotFoundError):
        LockedFile(missing, "r").acquire()
    assert not missing.exists()


@pytest.mark.parametrize(
    ("mode", "options", "error"),
    [
        ("x", {}, ValueError),
        ("rw", {}, ValueError),
        ("q", {}, ValueError),
        ("rbt", {}, ValueError),
        (2, {}, TypeError),
        ("rb", {"encoding": "utf-8"}, ValueError),
        ("r", {"buffering": 0}, ValueError),
        ("r", {"encoding": "no-such-codec"}, LookupError),
    ],
)
def test_bad_modes_are_refused_at_construction(
    tmp_path: Path, mode: object, options: dict[str, object], error: type[Exception]
) -> None:
    with pytest.raises(error):
        LockedFile(tmp_path / "f", mode, **options)  # type: ignore[arg-type]
    assert not (tmp_path / "f").exists()


def test_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("keep")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(OSError) as raised:
        LockedFile(tmp_path / "link", "w").acquire()
    assert raised.value.errno == errno.ELOOP
    assert target.read_text() == "keep"


def test_taken_again_gives_the_same_handle_and_one_release_frees_it(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    lk = LockedFile(data)
    other = LockedFile(data, timeout=0)
    with lk as fh:
        assert lk.acquire() is fh  # portalocker's Lock; Perl's flock on a handle holding it
        with pytest.raises(LockTimeout):
            other.acquire()
    assert fh.closed and not lk.is_locked
    with other:  # the with's one release freed it
        pass
    lk.release()  # not held: nothing, as portalocker's Lock and Perl's LOCK_UN
    lk.acquire()
    lk.release()
    lk.release()


def test_counted_counts_and_refuses_one_release_too_many(tmp_path: Path) -> None:
    lk = LockedFile(tmp_path / "data.txt", counted=True)
    fh = lk.acquire()
    assert lk.acquire() is fh
    lk.release()
    assert not fh.closed and lk.is_locked
    lk.release()
    assert fh.closed and not lk.is_locked
    with pytest.raises(NotLockedError):
        lk.release()


def test_a_lock_dropped_by_the_program_stays_held(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    fh = LockedFile(data).acquire()  # portalocker's throwaway idiom: held until exit
    import gc

    gc.collect()
    assert not fh.closed
    assert perl_try(data) == "busy"
    child = run_python("import sys\nprint(open(sys.argv[1]).read())", str(data))
    assert child.returncode == 0


#: a release whose flush fails (EFBIG past RLIMIT_FSIZE) keeps the lock; the next one works
PY_FLUSH_FAILS = r"""
import fcntl, os, resource, signal, sys
from perlcompat import LockedFile
path = sys.argv[1]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
lk = LockedFile(path, "w")
fh = lk.acquire()
fh.write("x" * 100)
resource.setrlimit(resource.RLIMIT_FSIZE, (10, hard))
try:
    lk.release()
except OSError as exc:
    print("raised", exc.errno)
print("held", lk.is_locked, fh.closed)
other = os.open(path, os.O_RDONLY)
try:
    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except BlockingIOError:
    print("busy")
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
print("again", lk.acquire() is fh)  # taken again by its holder: held, no release pending
try:
    LockedFile(path, "a", timeout=0).acquire()  # must not finish our release and take it
    print("taken from its holder")
except TimeoutError:
    print("busy")
lk.release()
print("released", lk.is_locked, fh.closed, os.path.getsize(path))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_a_release_whose_flush_fails_keeps_the_lock_and_the_data(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    done = run_python(PY_FLUSH_FAILS, str(data))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == [
        f"raised {errno.EFBIG}",
        "held True False",
        "busy",  # flushed first, unlocked after: nothing was unlocked with data unwritten
        "again True",
        "busy",
        "released False True 100",
    ]


# -- Semaphore: portalocker's BoundedSemaphore options -------------------------------------------
PERL_SLOTS = r"""
use Fcntl qw(:flock);
my @held;
for my $file (@ARGV) { open(my $f, '>>', $file) or die; flock($f, LOCK_EX) or die; push @held, $f }
print "locked\n"; <STDIN>;
"""


def test_pattern_names_the_slots_and_perl_holds_them(tmp_path: Path) -> None:
    sem = Semaphore(tmp_path / "jobs", 2, pattern="{name}.{number:02d}.lock", timeout=0)
    assert [sem.slot_path(i) for i in range(2)] == [
        str(tmp_path / "jobs.00.lock"),
        str(tmp_path / "jobs.01.lock"),
    ]
    perl = Child.perl(PERL_SLOTS, sem.slot_path(0), sem.slot_path(1))
    perl.expect("locked")
    try:
        with pytest.raises(LockTimeout):
            sem.acquire()
        assert sem.acquire(raise_on_timeout=False) is None
    finally:
        perl.send("go")
        perl.wait()
    assert sem.acquire() is sem
    sem.release()
    assert sorted(os.listdir(tmp_path)) == ["jobs.00.lock", "jobs.01.lock"]


def test_pattern_shares_portalockers_bounded_semaphore(tmp_path: Path) -> None:
    portalocker = pytest.importorskip("portalocker")
    theirs = portalocker.BoundedSemaphore(2, name="jobs", directory=str(tmp_path), timeout=0)
    assert theirs.acquire() is not None
    ours = Semaphore(tmp_path / "jobs", 2, pattern="{name}.{number:02d}.lock", timeout=0)
    ours.acquire()
    with pytest.raises(LockTimeout):
        Semaphore(tmp_path / "jobs", 2, pattern="{name}.{number:02d}.lock", timeout=0).acquire()
    ours.release()
    theirs.release()


@pytest.mark.parametrize("pattern", ["{name}", "{name}.{slot}", "x/{name}.{number}", "{0}", ""])
def test_a_pattern_without_one_name_per_slot_is_refused(tmp_path: Path, pattern: str) -> None:
    with pytest.raises(ValueError, match="pattern"):
        Semaphore(tmp_path / "jobs", 2, pattern=pattern)


def test_timeout_is_the_patience_and_not_with_retry(tmp_path: Path) -> None:
    assert Semaphore(tmp_path / "s", 1, timeout=2.5).patience() == 2.5
    assert Semaphore(tmp_path / "s", 1, timeout=None).patience() is None
    assert Semaphore(tmp_path / "s", 1).patience() == 4.0  # the default stays retry=5, wait=1
    with pytest.raises(ValueError, match="not both"):
        Semaphore(tmp_path / "s", 1, timeout=1, retry=2)
    with pytest.raises(ValueError, match="timeout"):
        Semaphore(tmp_path / "s", 1, timeout=float("nan"))
    holder = Semaphore(tmp_path / "s", 1)
    holder.acquire()
    try:
        with pytest.raises(LockTimeout):
            Semaphore(tmp_path / "s", 1, timeout=0).acquire()
    finally:
        holder.release()
