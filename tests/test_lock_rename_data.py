"""The rename lock beside real Perl: the data file renamed as the lock, and per-holder held names.

Two forms of the rename idiom, each against a minimal faithful Perl reproduction:

* **The data file renamed as the lock.**  The rename lock (the "inverse marker") of the
  article "Perlの排他制御" ('00.7.26): ``while (!rename($lockfile, $lockfile2)) { sleep(1) }``,
  work, ``rename($lockfile2, $lockfile)``, whose author adds that the data file itself is
  usually the file renamed ("書き込むデータファイルの名前を変えて直接ロックすることも可能です。
  むしろ、そのように使われることの方が多いかもしれません"), with the stale rule such scripts
  add (the same article's "older than 10 minutes" rule, as ``-M`` on the held name): rename
  it back once the held name is older than ``$stale`` seconds.  The port is
  ``lock("data.txt", method="rename", held="data.lock", data=True)``.
* **Per-holder held names.**  A Japanese "lock plugin" (quoted in issue 22) renames its marker
  to ``$lockfile . time . "_$$_$ENV{REMOTE_ADDR}"`` and, while waiting, finds held markers
  again with ``opendir`` and ``/^lock(\\d+)/``, renaming one back once ``time - $1`` exceeds
  its stale time.  The port is ``held="lock{time}_{pid}_{addr}"``.

For each: the port waits on a live Perl holder and Perl waits on a live port holder; the
port recovers a SIGKILLed Perl holder; Perl recovers a dead port holder by its own rule; a
2 Perl + 2 Python x 100 counter hammer loses nothing beyond what 4 Perl x 100 lose.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from pathlib import Path

import perlutil
import pytest
from perlutil import CHILD_ENV, PERL, Child, run_perl

from perlcompat import OS_ERROR, Lock, lock, unlock

ADDR = "192.0.2.7"  # the REMOTE_ADDR every child runs with
N = 100
#: runs of a mixed hammer until Perl has met a Python holder at least once
OVERLAP_ATTEMPTS = 3

# -- the data file renamed as the lock ---------------------------------------------------

#: modes: hold (lock, say "locked", wait for a line, write it, unlock, say "released"),
#: count N (N read-increment-write cycles), wait (as hold, but says "busy" once when its
#: first rename fails, and "locked CONTENT" once it holds).
DATA_PERL = r"""
use strict;
my ($dir, $mode, $n, $stale) = @ARGV;
chdir $dir or die "chdir $dir: $!";
sub lock {
    my $said = 0;
    while (!rename("data.txt", "data.lock")) {
        $main::busy++;
        print "busy\n" if !$said++ && $mode eq "wait";
        # the stale rule: a held name older than $stale s (by its mtime) is renamed back
        if (-e "data.lock" && time - (stat("data.lock"))[9] > $stale) {
            rename("data.lock", "data.txt");
        }
        select(undef, undef, undef, 0.005);
    }
}
sub unlock { rename("data.lock", "data.txt"); }
sub slurp { open(IN, "data.lock") or die "open: $!"; local $/; my $c = <IN>; close(IN); $c }
sub spew { open(OUT, ">data.lock") or die "open: $!"; print OUT $_[0]; close(OUT); }
if ($mode eq "count") {  # says "ready", waits for a line, then how often it found it busy
    $| = 1;
    print "ready\n";
    my $go = <STDIN>;
    for (1 .. $n) { lock(); my $c = slurp(); spew($c + 1); unlock(); }
    print $main::busy + 0, "\n";
    exit 0;
}
lock();
print $mode eq "wait" ? "locked " . slurp() . "\n" : "locked\n";
my $line = <STDIN>;
chomp $line;
spew($line);
unlock();
print "released\n";
"""

#: the port's counter: the same cycle through perlcompat (argv: dir, n).
DATA_PYTHON = """
import os, sys
from perlcompat import OS_ERROR, die, lock, unlock
os.chdir(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[2])):
    lock("data.txt", method="rename", held="data.lock", data=True, retry=None, stale=60) \\
        or die(f"lock: {OS_ERROR}")
    with open("data.lock") as f:
        count = int(f.read())
    with open("data.lock", "w") as f:
        f.write(str(count + 1))
    unlock("data.txt") or die(f"unlock: {OS_ERROR}")
