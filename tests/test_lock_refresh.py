"""``Lock.refresh()`` and ``auto_refresh=``: a live holder stays young for every age rule.

A Perl sub breaks a lock by its age as perlcompat does: the mkdir lock sub's
``if (-M $dir > $stale/86400) { rmdir }``, an O_EXCL file's ``(stat $f)[9] <
time - $stale``, a symlink's ``(lstat $f)[9]``.  A refreshed lock must look
young to all of them, and an unrefreshed one old (so the test would see a
refresh that touched nothing).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from perlutil import Child, run_perl, run_python
from redis_server import RedisServer

from perlcompat import ExpiredLockError, Lock, LockTimeout, NotLockedError

#: one try of each Perl sub with a 1-second age rule: "took" or "busy".
PERL_TRY = {
    "mkdir": r"""
my ($dir, $stale) = @ARGV;
rmdir($dir) if -d $dir && -M $dir > $stale / 86400;
if (mkdir($dir, 0755)) { rmdir($dir); print "took\n" } else { print "busy\n" }
""",
    "excl": r"""
use Fcntl;
my ($f, $stale) = @ARGV;
my @st = stat($f);
unlink($f) if @st && $st[9] < time - $stale;
if (sysopen(L, $f, O_CREAT | O_EXCL | O_WRONLY)) { close(L); unlink($f); print "took\n" }
else { print "busy\n" }
""",
    "symlink": r"""
my ($f, $stale) = @ARGV;
my @st = lstat($f);
unlink($f) if @st && $st[9] < time - $stale;
if (symlink($$, $f)) { unlink($f); print "took\n" } else { print "busy\n" }
""",
}
PERL_STALE = 1


def perl_try(method: str, path: Path) -> str:
    done = run_perl(PERL_TRY[method], str(path), str(PERL_STALE))
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().strip()


def wait_until_old(paths: list[Path]) -> None:
    """Until each lock's whole-second mtime is old for a 1-second Perl age rule (``-M``)."""
    newest = max(int(os.lstat(p).st_mtime) for p in paths)
    while time.time() < newest + PERL_STALE + 1.05:
        time.sleep(0.05)  # the age rule needs time to pass: there is no event to wait on


def test_perl_age_rules_never_take_a_refreshed_lock(tmp_path: Path) -> None:
    """Refreshed past the Perl subs' age rule: busy for them; left alone: they break it."""
    methods = list(PERL_TRY)
    locks = {m: Lock(str(tmp_path / m), method=m).acquire() for m in methods}
    paths = [tmp_path / m for m in methods]
    wait_until_old(paths)
    for m in methods:
        locks[m].refresh()
        assert perl_try(m, tmp_path / m) == "busy", m
        assert locks[m].is_locked
    wait_until_old(paths)  # now not refreshed again
    for m in methods:
        assert perl_try(m, tmp_path / m) == "took", m
        with pytest.raises(ExpiredLockError):
            locks[m].release()  # the Perl sub broke it: the holder learns at release


@pytest.mark.parametrize("method", ["mkdir", "symlink", "rename", "excl", "toplock", "link"])
def test_refresh_resets_perlcompat_age_and_keeps_ownership(method: str, tmp_path: Path) -> None:
    path = tmp_path / "lk"
    lk = Lock(str(path), method=method, stale=5)
    with lk:
        first = lk.backend.describe()
        assert first is not None and first["pid"] in (os.getpid(), None)
        lk._since -= 10  # held past stale, as far as the release is concerned
        lk.refresh()
        again = lk.backend.describe()
        assert again is not None and again["age"] < 1.5
        assert again["alive"] in (True, None)
    assert lk.backend.describe() is None  # released normally: no ExpiredLockError


def test_mkdir_refresh_keeps_the_record_naming_the_directory(tmp_path: Path) -> None:
    """The record names the directory by its mtime too: a refresh rewrites it, so the owner
    stays known (not judged by age only)."""
    path = tmp_path / "lk"
    with Lock(str(path)) as lk:
        os.utime(path, (time.time() - 50, time.time() - 50))
        lk.refresh()
        info = lk.backend.describe()
        assert info is not None and info["pid"] == os.getpid() and info["alive"] is True
        assert info["age"] < 1.5


