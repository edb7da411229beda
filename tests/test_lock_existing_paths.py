"""Every lock method against every kind of thing that may already sit at a lock path.

A lock name is often an existing file: the data file itself (Perl's
``flock(DATA, 2)`` ported as ``Lock("data.txt", method="flock")``), an old file,
a hard link, a symlink, a FIFO, a directory ("." or /tmp), another user's file.
No method may truncate, rewrite, append to, rename away or delete any of them:
each either refuses at once with a clear error (``lock()`` 0 and ``$!``,
``Lock.acquire`` an OSError naming the path and why, never a wait for the whole
patience), or, for the flock method on a regular file, locks it without
touching it.  The one kind a method takes for a lock of its own is busy, never
refused: any symlink for the symlink method.  The target's bytes, inode, mtime
and ctime, and the directory listing, are the same afterwards.
"""

from __future__ import annotations

import errno
import importlib
import os
import stat
import threading
import time
from pathlib import Path

import pytest
from perlutil import Child, as_unprivileged, require_root, run_perl, shared_directory

from perlcompat import OS_ERROR, Lock, LockError, NotALockError, lock, unlock
from perlcompat.locks.api import detect_method

METHODS = ["mkdir", "symlink", "rename", "excl", "link", "flock", "toplock"]
#: another user's file: chown needs root (``privileged``: CI runs as root)
OTHER_UID = pytest.param("other_uid", marks=pytest.mark.privileged)
KINDS = ["data", "aged", "hardlink", "symlink", "fifo", "directory", OTHER_UID]

#: patience of each attempt; a refusal must come well before it ends.
RETRY, WAIT = 4, 0.5
AT_ONCE = 1.0

DATA = "".join(f"{n}\n" for n in range(1, 1001)).encode()  # `seq 1000`