"""

#: a port that dies holding the data file (argv: dir, content to write first).
DATA_PYTHON_DIES = """
import os, signal, sys
from perlcompat import Lock
os.chdir(sys.argv[1])
Lock("data.txt", method="rename", held="data.lock", data=True).acquire()
with open("data.lock", "w") as f:
    f.write(sys.argv[2])
print("locked", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def data_lock(tmp_path: Path, **kwargs: object) -> Lock:
    return Lock(
        str(tmp_path / "data.txt"),
        method="rename",
        held="data.lock",
        data=True,
        **kwargs,  # type: ignore[arg-type]
    )


def listing(path: Path) -> list[str]:
    return sorted(os.listdir(path))


def test_data_file_is_renamed_and_put_back_untouched(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    data.write_bytes(b"41\n")
    ino = data.stat().st_ino
    assert lock(str(data), method="rename", held="data.lock", data=True) == 1
    held = tmp_path / "data.lock"
    assert listing(tmp_path) == ["data.lock"]  # renamed away: no record, no side file
    assert held.read_bytes() == b"41\n" and held.stat().st_ino == ino
    held.write_bytes(b"42\n")  # the port works on the held name, as the Perl script does
    assert unlock(str(data)) == 1
    assert listing(tmp_path) == ["data.txt"]
    assert data.read_bytes() == b"42\n" and data.stat().st_ino == ino


def test_held_path_names_the_held_data_file(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_bytes(b"1")
    with data_lock(tmp_path) as held:
        backend = held.backend
        assert backend.held_path == str(tmp_path / "data.lock")
    assert backend.held_path == ""


def test_without_data_true_a_data_file_is_still_refused_and_untouched(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    data.write_bytes(b"41\n")
    before = data.stat()
    began = time.monotonic()
    assert lock(str(data), method="rename", held="data.lock", retry=4, wait=0.5) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert time.monotonic() - began < 1.0
    with pytest.raises(OSError, match=r"data=True"):  # the error names the opt-in
        Lock(str(data), method="rename", held="data.lock", retry=0).acquire()
    after = data.stat()
    assert listing(tmp_path) == ["data.txt"] and data.read_bytes() == b"41\n"
    assert (after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_ctime_ns,
    )


def test_data_true_needs_a_held_name_and_a_bool(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="held="):
        Lock(str(tmp_path / "data.txt"), method="rename", data=True)
    with pytest.raises(TypeError, match="True or False"):
        Lock(str(tmp_path / "data.txt"), method="rename", held="x", data="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="data"):
        Lock(str(tmp_path / "data.txt"), method="excl", data=True)


def test_a_missing_data_file_is_enoent_and_never_created(tmp_path: Path) -> None:
    began = time.monotonic()
    assert lock(str(tmp_path / "data.txt"), method="rename", held="data.lock", data=True) == 0
    assert int(OS_ERROR) == errno.ENOENT
    assert time.monotonic() - began < 1.0
    assert listing(tmp_path) == []


def test_a_stale_held_data_file_is_never_renamed_onto_a_data_file(tmp_path: Path) -> None:
    data, held = tmp_path / "data.txt", tmp_path / "data.lock"
    held.write_bytes(b"old\n")
    old = time.time() - 3600
    os.utime(held, (old, old))
    data.write_bytes(b"new\n")  # something made a new data file meanwhile
    # stale by its ctime (the utime above set it to now) within a second: then an error
    with pytest.raises(OSError, match="exists too") as caught:
        data_lock(tmp_path, stale=0.5, timeout=10).acquire()
    assert caught.value.errno == errno.EEXIST
    assert held.read_bytes() == b"old\n" and data.read_bytes() == b"new\n"
    assert listing(tmp_path) == ["data.lock", "data.txt"]


def test_held_may_be_given_as_a_path_beside_the_data_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Perl's ``rename("./db/data.txt", "./db/data.lock")``: both names as paths."""
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "data.txt").write_bytes(b"1")
    monkeypatch.chdir(tmp_path)
    assert lock("./db/data.txt", method="rename", held="./db/data.lock", data=True) == 1
    assert listing(tmp_path / "db") == ["data.lock"]
    assert unlock("./db/data.txt") == 1
    assert listing(tmp_path / "db") == ["data.txt"]


def test_a_symlink_at_the_data_name_is_refused_never_followed(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_bytes(b"1")
    (tmp_path / "data.txt").symlink_to("real.txt")
    assert lock(str(tmp_path / "data.txt"), method="rename", held="data.lock", data=True) == 0
    assert int(OS_ERROR) == errno.ELOOP
    assert listing(tmp_path) == ["data.txt", "real.txt"]
    assert os.readlink(tmp_path / "data.txt") == "real.txt"


def test_release_never_renames_onto_a_new_data_file(tmp_path: Path) -> None:
    data, held = tmp_path / "data.txt", tmp_path / "data.lock"
    data.write_bytes(b"mine")
    assert lock(str(data), method="rename", held="data.lock", data=True) == 1
    data.write_bytes(b"someone else's")  # a writer that does not lock made a new one
    assert unlock(str(data)) == 0
    assert int(OS_ERROR) == errno.EEXIST
    assert data.read_bytes() == b"someone else's" and held.read_bytes() == b"mine"
    data.unlink()  # a person kept the held one
    assert unlock(str(data)) == 1  # the release failed, so the lock stayed held: retried
    assert listing(tmp_path) == ["data.txt"] and data.read_bytes() == b"mine"


def test_data_file_renamed_to_a_per_holder_name(tmp_path: Path) -> None:
    """``rename("data.txt", "data.txt" . time)``: a template held name for the data file."""
    data = tmp_path / "data.txt"
    data.write_bytes(b"5")
    perl_held = tmp_path / f"data.txt{int(time.time())}"
    data.rename(perl_held)  # a Perl holder has it
    assert lock(str(data), method="rename", held="data.txt{time}", data=True, retry=0) == 0
    assert listing(tmp_path) == [perl_held.name]  # busy: nothing made beside it
    perl_held.rename(data)
    with Lock(str(data), method="rename", held="data.txt{time}", data=True) as held:
        name = held.backend.held_path
        assert os.path.basename(name).startswith("data.txt") and name != str(data)
        assert listing(tmp_path) == [os.path.basename(name)]
        Path(name).write_bytes(b"6")
    assert listing(tmp_path) == ["data.txt"] and data.read_bytes() == b"6"


def test_port_waits_on_a_live_perl_holder_of_the_data_file(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_bytes(b"0")
    perl = Child.perl(DATA_PERL, str(tmp_path), "hold", "0", "60")
    try:
        perl.expect("locked")
        assert not (tmp_path / "data.txt").exists()
        assert (
            lock(str(tmp_path / "data.txt"), method="rename", held="data.lock", data=True, retry=0)
            == 0
        )
        assert listing(tmp_path) == ["data.lock"]  # no empty data.txt made beside it
        got: list[bytes] = []

        def wait_for_it() -> None:
            with data_lock(tmp_path, timeout=30):
                got.append((tmp_path / "data.lock").read_bytes())

        thread = threading.Thread(target=wait_for_it)
        thread.start()
        perl.send("from perl")
        perl.expect("released")
        thread.join(30)
        assert got == [b"from perl"]  # it took the file only after Perl wrote and gave it back
    finally:
        perl.kill()
    assert (tmp_path / "data.txt").read_bytes() == b"from perl"


def test_perl_waits_on_a_live_port_holder_of_the_data_file(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_bytes(b"0")
    held = data_lock(tmp_path).acquire()
    perl = Child.perl(DATA_PERL, str(tmp_path), "wait", "0", "60")
    try:
        perl.expect("busy")  # its rename failed while the port holds the data file
        (tmp_path / "data.lock").write_bytes(b"from port")
        held.release()
        perl.expect("locked from port")
        perl.send("from perl")
        perl.expect("released")
    finally:
        perl.kill()
    assert listing(tmp_path) == ["data.txt"]
    assert (tmp_path / "data.txt").read_bytes() == b"from perl"


def test_port_recovers_a_sigkilled_perl_holder_of_the_data_file(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_bytes(b"7")
    perl = Child.perl(DATA_PERL, str(tmp_path), "hold", "0", "60")
    perl.expect("locked")
    perl.proc.send_signal(signal.SIGKILL)
    perl.kill()
    assert listing(tmp_path) == ["data.lock"]
    # no pid anywhere: recovered by age (the held name's ctime), renamed back, never lost
    with data_lock(tmp_path, stale=1, timeout=20) as held:
        assert held.backend.held_path == str(tmp_path / "data.lock")
        assert (tmp_path / "data.lock").read_bytes() == b"7"
    assert listing(tmp_path) == ["data.txt"]
    assert (tmp_path / "data.txt").read_bytes() == b"7"


def test_perl_recovers_a_dead_port_holder_of_the_data_file(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_bytes(b"0")
    port = Child.python(DATA_PYTHON_DIES, str(tmp_path), "41")
    port.expect("locked")
    port.proc.wait(30)
    assert port.proc.returncode == -signal.SIGKILL
    assert listing(tmp_path) == ["data.lock"]
    done = run_perl(DATA_PERL, str(tmp_path), "count", "1", "1")  # its own 1 s rule
    assert done.returncode == 0, done.stderr
    assert listing(tmp_path) == ["data.txt"]
    assert (tmp_path / "data.txt").read_bytes() == b"42"


def hammer(
    tmp_path: Path,
    perl: int,
    python: int,
    code_perl: str,
    code_python: str,
    counter: Path,
    perl_args: list[str],
    python_args: list[str],
) -> tuple[int, int]:
    """Run *perl* Perl and *python* Python counters x N, started together once all are ready.

    Returns the count they reach and how often the Perl ones found the lock busy.
    """
    import subprocess
    import sys

    env = dict(CHILD_ENV, REMOTE_ADDR=ADDR)
    argv = [[PERL, "-e", code_perl, "--", str(tmp_path), "count", str(N), *perl_args]] * perl
    argv += [[sys.executable, "-c", code_python, str(tmp_path), str(N), *python_args]] * python
    procs = [
        subprocess.Popen(
            a, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for a in argv
    ]
    try:
        for proc in procs:  # every one has started (Python has imported perlcompat)
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"ready\n"
        busy = 0
        for proc in procs:  # go, all at once
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        for proc in procs[:perl]:
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err.decode()
            busy += int(out)
        for proc in procs[perl:]:
            _out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err.decode()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return int(counter.read_text()), busy


def test_data_file_hammer_2_perl_2_python_loses_nothing_beyond_perl_alone(tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "data.txt").write_text("0")
    perl_alone, _ = hammer(alone, 4, 0, DATA_PERL, DATA_PYTHON, alone / "data.txt", ["60"], [])
    busy = 0
    for attempt in range(OVERLAP_ATTEMPTS):  # a loaded machine may run them one after another
        mixed = tmp_path / f"mixed{attempt}"
        mixed.mkdir()
        (mixed / "data.txt").write_text("0")
        together, busy = hammer(mixed, 2, 2, DATA_PERL, DATA_PYTHON, mixed / "data.txt", ["60"], [])
        assert 4 * N - together <= 4 * N - perl_alone, (perl_alone, together)
        assert together == 4 * N  # and Perl alone loses nothing either
        assert listing(mixed) == ["data.txt"]
        if busy:
            break
    assert busy > 0  # they overlapped: Perl found the data file renamed away


# -- per-holder held names: the "lock plugin" ---------------------------------------------

#: the lock plugin's lock and unlock (argv: dir, mode, n, stale); the counter is count.txt.
#: NAME is the plugin's held name expression (see FORMS).  No ``use strict``: the plugin has
#: none, and as quoted its name dereferences ``$_`` (strict refs would die on that).
PLUGIN_PERL = r"""
my ($dir, $mode, $n, $stale) = @ARGV;
my $lockfile = "$dir/lock";
my $held;
sub lock {
    my $said = 0;
    while (1) {
        my $name = NAME;
        if (rename($lockfile, $name)) { $held = $name; return; }
        $main::busy++;
        print "busy\n" if !$said++ && $mode eq "wait";
        opendir(DIR, $dir) or die "opendir: $!";
        my @entries = readdir(DIR);
        closedir(DIR);
        foreach (@entries) {
            if (/^lock(\d+)/ && time - $1 > $stale) { rename("$dir/$_", $lockfile); }
        }
        select(undef, undef, undef, 0.005);
    }
}
sub unlock { rename($held, $lockfile); }
sub count {
    open(IN, "$dir/count.txt") or die "open: $!"; my $c = <IN>; close(IN);
    open(OUT, ">$dir/count.txt") or die "open: $!"; print OUT $c + 1; close(OUT);
}
if ($mode eq "count") {  # says "ready", waits for a line, then how often it found it busy
    $| = 1;
    print "ready\n";
    my $go = <STDIN>;
    for (1 .. $n) { lock(); count(); unlock(); }
    print $main::busy + 0, "\n";
    exit 0;
}
lock();
print "locked ", substr($held, length($dir) + 1), "\n";
my $line = <STDIN>;
unlock();
print "released\n";
"""

#: the plugin's name as quoted, and as its author meant it.  Perl reads ``"_$$_$ENV{..}"``
#: as ``"_" . ${$_} . $ENV{..}``: the name carries no pid (``lock1764090283_192.0.2.7``), so
#: its port declares ``lock{time}_{addr}``; written ``"_${$}_..."`` it carries the pid.
FORMS = {
    "as-quoted": ('$lockfile . time . "_$$_$ENV{REMOTE_ADDR}"', "lock{time}_{addr}"),
    "with-pid": ('$lockfile . time . "_${$}_$ENV{REMOTE_ADDR}"', "lock{time}_{pid}_{addr}"),
}

PLUGIN_PYTHON = """
import sys
from perlcompat import OS_ERROR, die, lock, unlock
d, n, held = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print("ready", flush=True)
sys.stdin.readline()
for _ in range(n):
    lock(d + "/lock", method="rename", held=held, retry=None, stale=60) or die(f"lock: {OS_ERROR}")
    with open(d + "/count.txt") as f:
        count = int(f.read())
    with open(d + "/count.txt", "w") as f:
        f.write(str(count + 1))
    unlock(d + "/lock") or die(f"unlock: {OS_ERROR}")
"""

PLUGIN_PYTHON_DIES = """
import os, signal, sys
from perlcompat import Lock
held = Lock(sys.argv[1] + "/lock", method="rename", held=sys.argv[2]).acquire()
print("locked", os.path.basename(held.backend.held_path), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture(params=sorted(FORMS))
def form(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(the plugin's Perl code, the port's held= template) of one form of its held name."""
    expr, held = FORMS[request.param]
    return PLUGIN_PERL.replace("NAME", expr), held


@pytest.fixture()
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REMOTE_ADDR", ADDR)  # this process, run_perl's children
    monkeypatch.setitem(perlutil.CHILD_ENV, "REMOTE_ADDR", ADDR)  # Child's children
    (tmp_path / "lock").write_bytes(b"")  # the plugin's free marker
    (tmp_path / "count.txt").write_text("0")
    return tmp_path


def plugin_lock(d: Path, held: str, **kwargs: object) -> Lock:
    return Lock(str(d / "lock"), method="rename", held=held, **kwargs)  # type: ignore[arg-type]


def markers(d: Path) -> list[str]:
    return [name for name in listing(d) if name.startswith("lock")]


def test_port_writes_the_plugins_held_name_and_gives_it_back(plugin_dir: Path) -> None:
    before = int(time.time())
    with plugin_lock(plugin_dir, "lock{time}_{pid}_{addr}") as held:
        name = os.path.basename(held.backend.held_path)
        assert markers(plugin_dir) == [name]
        stamp, pid, addr = name[len("lock") :].split("_")
        assert before <= int(stamp) <= time.time() and int(pid) == os.getpid() and addr == ADDR
        assert (plugin_dir / name).read_bytes() == b""  # the name carries the holder: no record
    assert markers(plugin_dir) == ["lock"]


def test_as_quoted_the_plugins_name_carries_no_pid(plugin_dir: Path) -> None:
    code = PLUGIN_PERL.replace("NAME", FORMS["as-quoted"][0])
    perl = Child.perl(code, str(plugin_dir), "hold", "0", "60")
    try:
        name = perl.readline().split()[1]
        assert name == f"lock{name[4:14]}_{ADDR}" and name[4:14].isdigit(), name
        perl.send("go")
        perl.expect("released")
    finally:
        perl.kill()


def test_a_catch_all_template_never_takes_perlcompats_own_files_for_a_marker(
    plugin_dir: Path,
) -> None:
    (plugin_dir / "lock.breaker").write_bytes(b"")  # the remover's file, as on Windows
    with plugin_lock(plugin_dir, "lo{any}", timeout=5) as held:  # matches "lock.breaker" too
        assert held.backend.held_path == str(plugin_dir / "lo")
    assert markers(plugin_dir) == ["lock", "lock.breaker"]


def test_a_marker_held_under_a_matching_name_is_busy_never_a_second_marker(
    plugin_dir: Path, form: tuple[str, str]
) -> None:
    _code, held = form
    name = held.replace("{time}", str(int(time.time()))).replace("{pid}", str(os.getppid()))
    (plugin_dir / "lock").rename(plugin_dir / name.replace("{addr}", ADDR))
    before = markers(plugin_dir)
    assert lock(str(plugin_dir / "lock"), method="rename", held=held, retry=0) == 0
    assert markers(plugin_dir) == before  # no first-use marker beside the held one


def test_first_use_never_adds_a_marker_when_the_held_one_moves_as_it_is_looked_at(
    plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race behind double holders in the hammer: listed under a held name, the marker
    has moved on (back to the free name, on to another held name) when that name is
    looked at.  The listing alone decides: it was there, so no first-use marker is made."""
    from perlcompat.locks.methods import rename as rename_method

    held_name = f"lock{int(time.time()) - 5}_{ADDR}"  # not the name this second renders
    (plugin_dir / "lock").rename(plugin_dir / held_name)
    real = rename_method.lstat

    def moving(path: str) -> os.stat_result | None:  # gone each time it is looked at
        return None if os.path.basename(path) == held_name else real(path)

    monkeypatch.setattr(rename_method, "lstat", moving)
    assert lock(str(plugin_dir / "lock"), method="rename", held="lock{time}_{addr}", retry=0) == 0
    assert markers(plugin_dir) == [held_name]


def test_port_waits_on_a_live_perl_plugin_holder(plugin_dir: Path, form: tuple[str, str]) -> None:
    code, held = form
    perl = Child.perl(code, str(plugin_dir), "hold", "0", "60")
    try:
        name = perl.readline()
        assert name.startswith("locked lock") and name.endswith(f"_{ADDR}"), name
        assert lock(str(plugin_dir / "lock"), method="rename", held=held, retry=0) == 0
        assert markers(plugin_dir) == [name.split()[1]]
        seen: list[list[str]] = []

        def wait_for_it() -> None:
            with plugin_lock(plugin_dir, held, timeout=30) as waiter:
                mine = os.path.basename(waiter.backend.held_path)
                seen.append([mine, *markers(plugin_dir)])

        thread = threading.Thread(target=wait_for_it)
        thread.start()
        perl.send("go")
        perl.expect("released")
        thread.join(30)
        assert len(seen) == 1 and seen[0][1:] == [seen[0][0]]  # its own marker, alone
    finally:
        perl.kill()
    assert markers(plugin_dir) == ["lock"]


def test_perl_plugin_waits_on_a_live_port_holder(plugin_dir: Path, form: tuple[str, str]) -> None:
    code, template = form
    held = plugin_lock(plugin_dir, template).acquire()
    perl = Child.perl(code, str(plugin_dir), "wait", "0", "60")
    try:
        perl.expect("busy")  # the port's name is not stale by the plugin's own /^lock(\d+)/ rule
        assert markers(plugin_dir) == [os.path.basename(held.backend.held_path)]
        held.release()
        line = perl.readline()
        assert line.startswith("locked lock") and line.endswith(f"_{ADDR}"), line
        perl.send("go")
        perl.expect("released")
    finally:
        perl.kill()
    assert markers(plugin_dir) == ["lock"]


def test_port_recovers_a_sigkilled_perl_plugin_holder(
    plugin_dir: Path, form: tuple[str, str]
) -> None:
    code, held = form
    perl = Child.perl(code, str(plugin_dir), "hold", "0", "60")
    perl.readline()
    perl.proc.send_signal(signal.SIGKILL)
    perl.kill()
    # with a pid in its name (dead now): broken at once; without: once its {time} is 1 s old
    with plugin_lock(plugin_dir, held, stale=1, timeout=20) as taken:
        assert markers(plugin_dir) == [os.path.basename(taken.backend.held_path)]
    assert markers(plugin_dir) == ["lock"]


def test_port_breaks_a_dead_pid_at_once(plugin_dir: Path) -> None:
    code, held = PLUGIN_PERL.replace("NAME", FORMS["with-pid"][0]), FORMS["with-pid"][1]
    perl = Child.perl(code, str(plugin_dir), "hold", "0", "60")
    perl.readline()
    perl.proc.send_signal(signal.SIGKILL)
    perl.kill()
    began = time.monotonic()
    with plugin_lock(plugin_dir, held, stale=60, timeout=20):
        assert time.monotonic() - began < 10  # not 60 s: its pid is dead
    assert markers(plugin_dir) == ["lock"]


def test_perl_plugin_recovers_a_dead_port_holder(plugin_dir: Path, form: tuple[str, str]) -> None:
    code, held = form
    port = Child.python(PLUGIN_PYTHON_DIES, str(plugin_dir), held)
    name = port.readline().split()[1]
    port.proc.wait(30)
    port.kill()
    assert markers(plugin_dir) == [name]
    done = run_perl(code, str(plugin_dir), "count", "1", "1")  # its own rule: time - $1 > 1
    assert done.returncode == 0, done.stderr
    assert markers(plugin_dir) == ["lock"]
    assert (plugin_dir / "count.txt").read_text() == "1"


def test_plugin_hammer_2_perl_2_python_loses_nothing_beyond_perl_alone(
    tmp_path: Path, form: tuple[str, str]
) -> None:
    code, held = form
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "lock").write_bytes(b"")
    (alone / "count.txt").write_text("0")
    perl_alone, _ = hammer(alone, 4, 0, code, PLUGIN_PYTHON, alone / "count.txt", ["60"], [held])
    busy = 0
    for attempt in range(OVERLAP_ATTEMPTS):  # a loaded machine may run them one after another
        mixed = tmp_path / f"mixed{attempt}"
        mixed.mkdir()
        (mixed / "lock").write_bytes(b"")
        (mixed / "count.txt").write_text("0")
        together, busy = hammer(
            mixed, 2, 2, code, PLUGIN_PYTHON, mixed / "count.txt", ["60"], [held]
        )
        assert 4 * N - together <= 4 * N - perl_alone, (perl_alone, together)
        assert together == 4 * N
        assert markers(mixed) == ["lock"]
        if busy:
            break
    assert busy > 0  # they overlapped: Perl found the marker held


# -- the audit points at the interoperating call --------------------------------------------

RENAMES_DATA_AWAY = r"""#!/usr/bin/perl
$file = "data.txt";
$tmp = "data.lock";
rename($file, $tmp) || &error("BUSY");
open(IN, $tmp) || &error("open"); @lines = <IN>; close(IN);
unshift(@lines, "new\n");
open(OUT, ">$tmp") || &error("open"); print OUT @lines; close(OUT);
rename($tmp, $file);
sub error { exit; }
"""


def test_audit_suggests_the_data_rename_lock_not_a_flock(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "board.cgi"
    script.write_text(RENAMES_DATA_AWAY)
    done = subprocess.run(
        [sys.executable, "-m", "perlcompat", "audit", str(script)],
        capture_output=True,
        text=True,
        env=CHILD_ENV,
        check=False,
    )
    update = [line for line in done.stdout.splitlines() if "unlocked-update" in line]
    assert len(update) == 1, done.stdout
    hint = done.stdout.splitlines()[done.stdout.splitlines().index(update[0]) + 1]
    assert 'lock(file, method="rename", held=tmp, data=True)' in hint, hint
    assert "flock" not in hint


def test_refresh_renews_the_time_in_a_per_holder_held_name(
    plugin_dir: Path, form: tuple[str, str]
) -> None:
    """The plugin judges a holder by the ``{time}`` in its name (``/^lock(\\d+)/``), not by
    any file time: a refresh renames the marker to the name rendered now, so a plugin with
    a 2 s rule never takes a port's lock kept young by ``auto_refresh``."""
    code, template = form
    lk = plugin_lock(plugin_dir, template, stale=30, auto_refresh=0.3)
    lk.acquire()
    first = os.path.basename(lk.backend.held_path)  # type: ignore[attr-defined]
    perl = Child.perl(code, str(plugin_dir), "wait", "0", "2")
    try:
        perl.expect("busy")
        time.sleep(4.5)  # time passing is the point: past the plugin's 2 s rule (not a sync)
        now = os.path.basename(lk.backend.held_path)  # type: ignore[attr-defined]
        assert now != first and int(now[4:14]) >= int(time.time()) - 2
        assert markers(plugin_dir) == [now]  # still ours alone: the plugin did not break it
        lk.release()  # no ExpiredLockError: nobody broke it
        line = perl.readline()
        assert line.startswith("locked lock") and line.endswith(f"_{ADDR}"), line
        perl.send("go")
        perl.expect("released")
    finally:
        perl.kill()
    assert markers(plugin_dir) == ["lock"]


def test_a_fork_child_renames_a_held_name_that_names_its_parent(plugin_dir: Path) -> None:
    """``lock; if (fork) { exit }`` with ``{pid}`` in the held name: the child's name carries
    its own pid, so a waiter that judges by the name's dead pid (the parent's) waits."""
    code = (
        "import os, sys\nfrom perlcompat import Lock, fork\n"
        "lk = Lock(sys.argv[1], method='rename', held='lock{time}_{pid}_{addr}', stale=60)\n"
        "lk.acquire()\n"
        "pid = fork()\n"
        "if pid:\n"
        "    sys.exit(0)\n"
        "os.write(1, f'child {os.getpid()} {os.path.basename(lk.backend.held_path)}\\n'.encode())\n"
        "sys.stdin.readline()\n"
        "lk.release()\n"
        "print('released', flush=True)\n"
    )
    job = Child.python(code, str(plugin_dir / "lock"))
    try:
        word, pid, name = job.readline().split()
        assert word == "child"
        assert job.proc.wait(timeout=30) == 0  # the parent is gone
        assert name.split("_")[1] == pid and markers(plugin_dir) == [name]
        held = "lock{time}_{pid}_{addr}"
        assert lock(str(plugin_dir / "lock"), method="rename", held=held, retry=0) == 0
        assert markers(plugin_dir) == [name]  # not broken for a dead parent's pid
        job.send("go")
        assert job.readline() == "released"
    finally:
        job.kill()
    assert markers(plugin_dir) == ["lock"]
