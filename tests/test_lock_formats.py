"""Lock artefacts in the Perl side's format: ``record=`` (excl), ``target=`` (symlink),
``pidfile=`` (mkdir), their validation, and a release that never removes what it did not make."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path

from perlutil import run_perl

from perlcompat import OS_ERROR, lock, unlock

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
