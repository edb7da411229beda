"""replace_file: never partial after kill -9, and the inode hazard shown against real perl."""

from __future__ import annotations

import errno
import os
import random
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, PERL, Child

import perlcompat
from perlcompat import (
    OS_ERROR,
    Die,
    ExpiredLockError,
    LockError,
    alarm,
    die,
    local_sig,
    replace_file as replace_file_,
)

replace_file = replace_file_


@pytest.fixture(autouse=True)
def no_leftover_alarm():  # type: ignore[no-untyped-def]
    """A failed test must not leave a real SIGALRM armed for the next one."""
    yield
    alarm(0)


def wait_blocked_in_flock(pid: int, path: str, timeout: float = 10) -> None:
    """Wait until /proc/locks shows *pid* blocked (``->``) in flock on *path*'s inode."""
    inode = os.stat(path).st_ino
    pattern = re.compile(rf"^\d+: -> FLOCK\s+ADVISORY\s+WRITE\s+{pid}\s+\S+:{inode}\s", re.M)
    give_up = time.monotonic() + timeout
    while not pattern.search(Path("/proc/locks").read_text()):
        assert time.monotonic() < give_up, f"pid {pid} never blocked in flock on {path}"
        time.sleep(0.001)


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- basic behaviour ------------------------------------------------------------------


def test_replaces_str_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    assert replace_file(str(path), "héllo\n") == 1
    assert path.read_bytes() == "héllo\n".encode()
    assert replace_file(path, b"\x82\xa0 sjis\n") == 1
    assert path.read_bytes() == b"\x82\xa0 sjis\n"
    assert replace_file(path, bytearray(b"")) == 1
    assert path.read_bytes() == b""
    assert temp_files(tmp_path) == []
    assert OS_ERROR == 0


def test_callable_gets_old_content_and_legacy_bytes_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "bbs.dat"
    legacy = "投稿<>".encode("shift_jis") + b"\xff\xfe\n"
    path.write_bytes(legacy)
    seen: list[object] = []

    def add(old: str | bytes) -> str:
        seen.append(old)
        assert isinstance(old, str)
        return old + "new<>\n"

    replace_file(path, add)
    assert path.read_bytes() == legacy + b"new<>\n"
    replace_file(path, lambda old: old + b"raw\n", encoding=None)  # type: ignore[operator]
    assert path.read_bytes() == legacy + b"new<>\nraw\n"
    replace_file(path, lambda old: old.replace("稿", "稿!"), encoding="shift_jis")
    assert (
        path.read_bytes()
        == legacy.replace("稿".encode("shift_jis"), "稿!".encode("shift_jis")) + b"new<>\nraw\n"
    )


def test_callable_on_missing_file_gets_empty(tmp_path: Path) -> None:
    path = tmp_path / "new.txt"
    replace_file(path, lambda old: f"{old!r}\n")
    assert path.read_text() == "''\n"
    replace_file(tmp_path / "new2.txt", lambda old: f"{old!r}\n".encode(), encoding=None)
    assert (tmp_path / "new2.txt").read_text() == "b''\n"


def test_mode_and_owner_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    if os.getuid() == 0:
        os.chown(path, 1234, 5678)
    replace_file(path, "new\n")
    info = os.stat(path)
    assert stat.S_IMODE(info.st_mode) == 0o640
    if os.getuid() == 0:
        assert (info.st_uid, info.st_gid) == (1234, 5678)