def plant(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """Put a *kind* of thing at ``tmp_path/lk``; (lock path, what must stay unchanged)."""
    path, data = tmp_path / "lk", tmp_path / "data.txt"
    if kind in ("data", "aged", "other_uid"):
        path.write_bytes(DATA)
        if kind == "aged":
            old = time.time() - 3600  # far older than any stale limit
            os.utime(path, (old, old))
        if kind == "other_uid":
            require_root("giving a file to another user")
            os.chown(path, 12345, 12345)
        return path, path
    if kind == "directory":
        path.mkdir()
        (path / "inside").write_bytes(DATA)
        return path, path / "inside"
    data.write_bytes(DATA)
    if kind == "hardlink":
        os.link(data, path)
    elif kind == "symlink":
        path.symlink_to(data)
    elif kind == "fifo":
        os.mkfifo(path)
        return path, path
    return path, data


def snapshot(tmp_path: Path, path: Path, target: Path) -> object:
    """Everything that must not change: the listing, the lock path, the target's content."""
    listing = sorted(os.listdir(tmp_path))
    at = os.lstat(path)
    link = os.readlink(path) if stat.S_ISLNK(at.st_mode) else None
    inside = sorted(os.listdir(path)) if stat.S_ISDIR(at.st_mode) else None
    st = os.lstat(target)
    content = target.read_bytes() if stat.S_ISREG(st.st_mode) else None
    return (
        listing,
        (at.st_ino, at.st_mode, at.st_nlink, at.st_uid, at.st_mtime_ns, at.st_ctime_ns),
        link,
        inside,
        (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns),
        content,
    )


def expected(method: str, kind: str) -> str:
    """ "locks" (the flock method on a regular file), "busy" (a lock of the method's own kind),
    or "refused"."""
    if method == "flock" and kind in ("data", "aged", "hardlink", "other_uid"):
        return "locks"
    if method == "symlink" and kind == "symlink":
        return "busy"  # any symlink is a symlink lock (seed 000, seed 004's `ln -s`)
    return "refused"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", METHODS)
def test_an_existing_path_is_never_modified(tmp_path: Path, method: str, kind: str) -> None:
    path, target = plant(tmp_path, kind)
    before = snapshot(tmp_path, path, target)
    outcome = expected(method, kind)

    began = time.monotonic()
    got = lock(str(path), method=method, retry=RETRY, wait=WAIT)
    took = time.monotonic() - began
    if outcome == "locks":
        assert got == 1, OS_ERROR
        assert snapshot(tmp_path, path, target) == before  # held: still untouched
        assert unlock(str(path), method=method) == 1
    elif outcome == "busy":
        assert (got, int(OS_ERROR)) == (0, errno.EWOULDBLOCK)
    else:
        assert got == 0
        assert int(OS_ERROR) not in (0, errno.EWOULDBLOCK), OS_ERROR
        assert took < AT_ONCE  # said at once, not after the whole patience
    assert snapshot(tmp_path, path, target) == before

    lk = Lock(str(path), method=method, retry=RETRY, wait=WAIT)
    if outcome == "locks":
        with lk:
            assert snapshot(tmp_path, path, target) == before
    elif outcome == "busy":
        with pytest.raises(LockError):
            lk.acquire(timeout=0.1)
    else:
        began = time.monotonic()
        with pytest.raises(OSError) as caught:
            lk.acquire()
        assert time.monotonic() - began < AT_ONCE
        # refused, not busy: NotALockError, a LockTimeout for the Python libraries' users (34)
        assert isinstance(caught.value, NotALockError)
        assert caught.value.errno not in (None, 0, errno.EWOULDBLOCK)
        assert str(path) in str(caught.value)  # names the path, and why
    assert snapshot(tmp_path, path, target) == before


def test_the_issue_reproductions_keep_the_data(tmp_path: Path) -> None:
    """Issue 11's three reproductions: flock emptied d1, rename d2, excl deleted an old d3."""
    d1, d2, d3 = (tmp_path / name for name in ("d1", "d2", "d3"))
    for data in (d1, d2, d3):
        data.write_bytes(DATA)
    os.utime(d3, (time.time() - 3600,) * 2)
    with Lock(str(d1), method="flock"):
        pass
    assert d1.read_bytes() == DATA
    assert lock(str(d2), method="rename") == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert unlock(str(d2), method="rename") == 0
    assert d2.read_bytes() == DATA and not (tmp_path / "d2.locked").exists()
    assert lock(str(d3), method="excl") == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert d3.read_bytes() == DATA


# "/tmp" is not tried with the rename method: on a broken build that renames /tmp away
@pytest.mark.parametrize(
    ("name", "method"),
    [(".", method) for method in METHODS]
    + [("/tmp", method) for method in METHODS if method != "rename"],
)
def test_a_full_directory_as_the_lock_name_is_refused_at_once(
    tmp_path: Path, name: str, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "inside").write_bytes(b"x")
    monkeypatch.chdir(work)
    before = os.lstat(name)
    began = time.monotonic()
    assert lock(name, method=method, retry=4, wait=0.5) == 0
    assert time.monotonic() - began < AT_ONCE
    assert int(OS_ERROR) != errno.EWOULDBLOCK
    if method == "mkdir":
        assert int(OS_ERROR) == errno.ENOTEMPTY
        with pytest.raises(OSError, match="not empty"):
            Lock(name, method=method).acquire()
    after = os.lstat(name)
    assert after.st_ino == before.st_ino
    if name == ".":  # /tmp is busy with everyone else's files
        assert (after.st_mtime_ns, after.st_ctime_ns) == (before.st_mtime_ns, before.st_ctime_ns)
    assert os.listdir(work) == ["inside"]
    assert os.listdir(tmp_path) == ["work"]  # no work.owner, work.locked beside it


def test_an_empty_directory_is_still_an_mkdir_lock(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    path.mkdir()  # seed 003's lock, made by Perl
    assert lock(str(path), retry=2, wait=0.05) == 0
    assert int(OS_ERROR) == errno.EWOULDBLOCK
    old = time.time() - 3600
    os.utime(path, (old, old))
    assert lock(str(path), retry=2, wait=0.05) == 1  # stale: recovered
    assert unlock(str(path)) == 1


# -- side files: the mkdir owner file, the held rename marker ------------------------


@pytest.mark.parametrize("kind", ["data", "hardlink", OTHER_UID, "symlink", "fifo"])
def test_mkdir_never_writes_a_data_file_at_its_owner_path(tmp_path: Path, kind: str) -> None:
    owner, target = plant(tmp_path, kind)
    owner = owner.rename(tmp_path / "lk.owner")
    if target.name == "lk":
        target = owner
    before = snapshot(tmp_path, owner, target)
    path = tmp_path / "lk"
    assert lock(str(path)) == 1  # the lock works, it only keeps no record
    assert path.is_dir()
    assert unlock(str(path)) == 1
    assert snapshot(tmp_path, owner, target) == before


@pytest.mark.parametrize("kind", ["data", "aged", "hardlink", OTHER_UID])
def test_rename_never_takes_a_data_file_at_its_held_name_for_a_lock(
    tmp_path: Path, kind: str
) -> None:
    held, target = plant(tmp_path, kind)
    held = held.rename(tmp_path / "lk.locked")
    if target.name == "lk":
        target = held
    before = snapshot(tmp_path, held, target)
    began = time.monotonic()
    assert lock(str(tmp_path / "lk"), method="rename", retry=4, wait=0.5, stale=60) == 0
    assert int(OS_ERROR) in (errno.EEXIST, errno.EPERM)
    assert time.monotonic() - began < AT_ONCE
    assert snapshot(tmp_path, held, target) == before
    assert detect_method(str(tmp_path / "lk")) is None  # not listed as a held rename lock


# -- what each method does take for a lock of its own --------------------------------


def test_flock_writes_nothing_even_into_a_file_it_made(tmp_path: Path) -> None:
    made = tmp_path / "made"
    with Lock(str(made), method="flock") as held:
        assert made.read_bytes() == b""  # created empty, and left empty
        info = held.backend.describe()  # the holder comes from /proc/locks
        assert info is not None and info["pid"] == os.getpid()
    assert made.read_bytes() == b""
    perl = tmp_path / "perl"
    perl.write_bytes(b"")  # Perl's open(LOCK, "> f") leaves an empty file
    with Lock(str(perl), method="flock") as held:
        assert perl.read_bytes() == b""
        info = held.backend.describe()
        assert info is not None and info["pid"] == os.getpid()


PERL_APPENDER = r"""
open(F, ">>", $ARGV[0]) or die "open: $!"; flock(F, 2) or die "flock: $!";
print F "perl line\n"; close(F) or die "close: $!";
"""


def test_flock_keeps_a_perl_appenders_line_written_before_it_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Perl appender that gets in between our O_EXCL create and our flock: its line stays.
    from perlcompat.locks.methods import flock as _flocklock

    log = tmp_path / "log.txt"
    opened = _flocklock.FlockBackend._open

    def open_then_perl_appends(self: _flocklock.FlockBackend) -> tuple[int, bool]:
        fd, created = opened(self)
        assert created
        done = run_perl(PERL_APPENDER, str(log))
        assert done.returncode == 0, done.stderr
        return fd, created

    monkeypatch.setattr(_flocklock.FlockBackend, "_open", open_then_perl_appends)
    with Lock(str(log), method="flock"), open(log, "ab") as stream:
        stream.write(b"python line\n")
    assert log.read_bytes() == b"perl line\npython line\n"


PERL_FLOCK_HOLDER = r"""
use Fcntl ':flock';
open(DATA, "+<", $ARGV[0]) or die "open: $!"; flock(DATA, LOCK_EX) or die "flock: $!";
print "locked\n"; <STDIN>; close(DATA); print "closed\n";
"""


def test_flock_on_a_data_file_excludes_perls_flock_on_it(tmp_path: Path) -> None:
    """Perl's flock(DATA, 2) on the data file itself and Lock(data, method="flock")."""
    data = tmp_path / "count.txt"
    data.write_bytes(DATA)
    before = os.stat(data)
    child = Child.perl(PERL_FLOCK_HOLDER, str(data))
    try:
        child.expect("locked")
        assert lock(str(data), method="flock", retry=2, wait=0.05) == 0
        assert int(OS_ERROR) == errno.EWOULDBLOCK
        info = Lock(str(data), method="flock").backend.describe()
        assert info is not None and info["pid"] == child.proc.pid  # from /proc/locks
        child.send("go")
        child.expect("closed")
        assert lock(str(data), method="flock", retry=20, wait=0.1) == 1
        assert unlock(str(data), method="flock") == 1
    finally:
        child.kill()
    assert data.read_bytes() == DATA
    assert os.stat(data).st_mtime_ns == before.st_mtime_ns


def test_excl_takes_an_empty_file_and_its_own_record_for_locks(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    path.write_bytes(b"")  # seed 004's (set -C; : > file)
    assert lock(str(path), method="excl", retry=2, wait=0.05) == 0
    assert int(OS_ERROR) == errno.EWOULDBLOCK
    held = Lock(str(tmp_path / "mine"), method="excl").acquire()
    other = Lock(str(tmp_path / "mine"), method="excl")
    with pytest.raises(LockError):
        other.acquire(timeout=0.1)  # our own record is a lock, busy
    held.release()


def test_toplock_waits_on_seed_001_lines_and_refuses_other_lines(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    seed = b"%d<>%d<>" % (10**31, int(time.time()))  # a Perl writer's request, no newline
    path.write_bytes(seed)
    assert lock(str(path), method="toplock", retry=2, wait=0.05) == 0
    assert int(OS_ERROR) == errno.EWOULDBLOCK  # busy: our line waits behind Perl's
    assert path.read_bytes().startswith(seed)
    board = tmp_path / "board"  # seed 001's own data format: `01<>text<>` lines
    board.write_bytes(b"01<>hello<>\n02<>1700000000<>\n")
    assert lock(str(board), method="toplock", retry=2, wait=0.05) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert board.read_bytes() == b"01<>hello<>\n02<>1700000000<>\n"


# -- toplock's whole-second times --------------------------------------------------------


def test_toplock_never_breaks_a_live_lock_before_stale(tmp_path: Path) -> None:
    """Its line's time is whole seconds: a lock taken at x.95 s looked 0.95 s older."""
    path = str(tmp_path / "lk")
    stale = 1.5
    while time.time() % 1 < 0.9:  # take it late in a second: int() drops ~0.9 s
        time.sleep(0.01)
    taken = time.time()  # the line's real time is at least this
    held = Lock(path, method="toplock", stale=stale).acquire()
    broken: list[float] = []

    def waiter() -> None:
        lk = Lock(path, method="toplock", stale=stale, retry=None, wait=0.01).acquire()
        broken.append(time.time())
        lk.release()

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    thread.join(10)
    assert broken, "the waiter never took the expired lock"
    assert broken[0] - taken > stale  # not before the live holder was `stale` old
    with pytest.raises(OSError):
        held.release()  # broken while held: ExpiredLockError


# -- rename never renames onto something --------------------------------------------


def test_rename_never_renames_the_marker_onto_a_file_at_the_held_name(tmp_path: Path) -> None:
    path, held = tmp_path / "lk", tmp_path / "lk.locked"
    path.write_bytes(b"")  # a free marker
    held.write_bytes(DATA)  # and a data file where the held marker would go
    began = time.monotonic()
    assert lock(str(path), method="rename", retry=4, wait=0.5) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert time.monotonic() - began < AT_ONCE
    assert held.read_bytes() == DATA and path.read_bytes() == b""


DIE_HOLDING = """
import os, sys
from perlcompat import Lock
Lock(sys.argv[1], method="rename").acquire()
os._exit(0)  # dies holding it: its record names a dead process
"""


def test_breaking_a_stale_rename_lock_never_renames_onto_the_free_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perlutil import run_python

    from perlcompat.locks import remover as _remover

    path, held = tmp_path / "lk", tmp_path / "lk.locked"
    done = run_python(DIE_HOLDING, str(path))
    assert done.returncode == 0, done.stderr
    assert held.exists() and not path.exists()
    path.write_bytes(DATA)  # meanwhile a data file took the free name
    monkeypatch.setattr(_remover, "FIRST_LOOK", 0.0)
    assert Lock(str(path), method="rename").backend.break_stale() is True
    assert path.read_bytes() == DATA  # not replaced by the stale marker
    assert not held.exists()  # the stale marker itself was removed
    assert lock(str(path), method="rename", retry=2, wait=0.05) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert path.read_bytes() == DATA


def test_symlink_method_refuses_a_hard_linked_symlink(tmp_path: Path) -> None:
    """A second name for a symlink (``ln`` of the link itself) is not a lock it made."""
    other = tmp_path / "other"
    other.symlink_to(".")
    path = tmp_path / "lk"
    os.link(other, path, follow_symlinks=False)
    old = time.time() - 3600
    os.utime(path, (old, old), follow_symlinks=False)  # stale by age, if it were a lock
    assert lock(str(path), method="symlink", retry=2, wait=0.05) == 0
    assert int(OS_ERROR) == errno.EPERM
    assert os.path.islink(path) and os.path.islink(other)


@pytest.mark.privileged
@pytest.mark.parametrize("method", ["excl", "toplock"])
def test_root_refuses_another_users_empty_file(tmp_path: Path, method: str) -> None:
    # As root in a sticky directory: an empty file of another user's proves no lock;
    # excl would remove it once stale, toplock append to it and remove it.
    require_root("giving a file to another user")
    tmp_path.chmod(0o1777)
    path = tmp_path / "job.lock"
    path.write_bytes(b"")
    os.chown(path, 12345, 12345)
    old = time.time() - 3600
    os.utime(path, (old, old))
    before = path.stat()
    began = time.monotonic()
    assert lock(str(path), method=method, retry=2, wait=0.5, stale=60) == 0
    assert int(OS_ERROR) == errno.EPERM
    assert time.monotonic() - began < AT_ONCE
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_uid) == (before.st_ino, 0, 12345)


@pytest.mark.privileged
def test_root_still_takes_another_users_excl_lock_with_a_record(tmp_path: Path) -> None:
    # A record proves a lock whoever owns the file: a dead holder's stale one is broken.
    require_root("giving a file to another user")
    path = tmp_path / "job.lock"
    path.write_bytes(b"perlcompat excl pid=999999999 host=elsewhere token=x\n")
    os.chown(path, 12345, 12345)
    old = time.time() - 3600
    os.utime(path, (old, old))
    assert lock(str(path), method="excl", retry=2, wait=0.5, stale=60) == 1
    assert unlock(str(path), method="excl") == 1


@pytest.mark.parametrize("method", ["excl", "link", "rename"])
def test_a_lock_path_that_cannot_be_read_alike_twice_is_never_removed(
    tmp_path: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look that cannot tell what the path holds (``read_same`` finds it changed as it
    reads, every time: wine's lstat and fstat disagree on a file whose times were set, a
    client cache may) decides nothing, so nothing is removed: the patience runs out.

    Before: the first such look counted as "passed" for good, and an aged data file was
    removed as a stale lock.
    """
    module = importlib.import_module(f"perlcompat.locks.methods.{method}")
    path = tmp_path / "lk"
    target = tmp_path / "lk.locked" if method == "rename" else path  # rename: its held name
    target.write_bytes(DATA)
    old = time.time() - 3600
    os.utime(target, (old, old))
    before = snapshot(tmp_path, target, target)
    monkeypatch.setattr(module, "read_same", lambda *args, **kwargs: None)
    lk = Lock(str(path), method=method, stale=60, timeout=1)
    with pytest.raises(LockError) as caught:
        lk.acquire()
    assert not isinstance(caught.value, NotALockError)  # undecided: busy, not refused
    assert snapshot(tmp_path, target, target) == before


@pytest.mark.privileged
def test_a_free_rename_marker_we_may_not_write_is_no_refusal() -> None:
    """Another user's free marker (root's, 0644) in a shared directory: renamed, found not
    writable, renamed back: a ``PermissionError`` (EACCES), not a refusal.  A step that
    makes the lock, it is not retried by ``retry_errnos`` (only a read of the lock path is).

    Before: ``NotALockError`` "is not a regular file", never retried: a lock marker
    refused as something no lock method makes.
    """
    require_root("a marker of another user")
    with shared_directory() as base:
        base.chmod(0o777)  # not sticky: the other user may rename root's marker
        marker = base / "lk"
        marker.write_bytes(b"")
        marker.chmod(0o644)

        def take() -> tuple[str, bool, int | None, str]:
            lk = Lock(str(marker), method="rename", timeout=0)
            try:
                lk.acquire()
            except OSError as exc:
                first = (type(exc).__name__, isinstance(exc, NotALockError), exc.errno)
            lk.retry_errnos = [errno.EACCES]
            try:
                lk.acquire(timeout=0.2)
            except OSError as exc:
                return (*first[:3], type(exc).__name__)
            return (*first[:3], "taken")

        got = as_unprivileged(take)
        assert got == ("PermissionError", False, errno.EACCES, "PermissionError")
        assert marker.read_bytes() == b"" and sorted(os.listdir(base)) == ["lk"]
