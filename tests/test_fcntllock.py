"""``FcntlLock`` (File::FcntlLock's shape) beside the real File::FcntlLock (issue 22 item 6).

dpkg and Mail::Box's FcntlLock locker lock with fcntl(2) record locks
(``File::FcntlLock->new(l_type => F_WRLCK)->lock($fh, F_SETLKW)``).  On Linux
those and flock(2) do not exclude each other, so a port must take the same
kind of lock: Perl's and the port's locks exclude each other both ways,
``F_GETLK`` names the other side's pid, the return values and error texts are
the module's, and a mixed 2 Perl + 2 Python x 100 counter hammer on the data
file itself ends exact.  The real module is Debian's ``libfile-fcntllock-perl``.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from perlutil import Child, run_perl

from perlcompat import (
    F_GETLK,
    F_RDLCK,
    F_SETLK,
    F_SETLKW,
    F_UNLCK,
    F_WRLCK,
    LOCK_EX,
    LOCK_NB,
    LOCK_UN,
    OS_ERROR,
    SEEK_SET,
    FcntlLock,
    close,
    fcntl,
    flock,
    open_,
    pack_flock,
    unpack_flock,
)

PERL_HOLD = r"""
use strict; use warnings; use File::FcntlLock;
my ($path) = @ARGV;
open(my $fh, '+<', $path) or die "open: $!";
my $fs = File::FcntlLock->new(l_type => F_WRLCK, l_whence => SEEK_SET, l_start => 0, l_len => 0);
$fs->lock($fh, F_SETLKW) or die "Locking failed: " . $fs->error . "\n";
print "locked\n";
<STDIN>;
close($fh);
print "released\n";
"""

PERL_TRY = r"""
use strict; use warnings; use File::FcntlLock;
my ($path) = @ARGV;
open(my $fh, '+<', $path) or die "open: $!";
my $fs = File::FcntlLock->new(l_type => F_WRLCK);
my $got = $fs->lock($fh, F_SETLK);
my $who = File::FcntlLock->new(l_type => F_WRLCK);
$who->lock($fh, F_GETLK) or die "F_GETLK: " . $who->error;
printf "%s|%d|%s|%d|%d\n", defined $got ? $got : 'undef', ($fs->lock_errno // 0),
    ($fs->error // ''), $who->l_type, ($who->l_type == F_UNLCK ? 0 : $who->l_pid);
"""


def test_constants_are_the_modules(tmp_path: Path) -> None:
    out = run_perl(
        "use File::FcntlLock; print join ' ', F_GETLK, F_SETLK, F_SETLKW, F_RDLCK, F_WRLCK, F_UNLCK"
    ).stdout.decode()
    assert out == " ".join(map(str, (F_GETLK, F_SETLK, F_SETLKW, F_RDLCK, F_WRLCK, F_UNLCK)))


def test_port_lock_excludes_perl_and_get_names_our_pid(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_text("0\n")
    fh = open_("+<", str(path))
    fs = FcntlLock(l_type=F_WRLCK, l_whence=SEEK_SET)
    assert fs.lock(fh, F_SETLKW) == "0 but true" and fs.error() is None
    got, number, text, l_type, pid = run_perl(PERL_TRY, str(path)).stdout.decode().split("|")
    assert (got, int(number), int(l_type), int(pid)) == (
        "undef",
        errno.EAGAIN,
        F_WRLCK,
        os.getpid(),
    )
    assert text == "File or segment already locked by other process(es)"
    fs.l_type(F_UNLCK)
    assert fs.lock(fh, F_SETLK) == "0 but true"
    got, number, text, l_type, pid = run_perl(PERL_TRY, str(path)).stdout.decode().split("|")
    assert (got, int(number), int(l_type), int(pid)) == ("0 but true", 0, F_UNLCK, 0)
    assert close(fh) == 1


def test_perl_lock_excludes_the_port_where_flock_would_not(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_text("0\n")
    holder = Child.perl(PERL_HOLD, str(path))
    try:
        holder.expect("locked")
        fh = open_("+<", str(path))
        fs = FcntlLock(l_type=F_WRLCK)
        assert fs.lock(fh, F_SETLK) is None
        assert int(OS_ERROR) in (errno.EAGAIN, errno.EACCES) and fs.lock_errno() == int(OS_ERROR)
        assert fs.error() == "File or segment already locked by other process(es)"
        assert fs.system_error() == str(OS_ERROR)
        who = FcntlLock(l_type=F_RDLCK)
        assert who.lock(fh, F_GETLK) == "0 but true"
        assert (who.l_type(), who.l_pid()) == (F_WRLCK, holder.proc.pid)
        # the trap this class exists for: flock(2) does not see Perl's fcntl lock at all
        assert flock(fh, LOCK_EX | LOCK_NB) == 1
        assert flock(fh, LOCK_UN) == 1
        holder.send("release")
        holder.expect("released")
        assert fs.lock(fh, F_SETLKW) == "0 but true"
        assert close(fh) == 1
    finally:
        holder.kill()


def test_bad_arguments_are_named_or_fail_as_perl(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="l_type"):
        FcntlLock(l_type=7)
    with pytest.raises(ValueError, match="l_whence"):
        FcntlLock(l_whence=3)
    with pytest.raises(ValueError, match="l_len"):
        FcntlLock(l_len="0")  # type: ignore[arg-type]
    fs = FcntlLock(l_type=F_WRLCK)
    assert fs.lock(987654, F_SETLK) is None  # no such descriptor
    assert int(OS_ERROR) == errno.EBADF and fs.lock_errno() == errno.EBADF
    perl = run_perl(
        "use File::FcntlLock; my $fs = File::FcntlLock->new(l_type => F_WRLCK);"
        " $fs->lock(987654, F_SETLK); print $fs->error"
    )
    assert fs.error() == perl.stdout.decode()
    path = tmp_path / "ro"
    path.write_text("")
    with open(path, "rb") as reader:  # an exclusive lock needs a handle open for writing
        assert fs.lock(reader, F_SETLK) is None and int(OS_ERROR) == errno.EBADF


#: Perl's own fcntl with the struct packed by hand, as MailScanner's Lock.pm does (x86_64
#: Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid)
PERL_RAW_HOLD = r"""
use strict; use warnings; use Fcntl;
my ($path) = @ARGV;
open(FH, "+< $path") or die "open: $!";
my $struct = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0);
my $got = fcntl(FH, F_SETLKW, $struct);
defined $got or die "fcntl: $!";
print "locked $got\n";
<STDIN>;
my $buf = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0);
fcntl(FH, F_GETLK, $buf) or die "F_GETLK: $!";
my ($type, $whence, $start, $len, $pid) = unpack("s s x4 q q i x4", $buf);
print "seen $type $pid\n";
"""


def test_perls_own_fcntl_and_the_ports_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_text("0\n")
    holder = Child.perl(PERL_RAW_HOLD, str(path))
    try:
        assert holder.readline() == "locked 0 but true"  # Perl's "0 but true"
        fh = open_("+<", str(path))
        assert fcntl(fh, F_SETLK, pack_flock(F_WRLCK)) is None
        assert int(OS_ERROR) in (errno.EAGAIN, errno.EACCES)
        found = bytearray(pack_flock(F_WRLCK))
        assert fcntl(fh, F_GETLK, found) == "0 but true"  # filled in place, as Perl's scalar
        l_type, _whence, _start, _len, pid = unpack_flock(found)
        assert (l_type, pid) == (F_WRLCK, holder.proc.pid)
        holder.send("")
        holder.proc.stdout.readline()  # "seen 2 0": nothing of ours yet
        status, _out, err = holder.wait()
        assert status == 0, err
        assert fcntl(fh, F_SETLKW, pack_flock(F_WRLCK)) == "0 but true"
        # and Perl's F_GETLK sees our lock and pid
        probe = run_perl(
            "use Fcntl; open(FH, '+<', $ARGV[0]) or die;"
            ' my $b = pack("s s x4 q q i x4", F_WRLCK, 0, 0, 0, 0);'
            ' fcntl(FH, F_GETLK, $b) or die "$!";'
            ' my @f = unpack("s s x4 q q i x4", $b); print "$f[0] $f[4]"',
            str(path),
        )
        assert probe.stdout.decode() == f"{F_WRLCK} {os.getpid()}"
        assert fcntl(fh, F_SETLK, pack_flock(F_UNLCK)) == "0 but true"
        assert close(fh) == 1
    finally:
        holder.kill()


CYCLES = 100

PERL_HAMMER = r"""
use strict; use warnings; use File::FcntlLock;
my ($counter, $cycles, $started, $everyone) = @ARGV;
print "ready\n"; <STDIN>;
open(my $s, '>>', $started) or die; syswrite($s, "x") or die; close($s);
my $done = 0;
until ($done >= $cycles && -s $started >= $everyone) {
    $done++;
    open(my $c, '+<', $counter) or die "Can't open: $!";
    my $fs = File::FcntlLock->new(l_type => F_WRLCK);
    $fs->lock($c, F_SETLKW) or die "Locking failed: " . $fs->error;
    my $n = <$c>; seek($c, 0, 0) or die; print $c $n + 1; truncate($c, tell($c)) or die;
    close($c) or die;
}
print "done $done\n";
"""

PYTHON_HAMMER = r"""
import os, sys
from perlcompat import F_SETLKW, F_WRLCK, FcntlLock, close, open_, print_, readline, seek
from perlcompat import tell, truncate, die
counter, cycles, started, everyone = sys.argv[1:5]
print("ready", flush=True)
sys.stdin.readline()
with open(started, "a") as stream:
    stream.write("x")
done = 0
while done < int(cycles) or os.path.getsize(started) < int(everyone):
    done += 1
    c = open_("+<", counter) or die("Can't open")
    fs = FcntlLock(l_type=F_WRLCK)
    fs.lock(c, F_SETLKW) or die(f"Locking failed: {fs.error()}")
    n = int(readline(c))
    seek(c, 0, 0) or die("seek")
    print_(c, n + 1)
    truncate(c, tell(c)) or die("truncate")
    close(c) or die("close")
print(f"done {done}", flush=True)
"""


def test_two_perl_and_two_python_lose_nothing(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    args = (str(counter), str(CYCLES), str(tmp_path / "started"), "4")
    children = [Child.perl(PERL_HAMMER, *args) for _ in range(2)]
    children += [Child.python(PYTHON_HAMMER, *args) for _ in range(2)]
    try:
        for child in children:
            child.expect("ready")
        for child in children:
            child.send("go")
        done = []
        for child in children:
            status, out, err = child.wait()
            assert status == 0, err
            done.append(int(out.split()[1]))
    finally:
        for child in children:
            child.kill()
    assert all(n >= CYCLES for n in done)
    assert int(counter.read_text()) == sum(done)
