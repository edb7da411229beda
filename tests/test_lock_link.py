"""The link() lock (issue 22 item 5) beside the real Perl link() lock code.

Two Perl idioms, each against ``lock(..., method="link", record=...)``:

* File::NFSLock (CPAN; Debian ``libfile-nfslock-perl``, the real module): lock
  file ``FILE.NFSLock`` holding ``"HOST pid time rand\\n"``; it recovers a lock
  whose line names a dead pid on its host (``kill 0``).
* SpamAssassin's ``Mail::SpamAssassin::Locker::UnixNFSSafe`` (apache/spamassassin,
  lib/Mail/SpamAssassin/Locker/UnixNFSSafe.pm): a faithful minimal reproduction of
  ``safe_lock``/``safe_unlock`` below (temp ``PATH.lock.HOST.PID`` getting one
  ``"HOST.PID\\n"`` line per retry, ``link``, ``nlink > 1``, stale by ctime older
  than ``LOCK_MAX_AGE``; unlock only while the ctime is unchanged).  Only its
  one-second jittered sleep is shortened to 1 ms and LOCK_MAX_AGE is an argument.

For each: the port waits on a live Perl holder and Perl on a live port holder,
a SIGKILLed holder on either side is recovered by the other (SpamAssassin never
looks at the pid: it recovers by age only, as it does its own), and a mixed
2 Perl + 2 Python x 100 counter hammer ends exact with no overlap.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from perlutil import PERL, Child, hammer_together, run_perl

from perlcompat import OS_ERROR, lock, unlock
from perlcompat.locks import owner as _owner
from perlcompat.locks.api import Lock

NFSLOCK = "{host} {pid} {time} {rand}\n"
UNIXNFSSAFE = "{host}.{pid}\n"

# -- the Perl side ---------------------------------------------------------------

PERL_HEAD = r"""
use strict; use warnings; use Fcntl; use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);
"""

#: File::NFSLock itself: lock(PATH) takes PATH.NFSLock, non-blocking tries 1 ms apart.
PERL_NFSLOCK = r"""
use File::NFSLock;
my $held;
sub lock {
    my ($path, $patience) = @_;
    my $until = time + ($patience // 0);
    while (1) {
        $held = File::NFSLock->new({file => $path, lock_type => 'NONBLOCKING'});
        return 1 if $held;
        return 0 if time >= $until;
        select(undef, undef, undef, 0.001);
    }
}
sub unlock { $held->unlock; undef $held; 1 }
"""

#: Mail::SpamAssassin::Locker::UnixNFSSafe's safe_lock/safe_unlock, minimal and faithful:
#: lock(PATH) takes PATH.lock.  $LOCK_MAX_AGE is 600 there.
PERL_UNIXNFSSAFE = r"""
use Sys::Hostname;
our $LOCK_MAX_AGE = $ENV{LOCK_MAX_AGE} // 600;
my ($lock_tmp, $lock_ctime);
# lock(PATH, PATIENCE): safe_lock with PATIENCE seconds of 1 ms retries (one try without)
sub lock { my ($path, $patience) = @_; safe_lock($path, 1 + 1000 * ($patience // 0)) }
sub safe_lock {
    my ($path, $max_retries) = @_;
    my $is_locked = 0;
    my $lock_file = "$path.lock";
    my $hname = hostname();
    $lock_tmp = "$path.lock.$hname.$$";
    open(my $ltmp, '>', $lock_tmp) or die "cannot create tmp lockfile $lock_tmp: $!";
    $ltmp->autoflush(1);
    for (my $retries = 0; $retries < $max_retries; $retries++) {
        if ($retries > 0) { select(undef, undef, undef, 0.001); }
        print $ltmp "$hname.$$\n";
        if (link($lock_tmp, $lock_file)) { $is_locked = 1; last; }
        my @stat = lstat($lock_tmp);
        if (defined $stat[3] && $stat[3] > 1) { $is_locked = 1; last; }
        my $now = ($#stat < 11 ? undef : $stat[10]);
        @stat = lstat($lock_file);
        my $lock_age = ($#stat < 11 ? undef : $stat[10]);
        if (defined($lock_age) && defined($now) && ($now - $lock_age) > $LOCK_MAX_AGE) {
            unlink($lock_file);
        }
    }
    close $ltmp; unlink($lock_tmp);
    if ($is_locked) { $lock_ctime = (lstat($lock_file))[10]; }
    return $is_locked;
}
sub unlock { safe_unlock(@_) }
sub safe_unlock {
    my ($path) = @_;
    my $lock_file = "$path.lock";
    my $now_ctime = (lstat($lock_file))[10];
    if (defined $now_ctime && $now_ctime == $lock_ctime) { unlink($lock_file); return 1; }
    warn "lock on $lock_file was stolen or lost\n";
    return 0;
}
"""

IDIOMS = {
    # idiom: (Perl subs, the lock file Perl makes for PATH, record=)
    "File::NFSLock": (PERL_NFSLOCK, ".NFSLock", NFSLOCK),
    "UnixNFSSafe": (PERL_UNIXNFSSAFE, ".lock", UNIXNFSSAFE),
}

#: hold the lock until told, then release it and say so.
PERL_HOLD = r"""
my ($path) = @ARGV;
lock($path, 30) or die "no lock";
print "locked\n";
<STDIN>;
unlock($path) or die "unlock failed";
print "released\n";
"""

#: wait (blocking) for the lock; say "got" when it is ours.
PERL_WAIT = r"""
my ($path) = @ARGV;
print "waiting\n";
lock($path, 30) or die "no lock within 30 s";
print "got\n";
unlock($path);
"""

PYTHON_HOLD = r"""
import sys
from perlcompat import lock, OS_ERROR
path, record = sys.argv[1:3]
if not lock(path, method="link", record=record, retry=1):
    sys.exit(f"lock failed: {OS_ERROR}")
print("locked", flush=True)
sys.stdin.readline()
"""


def perl(idiom: str, main: str) -> str:
    return PERL_HEAD + IDIOMS[idiom][0] + main


def lock_file(idiom: str, data: Path) -> str:
    return str(data) + IDIOMS[idiom][1]


# -- the method alone -------------------------------------------------------------


def test_link_lock_writes_the_declared_record_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "data.NFSLock"
    assert (lock(str(path), method="link", record=NFSLOCK), int(OS_ERROR)) == (1, 0)
    host, pid, made, rand = path.read_text().split(" ")
    assert (host, int(pid), rand.endswith("\n")) == (_owner.hostname(), os.getpid(), True)
    assert abs(int(made) - time.time()) < 5
    assert os.listdir(tmp_path) == ["data.NFSLock"]  # the temp file is gone
    assert path.stat().st_nlink == 1
    assert (lock(str(path), method="link", record=NFSLOCK), int(OS_ERROR)) == (0, errno.EDEADLK)
    assert (unlock(str(path)), int(OS_ERROR)) == (1, 0)
    assert os.listdir(tmp_path) == []


def test_link_lock_without_record_writes_its_own_and_refuses_foreign_content(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lk"
    held = Lock(str(path), method="link").acquire()
    assert path.read_text().startswith(f"perlcompat link pid={os.getpid()} ")
    held.release()
    path.write_text("12345\n")  # a bare pid, as lockrun writes: declare it to wait on it
    with pytest.raises(OSError) as refused:
        Lock(str(path), method="link", retry=1).acquire()
    assert refused.value.errno == errno.EEXIST
    assert "'12345\\n'" in str(refused.value) and "record='{pid}\\n'" in str(refused.value)
    assert path.read_text() == "12345\n"
    path.write_text("")  # a link lock is never empty: an empty file is nobody's lock
    assert (lock(str(path), method="link", retry=1), int(OS_ERROR)) == (0, errno.EEXIST)
    assert path.exists()


def test_a_data_file_matching_no_declared_record_is_never_touched(tmp_path: Path) -> None:
    path = tmp_path / "counter.txt"
    path.write_text("41\n")
    old = time.time() - 3600
    os.utime(path, (old, old))  # older than any stale: still not a lock
    for record in (NFSLOCK, UNIXNFSSAFE):
        assert lock(str(path), method="link", record=record, retry=1, stale=1) == 0
        assert int(OS_ERROR) == errno.EEXIST
    assert path.read_text() == "41\n"


def test_a_lock_file_with_one_line_per_holder_or_retry_is_a_lock(tmp_path: Path) -> None:
    # UnixNFSSafe prints "host.pid\n" into its temp file on each retry before linking it
    path = tmp_path / "data.lock"
    dead = _dead_pid()
    path.write_text(f"{_owner.hostname()}.{dead}\n" * 3)
    # its pid is dead on this host: recovered at once
    assert lock(str(path), method="link", record=UNIXNFSSAFE, retry=20, wait=0.05) == 1
    assert path.read_text() == f"{_owner.hostname()}.{os.getpid()}\n"
    assert unlock(str(path)) == 1
    alive = f"{_owner.hostname()}.{os.getppid()}\n"
    path.write_text(alive * 2)
    assert (lock(str(path), method="link", record=UNIXNFSSAFE, retry=1), int(OS_ERROR)) == (
        0,
        errno.EWOULDBLOCK,
    )
    assert path.read_text() == alive * 2


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


# -- beside the Perl idioms ------------------------------------------------------


@pytest.mark.parametrize("idiom", IDIOMS)
def test_port_and_perl_wait_on_each_others_live_lock(tmp_path: Path, idiom: str) -> None:
    data = tmp_path / "data"
    name, record = lock_file(idiom, data), IDIOMS[idiom][2]
    holder = Child.perl(perl(idiom, PERL_HOLD), str(data))
    try:
        holder.expect("locked")
        assert (lock(name, method="link", record=record, retry=1), int(OS_ERROR)) == (
            0,
            errno.EWOULDBLOCK,
        )
        holder.send("release")
        holder.expect("released")
        assert (lock(name, method="link", record=record, retry=50, wait=0.1), int(OS_ERROR)) == (
            1,
            0,
        )
    finally:
        holder.kill()
    # now the port holds: Perl finds it busy, and a Perl waiter gets it once we release
    probe = perl(idiom, 'print lock($ARGV[0]) ? "got" : "busy";')
    assert run_perl(probe, str(data)).stdout == b"busy"
    waiter = Child.perl(perl(idiom, PERL_WAIT), str(data))
    try:
        waiter.expect("waiting")
        assert run_perl(probe, str(data)).stdout == b"busy"  # still ours while it waits
        assert (unlock(name), int(OS_ERROR)) == (1, 0)
        waiter.expect("got")
        status, _out, err = waiter.wait()
        assert status == 0, err
    finally:
        waiter.kill()
    assert not os.path.exists(name)


@pytest.mark.parametrize("idiom", IDIOMS)
def test_port_recovers_a_sigkilled_perl_holder(tmp_path: Path, idiom: str) -> None:
    data = tmp_path / "data"
    name, record = lock_file(idiom, data), IDIOMS[idiom][2]
    holder = Child.perl(perl(idiom, PERL_HOLD), str(data))
    try:
        holder.expect("locked")
        pid = holder.proc.pid
        os.kill(pid, signal.SIGKILL)
        holder.proc.wait(30)
    finally:
        holder.kill()
    assert str(pid) in Path(name).read_text()  # the dead holder's lock is still there
    began = time.monotonic()
    # the default stale (180 s) has not passed: the dead pid on this host decides
    assert (lock(name, method="link", record=record, retry=100, wait=0.05), int(OS_ERROR)) == (
        1,
        0,
    )
    assert time.monotonic() - began < 5
    assert str(os.getpid()) in Path(name).read_text()
    assert unlock(name) == 1


def test_file_nfslock_recovers_a_sigkilled_port_holder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    name = lock_file("File::NFSLock", data)
    holder = Child.python(PYTHON_HOLD, name, NFSLOCK)
    try:
        holder.expect("locked")
        os.kill(holder.proc.pid, signal.SIGKILL)
        holder.proc.wait(30)
    finally:
        holder.kill()
    assert os.path.exists(name)
    # File::NFSLock's own dead-holder rule: a line of this host whose pid fails kill 0
    got = run_perl(perl("File::NFSLock", 'print lock($ARGV[0], 10) ? "got" : "busy";'), str(data))
    assert got.stdout == b"got", got.stderr


def test_unixnfssafe_recovers_a_dead_port_holder_by_age_as_its_own(tmp_path: Path) -> None:
    # UnixNFSSafe never reads the pid: a dead holder's lock (Perl's or ours) ages out
    data = tmp_path / "data"
    name = lock_file("UnixNFSSafe", data)
    probe = perl("UnixNFSSafe", 'if (lock($ARGV[0], 5)) { unlock($ARGV[0]); print "got" }')
    once = 'print lock($ARGV[0]) ? "got" : "busy";'
    env_age = {"LOCK_MAX_AGE": "1"}
    for maker in ("perl", "port"):
        if maker == "perl":
            holder = Child.perl(perl("UnixNFSSafe", PERL_HOLD), str(data))
        else:
            holder = Child.python(PYTHON_HOLD, name, UNIXNFSSAFE)
        try:
            holder.expect("locked")
            os.kill(holder.proc.pid, signal.SIGKILL)
            holder.proc.wait(30)
        finally:
            holder.kill()
        busy = _run_perl_env(perl("UnixNFSSafe", once), str(data), env=env_age)
        assert busy.stdout == b"busy"  # not old yet
        # Perl retries (1 ms apart) until the lock's ctime age passes LOCK_MAX_AGE = 1 s
        assert _run_perl_env(probe, str(data), env=env_age).stdout == b"got"
        assert not os.path.exists(name)


def _run_perl_env(code: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [PERL, "-e", code, "--", *args],
        capture_output=True,
        timeout=60,
        check=False,
        env=dict(os.environ, **env),
    )


# -- the mixed hammer ------------------------------------------------------------

CYCLES = 100

PERL_MAIN = r"""
my ($path, $counter, $marker, $cycles, $started, $everyone) = @ARGV;
print "ready\n"; <STDIN>;
my $start = clock_gettime(CLOCK_MONOTONIC);
open(my $s, '>>', $started) or die "Can't open: $!"; syswrite($s, "x") or die; close($s);
my ($overlaps, $done) = (0, 0);
until ($done >= $cycles && -s $started >= $everyone) {
    $done++;
    lock($path, 60) or die "no lock in 60 s";
    my $own = 0;
    if (sysopen(my $m, $marker, O_CREAT | O_EXCL | O_WRONLY)) { close($m); $own = 1; }
    else { $overlaps++; }
    open(my $c, '+<', $counter) or die "Can't open: $!";
    my $n = <$c>; seek($c, 0, 0) or die; print $c $n + 1; truncate($c, tell($c)) or die;
    close($c) or die;
    unlink($marker) if $own;
    unlock($path) or die "unlock failed";
}
printf "done %d %d %.6f %.6f\n", $overlaps, $done, $start, clock_gettime(CLOCK_MONOTONIC);
"""

PYTHON_MAIN = r"""
import os, sys, time
from perlcompat import lock, unlock, OS_ERROR
path, record, counter, marker, cycles, started, everyone = sys.argv[1:8]
print("ready", flush=True)
sys.stdin.readline()
start = time.monotonic()
with open(started, "a") as stream:
    stream.write("x")
overlaps = done = 0
while done < int(cycles) or os.path.getsize(started) < int(everyone):
    done += 1
    if not lock(path, method="link", record=record, retry=3000, wait=0.02):
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
    if not unlock(path):
        sys.exit(f"unlock failed: {OS_ERROR}")
print(f"done {overlaps} {done} {start:.6f} {time.monotonic():.6f}", flush=True)
"""


@pytest.mark.parametrize("idiom", IDIOMS)
def test_two_perl_and_two_python_lose_nothing(tmp_path: Path, idiom: str) -> None:
    data, counter, marker = tmp_path / "data", tmp_path / "counter", tmp_path / "marker"
    counter.write_text("0")
    args = (str(counter), str(marker), str(CYCLES), str(tmp_path / "started"), "4")
    children = [Child.perl(perl(idiom, PERL_MAIN), str(data), *args) for _ in range(2)]
    children += [
        Child.python(PYTHON_MAIN, lock_file(idiom, data), IDIOMS[idiom][2], *args) for _ in range(2)
    ]
    for child in children:
        child.timeout = 120
    hammer_together(children, counter, CYCLES)
    assert sorted(os.listdir(tmp_path)) == ["counter", "started"]  # no lock, no temp file


PERL_SHARED = r"""
use strict; use warnings; use File::NFSLock;
my ($path) = @ARGV;
my $lock = File::NFSLock->new({file => $path, lock_type => 'SHARED', blocking_timeout => 10})
    or die "no shared lock: $File::NFSLock::errstr";
print "locked\n";
<STDIN>;
$lock->unlock;
print "released\n";
"""


def test_file_nfslock_shared_holders_are_waited_on_not_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    name = lock_file("File::NFSLock", data)
    holders = [Child.perl(PERL_SHARED, str(data)) for _ in range(2)]
    try:
        for holder in holders:
            holder.expect("locked")
        lines = Path(name).read_text().splitlines()
        assert sorted(int(line.split()[1]) for line in lines) == sorted(
            h.proc.pid for h in holders
        )  # one "HOST pid time rand" line per shared holder
        assert Path(name).stat().st_mode & 0o1  # File::NFSLock's shared bit
        assert (lock(name, method="link", record=NFSLOCK, retry=1), int(OS_ERROR)) == (
            0,
            errno.EWOULDBLOCK,
        )
        for holder in holders:
            holder.send("release")
            holder.expect("released")
    finally:
        for holder in holders:
            holder.kill()
    assert (lock(name, method="link", record=NFSLOCK, retry=50, wait=0.1), int(OS_ERROR)) == (1, 0)
    assert unlock(name) == 1
