"""Perl lock code that writes into its locks, beside the perlcompat call that declares its format.

Each idiom below is a minimal, faithful reproduction of a public Perl lock's lock, unlock and
stale rule (the source is cited beside it); the Python side is ``lock()`` with the idiom's
``record=`` / ``target=`` / ``pidfile=``.  For every idiom: the port waits on a live Perl holder
and Perl waits on a live port holder (and does not die reading the port's lock); the port
recovers a SIGKILLed Perl holder; Perl recovers a dead port holder as it recovers its own.
The idioms that are mutual-exclusion locks also run a mixed 2 Perl + 2 Python hammer.
Port holders run as child processes whose command line names the lock (SUSE SMT checks it).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from perlutil import Child, hammer_together, run_perl
from test_lock_perl import PERL_HEAD, PERL_MAIN

#: one attempt per call; a failed attempt pauses 1 ms (the callers loop).
IDIOMS: dict[str, tuple[str, dict[str, object], str, bool]] = {
    # the O_EXCL pid lock file: sysopen(L, $f, O_CREAT|O_EXCL|O_WRONLY); print L "$$\n"; a
    # reader kill 0s the content as it is (a non-numeric one makes Perl die)
    "excl-pid": (
        r"""
sub lock {
    my ($f) = @_;
    if (sysopen(my $l, $f, O_CREAT | O_EXCL | O_WRONLY)) { print $l "$$\n"; close($l); return 1; }
    if (open(my $r, '<', $f)) {
        my $pid = <$r>; close($r);
        if (defined $pid) { chomp($pid); unlink($f) if $pid ne '' && !kill(0, $pid); }
    }
    select(undef, undef, undef, 0.001); return 0;
}
sub unlock { unlink($_[0]); }
""",
        {"method": "excl", "record": "{pid}\n"},
        "count.lock",
        True,
    ),
    # SUSE SMT, www/perl-lib/SMT/Utils.pm openLock/unLock (github.com/SUSE/smt): "$pid" with no
    # newline; a holder whose /proc/$pid/cmdline is gone or lacks $progname is removed
    "smt": (
        r"""
sub lock {
    my ($path) = @_;
    my ($progname) = $path =~ m{([^/]+)\.pid$};
    if (-e $path) {
        my $oldpid = "";
        open(LOCK, "< $path") and do { $oldpid = <LOCK>; close LOCK; };
        $oldpid = "" unless defined $oldpid;
        chomp($oldpid);
        if (! -e "/proc/$oldpid/cmdline") { unlink $path; }
        else {
            my $cmdline = "";
            open(CMDLINE, "< /proc/$oldpid/cmdline")
                and do { $cmdline = <CMDLINE>; close CMDLINE; };
            if ($cmdline !~ /$progname/) { unlink $path; }
            else { select(undef, undef, undef, 0.001); return 0; }
        }
    }
    sysopen(LOCK, $path, O_WRONLY | O_EXCL | O_CREAT, 0640) or return 0;
    print LOCK "$$";
    close LOCK;
    return 1;
}
sub unlock {
    my ($path) = @_;
    return 1 if ! -e $path;
    open(LOCK, "< $path") or return 0; my $dp = <LOCK>; close LOCK;
    return 0 if $dp ne "$$";
    return unlink($path) == 1 ? 1 : 0;
}
""",
        {"method": "excl", "record": "{pid}"},
        "smt-mirror.pid",
        False,  # its own read of a lock being written ("") removes it: not hammered
    ),
    # LockFile::Simple 0.208 _acs_lock/_acs_stale/_acs_unlock with -stale => 1 (CPAN): "$$\n"
    # written through umask 0333, read back; a pid that kill 0 finds gone is unlinked
    "lockfile-simple": (
        r"""
