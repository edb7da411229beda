"""perlcompat's flock against real perl processes on the same file.

Every wait is on a real signal: a readiness line on a pipe, or the kernel's
list of blocked flock waiters in /proc/locks.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest
from perlutil import Child, flock_holders, wait_until_blocked

from perlcompat import (
    LOCK_EX,
    LOCK_NB,
    LOCK_SH,
    LOCK_UN,
    OS_ERROR,
    close,
    flock,
    open_,
    print_,
    seek,
    tell,
    truncate,
)

#: a Perl process that takes flock(ARGV[1]) on ARGV[0], says so, and releases on a line
PERL_HOLDER = """
use Fcntl qw(:flock);
open(FH, "+<", $ARGV[0]) or die "open: $!";
if (flock(FH, $ARGV[1])) { print "locked\\n" } else { print "failed ", $! + 0, "\\n" }
<STDIN>;
close(FH);
print "released\\n";
"""


@pytest.fixture()
def path(tmp_path: Path) -> Path:
    target = tmp_path / "shared.dat"
    target.write_bytes(b"0\n")
    return target


def _release(child: Child) -> None:
    child.send("go")
    child.expect("released")
    assert child.wait()[0] == 0


def test_perl_holds_lock_ex_so_lock_nb_gets_ewouldblock(path: Path) -> None:
    perl = Child.perl(PERL_HOLDER, str(path), str(LOCK_EX))
    perl.expect("locked")
    fh = open_("+<", path)
    assert fh is not None
    assert flock(fh, LOCK_EX | LOCK_NB) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    assert flock(fh, LOCK_SH | LOCK_NB) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    _release(perl)
    assert flock(fh, LOCK_EX | LOCK_NB) == 1
    close(fh)


def test_perlcompat_holds_lock_ex_so_perl_lock_nb_fails(path: Path) -> None:
    fh = open_("+<", path)
    assert fh is not None
    assert flock(fh, LOCK_EX) == 1
    for operation in (LOCK_EX | LOCK_NB, LOCK_SH | LOCK_NB):
        perl = Child.perl(PERL_HOLDER, str(path), str(operation))
        assert perl.readline() == f"failed {errno.EWOULDBLOCK}"
        _release(perl)
    assert flock(fh, LOCK_UN) == 1
    perl = Child.perl(PERL_HOLDER, str(path), str(LOCK_EX | LOCK_NB))
    perl.expect("locked")
    _release(perl)
    close(fh)


def test_lock_sh_is_shared_across_perl_and_perlcompat(path: Path) -> None:
    perl = Child.perl(PERL_HOLDER, str(path), str(LOCK_SH))
    perl.expect("locked")
    fh = open_("<", path)
    assert fh is not None
    assert flock(fh, LOCK_SH | LOCK_NB) == 1  # shared with perl
    kinds = sorted(kind for _pid, kind, _waiting in flock_holders(path))
    assert kinds == ["READ", "READ"]
    writer = Child.perl(PERL_HOLDER, str(path), str(LOCK_EX | LOCK_NB))
    assert writer.readline() == f"failed {errno.EWOULDBLOCK}"  # both readers exclude it
    _release(writer)
    _release(perl)
    writer = Child.perl(PERL_HOLDER, str(path), str(LOCK_EX | LOCK_NB))
    assert writer.readline() == f"failed {errno.EWOULDBLOCK}"  # we still read-lock it
    _release(writer)
    close(fh)
    writer = Child.perl(PERL_HOLDER, str(path), str(LOCK_EX | LOCK_NB))
    writer.expect("locked")
    _release(writer)


def test_blocked_perl_flock_proceeds_after_perlcompat_closes(path: Path) -> None:
    """A Perl ``flock(OUT, 2)`` waits while we hold the lock and runs after our close;
    what we wrote under the lock is what it reads."""
    fh = open_("+<", path)
    assert fh is not None
    assert flock(fh, LOCK_EX) == 1
    code = """
    open(OUT, "+< $ARGV[0]") or die "open: $!";
    print "opened\\n";
    flock(OUT, 2) or die "flock: $!";
    my $n = <OUT>;
    seek(OUT, 0, 0); print OUT $n + 1, "\\n"; truncate(OUT, tell(OUT)); close(OUT);
    print "done $n";
    """
    perl = Child.perl(code, str(path))
    perl.expect("opened")
    wait_until_blocked(perl.proc.pid, path)  # perl is waiting in flock(2) now
    line = fh.readline()
    assert line == "0\n"
    assert seek(fh, 0, 0) == 1
    assert print_(fh, int(line) + 41, "\n") == 1
    assert truncate(fh, tell(fh)) == 1
    assert close(fh) == 1  # flush, then release: perl goes on
    perl.expect("done 41")
    assert perl.wait()[0] == 0
    assert path.read_bytes() == b"42\n"


def test_blocked_perlcompat_flock_proceeds_after_perl_closes(path: Path) -> None:
    perl = Child.perl(PERL_HOLDER, str(path), str(LOCK_EX))
    perl.expect("locked")
    fh = open_("+<", path)
    assert fh is not None
    results: list[int] = []
    waiter = threading.Thread(target=lambda: results.append(flock(fh, LOCK_EX)))
    waiter.start()
    wait_until_blocked(os.getpid(), path)  # our thread waits in flock(2)
    assert results == []
    _release(perl)
    waiter.join(timeout=30)
    assert results == [1]
    close(fh)
