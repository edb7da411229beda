"""Lock artefacts in the Perl side's format: ``record=`` (excl), ``target=`` (symlink),
``pidfile=`` (mkdir), their validation, and a release that never removes what it did not make."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from perlutil import run_perl

from perlcompat import OS_ERROR, lock, unlock
from perlcompat.locks.api import Lock

#: seed 003's mkdir ``sub lock``/``sub unlock`` with a 60 s stale rule (scripts use 30 to 180).
PERL_MKDIR_SUB = r"""
sub lock {
    my $dir = $_[0];
    if (-e $dir) { my $t = (stat($dir))[9]; if (defined $t && $t < time - 60) { &unlock($dir); } }
    return mkdir($dir, 0755) ? 1 : 0;
}
sub unlock { rmdir("$_[0]"); }
"""


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# -- item 7: mkdir unlock after the lock was broken and the inode reused ------------------


def test_mkdir_unlock_never_removes_a_perl_lock_that_reused_our_inode(tmp_path: Path) -> None:
    """A port request outlives the Perl sub's stale time; Perl breaks the lock and mkdirs its
    own, which gets the same inode (ext4 reuses it at once); our unlock must leave it."""
    path = tmp_path / "lockdir"
    for _ in range(3):
        assert lock(str(path), stale=600) == 1
        before = os.stat(path).st_ino
        _age(path, 120)  # held past the Perl sub's 60 s
        taken = run_perl(PERL_MKDIR_SUB + 'print lock($ARGV[0]) ? "got" : "busy";', str(path))
        assert taken.stdout == b"got", taken.stderr
        reused = os.stat(path).st_ino == before
        assert unlock(str(path)) == 0
        assert OS_ERROR == errno.ETIMEDOUT  # "broken or replaced while held"
        assert path.is_dir(), f"our unlock removed the live Perl lock (inode reused: {reused})"
        freed = run_perl(PERL_MKDIR_SUB + "print unlock($ARGV[0]) ? 1 : 0;", str(path))
        assert freed.stdout == b"1"


def test_excl_record_unlock_never_removes_a_perl_lock_that_reused_our_inode(
    tmp_path: Path,
) -> None:
    path = tmp_path / "count.lock"
    breaker = r"""
