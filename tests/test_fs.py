"""Files and directories: Perl's return values and ``$!``, checked against perl."""

from __future__ import annotations

import errno
import os
import sys
import time
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, run_perl

import perlcompat
from perlcompat import (
    BASETIME,
    OS_ERROR,
    close,
    defined,
    filetest,
    mkdir,
    open_,
    readlink,
    rename,
    rmdir,
    sleep,
    stat,
    symlink,
    undef,
    unlink,
    utime,
)
from perlcompat.perl.errno import set_errno


@pytest.fixture(autouse=True)
def _clear_errno() -> None:
    set_errno(0)


# -- mkdir / rmdir: seed 003's lock directory ---------------------------------------------
def test_mkdir_lock_idiom(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    assert mkdir(lock) == 1
    assert lock.is_dir()
    assert mkdir(lock) == 0  # someone holds it
    assert OS_ERROR == errno.EEXIST
    assert str(OS_ERROR) == "File exists"
    assert rmdir(lock) == 1
    assert not lock.exists()
    assert rmdir(lock) == 0
    assert OS_ERROR == errno.ENOENT


def test_mkdir_mode_and_failures(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        assert mkdir(tmp_path / "m", 0o750) == 1
    finally:
        os.umask(old)
    assert (tmp_path / "m").stat().st_mode & 0o777 == 0o750
    assert mkdir(tmp_path / "no" / "parent") == 0
    assert OS_ERROR == errno.ENOENT
    (tmp_path / "f").write_bytes(b"")
    assert mkdir(tmp_path / "f" / "sub") == 0
    assert OS_ERROR == errno.ENOTDIR


def test_rmdir_refuses_non_empty_directories_and_files(tmp_path: Path) -> None:
    """A Perl ``sub unlock { rmdir($dir) }`` fails on a non-empty lock directory."""
    lock = tmp_path / "lock"
    lock.mkdir()
    (lock / "owner").write_text("123")
    assert rmdir(lock) == 0
    assert OS_ERROR == errno.ENOTEMPTY
    assert lock.exists()
    assert rmdir(lock / "owner") == 0
    assert OS_ERROR == errno.ENOTDIR


# -- rename ------------------------------------------------------------------------------
def test_rename_returns_1_and_replaces_the_target(tmp_path: Path) -> None:
    """pythonizer's trap: a rename whose result is falsy makes ``rename ... or die`` die."""
    (tmp_path / "new").write_text("new")
    (tmp_path / "data").write_text("old")
    assert rename(tmp_path / "new", tmp_path / "data") == 1
    assert (tmp_path / "data").read_text() == "new"
    assert not (tmp_path / "new").exists()
    assert rename(str(tmp_path / "data"), str(tmp_path / "moved")) == 1


def test_rename_failures(tmp_path: Path) -> None:
    assert rename(tmp_path / "missing", tmp_path / "x") == 0
    assert OS_ERROR == errno.ENOENT
    (tmp_path / "d1").mkdir()
    (tmp_path / "d2").mkdir()
    (tmp_path / "d2" / "f").write_text("")
    assert rename(tmp_path / "d1", tmp_path / "d2") == 0
    assert OS_ERROR in (errno.ENOTEMPTY, errno.EEXIST)
    (tmp_path / "file").write_text("")
    assert rename(tmp_path / "file", tmp_path / "d1") == 0
    assert OS_ERROR == errno.EISDIR


# -- unlink ------------------------------------------------------------------------------
def test_unlink_returns_the_number_deleted(tmp_path: Path) -> None:
    names = [tmp_path / f"f{i}" for i in range(3)]
    for name in names:
        name.write_text("")
    assert unlink(names[0]) == 1
    assert unlink(*names, tmp_path / "missing") == 2  # f1, f2; f0 and missing fail
    assert OS_ERROR == errno.ENOENT
    assert unlink() == 0
    (tmp_path / "dir").mkdir()
    assert unlink(tmp_path / "dir") == 0
    assert OS_ERROR == errno.EISDIR
    assert not any(name.exists() for name in names)


# -- symlink / readlink: seed 000's symlink lock ------------------------------------------
def test_symlink_lock_with_the_pid_as_target(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    assert symlink(os.getpid(), lock) == 1  # symlink($$, $lock)
    assert readlink(lock) == str(os.getpid())
    assert symlink(os.getpid(), lock) == 0
    assert OS_ERROR == errno.EEXIST
    assert symlink("target", str(tmp_path / "other")) == 1
    assert readlink(str(tmp_path / "other")) == "target"
    assert unlink(lock) == 1


def test_readlink_failures(tmp_path: Path) -> None:
    assert readlink(tmp_path / "missing") is None
    assert OS_ERROR == errno.ENOENT
    (tmp_path / "plain").write_text("")
    assert readlink(tmp_path / "plain") is None
    assert OS_ERROR == errno.EINVAL


def test_symlink_failure(tmp_path: Path) -> None:
    assert symlink("x", tmp_path / "no-dir" / "link") == 0
    assert OS_ERROR == errno.ENOENT


def test_symlink_not_implemented_gives_enosys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(*_args: object) -> None:
        raise NotImplementedError("no symlinks here")

    monkeypatch.setattr(os, "symlink", unsupported)
    assert symlink("x", tmp_path / "link") == 0
    assert OS_ERROR == errno.ENOSYS


# -- utime / stat -----------------------------------------------------------------------
def test_utime_sets_times_and_counts(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("")
    b.write_text("")
    assert utime(1_000_000, 2_000_000, a, b, tmp_path / "missing") == 2
    assert OS_ERROR == errno.ENOENT
    assert a.stat().st_atime == 1_000_000
    assert b.stat().st_mtime == 2_000_000
    before = time.time()
    assert utime(None, None, a) == 1  # undef, undef: now
    assert a.stat().st_mtime >= int(before) - 1
    assert utime(None, 5_000_000, b) == 1  # one undef: that one is now
    assert b.stat().st_mtime == 5_000_000
    assert b.stat().st_atime >= int(before) - 1


def test_stat_matches_perl(tmp_path: Path) -> None:
    path = tmp_path / "s"
    path.write_bytes(b"12345")
    os.utime(path, (1_111_111_111, 1_222_222_222))
    perl = run_perl('print join(",", stat($ARGV[0]))', str(path))
    assert perl.returncode == 0
    ours = stat(path)
    assert len(ours) == 13
    assert ",".join(map(str, ours)) == perl.stdout.decode()
    assert ours[7] == 5 and ours[9] == 1_222_222_222
    fh = open_("<", path)
    assert fh is not None
    assert stat(fh) == ours  # a handle
    assert stat(fh.fileno()) == ours  # an fd
    assert stat(str(path)) == ours
    close(fh)
    assert stat(fh) == []
    assert OS_ERROR == errno.EBADF


def test_stat_failures_give_an_empty_list(tmp_path: Path) -> None:
    assert stat(tmp_path / "missing") == []
    assert OS_ERROR == errno.ENOENT
    assert stat(object()) == []
    assert OS_ERROR == errno.EBADF
    assert stat(-1) == []
    assert OS_ERROR == errno.EBADF


# -- file tests --------------------------------------------------------------------------
def test_file_tests_match_perl(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"abc")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "dir").mkdir()
    os.symlink("file", tmp_path / "link")
    os.symlink("missing", tmp_path / "dangling")
    (tmp_path / "script").write_bytes(b"")
    os.chmod(tmp_path / "script", 0o755)
    names = ["file", "empty", "dir", "link", "dangling", "missing", "script"]
    ops = ["-e", "-f", "-d", "-l", "-s", "-z", "-r", "-w", "-x"]
    code = (
        "chdir shift @ARGV; for my $n (@ARGV) { for my $op (qw(" + " ".join(ops) + ")) {"
        ' my $r = eval "$op \\$n"; print defined $r ? ($r eq "" ? 0 : $r) : "undef", " " }'
        ' print "\\n" }'
    )
    perl = run_perl(code, str(tmp_path), *names)
    assert perl.returncode == 0, perl.stderr
    ours = []
    for name in names:
        row = []
        for op in ops:
            value = filetest(op, str(tmp_path / name))
            row.append("undef" if value is undef else str(value))
        ours.append(" ".join(row) + " ")
    assert ours == perl.stdout.decode().splitlines()


def test_minus_m_counts_days_before_basetime(tmp_path: Path) -> None:
    path = tmp_path / "old"
    path.write_text("")
    os.utime(path, (BASETIME - 86400 * 2.5, BASETIME - 86400 * 2.5))
    assert filetest("-M", path) == pytest.approx(2.5)
    assert filetest("-A", path) == pytest.approx(2.5)
    assert filetest("-C", path) < 1  # changed just now (maybe after BASETIME: negative)
    perl = run_perl(
        "utime($^T - 86400 * 2.5, $^T - 86400 * 2.5, $ARGV[0]); printf '%.6f', -M $ARGV[0]",
        str(path),
    )
    assert float(perl.stdout) == pytest.approx(2.5)
    assert filetest("-M", tmp_path / "missing") is undef
    assert OS_ERROR == errno.ENOENT


def test_file_tests_on_handles(tmp_path: Path) -> None:
    path = tmp_path / "h"
    path.write_bytes(b"12345")
    fh = open_("<", path)
    assert fh is not None
    assert filetest("-s", fh) == 5
    assert filetest("-f", fh.fileno()) == 1
    assert filetest("-r", fh) == 1
    close(fh)
    assert filetest("-e", fh) is undef
    assert OS_ERROR == errno.EBADF


def test_unknown_file_test_raises() -> None:
    with pytest.raises(ValueError, match="unknown file test '-q'"):
        filetest("-q", ".")


# -- sleep and BASETIME -------------------------------------------------------------------
def test_sleep_returns_whole_seconds() -> None:
    start = time.monotonic()
    assert sleep(0) == 0
    assert sleep(0.05) == 0
    assert sleep(0.6) == 1  # rounded, as Perl's sleep reports what it slept
    assert time.monotonic() - start >= 0.65


@pytest.mark.parametrize("bad", [float("nan"), "1", True, None])
def test_sleep_rejects_bad_input(bad: object) -> None:
    with pytest.raises(ValueError, match="sleep"):
        sleep(bad)  # type: ignore[arg-type]


def test_basetime_is_when_the_script_started() -> None:
    assert isinstance(BASETIME, int)
    assert BASETIME == perlcompat._START_TIME
    assert time.time() >= BASETIME
    import subprocess

    before = int(time.time())
    proc = subprocess.run(
        [sys.executable, "-c", "import perlcompat; print(perlcompat.BASETIME)"],
        capture_output=True,
        env=CHILD_ENV,
        timeout=60,
        check=True,
    )
    assert before <= int(proc.stdout) <= int(time.time())


def test_a_file_test_on_a_missing_file_is_undef_in_a_comparison_and_a_string(
    tmp_path: Path,
) -> None:
    # the stale check `if (-e $lock && -M $lock > 0.01)` when the holder removes the lock
    # between the two tests: Perl's -M is undef, false in the comparison and "" in a string
    missing = str(tmp_path / "lock")
    perl = run_perl(
        'my $f = shift; print -M $f > 0.01 ? "stale" : "fresh", " [", -M $f, "] [", -s $f, "]"',
        missing,
    )
    age, size = filetest("-M", missing), filetest("-s", missing)
    ours = f"{'stale' if age > 0.01 else 'fresh'} [{age}] [{size}]"
    assert ours == perl.stdout.decode() == "fresh [] []"
    assert age is undef and not defined(size)