sub _acs_stale {
    my ($lockfile) = @_;
    local *FILE;
    open(FILE, $lockfile) || return;
    my $stamp = <FILE>; close FILE;
    return unless defined $stamp;
    chop($stamp);
    my ($pid) = $stamp =~ /^(\d+)$/;
    return if !defined $pid || kill 0, $pid;
    unlink $lockfile;
}
sub lock {
    my ($lockfile) = @_;
    _acs_stale($lockfile);
    my $locked = 0;
    my $mask = umask(0333);
    local *FILE;
    if (!-f $lockfile && open(FILE, ">$lockfile")) {
        local $\ = undef;
        print FILE "$$\n"; close FILE;
        open(FILE, $lockfile); my $l = <FILE>; chop($l); $locked = $l eq $$;
        $l = <FILE>; $locked = 0 if defined $l; close FILE;
    }
    umask($mask);
    select(undef, undef, undef, 0.001) unless $locked;
    return $locked;
}
sub unlock {
    my ($lockfile) = @_;
    return 0 unless -f $lockfile;
    open(FILE, $lockfile); my $l = <FILE>; close FILE; chop($l);
    return $l eq $$ ? unlink($lockfile) : 0;
}
""",
        {"method": "excl", "record": "{pid}\n", "mode": 0o444},
        "data.txt.lock",
        False,  # its -f then open(">") races with itself when run as root
    ),
    # Proc::PID::File 1.x running()/release() (CPAN): sysopen O_RDWR|O_CREAT, flock, /^(\d+)/,
    # busy while kill 0 finds that pid; else overwrite with "$$\n"; release unlinks
    "proc-pid-file": (
        r"""
use Fcntl qw(:flock);
sub lock {
    my ($path) = @_;
    local *FH;
    sysopen(FH, $path, O_RDWR | O_CREAT) || die qq/Cannot open pid file "$path": $!\n/;
    flock(FH, LOCK_EX | LOCK_NB) || die "pid $path already locked";
    my ($pid) = <FH> =~ /^(\d+)/;
    if ($pid && $pid != $$ && kill(0, $pid)) {
        close FH; select(undef, undef, undef, 0.001); return 0;
    }
    sysseek FH, 0, 0; truncate FH, 0; syswrite FH, "$$\n", length("$$\n");
    close(FH) || die qq/Cannot write pid file "$path": $!\n/;
    return 1;
}
sub unlock { unlink($_[0]); }
""",
        {"method": "excl", "record": "{pid}\n"},
        "daemon.pid",
        False,  # a single-instance daemon guard: its remove races with its own overwrite
    ),
    # the "mkdir + pid file inside" recipe (Greg's Wiki BashFAQ/045, in Perl): mkdir, then the
    # pid into $dir/pid; a waiter that reads a dead pid removes the pid file and the directory
    "mkdir-pidfile": (
        r"""
sub lock {
    my ($d) = @_;
    if (mkdir($d, 0755)) {
        open(my $p, '>', "$d/pid") or die "Can't write $d/pid: $!"; print $p "$$\n"; close($p);
        return 1;
    }
    if (open(my $p, '<', "$d/pid")) {
        my $pid = <$p>; close($p);
        if (defined $pid && $pid =~ /^(\d+)$/ && !kill(0, $1)) { unlink("$d/pid"); rmdir($d); }
    }
    select(undef, undef, undef, 0.001); return 0;
}
sub unlock { my ($d) = @_; unlink("$d/pid"); rmdir($d); }
""",
        {"method": "mkdir", "pidfile": "pid"},
        "lockdir",
        True,
    ),
    # daycount.cgi's symlink lock: symlink(".", $lock); -e and stat follow the link (to the
    # lock's own directory), a lock whose mtime is over 60 s old is unlinked
    "daycount": (
        r"""
sub lock {
    my ($lock) = @_;
    if (-e $lock) { my $t = (stat($lock))[9]; unlink($lock) if defined $t && $t < time - 60; }
    return 1 if symlink(".", $lock);
    select(undef, undef, undef, 0.001); return 0;
}
sub unlock { unlink($_[0]); }
""",
        {"method": "symlink", "target": ".", "stale": 60},
        "lock/daycount.lock",
        True,
    ),
    # symlink("/$$", $lock) (seed 000's symlink lock with a rooted pid target); a waiter
    # that reads a dead pid from the target unlinks it
    "symlink-slash-pid": (
        r"""
sub lock {
    my ($lock) = @_;
    return 1 if symlink("/$$", $lock);
    my $t = readlink($lock);
    unlink($lock) if defined $t && $t =~ m{^/(\d+)$} && !kill(0, $1);
    select(undef, undef, undef, 0.001); return 0;
}
sub unlock { my ($lock) = @_; unlink($lock) if readlink($lock) eq "/$$"; }
""",
        {"method": "symlink", "target": "/{pid}"},
        "lockfile",
        True,
    ),
    # a lock file stamped with scalar localtime (the date as the log line shows it); one whose
    # -M age is over a minute is unlinked
    "localtime": (
        r"""
