"""``record=``/``pidfile=`` against hostile input: templates that cannot be read back, data
files a declared format half-matches, and a release that cannot read the inode generation
or runs where there is none (overlayfs, a container's usual root, reuses an inode at once)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perlcompat import OS_ERROR, lock, unlock
from perlcompat.locks.api import Lock
from perlcompat.locks.record import Template


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


# -- templates that cannot be read back --------------------------------------------------


@pytest.mark.parametrize("text", ["{time}{pid}\n", "{host}{pid}", "{pid}{rand}", "x{any}{pid}"])
def test_adjacent_fields_are_refused(text: str) -> None:
    """``{time}{pid}`` renders ``176408700012345``, read back as pid 5: a waiter would judge
    a live holder by a stranger's pid (dead: broken at once).  Nothing tells where one
    number ends, so the template is refused, naming the two fields."""
    with pytest.raises(ValueError, match=r"adjacent"):
        Template(text)


@pytest.mark.parametrize(
    "text",
    [
        "{pid}\n",
        "{host}.{pid}\n",
        "{host} {pid} {time} {rand}\n",
        "{pid}\n{host}\n{expires}\n",
        "{localtime}\n",
        "lock{time}_{pid}_{addr}",
        "{pid} {any}\n",
    ],
)
def test_a_rendered_record_reads_back_as_this_process(text: str) -> None:
    template = Template(text)
    fields = template.match(template.render(stale=60))
    assert fields is not None
    if "{pid}" in text:
        assert fields.pid == os.getpid()


@pytest.mark.parametrize("text", ["{any}", "{any}\n", " {any} \n", "{any}\n{any}"])
def test_a_template_that_matches_any_content_is_refused(tmp_path: Path, text: str) -> None:
    """``record='{any}'`` would make every file a lock (a data file given by mistake
    removed once older than ``stale``)."""
    data = tmp_path / "data.txt"
    data.write_text("hello world\n")
    _age(data, 10**6)
    with pytest.raises(ValueError, match=r"record=.*matches any content"):
        lock(str(data), method="excl", record=text, stale=1)
    assert data.read_text() == "hello world\n"


def test_adjacent_fields_are_refused_by_lock(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"record=.*adjacent"):
        lock(str(tmp_path / "x.lock"), method="excl", record="{time}{pid}\n")
    assert os.listdir(tmp_path) == []


# -- data files that a declared format half-matches ----------------------------------------


def test_excl_record_refuses_a_long_file_whose_start_matches(tmp_path: Path) -> None:
    """Only the first 4 KiB of a file are read: a log whose first line matches
    ``{pid} {any}`` must not be taken for a lock (and removed when stale) for it."""
    data = tmp_path / "access.log"
    content = ("4242 GET /index.html\n" * 1000).encode()
    data.write_bytes(content)
    _age(data, 10**6)
    assert lock(str(data), method="excl", record="{pid} {any}\n", retry=2, wait=0.05) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert data.read_bytes() == content


@pytest.mark.parametrize("kind", ["foreign", "directory", "hardlink"])
def test_mkdir_pidfile_that_is_not_a_pid_file_is_refused(tmp_path: Path, kind: str) -> None:
    """A directory holding one entry of the pidfile= name that is not the declared pid
    file (other content, a directory, a second name of a data file) is not a lock:
    refused at once, never unlinked, however old."""
    path = tmp_path / "run"
    path.mkdir()
    inside = path / "pid"
    data = tmp_path / "data.txt"
    data.write_text("keep me\n")
    if kind == "foreign":
        inside.write_text("keep me\n")
    elif kind == "directory":
        inside.mkdir()
    else:
        os.link(data, inside)
    _age(path, 10**6)
    began = time.monotonic()
    assert lock(str(path), pidfile="pid", stale=1, retry=3, wait=0.2) == 0
    assert int(OS_ERROR) not in (0, errno.EWOULDBLOCK), OS_ERROR
    assert time.monotonic() - began < 0.3
    assert os.listdir(path) == ["pid"]
    assert data.read_text() == "keep me\n"
    if kind == "foreign":
        assert inside.read_text() == "keep me\n"


def test_symlink_target_declared_refuses_a_link_to_anything_else(tmp_path: Path) -> None:
    """``current -> data-2024.txt`` is no daycount.cgi lock: with ``target='.'`` it is
    refused at once, never replaced, however old (it was removed once stale)."""
    (tmp_path / "data-2024.txt").write_text("keep\n")
    path = tmp_path / "current"
    path.symlink_to("data-2024.txt")
    _age(path, 3600)
    began = time.monotonic()
    assert lock(str(path), method="symlink", target=".", stale=60, retry=3, wait=0.2) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert time.monotonic() - began < 0.3
    assert os.readlink(path) == "data-2024.txt"
    with pytest.raises(OSError, match=r"symlink to 'data-2024.txt', not the declared target='\.'"):
        Lock(str(path), method="symlink", target=".", stale=60, retry=1).acquire()
    assert os.readlink(path) == "data-2024.txt"


#: a Perl holder that writes its record in two pieces, the second when told to.
PERL_HALF_WRITER = r"""
use Fcntl; use IO::Handle;
my $f = $ARGV[0];
sysopen(my $l, $f, O_CREAT | O_EXCL | O_WRONLY) or die "busy: $!";
syswrite($l, "$$\n"); STDOUT->autoflush(1); print "half\n";
<STDIN>;
my $h = `uname -n`; chomp $h;
syswrite($l, "$h\n" . (time + 3600) . "\n"); close $l; print "whole\n";
<STDIN>;
unlink $f; print "gone\n";
"""


def test_excl_record_waits_on_a_perl_record_half_written(tmp_path: Path) -> None:
    """``syswrite($l, $$)`` then the rest: between the two the file holds a piece of the
    declared record.  That is a live Perl holder: busy (it was refused at once, EEXIST),
    and refused only if it stays a piece past the grace."""
    path = tmp_path / "session.lock"
    record = "{pid}\n{host}\n{expires}\n"
    perl = subprocess.Popen(
        ["perl", "-e", PERL_HALF_WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert perl.stdin is not None and perl.stdout is not None
    try:
        assert perl.stdout.readline() == "half\n"
        _age(path, 0)  # (written just now, however busy the machine was since)
        assert lock(str(path), method="excl", record=record, retry=1) == 0
        assert int(OS_ERROR) == errno.EWOULDBLOCK  # busy, not refused
        perl.stdin.write("\n")
        perl.stdin.flush()
        assert perl.stdout.readline() == "whole\n"
        assert lock(str(path), method="excl", record=record, retry=1) == 0
        assert int(OS_ERROR) == errno.EWOULDBLOCK
        perl.stdin.write("\n")
        perl.stdin.flush()
        assert perl.stdout.readline() == "gone\n"
    finally:
        perl.kill()
        perl.wait()
    assert lock(str(path), method="excl", record=record, retry=1) == 1
    assert unlock(str(path), method="excl") == 1
    path.write_text("12345\n")  # a piece that never grows: refused once past the grace
    _age(path, 2)
    assert lock(str(path), method="excl", record=record, retry=1) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert path.read_text() == "12345\n"


def test_only_the_start_of_a_record_is_waited_on(tmp_path: Path) -> None:
    """The grace is for a record being written: a fresh data file is still refused at once."""
    template = Template("{pid}\n{host}\n{expires}\n")
    assert template.prefix("12345")
    assert template.prefix("12345\n")
    assert template.prefix("12345\nmail.example")
    assert not template.prefix("hello world\n")
    assert not template.prefix("12345\nmail example\n")
    data = tmp_path / "data.txt"
    data.write_text("hello world\n")  # written just now
    assert lock(str(data), method="excl", record="{pid}\n{host}\n{expires}\n", retry=1) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert data.read_text() == "hello world\n"


def test_a_template_longer_than_any_lock_record_is_refused(tmp_path: Path) -> None:
    """Rendered, it would be a lock file longer than the 4 KiB every waiter reads: the
    holder's own lock refused by every other process as not a lock."""
    with pytest.raises(ValueError, match=r"record=.*more than any lock record"):
        lock(str(tmp_path / "x.lock"), method="excl", record="{pid}\n" + "#" * 5000)
    assert os.listdir(tmp_path) == []


