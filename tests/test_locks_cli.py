"""``perlcompat locks DIR``: real locks held by real processes, alive and killed.

Holders are separate Python (or Perl) processes that take a lock, print
``held`` and wait on stdin; the test reads that line before looking, closes
stdin to let a holder release, or kills it with SIGKILL to leave a dead lock.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from perlutil import as_unprivileged, require_root, shared_directory

ROOT = Path(__file__).parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
ENV.pop("PERLCOMPAT_LOCK_ROOT", None)

HOLDER = """
import sys
from perlcompat import Lock
lock = Lock(sys.argv[2], method=sys.argv[3], root=sys.argv[1], stale=1000)
lock.acquire(timeout=10)
print("held", flush=True)
sys.stdin.read()
lock.release()
print("released", flush=True)
"""

METHODS = ["mkdir", "symlink", "rename", "excl", "flock", "toplock"]


class Holder:
    """A process holding one lock until its stdin closes (or it is killed)."""

    def __init__(self, argv: list[str], cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=ENV,
            cwd=cwd,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line == "held\n", line

    @property
    def pid(self) -> int:
        return self.proc.pid

    def release(self) -> str:
        out, _ = self.proc.communicate(timeout=20)
        assert self.proc.returncode == 0
        return out

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def hold(directory: Path, name: str, method: str) -> Holder:
    return Holder([sys.executable, "-c", HOLDER, str(directory), name, method])


def perl_hold(directory: Path, code: str) -> Holder:
    return Holder(["perl", "-e", code], cwd=directory)


def locks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perlcompat", "locks", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )


def listed(directory: Path, *extra: str) -> dict[str, dict[str, object]]:
    result = locks(str(directory), "--json", *extra)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["directory"] == str(directory)
    return {row["name"]: row for row in doc["locks"]}


def test_every_method_alive_then_gone(tmp_path: Path) -> None:
    holders = {m: hold(tmp_path, f"{m}.lock", m) for m in METHODS}
    try:
        rows = listed(tmp_path)
        assert sorted(rows) == sorted(f"{m}.lock" for m in METHODS)
        for method, holder in holders.items():
            row = rows[f"{method}.lock"]
            assert row["method"] == method
            assert row["pid"] == holder.pid
            assert row["alive"] is True
            assert row["stale"] is False
            assert isinstance(row["age"], float) and 0 <= row["age"] < 30
            assert row["path"] == str(tmp_path / f"{method}.lock")
    finally:
        for holder in holders.values():
            assert holder.release() == "released\n"
    assert listed(tmp_path) == {}  # the flock file remains, but nobody holds it
    assert (tmp_path / "flock.lock").exists()


def test_dead_holders_are_reported_dead(tmp_path: Path) -> None:
    live = hold(tmp_path, "live.lock", "mkdir")
    dead = {m: hold(tmp_path, f"dead_{m}.lock", m) for m in ("mkdir", "excl", "symlink")}
    for holder in dead.values():
        holder.kill()
    try:
        rows = listed(tmp_path)
        assert rows["live.lock"]["alive"] is True
        for method, holder in dead.items():
            row = rows[f"dead_{method}.lock"]
            assert (row["method"], row["pid"], row["alive"]) == (method, holder.pid, False)
            assert row["stale"] is True
        text = locks(str(tmp_path)).stdout.splitlines()
        assert text[0].split() == ["NAME", "METHOD", "PID", "HOST", "HOLDER", "AGE", "STALE"]
        by_name = {line.split()[0]: line.split() for line in text[1:]}
        assert by_name["dead_excl.lock"][1:3] == ["excl", str(dead["excl"].pid)]
        assert by_name["dead_excl.lock"][4] == "dead"
        assert by_name["live.lock"][4] == "alive"
    finally:
        assert live.release() == "released\n"


def test_break_stale_removes_dead_and_old_locks_only(tmp_path: Path) -> None:
    live = hold(tmp_path, "live.lock", "mkdir")
    dead_mkdir = hold(tmp_path, "dead_mkdir.lock", "mkdir")
    dead_excl = hold(tmp_path, "dead_excl.lock", "excl")
    dead_mkdir.kill()
    dead_excl.kill()
    # seed 000's symlink($$, $lockfile) by a Perl process that has exited.
    perl = subprocess.run(["perl", "-e", 'symlink($$, "perl_sym.lock") or die'], cwd=tmp_path)
    assert perl.returncode == 0
    # seed 003's Perl mkdir lock: no owner, judged by age only.
    (tmp_path / "perl_old.lock").mkdir()
    (tmp_path / "perl_new.lock").mkdir()
    os.utime(tmp_path / "perl_old.lock", (0, os.stat(tmp_path).st_mtime - 3600))
    try:
        rows = listed(tmp_path, "--break-stale", "--stale", "600")
        removed = {name for name, row in rows.items() if row["removed"]}
        assert removed == {"dead_mkdir.lock", "dead_excl.lock", "perl_sym.lock", "perl_old.lock"}
        assert rows["perl_new.lock"]["alive"] is None and rows["perl_new.lock"]["pid"] is None
        for name in removed:
            assert not os.path.lexists(tmp_path / name)
        for name in ("live.lock", "perl_new.lock"):
            assert (tmp_path / name).is_dir()
    finally:
        assert live.release() == "released\n"  # still ours: no ExpiredLockError
    assert sorted(listed(tmp_path)) == ["perl_new.lock"]


def test_concurrent_break_stale_removes_a_dead_lock_once(tmp_path: Path) -> None:
    dead = hold(tmp_path, "bbs.lock", "mkdir")
    dead.kill()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "perlcompat", "locks", str(tmp_path), "--json", "--break-stale"],
            stdout=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for _ in range(6)
    ]
    removed = 0
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        removed += sum(1 for row in json.loads(out)["locks"] if row["removed"])
    assert removed == 1
    assert not (tmp_path / "bbs.lock").exists()


def test_flock_held_by_perl(tmp_path: Path) -> None:
    code = (
        'use Fcntl qw(:flock); open(LOCK, "> bbs.lck") or die; flock(LOCK, LOCK_EX) or die; '
        '$| = 1; print "held\\n"; <STDIN>;'
    )
    holder = perl_hold(tmp_path, code)
    try:
        row = listed(tmp_path, "--break-stale", "--stale", "1")["bbs.lck"]
        assert (row["method"], row["alive"], row["removed"]) == ("flock", True, False)
        assert row["pid"] == holder.pid  # from /proc/locks: Perl writes no owner record
    finally:
        holder.release()
    assert listed(tmp_path) == {}


def test_break_stale_goes_through_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perlcompat.locks.methods import mkdir as _mkdir
    from perlcompat.tools import locks_cli as _locks_cli

    (tmp_path / "old.lock").mkdir()
    os.utime(tmp_path / "old.lock", (0, 1))
    calls: list[tuple[str, float]] = []

    def fake(self: _mkdir.MkdirBackend) -> bool:
        calls.append((self.path, self.stale))
        return True

    monkeypatch.setattr(_mkdir.MkdirBackend, "break_stale", fake)
    rows = _locks_cli.survey(str(tmp_path), 42.0, break_stale=True)
    assert [r["removed"] for r in rows] == [True]
    assert calls == [(os.path.realpath(tmp_path / "old.lock"), 42.0)]
    assert (tmp_path / "old.lock").is_dir()  # only the backend removes


def test_empty_and_missing_directory(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("not a lock\n")
    empty = locks(str(tmp_path))
    assert (empty.returncode, empty.stdout) == (0, f"no locks in {tmp_path}\n")
    missing = locks(str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr
    assert locks(str(tmp_path), "--stale", "0").returncode == 2


# -- looking takes no lock anyone can see -------------------------------------------

PERL_NB_LOOP = r"""
use Fcntl qw(:flock);
my ($file, $rounds) = @ARGV;
my $busy = 0;
$| = 1;
print "ready\n";
for (1 .. $rounds) {
    open(my $fh, "<", $file) or die "open: $!";
    if (flock($fh, 6)) { flock($fh, 8) } else { $busy++ }   # LOCK_EX|LOCK_NB, LOCK_UN
    close($fh);
}
print "$busy\n";
"""


def test_scanning_never_makes_a_perl_flock_nb_loop_fail(tmp_path: Path) -> None:
    from perlcompat.tools import locks_cli as _locks_cli

    (tmp_path / "data.lck").write_bytes(b"")
    perl = subprocess.Popen(
        ["perl", "-e", PERL_NB_LOOP, str(tmp_path / "data.lck"), "20000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert perl.stdout is not None
    scans = 0
    caught: set[tuple[str, int | None]] = set()
    try:
        assert perl.stdout.readline() == "ready\n"
        while perl.poll() is None:  # scan for as long as Perl loops
            for row in _locks_cli.survey(str(tmp_path), 180.0, break_stale=False):
                caught.add((row["name"], row["pid"]))
            scans += 1
        busy = int(perl.stdout.readline())
    finally:
        perl.kill()
        perl.wait(30)
        perl.stdout.close()
    assert scans >= 10
    assert busy == 0  # the old LOCK_EX|LOCK_NB probe made Perl's own attempt fail
    assert caught <= {("data.lck", perl.pid)}  # when caught holding: Perl, by its pid


def test_without_proc_locks_the_probe_still_finds_holders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perlcompat.locks.methods import flock as _flocklock

    code = (
        'use Fcntl qw(:flock); open(LOCK, "> held.lck") or die; flock(LOCK, LOCK_SH) or die; '
        '$| = 1; print "held\\n"; <STDIN>;'
    )
    (tmp_path / "free.lck").write_bytes(b"")
    holder = perl_hold(tmp_path, code)
    try:
        held_path = str(tmp_path / "held.lck")
        assert _flocklock.flock_holders(os.stat(held_path)) == [holder.pid]
        monkeypatch.setattr(_flocklock, "PROC_LOCKS", str(tmp_path / "no-proc-locks"))
        assert _flocklock.flock_holders(os.stat(held_path)) is None
        assert _flocklock.is_flocked(held_path) is True
        assert _flocklock.is_flocked(str(tmp_path / "free.lck")) is False
    finally:
        holder.release()


# -- entries that cannot be read, locks that cannot be removed ----------------------


def test_unreadable_entries_are_listed_with_the_reason() -> None:
    from perlcompat.tools import locks_cli as _locks_cli

    with shared_directory() as base:
        (base / "secret.lock").mkdir()
        (base / "secret.lock" / "x").write_text("not empty\n")
        (base / "private.dat").write_text("data\n")
        (base / "ok.lock").mkdir()
        (base / "secret.lock").chmod(0o700 if os.geteuid() == 0 else 0o000)
        (base / "private.dat").chmod(0o600 if os.geteuid() == 0 else 0o000)

        def scan() -> tuple[list[dict[str, object]], str]:
            import contextlib
            import io

            text = io.StringIO()
            with contextlib.redirect_stdout(text):
                _locks_cli.main([str(base)])
            return _locks_cli.survey(str(base), 180.0, break_stale=False), text.getvalue()

        rows, table = as_unprivileged(scan)  # type: ignore[misc]
    by_name = {row["name"]: row for row in rows}
    assert sorted(by_name) == ["ok.lock", "private.dat", "secret.lock"]
    assert by_name["ok.lock"]["method"] == "mkdir"
    for name in ("private.dat", "secret.lock"):
        assert by_name[name]["method"] is None
        assert "cannot read it" in str(by_name[name]["error"])
        assert "Permission denied" in str(by_name[name]["error"])
    line = next(line for line in table.splitlines() if line.startswith("secret.lock"))
    assert line.split()[1] == "?" and "(cannot read it" in line


@pytest.mark.privileged
def test_a_stale_lock_kept_in_a_sticky_directory_says_why() -> None:
    from perlcompat.tools import locks_cli as _locks_cli

    require_root("another user's lock")
    with shared_directory() as base:
        base.chmod(0o1777)
        (base / "root.lock").mkdir()  # root's seed 003 lock, an hour old
        os.utime(base / "root.lock", (time.time() - 3600, time.time() - 3600))
        rows = as_unprivileged(lambda: _locks_cli.survey(str(base), 180.0, break_stale=True))
        assert (base / "root.lock").is_dir()
    (row,) = rows  # type: ignore[misc]
    assert (row["name"], row["stale"], row["removed"]) == ("root.lock", True, False)
    assert "sticky directory" in row["reason"] and "uid 0" in row["reason"]


def _age(path: Path, seconds: float = 3600) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


def test_a_scan_breaks_only_entries_proven_to_be_locks(tmp_path: Path) -> None:
    # An application's directory: empty directories it needs, dated links, an empty
    # X.locked; all old.  None is a lock's, so a scan must keep every one of them.
    for name in ("uploads", "cache", "tmp", "snapshots"):
        (tmp_path / name).mkdir()
    (tmp_path / "latest").symlink_to("20231101")
    (tmp_path / "backup.lock").symlink_to("20231101")  # a lock name, but no pid can be that
    (tmp_path / "draft.locked").write_bytes(b"")
    # and real stale locks: seed 003's Perl lock dir, seed 000's link of an exited Perl
    (tmp_path / "lockdir").mkdir()
    perl = subprocess.run(["perl", "-e", 'symlink($$, "perl_sym.lock") or die'], cwd=tmp_path)
    assert perl.returncode == 0
    for entry in tmp_path.iterdir():
        _age(entry)
    rows = listed(tmp_path, "--break-stale", "--stale", "1")
    kept = {"uploads", "cache", "tmp", "snapshots", "latest", "backup.lock", "draft"}
    assert {name for name, row in rows.items() if row["removed"]} == {"lockdir", "perl_sym.lock"}
    for name in kept:
        assert rows[name]["removed"] is False
        assert "not proven to be a lock" in str(rows[name]["reason"]), rows[name]
    left = {entry.name for entry in tmp_path.iterdir()}
    assert left == kept - {"draft"} | {"draft.locked"}
    assert os.readlink(tmp_path / "latest") == "20231101"


def test_a_scan_breaks_a_perlcompat_mkdir_lock_by_its_owner_record(tmp_path: Path) -> None:
    dead = hold(tmp_path, "uploads", "mkdir")  # no lock name: the owner record proves it
    dead.kill()
    rows = listed(tmp_path, "--break-stale")
    assert rows["uploads"]["removed"] is True
    assert not (tmp_path / "uploads").exists()


def test_lock_option_breaks_the_named_path_under_lock_rules(tmp_path: Path) -> None:
    (tmp_path / "uploads").mkdir()
    (tmp_path / "draft.locked").write_bytes(b"")
    (tmp_path / "data.txt").write_text("not a lock\n")
    for entry in tmp_path.iterdir():
        _age(entry)
    # a rename lock's age is its marker's ctime, which utime cannot set back
    while time.time() - (tmp_path / "draft.locked").stat().st_ctime <= 1.2:
        time.sleep(0.05)
    for name in ("uploads", "draft.locked"):
        result = locks(str(tmp_path / name), "--lock", "--json", "--break-stale", "--stale", "1")
        assert result.returncode == 0, result.stderr
        (row,) = json.loads(result.stdout)["locks"]
        assert row["removed"] is True, row
    assert not (tmp_path / "uploads").exists()
    assert not (tmp_path / "draft.locked").exists()
    # a file nobody flocks is no lock held; a directory with entries no lock at all
    result = locks(str(tmp_path / "data.txt"), "--lock", "--json", "--break-stale")
    assert json.loads(result.stdout)["locks"] == []
    assert (tmp_path / "data.txt").read_text() == "not a lock\n"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "data.txt").write_text("kept\n")
    result = locks(str(tmp_path / "full"), "--lock", "--json", "--break-stale")
    (row,) = json.loads(result.stdout)["locks"]
    assert (row["method"], row["removed"]) == (None, False)
    assert "not a lock" in row["error"]
    assert (tmp_path / "full" / "data.txt").read_text() == "kept\n"