sub lock {
    my ($f) = @_;
    unlink($f) if -e $f && -M $f > 60 / 86400;
    if (sysopen(my $l, $f, O_CREAT | O_EXCL | O_WRONLY)) {
        print $l scalar(localtime) . "\n"; close($l); return 1;
    }
    select(undef, undef, undef, 0.001); return 0;
}
sub unlock { unlink($_[0]); }
""",
        {"method": "excl", "record": "{localtime}\n", "stale": 60},
        "board.lock",
        True,
    ),
    # pid, host and expiry lines (issue 22's "$$\n$SERVER_NAME\n$expires" lock file): busy
    # until the expiry passes, whoever holds it
    "pid-host-expires": (
        r"""
use Sys::Hostname;
sub lock {
    my ($f) = @_;
    if (sysopen(my $l, $f, O_CREAT | O_EXCL | O_WRONLY)) {
        print $l "$$\n" . hostname() . "\n" . (time + 2) . "\n"; close($l); return 1;
    }
    if (open(my $r, '<', $f)) {
        my @lines = <$r>; close($r);
        unlink($f) if @lines == 3 && $lines[2] =~ /^(\d+)$/ && $1 < time;
    }
    select(undef, undef, undef, 0.001); return 0;
}
sub unlock { unlink($_[0]); }
""",
        {"method": "excl", "record": "{pid}\n{host}\n{expires}\n", "stale": 2},
        "session.lock",
        True,
    ),
}

#: idioms whose Perl side recovers a dead holder by age (or expiry) only
BY_AGE = {"daycount", "localtime", "pid-host-expires"}

PERL_HOLD = r"""
my $f = $ARGV[0];
until (lock($f)) { }
print "locked\n";
<STDIN>;
print unlock($f) ? "unlocked\n" : "kept\n";
"""

PERL_PROBE = r"""
my ($f, $tries) = @ARGV;
for (1 .. $tries) { if (lock($f)) { print unlock($f) ? "got" : "got, kept"; exit 0; } }
print "busy";
"""

PYTHON_HOLD = r"""
import json, sys
from perlcompat import OS_ERROR, lock, unlock
path, options = sys.argv[1], json.loads(sys.argv[2])
if not lock(path, retry=None, **options):
    sys.exit(f"lock failed: {OS_ERROR}")
print("locked", flush=True)
sys.stdin.readline()
print("unlocked" if unlock(path, method=options["method"]) else f"kept: {OS_ERROR}", flush=True)
"""

PYTHON_HAMMER = r"""
import json, os, sys, time
from perlcompat import lock, unlock, OS_ERROR
path, options, counter, marker, cycles, started, everyone = sys.argv[1:8]
options = json.loads(options)
print("ready", flush=True)
sys.stdin.readline()
start = time.monotonic()
with open(started, "a") as stream:
    stream.write("x")
overlaps = done = 0
while done < int(cycles) or os.path.getsize(started) < int(everyone):
    done += 1
    if not lock(path, retry=None, **options):
        sys.exit(f"lock failed: {OS_ERROR}")
    own = False
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        own = True
    except FileExistsError:
        overlaps += 1
    with open(counter, "r+") as stream:
        n = int(stream.read())
        stream.seek(0)
        stream.write(str(n + 1))
        stream.truncate()
    if own:
        os.unlink(marker)
    if not unlock(path, method=options["method"]):
        sys.exit(f"unlock failed: {OS_ERROR}")