def test_mkdir_pidfile_half_written_is_busy_then_refused(tmp_path: Path) -> None:
    path = tmp_path / "lockdir"
    path.mkdir()
    (path / "pid").write_text("12345")  # of "12345\nhost\n", written just now
    options = {"pidfile": "pid", "record": "{pid}\n{host}\n"}
    assert lock(str(path), retry=1, **options) == 0
    assert int(OS_ERROR) == errno.EWOULDBLOCK
    _age(path / "pid", 2)
    assert lock(str(path), retry=1, **options) == 0
    assert int(OS_ERROR) == errno.ENOTEMPTY
    assert (path / "pid").read_text() == "12345"


# -- nothing is made before the record is ready ------------------------------------------------


def test_a_template_that_cannot_be_written_as_bytes_is_refused(tmp_path: Path) -> None:
    """A lone surrogate in the template: its render failed after the lock file was made, which
    stayed on disk, empty, until it aged out."""
    path = tmp_path / "count.lock"
    with pytest.raises(ValueError, match=r"record=.*cannot be written as bytes"):
        lock(str(path), method="excl", record="\ud800{pid}\n")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("options", [{"method": "excl"}, {"method": "mkdir", "pidfile": "pid"}])
def test_the_record_is_ready_before_the_lock_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, str]
) -> None:
    """A holder killed between making the lock and writing its record leaves a lock that only
    ages out (an empty file, a directory without its pid file): the record is rendered first,
    so that window is one write.  A render that fails leaves nothing."""

    def fail(*_args: object, **_kwargs: object) -> str:
        raise RuntimeError("render failed")

    monkeypatch.setattr(Template, "render", fail)
    path = tmp_path / "count.lock"
    with pytest.raises(RuntimeError):
        lock(str(path), record="{pid}\n", **options)  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []


# -- a release that cannot read the inode generation ----------------------------------------

EMFILE_CHILD = """
import errno, os, resource, sys
from perlcompat import OS_ERROR, lock, unlock
path, method = sys.argv[1], sys.argv[2]
options = {"record": "{pid}\\n"} if method == "excl" else {}
assert lock(path, method=method, **options) == 1
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
fillers = []
while True:  # every descriptor taken: the release can open nothing (a daemon near its limit)
    try:
        fillers.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        assert exc.errno == errno.EMFILE
        break
got = unlock(path, method=method)
for fd in fillers:
    os.close(fd)
print(got, int(OS_ERROR), os.path.lexists(path))
"""


@pytest.mark.parametrize("method", ["mkdir", "excl"])
def test_release_with_no_descriptor_left_still_releases(tmp_path: Path, method: str) -> None:
    """The inode generation is read by opening the lock; when that open fails (EMFILE)
    the lock is still ours (its identity says so): a release that called it "broken"
    left it on disk, naming a live pid, for ``stale`` seconds."""
    path = tmp_path / "count.lock"
    out = subprocess.run(
        [sys.executable, "-c", EMFILE_CHILD, str(path), method],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "0", "False"]


# -- overlayfs: no inode generation, an inode reused at once ---------------------------------

OVERLAY_CHILD = """
import os, sys, threading
from perlcompat import Lock
from perlcompat.locks.errors import ExpiredLockError
path = sys.argv[1]
reused = removed = 0
for _ in range(20):  # until the freed inode came back a few times (other files may take it)
    first = Lock(path, method="excl", record="{pid}\\n", stale=60)
    first.acquire()
    inode = os.lstat(path).st_ino
    old = os.lstat(path).st_mtime - 120
    os.utime(path, (old, old))  # held past stale: another thread breaks it, makes its own
    second = Lock(path, method="excl", record="{pid}\\n", stale=60, retry=1)
    taken, done = threading.Event(), threading.Event()
    def hold():
        with second:
            taken.set()
            done.wait()
    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(30), "the second thread did not break the stale lock"
    same = os.lstat(path).st_ino == inode
    try:
        first.release()
    except ExpiredLockError:
        pass
    reused += same
    if not os.path.exists(path):
        removed += 1
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY))  # for the second's release
    done.set()
    thread.join()
    if os.path.exists(path):
        os.unlink(path)  # (what the second's release left: the removed file's stand-in)
    if reused >= 3:
        break
print(reused, removed)
"""


@pytest.mark.privileged  # a mount namespace (unshare) and an overlay mount
def test_excl_record_release_on_overlayfs_leaves_a_successor_with_the_same_record(
    tmp_path: Path,
) -> None:
    """Two threads of one process write the same ``{pid}`` record; overlayfs has no
    FS_IOC_GETVERSION and gives the successor's file the inode just freed.  The release
    of the broken holder must leave the successor's lock (it removed it: a third holder
    could then enter while the second still held)."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "unshare (util-linux) is missing"
    for name in ("lower", "upper", "work", "mnt"):
        (tmp_path / name).mkdir()
    prefix = [unshare, "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix = [unshare, "--user", "--map-root-user", "--mount", "--propagation", "private"]
    layers = f"lowerdir={tmp_path}/lower,upperdir={tmp_path}/upper,workdir={tmp_path}/work"
    script = textwrap.dedent(
        f"""
        set -e
        mount -t overlay overlay -o {layers} {tmp_path}/mnt
        "{sys.executable}" -c "$1" {tmp_path}/mnt/count.lock
        """
    )
    out = subprocess.run(
        [*prefix, "sh", "-c", script, "sh", OVERLAY_CHILD],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    reused, removed = map(int, out.stdout.split())
    assert reused >= 1  # the condition under test: the same inode, no generation
    assert removed == 0, "the broken holder's release removed its successor's lock"