use Fcntl;
my $f = $ARGV[0];
unlink($f) if (stat($f))[9] < time - 60;
sysopen(my $l, $f, O_CREAT | O_EXCL | O_WRONLY) or die "busy: $!";
print $l "$$\n"; close($l); print "got";
"""
    assert lock(str(path), method="excl", record="{pid}\n", stale=600) == 1
    _age(path, 120)
    taken = run_perl(breaker, str(path))
    assert taken.stdout == b"got", taken.stderr
    perl_content = path.read_bytes()
    assert unlock(str(path), method="excl") == 0
    assert path.read_bytes() == perl_content


# -- what the port writes: exactly the Perl sibling's artefact, nothing beside it ---------


def test_excl_record_writes_exactly_the_rendered_record(tmp_path: Path) -> None:
    path = tmp_path / "smt-mirror.pid"
    assert lock(str(path), method="excl", record="{pid}") == 1
    assert path.read_bytes() == str(os.getpid()).encode()
    assert os.listdir(tmp_path) == ["smt-mirror.pid"]  # our token stays in memory
    assert unlock(str(path), method="excl", record="{pid}") == 1
    assert os.listdir(tmp_path) == []


def test_mkdir_pidfile_holds_only_the_pid_file(tmp_path: Path) -> None:
    path = tmp_path / "lockdir"
    assert lock(str(path), pidfile="pid") == 1
    assert os.listdir(path) == ["pid"]
    assert (path / "pid").read_text() == f"{os.getpid()}\n"
    assert sorted(os.listdir(tmp_path)) == ["lockdir"]  # no .owner file beside it
    assert unlock(str(path)) == 1
    assert os.listdir(tmp_path) == []
    record = "{host}.{pid}\n"
    assert lock(str(path), pidfile="lock.pid", record=record) == 1
    assert (path / "lock.pid").read_text() == f"{os.uname().nodename}.{os.getpid()}\n"
    assert unlock(str(path)) == 1


def test_symlink_target_is_written_as_declared(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    assert lock(str(path), method="symlink", target=".") == 1
    assert os.readlink(path) == "."
    assert unlock(str(path), method="symlink") == 1
    assert lock(str(path), method="symlink", target="/{pid}") == 1
    assert os.readlink(path) == f"/{os.getpid()}"
    assert unlock(str(path), method="symlink") == 1
    assert not os.path.lexists(path)


# -- what the port reads -------------------------------------------------------------------


def test_undeclared_perl_content_is_refused_naming_it_and_the_record_that_declares_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "count.lock"
    path.write_text("12345\n")
    assert lock(str(path), method="excl") == 0
    assert OS_ERROR == errno.EEXIST
    with pytest.raises(OSError, match=r"holds '12345\\n'.*record='\{pid\}\\n'"):
        Lock(str(path), method="excl", retry=1).acquire()
    path.write_text("mail.example.org.4242\n")
    with pytest.raises(OSError, match=r"record='\{host\}\.\{pid\}\\n'"):
        Lock(str(path), method="excl", retry=1).acquire()
    assert path.read_text() == "mail.example.org.4242\n"  # never touched


def test_a_data_file_stays_refused_when_a_record_is_declared(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    data.write_text("hello world\n")
    _age(data, 10**6)
    with pytest.raises(OSError, match=r"holds 'hello world\\n', which is not the declared"):
        Lock(str(data), method="excl", record="{pid}\n", retry=1).acquire()
    assert data.read_text() == "hello world\n"


def test_a_declared_record_of_a_dead_pid_is_recovered_at_once(tmp_path: Path) -> None:
    path = tmp_path / "count.lock"
    path.write_text(f"{_dead_pid()}\n")
    assert lock(str(path), method="excl", record="{pid}\n", retry=20, wait=0.05) == 1
    assert path.read_text() == f"{os.getpid()}\n"
    assert unlock(str(path), method="excl") == 1


def test_a_declared_record_of_a_live_pid_waits_until_its_expiry(tmp_path: Path) -> None:
    path = tmp_path / "session.lock"
    template = "{pid}\n{host}\n{expires}\n"
    live = os.getppid()
    path.write_text(f"{live}\n{os.uname().nodename}\n{int(time.time()) + 3600}\n")
    assert lock(str(path), method="excl", record=template, retry=1) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    path.write_text(f"{live}\n{os.uname().nodename}\n{int(time.time()) - 5}\n")
    assert lock(str(path), method="excl", record=template, retry=20, wait=0.05) == 1
    assert unlock(str(path), method="excl") == 1


def test_another_hosts_record_is_judged_by_age_only(tmp_path: Path) -> None:
    path = tmp_path / "nfs.lock"
    path.write_text(f"elsewhere.example.org.{_dead_pid()}\n")
    assert lock(str(path), method="excl", record="{host}.{pid}\n", retry=1) == 0
    _age(path, 400)
    assert lock(str(path), method="excl", record="{host}.{pid}\n", retry=1, stale=300) == 1
    assert unlock(str(path), method="excl") == 1


def test_symlink_slash_pid_targets_are_read_as_pids_without_target(tmp_path: Path) -> None:
    path = tmp_path / "lockfile"
    os.symlink(f"/{_dead_pid()}", path)
    assert lock(str(path), method="symlink", retry=20, wait=0.05) == 1
    assert unlock(str(path), method="symlink") == 1


def test_symlink_dot_target_is_judged_by_age(tmp_path: Path) -> None:
    path = tmp_path / "daycount.lock"
    os.symlink(".", path)
    assert lock(str(path), method="symlink", target=".", retry=1, stale=60) == 0
    _age(path, 120)
    assert lock(str(path), method="symlink", target=".", retry=1, stale=60) == 1
    assert unlock(str(path), method="symlink") == 1


def test_mkdir_pidfile_recovers_a_dead_pid_and_refuses_other_entries(tmp_path: Path) -> None:
    path = tmp_path / "lockdir"
    path.mkdir()
    (path / "pid").write_text(f"{_dead_pid()}\n")
    assert lock(str(path), pidfile="pid", retry=20, wait=0.05) == 1
    assert (path / "pid").read_text() == f"{os.getpid()}\n"
    assert unlock(str(path)) == 1
    path.mkdir()
    (path / "pid").write_text(f"{_dead_pid()}\n")
    (path / "data.txt").write_text("keep")
    assert lock(str(path), pidfile="pid", retry=1) == 0
    assert OS_ERROR == errno.ENOTEMPTY
    assert sorted(os.listdir(path)) == ["data.txt", "pid"]


def test_mkdir_without_pidfile_names_the_pidfile_that_declares_it(tmp_path: Path) -> None:
    path = tmp_path / "lockdir"
    path.mkdir()
    (path / "pid").write_text("4242\n")
    with pytest.raises(OSError, match=r"pidfile='pid'"):
        Lock(str(path), retry=1).acquire()
    assert (path / "pid").read_text() == "4242\n"


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"method": "flock", "record": "{pid}\n"}, "record="),
        ({"method": "excl", "target": "."}, "target="),
        ({"method": "symlink", "pidfile": "pid"}, "pidfile="),
        ({"method": "excl", "record": "{pid"}, "record="),
        ({"method": "excl", "record": "{name}"}, "unknown field {name}"),
        ({"method": "symlink", "target": ""}, "target="),
        ({"method": "mkdir", "pidfile": "a/b"}, "pidfile="),
        ({"method": "mkdir", "pidfile": ".."}, "pidfile="),
        ({"method": "mkdir", "record": "{pid}\n"}, "give pidfile="),
        ({"method": "excl", "record": 5}, "record= must be a str"),
    ],
)
def test_bad_format_keywords_raise_value_error_naming_them(
    tmp_path: Path, options: dict[str, object], named: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        lock(str(tmp_path / "x"), **options)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape(named)):
        Lock(str(tmp_path / "x"), **options)  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []


def test_unlock_with_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "count.lock"
    assert lock(str(path), method="excl", record="{pid}\n") == 1
    with pytest.raises(ValueError, match="taken with record="):
        unlock(str(path), method="excl", record="{pid}")
    assert path.exists()
    assert unlock(str(path), method="excl", record="{pid}\n") == 1