def test_new_file_gets_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        replace_file(tmp_path / "fresh.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "fresh.txt").st_mode) == 0o644


def test_lock_file_is_created_beside_and_never_truncated(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    lck = tmp_path / "data.txt.lck"
    lck.write_text("perl wrote this\n")
    replace_file(path, "x")
    assert lck.read_text() == "perl wrote this\n"
    replace_file(path, "y", lock=str(tmp_path / "other.lock"))
    assert (tmp_path / "other.lock").exists()
    replace_file(path, "z", lock=False)
    assert sorted(os.listdir(tmp_path)) == ["data.txt", "data.txt.lck", "other.lock"]


def test_fsyncs_file_and_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    replace_file(tmp_path / "a", "1")
    assert len(synced) == 2
    synced.clear()
    replace_file(tmp_path / "a", "2", fsync=False)
    assert synced == []


@pytest.mark.parametrize("callable_data", [False, True])
def test_symlink_at_path_is_refused_not_read_or_replaced(
    tmp_path: Path, callable_data: bool
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("precious\n")
    secret.chmod(0o600)
    path = tmp_path / "data.txt"
    os.symlink(secret, path)
    seen: list[str] = []

    def append(old: str | bytes) -> str:
        seen.append(str(old))
        return f"{old}new\n"

    with pytest.raises(OSError) as caught:
        replace_file(path, append if callable_data else "new\n")
    assert caught.value.errno == errno.ELOOP and "symlink" in str(caught.value)
    assert OS_ERROR == errno.ELOOP
    assert seen == []  # the target was never read
    assert path.is_symlink() and os.readlink(path) == str(secret)
    assert secret.read_text() == "precious\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize(("kind", "number"), [("dir", errno.EISDIR), ("fifo", errno.EINVAL)])
def test_directory_or_fifo_at_path_is_refused(tmp_path: Path, kind: str, number: int) -> None:
    path = tmp_path / "data.txt"
    if kind == "dir":
        path.mkdir()
    else:
        os.mkfifo(path)
    for data in ("new\n", lambda old: old):
        with pytest.raises(OSError) as caught:
            replace_file(path, data)
        assert caught.value.errno == number


def test_callable_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "board.dat"
    path.write_text("old\n")
    path.chmod(0o600)
    replace_file(path, lambda old: f"{old}new\n")
    assert path.read_text() == "old\nnew\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_planted_symlink_at_lock_file_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    path = tmp_path / "data.txt"
    path.write_text("old\n")
    os.symlink(victim, str(path) + ".lck")
    with pytest.raises(OSError) as caught:
        replace_file(path, "new\n")
    assert caught.value.errno == errno.ELOOP
    assert OS_ERROR == errno.ELOOP
    assert victim.read_text() == "precious\n"
    assert path.read_text() == "old\n"


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        ({"data": 42}, TypeError, "data must be str, bytes or a callable"),
        ({"data": "x", "encoding": None}, TypeError, "str data with encoding=None"),
        ({"data": lambda old: 42}, TypeError, "callable must return str or bytes"),
        ({"data": lambda old: "x", "encoding": None}, TypeError, "encoding=None; return bytes"),
        ({"data": "x", "lock": 1}, TypeError, "lock must be True, False or a lock file path"),
        ({"data": "x", "timeout": -1}, ValueError, "timeout must be a number"),
    ],
)
def test_bad_input_is_refused_and_file_untouched(
    tmp_path: Path, kwargs: dict[str, object], exc: type[Exception], message: str
) -> None:
    path = tmp_path / "data.txt"
    path.write_text("old\n")
    with pytest.raises(exc, match=message):
        replace_file(path, **kwargs)  # type: ignore[arg-type]
    assert path.read_text() == "old\n"
    assert temp_files(tmp_path) == []


def test_lock_file_must_not_be_the_data_file(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    with pytest.raises(ValueError, match="waiting writers lose their update"):
        replace_file(path, "x", lock=str(path))
    with pytest.raises(ValueError, match="needs a file path"):
        replace_file("", "x")


def test_failed_check_leaves_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "workdata.dat"
    path.write_text("old\n")
    seen: list[list[str]] = []

    def check() -> bool:  # TOP?LOCK: is our id still first in the lock file?
        seen.append(temp_files(tmp_path))
        return False

    with pytest.raises(ExpiredLockError, match="file is unchanged"):
        replace_file(path, "new\n", check=check)
    assert len(seen[0]) == 1  # the new content was on disk, waiting for the rename
    assert path.read_text() == "old\n"
    assert temp_files(tmp_path) == []
    assert OS_ERROR == errno.ETIMEDOUT
    replace_file(path, "new\n", check=lambda: True)
    assert path.read_text() == "new\n"


def test_exception_in_callable_leaves_file(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("old\n")
    with pytest.raises(ZeroDivisionError):
        replace_file(path, lambda old: str(1 / 0))
    assert path.read_text() == "old\n"
    # the lock was released: another writer gets it at once
    replace_file(path, "new\n", timeout=0)


# -- the lock wait: timeout and alarm ------------------------------------------------

HOLD_LCK = r"""
alarm 20;  # a broken perlcompat fails the test instead of hanging it
use Fcntl qw(:flock);
open(my $lk, ">>", "$ARGV[0].lck") or die "lck: $!";
flock($lk, LOCK_EX) or die "flock: $!";
print "locked\n";
my $go = <STDIN>;
"""


def test_busy_lock_file_times_out(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("old\n")
    perl = Child.perl(HOLD_LCK, str(path))
    perl.expect("locked")
    start = time.monotonic()
    with pytest.raises(LockError, match="is busy"):
        replace_file(path, "new\n", timeout=0.2)
    assert 0.19 <= time.monotonic() - start < 0.5
    assert OS_ERROR == errno.EWOULDBLOCK
    assert path.read_text() == "old\n"
    perl.kill()


@pytest.mark.parametrize("where", ["main", "worker"])
def test_alarm_interrupts_the_lock_wait(tmp_path: Path, where: str) -> None:
    path = tmp_path / "data.txt"
    path.write_text("old\n")
    perl = Child.perl(HOLD_LCK, str(path))
    perl.expect("locked")
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with local_sig("ALRM", lambda *a: die("time out")):
                alarm(0.3)
                replace_file(path, "new\n")
        except BaseException as exc:
            errors.append(exc)

    start = time.monotonic()
    if where == "main":
        run()
    else:
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(10)
    assert len(errors) == 1 and isinstance(errors[0], Die) and "time out" in str(errors[0])
    assert 0.29 <= time.monotonic() - start < 0.6
    assert path.read_text() == "old\n"
    alarm(0)
    perl.kill()


# -- kill -9: old or new content, never partial ------------------------------------------

VERSION_LINES = 50_000


def version(k: int) -> bytes:
    return f"version {k:08d}\n".encode() * VERSION_LINES


def assert_whole_version(data: bytes, allowed: set[int]) -> int:
    """*data* is exactly one complete version from *allowed*; return which."""
    first = data[:17]
    assert first.startswith(b"version "), data[:40]
    k = int(first[8:16])
    assert k in allowed and data == version(k), f"partial or mixed content (starts {first!r})"
    return k


# In the child, os.write writes half of what it is given, says "half" and blocks:
# a kill -9 then lands in the middle of the write, deterministically.
STALL_WRITE = """
import os, sys
real_write = os.write
def stalled(fd, data):
    done = real_write(fd, bytes(data[: len(data) // 2]))
    print("half", flush=True)
    sys.stdin.readline()
    return done
os.write = stalled
"""


def test_kill_during_the_write_leaves_old_content(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(version(1))
    child = Child.python(
        STALL_WRITE + "from perlcompat import replace_file\n"
        "replace_file(sys.argv[1], sys.argv[2].encode() * 50000)",
        str(path),
        "version 00000002\n",
    )
    child.expect("half")
    temps = temp_files(tmp_path)
    assert len(temps) == 1 and 0 < (tmp_path / temps[0]).stat().st_size < len(version(2))
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait(10)
    assert_whole_version(path.read_bytes(), {1})
    child.kill()


def test_kill_between_fsync_and_rename_leaves_old_content(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(version(1))
    child = Child.python(
        "import sys\nfrom perlcompat import replace_file\n"
        "def check():\n    print('written', flush=True)\n"
        "    sys.stdin.readline()\n    return True\n"
        "replace_file(sys.argv[1], sys.argv[2].encode() * 50000, check=check)",
        str(path),
        "version 00000002\n",
    )
    child.expect("written")
    (temp,) = temp_files(tmp_path)
    assert (tmp_path / temp).read_bytes() == version(2)  # complete, only not yet renamed
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait(10)
    assert_whole_version(path.read_bytes(), {1})


def test_naive_rewrite_killed_mid_write_is_partial(tmp_path: Path) -> None:
    """The contrast: what the test above would catch (Perl's ``open(OUT, "> $file")``)."""
    path = tmp_path / "data.txt"
    path.write_bytes(version(1))
    child = Child.python(
        STALL_WRITE + "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)\n"
        "os.write(fd, sys.argv[2].encode() * 50000)",
        str(path),
        "version 00000002\n",
    )
    child.expect("half")
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait(10)
    with pytest.raises(AssertionError, match="partial or mixed"):
        assert_whole_version(path.read_bytes(), {1, 2})
    child.kill()


def test_random_kills_never_leave_partial_content(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(version(0))
    writer = (
        "import sys\nfrom perlcompat import replace_file\nk = int(sys.argv[2])\n"
        "while True:\n    k += 1\n    print(k, flush=True)\n"
        "    replace_file(sys.argv[1], f'version {k:08d}\\n'.encode() * 50000)\n"
    )
    rng = random.Random(4)
    start_k = 0
    # at least 8 rounds, and more until a kill has landed mid-replace: on a fast disk
    # (tmpfs: no real fsync) a kill lands between replaces about half of the time
    for round_ in range(64):
        if round_ >= 8 and temp_files(tmp_path):
            break
        child = Child.python(writer, str(path), str(start_k))
        printed = [int(child.readline()) for _ in range(rng.randint(1, 3))]
        time.sleep(rng.uniform(0, 0.01))  # the fault's moment, not synchronisation
        child.proc.send_signal(signal.SIGKILL)
        child.proc.wait(10)
        assert child.proc.stdout is not None
        printed += [int(line) for line in child.proc.stdout.read().split()]
        child.kill()
        # version `last` was being written when the kill came: the file is it or the one before
        last = printed[-1]
        start_k = assert_whole_version(path.read_bytes(), {last - 1, last})
    # stray temp files prove some kills landed mid-replace, not only between replaces
    assert temp_files(tmp_path)


# -- the inode hazard, against real perl ------------------------------------------------

PERL_LOCKS_DATA_FILE = r"""
use Fcntl qw(:flock SEEK_SET);
open(my $fh, "+<", $ARGV[0]) or die "open: $!";
print "opened\n";
flock($fh, LOCK_EX) or die "flock: $!";
my @lines = <$fh>;
seek($fh, 0, SEEK_SET) or die;
print $fh @lines, "perl\n" or die;
truncate($fh, tell($fh)) or die;
close($fh) or die;
print "done\n";
"""

PERL_LOCKS_LCK_FILE = r"""
use Fcntl qw(:flock SEEK_SET);
open(my $lk, ">>", "$ARGV[0].lck") or die "lck: $!";
print "waiting\n";
flock($lk, LOCK_EX) or die "flock: $!";
open(my $fh, "+<", $ARGV[0]) or die "open: $!";
my @lines = <$fh>;
seek($fh, 0, SEEK_SET) or die;
print $fh @lines, "perl\n" or die;
truncate($fh, tell($fh)) or die;
close($fh) or die;
close($lk);
print "done\n";
"""


def test_locking_the_data_file_loses_perls_update(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "data.txt"
    path.write_text("start\n")
    mine = os.open(path, os.O_RDWR)
    fcntl.flock(mine, fcntl.LOCK_EX)  # the naive port: lock the data file itself
    perl = Child.perl(PERL_LOCKS_DATA_FILE, str(path))
    perl.expect("opened")
    wait_blocked_in_flock(perl.proc.pid, str(path))
    replace_file(path, lambda old: old + "python\n", lock=False)
    os.close(mine)  # perl now gets its lock -- on the old, unlinked inode
    perl.expect("done")
    assert perl.wait()[0] == 0
    assert path.read_text() == "start\npython\n"  # perl's line is gone, and perl saw no error


def test_orphaned_inode_holds_the_lost_update(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "data.txt"
    path.write_text("start\n")
    mine = os.open(path, os.O_RDWR)
    fcntl.flock(mine, fcntl.LOCK_EX)
    perl = Child.perl(PERL_LOCKS_DATA_FILE, str(path))
    perl.expect("opened")
    wait_blocked_in_flock(perl.proc.pid, str(path))
    replace_file(path, "python\n", lock=False)
    fcntl.flock(mine, fcntl.LOCK_UN)
    perl.expect("done")
    assert os.pread(mine, 100, 0) == b"start\nperl\n"  # written where nobody will look
    os.close(mine)


def test_shared_lock_file_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text("start\n")
    children: list[Child] = []

    def update(old: str | bytes) -> str:
        # we hold data.txt.lck now; perl starts and blocks on it during our replace
        perl = Child.perl(PERL_LOCKS_LCK_FILE, str(path))
        children.append(perl)
        perl.expect("waiting")
        wait_blocked_in_flock(perl.proc.pid, str(path) + ".lck")
        assert isinstance(old, str)
        return old + "python\n"

    replace_file(path, update)
    perl = children[0]
    perl.expect("done")
    assert perl.wait()[0] == 0
    assert path.read_text() == "start\npython\nperl\n"


PERL_NMS_WRITER = r"""
use Fcntl qw(:flock);
my ($file, $k, $tag) = @ARGV;
my $go = <STDIN>;
for my $i (1 .. $k) {
    open(my $lk, ">>", "$file.lck") or die "lck: $!";
    flock($lk, LOCK_EX) or die "flock: $!";
    open(my $in, "<", $file) or die "in: $!";
    my @lines = <$in>;
    close $in;
    open(my $out, ">", "$file.tmp$$") or die "tmp: $!";
    print $out @lines, "$tag $i\n";
    close($out) or die "close: $!";
    rename("$file.tmp$$", $file) or die "rename: $!";
    close $lk;
}
print "done\n";
"""

PY_WRITER = """
import sys
from perlcompat import replace_file
file, k, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.stdin.readline()
for i in range(1, k + 1):
    replace_file(file, lambda old: old + f"{tag} {i}\\n")
print("done")
"""


def test_python_and_perl_writers_under_the_lock_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "guestbook.txt"
    path.write_text("")
    k = 25
    argvs = [[sys.executable, "-c", PY_WRITER, str(path), str(k), f"py{i}"] for i in range(3)]
    argvs += [[PERL, "-e", PERL_NMS_WRITER, "--", str(path), str(k), f"pl{i}"] for i in range(2)]
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
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out, err) == (0, b"done\n", b"")
    lines = path.read_text().splitlines()
    expected = {
        f"{tag}{i} {n}"
        for tag, i in [("py", 0), ("py", 1), ("py", 2), ("pl", 0), ("pl", 1)]
        for n in range(1, k + 1)
    }
    assert len(lines) == 5 * k
    assert set(lines) == expected
    for tag in ("py0", "py1", "py2", "pl0", "pl1"):  # each writer's lines in its own order
        mine = [line for line in lines if line.startswith(tag + " ")]
        assert mine == [f"{tag} {n}" for n in range(1, k + 1)]


def test_inside_a_held_flock_lock_pass_lock_false(tmp_path: Path) -> None:
    from perlcompat import Lock

    path = tmp_path / "data.txt"
    with Lock(str(path) + ".lck", method="flock"):
        start = time.monotonic()
        with pytest.raises(LockError, match="pass lock=False"):
            replace_file(path, "x")
        assert time.monotonic() - start < 0.5  # refused at once, not a self-deadlock
        replace_file(path, "y", lock=False)
    assert path.read_text() == "y"


# -- temp files of killed writers: the next writer removes them, and nothing else ---------

#: a writer that stops between fsync and rename (its temp file complete, flocked) until told
STOP_BEFORE_RENAME = (
    "import sys\nfrom perlcompat import replace_file\n"
    "def check():\n    print('written', flush=True)\n"
    "    sys.stdin.readline()\n    return True\n"
    "replace_file(sys.argv[1], sys.argv[2].encode() * 1000, check=check, **eval(sys.argv[3]))"
)


def _reaped_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def snapshot(directory: Path, skip: set[str]) -> dict[str, tuple[object, ...]]:
    """Every entry of *directory* but *skip*: kind, inode, links, mtime and content."""
    seen: dict[str, tuple[object, ...]] = {}
    for entry in os.scandir(directory):
        if entry.name in skip:
            continue
        st = os.lstat(entry.path)
        if stat.S_ISREG(st.st_mode):
            content: object = Path(entry.path).read_bytes()
        elif stat.S_ISLNK(st.st_mode):
            content = os.readlink(entry.path)
        else:
            content = None
        seen[entry.name] = (
            stat.S_IFMT(st.st_mode),
            st.st_ino,
            st.st_nlink,
            st.st_mtime_ns,
            content,
        )
    return seen


def plant_decoys(directory: Path, base: str) -> int:
    """Plant things that look like temp files of *base* but must survive; return a dead pid."""
    dead = _reaped_pid()
    (directory / "victim").write_bytes(b"victim\n")
    (directory / "hard-victim").write_bytes(b"hard\n")
    names = {
        f".{base}.{os.getpid()}.deadbeef.tmp": b"live writer (this test)\n",
        f".{base}.{dead}.DEADBEEF.tmp": b"upper-case tag\n",
        f".{base}.{dead}.deadbee.tmp": b"7 hex digits\n",
        f"{base}.{dead}.deadbeef.tmp": b"no leading dot\n",
        f".{base}.{dead}.deadbeef.tmp.bak": b"not .tmp at the end\n",
        f".{base}.0{dead}.deadbeef.tmp": b"pid with a leading zero\n",
        f".{base}.{dead}x.deadbeef.tmp": b"pid not a number\n",
        f"..{dead}.deadbeef.tmp": b"no name\n",
        f".{base}x.{dead}.deadbeef.tmp": b"another file's temp file\n",
        "unrelated.txt": b"data\n",
    }
    for name, data in names.items():
        (directory / name).write_bytes(data)
    os.symlink("victim", directory / f".{base}.{dead}.5ca1ab1e.tmp")
    os.link(directory / "hard-victim", directory / f".{base}.{dead}.0badcafe.tmp")
    (directory / f".{base}.{dead}.cafebabe.tmp").mkdir()
    os.mkfifo(directory / f".{base}.{dead}.feedface.tmp")
    return dead


def test_next_writer_removes_temp_files_of_killed_writers_only(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_bytes(b"version 0\n" * 1000)
    replace_file(path, b"version 0\n" * 1000)  # makes data.txt.lck
    plant_decoys(tmp_path, "data.txt")
    before = snapshot(tmp_path, {"data.txt"})
    killed: list[int] = []
    for k in range(1, 9):  # killed between fsync and rename: each leaves its temp file
        child = Child.python(STOP_BEFORE_RENAME, str(path), f"version {k}\n", "{}")
        child.expect("written")
        # the writer removed the one before, whose writer was dead (killed) ...
        mine = [n for n in temp_files(tmp_path) if any(f".{p}." in n for p in killed)]
        assert mine == []
        child.proc.send_signal(signal.SIGKILL)
        child.proc.wait(10)
        child.kill()
        killed.append(child.proc.pid)
        # ... and its own stays: nobody removes it until a writer comes
        assert len([n for n in temp_files(tmp_path) if f".{child.proc.pid}." in n]) == 1
    assert path.read_bytes() == b"version 0\n" * 1000  # no kill changed the data
    replace_file(path, b"version 9\n" * 1000)
    assert path.read_bytes() == b"version 9\n" * 1000
    assert not [n for n in temp_files(tmp_path) if any(f".{p}." in n for p in killed)]
    assert snapshot(tmp_path, {"data.txt"}) == before  # decoys, victims, the .lck: untouched


def test_random_kills_leave_no_temp_file_after_the_next_writer(tmp_path: Path) -> None:
    """kill -9 at random moments (in the write, the fsync, the cleaning): the next writer cleans."""
    path = tmp_path / "data.txt"
    path.write_bytes(version(0))
    plant_decoys(tmp_path, "data.txt")
    before = snapshot(tmp_path, {"data.txt", "data.txt.lck"})
    decoys = set(before)
    writer = (
        "import sys\nfrom perlcompat import replace_file\nk = int(sys.argv[2])\n"
        "while True:\n    k += 1\n    print(k, flush=True)\n"
        "    replace_file(sys.argv[1], f'version {k:08d}\\n'.encode() * 50000)\n"
    )
    rng = random.Random(11)
    start_k = 0
    left_behind = 0
    for _ in range(20):
        child = Child.python(writer, str(path), str(start_k))
        printed = [int(child.readline()) for _ in range(rng.randint(1, 2))]
        time.sleep(rng.uniform(0, 0.01))  # the fault's moment, not synchronisation
        child.proc.send_signal(signal.SIGKILL)
        child.proc.wait(10)
        assert child.proc.stdout is not None
        printed += [int(line) for line in child.proc.stdout.read().split()]
        child.kill()
        start_k = assert_whole_version(path.read_bytes(), {printed[-1] - 1, printed[-1]})
        left_behind += len(set(temp_files(tmp_path)) - decoys)
        # a writer's temp files never outlive the next writer
        assert len(set(temp_files(tmp_path)) - decoys) <= 1
    replace_file(path, version(start_k + 1))
    assert set(temp_files(tmp_path)) - decoys == set()
    assert snapshot(tmp_path, {"data.txt", "data.txt.lck"}) == before
    assert left_behind > 0  # some kills did land mid-replace


def test_a_live_writers_temp_file_is_kept(tmp_path: Path) -> None:
    """Alive by pid, or holding the temp file's flock (a writer on another host): kept."""
    import fcntl

    path = tmp_path / "data.txt"
    path.write_text("old\n")
    live = Child.python(STOP_BEFORE_RENAME, str(path), "new\n", "{}")
    live.expect("written")
    (live_temp,) = temp_files(tmp_path)
    # a temp file named for a dead pid whose flock is held (as by a writer elsewhere)
    held = tmp_path / f".data.txt.{_reaped_pid()}.abcdef01.tmp"
    held.write_text("elsewhere\n")
    fd = os.open(held, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # another writer of the same file, under another lock (so it does not wait)
        replace_file(path, "other\n", lock=str(tmp_path / "other.lck"))
        assert sorted(temp_files(tmp_path)) == sorted([live_temp, held.name])
    finally:
        os.close(fd)
    live.send("go")
    assert live.wait()[0] == 0
    assert path.read_text() == "new\n" * 1000
    # the flock is gone and its pid is dead: the next writer removes it
    replace_file(path, "last\n")
    assert temp_files(tmp_path) == []


def test_clean_temp_files_names_what_it_removed(tmp_path: Path) -> None:
    from perlcompat.locks.replace import clean_temp_files, temp_file_owner

    dead = plant_decoys(tmp_path, "data.txt")
    orphans = [tmp_path / f".data.txt.{dead}.0123abcd.tmp", tmp_path / f".b.c.{dead}.89abcdef.tmp"]
    for orphan in orphans:
        orphan.write_text("orphan\n")
    other = tmp_path / f".data.txtx.{dead}.deadbeef.tmp"  # a decoy for data.txt only
    before = snapshot(tmp_path, {o.name for o in orphans} | {other.name})
    assert temp_file_owner(orphans[1].name) == dead
    assert temp_file_owner(orphans[1].name, "b") is None
    assert temp_file_owner(orphans[1].name, "b.c") == dead
    assert clean_temp_files(tmp_path, "data.txt") == [str(orphans[0])]
    assert orphans[1].exists() and other.exists()
    # any file's, as the CLI does
    assert sorted(clean_temp_files(tmp_path)) == sorted([str(orphans[1]), str(other)])
    assert snapshot(tmp_path, set()) == before


def test_break_stale_removes_dead_writers_temp_files(tmp_path: Path) -> None:
    dead = plant_decoys(tmp_path, "data.txt")
    (tmp_path / f".data.txtx.{dead}.deadbeef.tmp").unlink()  # (a real orphan here)
    orphan = tmp_path / f".guestbook.txt.{dead}.0123abcd.tmp"
    orphan.write_text("orphan\n")
    before = snapshot(tmp_path, {orphan.name})
    result = subprocess.run(
        [sys.executable, "-m", "perlcompat", "locks", str(tmp_path), "--break-stale"],
        capture_output=True,
        text=True,
        env=CHILD_ENV,
        timeout=60,
        check=True,
    )
    assert f"removed {orphan.name} (temp file of a dead replace_file writer)" in result.stdout
    assert not orphan.exists()
    assert snapshot(tmp_path, set()) == before
    orphan.write_text("orphan\n")
    result = subprocess.run(
        [sys.executable, "-m", "perlcompat", "locks", str(tmp_path), "--json", "--break-stale"],
        capture_output=True,
        text=True,
        env=CHILD_ENV,
        timeout=60,
        check=True,
    )
    import json

    assert json.loads(result.stdout)["removed_temp_files"] == [orphan.name]


# -- Perl's failure modes and Perl's lines -------------------------------------------------
def test_must_exist_stops_as_perls_open_or_die(tmp_path: Path) -> None:
    """A missing guestbook: Perl's ``open(IN, "<$f") or die`` stops; so does must_exist=True."""
    path = tmp_path / "guestbook.txt"
    perl = subprocess.run(
        [PERL, "-e", 'open(IN, "<", $ARGV[0]) or die "$!\\n"; print "went on\\n"', str(path)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert perl.returncode != 0 and perl.stdout == b""
    called = []
    with pytest.raises(FileNotFoundError) as info:
        replace_file(path, lambda old: called.append(old) or old + "entry\n", must_exist=True)
    assert info.value.errno == errno.ENOENT and info.value.filename == str(path)
    assert f"{OS_ERROR}\n".encode() == perl.stderr  # "No such file or directory"
    assert called == [] and not path.exists() and temp_files(tmp_path) == []
    with pytest.raises(FileNotFoundError):
        replace_file(path, "whole new content\n", must_exist=True)
    assert not path.exists()
    # without it, a missing file reads as "" (Perl's unchecked open): the old behaviour
    replace_file(path, lambda old: old + "entry\n")
    assert path.read_text() == "entry\n"
    assert replace_file(path, lambda old: old + "second\n", must_exist=True) == 1
    assert path.read_text() == "entry\nsecond\n"


def test_lines_are_perls_list_context_lines(tmp_path: Path) -> None:
    """``@lines = <IN>``: split at "\\n" only, even in bytes that splitlines() splits at."""
    content = (
        b"a\x0bb<>1<>\n"  # vertical tab
        b"\x82\x0c\x1c\x1d\x1e<>2<>\r\n"  # form feed, file/group/record separators, CRLF
        b"\xc2\x85\x85<>3<>\n"  # NEL, as UTF-8 and as a Latin-1 byte
        b"\n"
        b"last line without newline"
    )
    path = tmp_path / "data.dat"
    path.write_bytes(content)
    code = 'open(IN, "<", $ARGV[0]) or die; print unpack("H*", $_), "\\n" for <IN>;'
    perl = subprocess.run(
        [PERL, "-e", code, str(path)],
        capture_output=True,
        timeout=60,
        check=True,
    )
    perl_lines = [bytes.fromhex(h) for h in perl.stdout.decode().split()]
    seen: list[object] = []

    def update(lines: list[str]) -> list[str]:
        seen.append(list(lines))
        assert lines[len(lines)] is perlcompat.undef  # a Perl list: past the end is undef
        lines.append("added\n")
        return lines

    replace_file(path, update, lines=True)
    (got,) = seen
    assert [line.encode("utf-8", "surrogateescape") for line in got] == perl_lines
    assert len(perl_lines) == 5
    assert path.read_bytes() == content + b"added\n"
    seen.clear()
    replace_file(path, lambda lines: seen.append(lines) or lines[:1], lines=True, encoding=None)
    assert seen[0][0] == b"a\x0bb<>1<>\n" and path.read_bytes() == b"a\x0bb<>1<>\n"


def test_lines_edge_cases(tmp_path: Path) -> None:
    path = tmp_path / "data"
    seen: list[object] = []
    replace_file(path, lambda lines: seen.append(lines) or ["x\n"], lines=True)
    assert seen == [[]] and path.read_text() == "x\n"  # a missing file: no lines
    with pytest.raises(TypeError, match="needs a callable"):
        replace_file(path, "text", lines=True)
    with pytest.raises(TypeError, match="not all str or all bytes"):
        replace_file(path, lambda lines: ["a\n", b"b\n"], lines=True)
    assert path.read_text() == "x\n"
    assert temp_files(tmp_path) == []