print(f"done {overlaps} {done} {start:.6f} {time.monotonic():.6f}", flush=True)
"""


def _perl(idiom: str, main: str) -> str:
    return PERL_HEAD + IDIOMS[idiom][0] + main


def _setup(tmp_path: Path, idiom: str) -> tuple[Path, dict[str, object]]:
    _code, options, name, _hammer = IDIOMS[idiom]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path, dict(options)


def _port_holder(path: Path, options: dict[str, object]) -> Child:
    # a script file named after the lock, as a port of that script is (SMT reads its cmdline)
    script = path.parent / f"{path.name.split('.')[0]}.py"
    script.write_text(PYTHON_HOLD)
    child = Child([sys.executable, "-u", str(script), str(path), json.dumps(options)])
    child.expect("locked")
    return child


def _probe(idiom: str, path: Path, tries: int = 50) -> str:
    done = run_perl(_perl(idiom, PERL_PROBE), str(path), str(tries))
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def _age(idiom: str, path: Path) -> None:
    """Make a dead holder's lock look old to both sides (the idioms judged by age)."""
    old = time.time() - 3600
    os.utime(path, (old, old), follow_symlinks=False)
    if idiom == "daycount":
        os.utime(path.parent, (old, old))  # Perl's stat follows "." to the lock's directory


def _sigkill(child: Child) -> None:
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait(timeout=30)


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_port_waits_on_a_live_perl_holder(tmp_path: Path, idiom: str) -> None:
    from perlcompat import OS_ERROR, lock, unlock

    path, options = _setup(tmp_path, idiom)
    perl = Child.perl(_perl(idiom, PERL_HOLD), str(path))
    try:
        perl.expect("locked")
        assert lock(str(path), retry=3, wait=0.05, **options) == 0  # type: ignore[arg-type]
        assert OS_ERROR == errno.EWOULDBLOCK, str(OS_ERROR)
        perl.send("release")
        perl.expect("unlocked")
    finally:
        perl.kill()
    assert lock(str(path), retry=3, wait=0.05, **options) == 1  # type: ignore[arg-type]
    assert unlock(str(path), method=str(options["method"])) == 1


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_perl_waits_on_a_live_port_holder(tmp_path: Path, idiom: str) -> None:
    path, options = _setup(tmp_path, idiom)
    port = _port_holder(path, options)
    try:
        assert _probe(idiom, path) == "busy"  # and did not die reading our lock
        port.send("release")
        port.expect("unlocked")
    finally:
        port.kill()
    assert _probe(idiom, path) == "got"


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_port_recovers_a_sigkilled_perl_holder(tmp_path: Path, idiom: str) -> None:
    from perlcompat import OS_ERROR, lock, unlock

    path, options = _setup(tmp_path, idiom)
    perl = Child.perl(_perl(idiom, PERL_HOLD), str(path))
    perl.expect("locked")
    _sigkill(perl)
    if idiom in BY_AGE:
        assert lock(str(path), retry=1, **options) == 0  # type: ignore[arg-type]
        _age(idiom, path)
    assert lock(str(path), retry=200, wait=0.05, **options) == 1, str(OS_ERROR)  # type: ignore[arg-type]
    assert unlock(str(path), method=str(options["method"])) == 1
    assert not os.path.lexists(path)


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_perl_recovers_a_dead_port_holder(tmp_path: Path, idiom: str) -> None:
    path, options = _setup(tmp_path, idiom)
    port = _port_holder(path, options)
    _sigkill(port)
    if idiom in BY_AGE:
        if idiom == "pid-host-expires":
            assert _probe(idiom, path, 1) == "busy"
            # the expiry the port wrote (now + stale) is what Perl waits for
            expires = float(path.read_text().split("\n")[2])
            assert expires - time.time() <= float(str(options["stale"])) + 1
            assert _probe(idiom, path, 100_000) == "got"
            return
        assert _probe(idiom, path, 1) == "busy"
        _age(idiom, path)
    assert _probe(idiom, path) == "got"


HAMMERED = sorted(name for name, idiom in IDIOMS.items() if idiom[3])


@pytest.mark.parametrize("idiom", HAMMERED)
def test_mixed_hammer_loses_nothing(tmp_path: Path, idiom: str) -> None:
    cycles = 100
    path, options = _setup(tmp_path, idiom)
    counter, marker = tmp_path / "counter", tmp_path / "marker"
    counter.write_text("0")
    args = (str(counter), str(marker), str(cycles), str(tmp_path / "started"), "4")
    children = [Child.perl(_perl(idiom, PERL_MAIN), str(path), *args) for _ in range(2)]
    children += [
        Child.python(PYTHON_HAMMER, str(path), json.dumps(options), *args) for _ in range(2)
    ]
    for child in children:
        child.timeout = 120
    hammer_together(children, counter, cycles)
    assert not os.path.lexists(path)