def test_refresh_never_touches_a_lock_no_longer_ours(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    held = Lock(str(path), method="excl", stale=0.2).acquire()
    thief = Child.python(
        "import sys\nfrom perlcompat import Lock\n"
        "lk = Lock(sys.argv[1], method='excl', stale=0.2, timeout=10).acquire()\n"
        "print('locked', flush=True)\nsys.stdin.readline()\nlk.release()\n",
        str(path),
    )
    try:
        thief.expect("locked")  # it broke ours (older than 0.2 s) and made its own
        old = os.utime(path, (1_000_000_000, 1_000_000_000)) or os.lstat(path)
        with pytest.raises(ExpiredLockError, match="not refreshed"):
            held.refresh()
        assert os.lstat(path).st_mtime_ns == old.st_mtime_ns  # the thief's lock: untouched
        with pytest.raises(ExpiredLockError):
            held.release()
    finally:
        thief.send("go")
        thief.wait()
    with pytest.raises(NotLockedError):
        held.refresh()


def test_auto_refresh_bounds(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="shorter than stale"):
        Lock(str(tmp_path / "lk"), stale=10, auto_refresh=10)
    with pytest.raises(ValueError, match="auto_refresh"):
        Lock(str(tmp_path / "lk"), auto_refresh=0)


#: a waiter with a 1 s stale: "took" if it got the lock within 2.5 s, else "busy".
WAITER = """
import sys
from perlcompat import Lock, LockTimeout
try:
    Lock(sys.argv[1], method=sys.argv[2], stale=1.0, timeout=2.5).acquire().release()
    print("took")
except LockTimeout:
    print("busy")
"""

ALL_METHODS = ["mkdir", "symlink", "rename", "excl", "toplock", "flock"]


def test_auto_refresh_keeps_a_live_holder_for_every_method(tmp_path: Path) -> None:
    """With ``auto_refresh``, waiters whose stale is 1 s never break a lock held 2.5 s;
    without it they do (flock never goes stale: only in the first half)."""
    for refresh, methods, wanted in [
        (0.2, ALL_METHODS, "busy"),
        (None, [m for m in ALL_METHODS if m != "flock"], "took"),
    ]:
        locks = [
            Lock(str(tmp_path / m), method=m, stale=1.0, auto_refresh=refresh).acquire()
            for m in methods
        ]
        waiters = [Child.python(WAITER, str(tmp_path / m), m) for m in methods]
        try:
            results = {m: w.readline() for m, w in zip(methods, waiters)}
        finally:
            for w in waiters:
                w.kill()
        assert results == dict.fromkeys(methods, wanted)
        for lk in locks:
            if wanted == "busy":
                lk.release()  # refreshed: still ours, no ExpiredLockError
                assert lk._stop is None
            else:
                with pytest.raises(ExpiredLockError):
                    lk.release()


def test_auto_refresh_thread_stops_at_release(tmp_path: Path) -> None:
    import threading

    lk = Lock(str(tmp_path / "lk"), stale=5, auto_refresh=0.05)
    before = threading.active_count()
    with lk:
        assert threading.active_count() == before + 1
        stop = lk._stop
    assert stop is not None and stop.is_set()
    for thread in threading.enumerate():
        if thread.name.startswith("perlcompat auto_refresh"):
            thread.join(5)
    assert threading.active_count() == before


def test_auto_refresh_does_not_keep_its_process_alive(tmp_path: Path) -> None:
    """The refresh thread is a daemon: a script that ends holding the lock exits at once,
    and its exit hook releases the lock (the thread refreshes nothing after that)."""
    path = tmp_path / "lk"
    started = time.monotonic()
    done = run_python(
        "import sys\nfrom perlcompat import Lock\n"
        "Lock(sys.argv[1], stale=60, auto_refresh=30).acquire()\n",
        str(path),
        timeout=20,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 15
    assert not path.exists()


def test_redis_refresh_extends_the_lease(tmp_path: Path) -> None:
    """``refresh()`` and ``auto_refresh`` renew a Redis lease as ``extend()`` does."""
    srv = RedisServer(str(tmp_path / "redis")).start()
    try:
        srv.declare_empty()
        url = srv.url + "?max_lease=5"
        with Lock("job", url=url, stale=1.0, auto_refresh=0.2):
            import concurrent.futures

            def contend() -> str:  # another thread waits as another process would
                try:
                    Lock("job", url=url, stale=1.0).acquire(timeout=1.5).release()
                except LockTimeout:
                    return "busy"
                return "took"

            started = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                assert pool.submit(contend).result() == "busy"  # past its 1 s lease, still ours
            assert time.monotonic() - started >= 1.5
        lk = Lock("job", url=url, stale=1.0).acquire()
        with srv.client() as client:
            client.delete("perlcompat:lock:job")  # the lease lost
        with pytest.raises(ExpiredLockError, match="not refreshed"):
            lk.refresh()
        with pytest.raises(ExpiredLockError):
            lk.release()
    finally:
        srv.stop()


@pytest.mark.parametrize(
    ("method", "keywords", "artefact"),
    [
        ("excl", {"record": "{pid}\n{host}\n{expires}\n"}, "content"),
        ("symlink", {"target": "."}, "target"),
        ("symlink", {"target": "/{pid}"}, "target"),
        ("mkdir", {"pidfile": "pid", "record": "{pid} {time}\n"}, "pidfile"),
        ("link", {"record": "{host} {pid} {time} {rand}\n"}, "content"),
    ],
)
def test_refresh_keeps_the_declared_perl_format(
    tmp_path: Path, method: str, keywords: dict[str, str], artefact: str
) -> None:
    # A refresh re-signs in the format the Perl side reads (not perlcompat's own record),
    # with its time fields renewed: an Apache::Session-style expiry moves on.
    path = tmp_path / "job.lock"
    lk = Lock(str(path), method=method, stale=30, **keywords)  # type: ignore[arg-type]
    lk.acquire()

    def seen() -> str:
        if artefact == "target":
            return os.readlink(path)
        if artefact == "pidfile":
            return (path / "pid").read_text()
        return path.read_text()

    before, made = seen(), os.lstat(path).st_mtime
    time.sleep(1.1)  # the clock's next second, so {time}/{expires} render anew
    lk.refresh()
    after = seen()
    assert os.lstat(path).st_mtime > made
    assert "perlcompat" not in after
    assert str(os.getpid()) in after or after == "."
    fields = keywords.get("record", "").split()
    for field in ("{expires}", "{time}"):  # renewed where the template has them
        if field in fields:
            at = fields.index(field)
            assert int(after.split()[at]) > int(before.split()[at])
    if keywords.get("target") == ".":
        assert after == "."
    lk.release()
    assert not os.path.lexists(path)


@pytest.mark.parametrize(
    ("held", "as_data"),
    [("data.lock", True), ("lock{time}_{pid}", False), ("data{time}_{pid}", True)],
)
def test_refresh_of_a_renamed_data_file_never_writes_into_it(
    tmp_path: Path, held: str, as_data: bool
) -> None:
    # data=True: the lock is the data file itself; a refresh sets its times (a per-holder
    # held name: renames it to the name rendered now), never writes a byte into it.
    data = tmp_path / "data.txt"
    data.write_bytes(b"41\n")
    keywords = {"data": True} if as_data else {}
    name = str(data if keywords else tmp_path / "lock")
    if not keywords:
        (tmp_path / "lock").write_bytes(b"")
    lk = Lock(name, method="rename", held=held, stale=30, **keywords)  # type: ignore[arg-type]
    lk.acquire()
    taken = Path(lk.backend.held_path)  # type: ignore[attr-defined]
    before, made = taken.read_bytes(), taken.stat().st_ctime_ns
    time.sleep(0.05)
    lk.refresh()
    taken = Path(lk.backend.held_path)  # type: ignore[attr-defined]
    assert taken.read_bytes() == before
    assert taken.stat().st_ctime_ns > made
    lk.release()
    assert (data if keywords else tmp_path / "lock").read_bytes() == before


def test_auto_refresh_refuses_a_data_file_under_a_held_template(tmp_path: Path) -> None:
    """A refresh renames a per-holder held name; the data file must not move under the port."""
    data = tmp_path / "data.txt"
    data.write_bytes(b"1\n")
    with pytest.raises(ValueError, match="data=True and a held= template"):
        Lock(str(data), method="rename", data=True, held="data{time}", auto_refresh=1)
    Lock(str(data), method="rename", data=True, held="data.lock", auto_refresh=1)  # fine


#: the "mkdir + pid file inside" recipe with an age rule on its pid file (argv: dir, stale).
PERL_PIDFILE_TRY = r"""
my ($dir, $stale) = @ARGV;
if (-e "$dir/pid" && -M "$dir/pid" > $stale / 86400) { unlink("$dir/pid"); rmdir($dir); }
if (mkdir($dir, 0755)) { rmdir($dir); print "took\n" } else { print "busy\n" }
"""


def test_refresh_makes_an_unchanged_pid_file_young_too(tmp_path: Path) -> None:
    """``pidfile=`` with the default ``{pid}`` record: the content stays, its mtime is renewed,
    so a Perl rule on the pid file's age (``-M "$dir/pid"``) never breaks a refreshed lock."""
    path = tmp_path / "lk"
    lk = Lock(str(path), pidfile="pid").acquire()
    wait_until_old([path / "pid"])
    lk.refresh()
    assert (path / "pid").read_text() == f"{os.getpid()}\n"
    done = run_perl(PERL_PIDFILE_TRY, str(path), str(PERL_STALE))
    assert done.stdout.decode().strip() == "busy", done.stderr
    lk.release()
    assert not path.exists()
