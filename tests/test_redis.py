"""Redis locks (``url=``) against a real ``redis-server`` started on a free loopback port.

Concurrency tests run real processes (Python and Perl) that increment a counter
file under the lock and create an O_EXCL marker inside the critical section, so
two holders at once fail loudly.  Synchronisation is by pipes and by the server
itself, never by sleeping.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis_server import RedisServer, free_port

from perlcompat import (
    OS_ERROR,
    ExpiredLockError,
    Lock,
    LockError,
    lock,
    unlock,
)
from perlcompat.locks.methods import redis as redis_lock

REPO = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
PERL = "/usr/bin/perl" if os.path.exists("/usr/bin/perl") else "perl"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    srv = RedisServer(str(tmp_path_factory.mktemp("redis"))).start()
    srv.declare_empty()
    yield srv
    srv.stop()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A server of this test's own, for restarts and kills."""
    srv = RedisServer(str(tmp_path / "redis")).start()
    srv.declare_empty()
    yield srv
    srv.stop()


@pytest.fixture
def name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def key_of(name: str) -> str:
    return redis_lock.KEY_PREFIX + name


def fence_of(name: str) -> str:
    return redis_lock.FENCE_PREFIX + name


# -- import cost and configuration -------------------------------------------
def test_redis_is_imported_only_for_a_redis_url(server: RedisServer) -> None:
    code = (
        "import sys, perlcompat\n"
        "perlcompat.Lock('x', method='mkdir', root=sys.argv[1])\n"
        "before = 'redis' in sys.modules\n"
        "perlcompat.Lock('x', url=sys.argv[2])\n"
        "print(before, 'redis' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO), server.url],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:6379/0", "is not a Redis URL"),
        ("127.0.0.1:6379", "is not a Redis URL"),
        ("redis://127.0.0.1:notaport/0", "is malformed"),
        ("redis://user:s3cret@127.0.0.1:70000/0", "is malformed"),
        ("redis://127.0.0.1:6379/zero", "must be a database number"),
        ("unix://", "names no socket path"),
        ("redis://127.0.0.1:6379/0?no_such_option=1", "is not usable"),
    ],
)
def test_bad_url_is_a_clear_error_not_a_silent_fallback(url: str, says: str, name: str) -> None:
    with pytest.raises(ValueError, match=says) as info:
        lock(name, url=url)
    message = str(info.value)
    assert "s3cret" not in message
    assert "lock url" in message and "redis://host:6379/0" in message


def test_url_must_be_text(name: str) -> None:
    with pytest.raises(TypeError, match="must be a str"):
        Lock(name, url=b"redis://127.0.0.1/0")  # type: ignore[arg-type]


def test_shared_locks_are_refused(server: RedisServer, name: str) -> None:
    with pytest.raises(ValueError, match="cannot take shared locks"):
        Lock(name, url=server.url, shared=True)


def test_environment_variable_switches_a_script_to_redis(
    server: RedisServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERLCOMPAT_LOCK_URL", server.url)
    with server.client() as client:
        assert lock(name) == 1
        assert Lock(name).method == "redis"
        assert client.exists(key_of(name)) == 1
        assert unlock(name) == 1
        assert client.exists(key_of(name)) == 0


# -- the basic contract ------------------------------------------------------
def test_lock_sets_a_key_with_owner_and_ttl_and_unlock_removes_it(
    server: RedisServer, name: str
) -> None:
    with server.client() as client:
        assert lock(name, url=server.url, stale=7) == 1
        assert int(OS_ERROR) == 0
        value = client.get(key_of(name)).decode()
        _nonce, pid, host, grant_ms = value.split(" ")
        assert grant_ms.isdigit()
        assert (int(pid), host) == (os.getpid(), socket.gethostname())
        assert 6000 < client.pttl(key_of(name)) <= 7000
        assert unlock(name, url=server.url) == 1
        assert client.exists(key_of(name)) == 0
        assert unlock(name, url=server.url) == 0
        assert OS_ERROR == errno.ENOLCK


def test_busy_lock_returns_0_after_its_patience_and_is_not_touched(
    server: RedisServer, name: str
) -> None:
    with server.client() as client:
        client.set(key_of(name), "someone else", px=60_000)
        started = time.monotonic()
        assert lock(name, url=server.url, retry=4, wait=0.05) == 0  # (4 - 1) * 0.05 s
        waited = time.monotonic() - started
        assert OS_ERROR == errno.EWOULDBLOCK
        assert 0.15 <= waited < 1.0
        assert client.get(key_of(name)) == b"someone else"
        assert client.pttl(key_of(name)) > 50_000


def test_same_thread_cannot_take_its_own_lock_twice(server: RedisServer, name: str) -> None:
    with Lock(name, url=server.url):
        assert lock(name, url=server.url, retry=0) == 0
        assert OS_ERROR == errno.EDEADLK


def test_fencing_token_grows_by_one_per_hold_and_is_none_when_free(
    server: RedisServer, name: str
) -> None:
    held = Lock(name, url=server.url)
    assert held.fencing_token is None
    tokens: list[int] = []
    for _ in range(5):
        with held:
            token = held.fencing_token
            assert isinstance(token, int)
            tokens.append(token)
        assert held.fencing_token is None
    assert tokens == list(range(tokens[0], tokens[0] + 5))
    with server.client() as client:
        assert int(client.get(fence_of(name))) == tokens[-1]


def test_release_never_deletes_a_successor_lock(server: RedisServer, name: str) -> None:
    first = Lock(name, url=server.url)
    second = Lock(name, url=server.url)
    first.acquire()
    taken, done = threading.Event(), threading.Event()

    def successor_thread() -> None:  # another thread: not a duplicate
        second.acquire()
        taken.set()
        done.wait(30)
        second.release()  # only the thread that took a lock releases it

    with server.client() as client:
        client.delete(key_of(name))  # as if first's lease had run out
        thread = threading.Thread(target=successor_thread)
        thread.start()
        assert taken.wait(30)
        successor = client.get(key_of(name))
        with pytest.raises(ExpiredLockError, match="broken or replaced"):
            first.release()
        assert client.get(key_of(name)) == successor
    assert second.fencing_token is not None
    done.set()
    thread.join()
    assert not second.is_locked


def test_lease_runs_out_on_the_server_and_release_reports_it(
    server: RedisServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_lock.RedisBackend, "WAIT_CAP", 3.0)
    asked = time.monotonic()  # before the grant: the lease ends no sooner than 0.6 s after
    assert lock(name, url=server.url, stale=0.6) == 1
    waiter = redis_lock.RedisBackend(name, stale=0.6, url=server.url)
    assert not waiter.try_acquire()  # the lease is still running
    waiter.wait_for_release(None)  # the server's TTL ends the wait, not WAIT_CAP
    woke = time.monotonic() - asked
    assert 0.55 <= woke < 1.5
    assert waiter.try_acquire()
    assert unlock(name, url=server.url) == 0
    assert OS_ERROR == errno.ETIMEDOUT
    assert waiter.release()


def test_extend_renews_the_lease_and_fails_once_it_was_lost(server: RedisServer, name: str) -> None:
    held = Lock(name, url=server.url, stale=2)
    held.acquire()
    backend = held.backend
    assert isinstance(backend, redis_lock.RedisBackend)
    with server.client() as client:
        client.pexpire(key_of(name), 1000)  # about to run out (but not before extend() asks)
        assert backend.extend() is True
        assert 1500 < client.pttl(key_of(name)) <= 2000
        assert backend.extend(0.5) is True
        assert client.pttl(key_of(name)) <= 500
        with pytest.raises(ValueError, match="seconds <= stale"):
            backend.extend(3)
        client.delete(key_of(name))
        assert backend.extend() is False
    with pytest.raises(ExpiredLockError):
        held.release()


def test_describe_names_the_holder(server: RedisServer, name: str) -> None:
    held = Lock(name, url=server.url, stale=5)
    backend = held.backend
    assert backend.describe() is None
    with held:
        info = backend.describe()
        assert info is not None
        assert info["method"] == "redis" and info["path"] == name
        assert (info["pid"], info["host"], info["alive"]) == (
            os.getpid(),
            socket.gethostname(),
            True,
        )
        assert 0 <= info["age"] < 1
        assert 4 < info["expires_in"] <= 5
        assert info["fence"] == held.fencing_token
    with server.client() as client:
        client.set(key_of(name), "a foreign value", px=5000)
        info = backend.describe()
        assert info is not None and info["pid"] is None and info["alive"] is None
        client.delete(key_of(name))
    assert backend.break_stale() is False


def test_describe_judges_the_holder_as_the_file_locks_do(server: RedisServer, name: str) -> None:
    """A holder that exited unreaped (a zombie) is dead, as ``locks.owner`` judges a file
    lock's holder; a holder on another host is unknown."""
    backend = Lock(name, url=server.url, stale=5).backend
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
        os.kill(child.pid, 0)  # a zombie: kill(pid, 0) still succeeds
        host = socket.gethostname()
        with server.client() as client:
            for holder, alive in ((host, False), ("another-host", None)):
                client.set(key_of(name), f"0123456789abcdef {child.pid} {holder} 1", px=5000)
                info = backend.describe()
                assert info is not None and (info["pid"], info["host"]) == (child.pid, holder)
                assert info["alive"] is alive
            client.delete(key_of(name))
    finally:
        child.wait()


def test_a_release_wakes_a_blocked_waiter_at_once(
    server: RedisServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_lock.RedisBackend, "WAIT_CAP", 5.0)
    holder = redis_lock.RedisBackend(name, stale=30, url=server.url)
    waiter = redis_lock.RedisBackend(name, stale=30, url=server.url)
    assert holder.try_acquire()
    assert not waiter.try_acquire()
    woke: list[float] = []

    def wait() -> None:
        waiter.wait_for_release()
        woke.append(time.monotonic())

    thread = threading.Thread(target=wait)
    thread.start()
    with server.client() as client:
        deadline = time.monotonic() + 5
        while not any(c["cmd"] == "blpop" for c in client.client_list()):
            assert time.monotonic() < deadline, "the waiter never blocked"
            time.sleep(0.002)
    released = time.monotonic()
    assert holder.release()
    thread.join()
    assert time.monotonic() - released < 1.0  # far below WAIT_CAP and the 30 s TTL
    assert woke and waiter.try_acquire()
    assert waiter.release()


# -- failures are loud -------------------------------------------------------
def test_connection_refused_returns_0_with_econnrefused(name: str) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    started = time.monotonic()
    assert lock(name, url=url) == 0
    assert OS_ERROR == errno.ECONNREFUSED
    assert str(OS_ERROR) == "Connection refused"
    assert time.monotonic() - started < 2  # an error, not five seconds of "busy"
    with pytest.raises(ConnectionRefusedError) as info:
        Lock(name, url=url).acquire()
    assert url in str(info.value) and repr(name) in str(info.value)


def test_missing_unix_socket_is_enoent(tmp_path: Path, name: str) -> None:
    url = f"unix://{tmp_path}/nothing.sock"
    assert lock(name, url=url) == 0
    assert OS_ERROR == errno.ENOENT
    with pytest.raises(FileNotFoundError, match=r"nothing\.sock"):
        Lock(name, url=url).acquire()


def test_unix_socket_url_works(tmp_path: Path, name: str) -> None:
    sock = tmp_path / "r.sock"
    srv = RedisServer(str(tmp_path / "redis"), "--unixsocket", str(sock)).start()
    try:
        srv.declare_empty()
        url = f"unix://{sock}?db=0"
        assert lock(name, url=url) == 1
        with srv.client() as client:
            assert client.exists(key_of(name)) == 1
        assert unlock(name, url=url) == 1
    finally:
        srv.stop()


def test_authentication_failures_are_eacces_and_hide_the_password(
    tmp_path: Path, name: str
) -> None:
    """Whatever the server answers first (NOAUTH, WRONGPASS, a protocol error), on any redis-py."""
    srv = RedisServer(str(tmp_path / "redis"), "--requirepass", "s3cret").start()
    try:
        with srv.client(password="s3cret") as client:
            client.set("perlcompat:epoch", 0)
            # may not run EVALSHA / may run the scripts but not SET inside them
            client.execute_command(
                "ACL", "SETUSER", "noeval", "on", ">pw", "~*", "+@all", "-evalsha"
            )
            client.execute_command("ACL", "SETUSER", "noset", "on", ">pw", "~*", "+@all", "-set")
        port = srv.port
        cases = [
            (f"redis://127.0.0.1:{port}/0", "requires credentials and the lock url gives none"),
            (f"redis://127.0.0.1:{port}/1", "requires credentials and the lock url gives none"),
            (f"redis://:wrong-pw@127.0.0.1:{port}/0", "refused the credentials in the lock url"),
            (f"redis://ghost:wrong-pw@127.0.0.1:{port}/0", "refused the credentials"),
            (f"redis://noeval:pw@127.0.0.1:{port}/0", "ACL refuses the lock url's user"),
            (f"redis://noset:pw@127.0.0.1:{port}/0", "ACL refuses the lock url's user"),
        ]
        for url, cause in cases:
            for _attempt in range(2):  # a fresh connection, then one from the pool
                assert lock(name, url=url) == 0, url
                assert OS_ERROR == errno.EACCES, (url, str(OS_ERROR))
            with pytest.raises(PermissionError) as info:
                Lock(name, url=url).acquire()
            message = str(info.value)
            assert cause in message and "wrong-pw" not in message and repr(name) in message
            assert redis_lock.redact(url) in message
            assert ("@" not in url) or "://***@127.0.0.1" in message
        right = f"redis://:s3cret@127.0.0.1:{port}/0"
        assert lock(name, url=right) == 1
        assert unlock(name, url=right) == 1
    finally:
        srv.stop()


def test_a_host_name_that_does_not_resolve_in_time_is_etimedout(
    server: RedisServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """getaddrinfo() has no timeout of its own: a stuck resolver must not outlast the patience."""
    release = threading.Event()
    real = socket.getaddrinfo

    def resolve(host: object, *args: Any, **kwargs: Any) -> Any:
        if host == "stuck.invalid":
            release.wait(20)  # a resolver that does not answer
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        if host == "nohost.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    try:
        url = f"redis://stuck.invalid:{server.port}/0"
        started = time.monotonic()
        assert lock(name, url=url, retry=2, wait=0.5) == 0
        assert OS_ERROR == errno.ETIMEDOUT
        assert time.monotonic() - started < 3  # patience 0.5 s: connect + read timeouts, 1 s
        with pytest.raises(TimeoutError, match=r"stuck\.invalid"):
            Lock(name, url=url, retry=2, wait=0.5).acquire()
        # a name that resolves goes the same way (a helper thread) and works
        # a name that does not resolve: $! is EINVAL as in Perl's IO::Socket, not -2
        assert lock(name, url=f"redis://nohost.invalid:{server.port}/0", retry=0) == 0
        assert OS_ERROR == errno.EINVAL
        local = f"redis://localhost:{server.port}/0"
        assert lock(name, url=local, retry=0) == 1
        assert unlock(name, url=local) == 1
    finally:
        release.set()


def test_server_down_while_held_release_is_an_error_naming_the_url(
    own_server: RedisServer, name: str
) -> None:
    assert lock(name, url=own_server.url) == 1
    own_server.stop()
    assert unlock(name, url=own_server.url) == 0
    assert OS_ERROR == errno.ECONNREFUSED
    held = Lock(name, url=own_server.url)
    own_server.start()
    own_server.declare_empty()
    assert unlock(name, url=own_server.url) == 0  # a failed unlock keeps the lock: again
    assert OS_ERROR == errno.ETIMEDOUT  # its lease went with the server's memory
    held.acquire()
    own_server.stop()
    with pytest.raises(ConnectionRefusedError, match=f"cannot release .*{own_server.url}"):
        held.release()


def test_restart_while_held_holds_off_new_grants_for_the_max_lease(
    own_server: RedisServer, name: str
) -> None:
    stale = 1.0
    url = own_server.url + "?max_lease=1"
    holder = Lock(name, url=url, stale=stale)
    holder.acquire()
    token_before = holder.fencing_token
    assert token_before is not None
    killed = time.monotonic()
    own_server.restart()  # empty memory: the lock key and the fence are gone
    contender = redis_lock.RedisBackend(name, stale=stale, url=url)
    with pytest.warns(RuntimeWarning, match="no record of its locks"):
        assert not contender.try_acquire()
    assert contender.held_off
    assert "no record of its locks" in contender.why_busy()
    assert holder.backend.extend() is False  # type: ignore[attr-defined]
    with pytest.raises(ExpiredLockError, match="broken or replaced"):
        holder.release()  # the holder learns it may have lost the lock
    assert lock(name, url=url, stale=stale, retry=0) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    other = Lock(name, url=url, stale=stale)
    other.acquire(timeout=5)
    granted = time.monotonic()
    assert granted - killed >= stale - 0.002
    assert granted - killed < stale + 1.0
    token_after = other.fencing_token
    assert token_after is not None and token_after > token_before
    other.release()


# -- many processes ------------------------------------------------------------
WORKER = r"""
import errno, os, sys, time
from perlcompat import Lock, lock, unlock, LockError, ExpiredLockError, OS_ERROR

url, name, counter, marker, n, style, fd, stale = sys.argv[1:9]
n, fd, stale = int(n), int(fd), float(stale)
print("ready", flush=True)
sys.stdin.read()  # parent closes stdin: go

def critical(token):
    try:
        mark = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        sys.stderr.write("TWO HOLDERS AT ONCE\n")
        os._exit(3)
    with open(counter, "r+") as f:
        count, last = (int(x) for x in f.read().split())
        if token is not None:
            if token <= last:
                sys.stderr.write(f"fencing token went backwards: {token} after {last}\n")
                os._exit(4)
            last = token
        f.seek(0)
        f.write(f"{count + 1} {last}\n")
        f.truncate()
    os.close(mark)
    os.unlink(marker)
    os.write(fd, b"+")

grants = []
done = 0
deadline = time.monotonic() + 150  # a loaded CI machine: 8 workers, a restart hold-off
if style == "perl":
    while done < n:
        if not lock(name, url=url, stale=stale, retry=100, wait=0.1):
            sys.exit(f"lock failed: {OS_ERROR}")
        critical(None)
        done += 1
        unlock(name, url=url) or sys.exit(f"unlock failed: {OS_ERROR}")
else:
    held = Lock(name, url=url, stale=stale, retry=20, wait=0.25)
    while done < n:
        assert time.monotonic() < deadline, "worker ran out of time"
        try:
            held.acquire()
        except LockError:
            continue
        except OSError as exc:
            os.write(fd, b"E")
            sys.stderr.write(f"acquire: {exc!r}\n")
            time.sleep(0.01)
            continue
        grants.append(time.monotonic())
        critical(held.fencing_token)
        done += 1
        try:
            held.release()
        except ExpiredLockError as exc:
            os.write(fd, b"X")
        except OSError as exc:
            os.write(fd, b"R")
print(" ".join(repr(g) for g in grants), flush=True)
"""

#: a Perl script sharing the lock: raw RESP over a socket, the same Lua scripts
PERL_WORKER = r"""
use strict; use warnings; use IO::Socket::INET; use Fcntl;
my ($port, $name, $counter, $marker, $n) = @ARGV;
my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or die "connect: $!";
sub cmd {
    my $req = "*" . scalar(@_) . "\r\n";
    $req .= '$' . length($_) . "\r\n$_\r\n" for @_;
    print $sock $req;
    return reply();
}
sub reply {
    my $line = <$sock>; $line =~ s/\r\n$//;
    my ($t, $rest) = (substr($line, 0, 1), substr($line, 1));
    return $rest if $t eq '+' or $t eq ':';
    die "redis: $rest" if $t eq '-';
    if ($t eq '$') {
        return undef if $rest < 0;
        read($sock, my $b, $rest + 2);
        return substr($b, 0, $rest);
    }
    if ($t eq '*') { return [map { reply() } 1 .. $rest] }
    die "bad reply $line";
}
my ($key, $fence, $waiting, $wake) = map { "perlcompat:$_:$name" } qw(lock fence waiting wake);
$| = 1; print "ready\n"; my $go = <STDIN>;
for (1 .. $n) {
    my $owner = sprintf("%08x%08x %d perl-%d", rand(2**32), rand(2**32), $$, $$);
    my $r;
    while (1) {
        $r = cmd("EVAL", $ENV{ACQUIRE}, 4, $key, $fence, "perlcompat:epoch", $waiting,
                 $owner, 30000, 2000, 180000);
        last if $r->[0] == 1;
        # no epoch, or one of another run of the server: record it (ARGV: max lease ms)
        cmd("EVAL", $ENV{START_EPOCH}, 1, "perlcompat:epoch", 180000)
            if $r->[0] == -1 or $r->[0] == -4;
        select(undef, undef, undef, 0.001);
    }
    my $value = "$owner $r->[1]";
    sysopen(my $m, $marker, O_CREAT | O_EXCL | O_WRONLY)
        or do { print STDERR "TWO HOLDERS AT ONCE\n"; exit 3 };
    open(my $fh, "+<", $counter) or die "counter: $!";
    my ($count, $last) = split ' ', scalar <$fh>;
    if ($r->[2] <= $last) { print STDERR "fence went backwards\n"; exit 4 }
    seek($fh, 0, 0); print $fh $count + 1, " ", $r->[2], "\n"; truncate($fh, tell($fh)); close($fh);
    close($m); unlink($marker);
    cmd("EVAL", $ENV{RELEASE}, 3, $key, $waiting, $wake, $value, 2000) == 1
        or die "release: lock was not ours";
}
print "\n";
"""


def start_workers(
    server: RedisServer,
    name: str,
    tmp_path: Path,
    styles: list[str],
    n: int,
    stale: float,
    progress_fd: int,
    url: str | None = None,
) -> list[subprocess.Popen[str]]:
    counter = tmp_path / "counter"
    counter.write_text("0 0\n")
    marker = str(tmp_path / "marker")
    procs = []
    for style in styles:
        if style == "perl5":
            argv = [PERL, "-e", PERL_WORKER, str(server.port), name, str(counter), marker, str(n)]
            env = dict(ENV, ACQUIRE=redis_lock.ACQUIRE, RELEASE=redis_lock.RELEASE)
            env.update(START_EPOCH=redis_lock.START_EPOCH)
            fds: tuple[int, ...] = ()
        else:
            argv = [sys.executable, "-c", WORKER, url or server.url, name, str(counter), marker]
            argv += [str(n), style, str(progress_fd), str(stale)]
            env = ENV
            fds = (progress_fd,)
        procs.append(
            subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                pass_fds=fds,
            )
        )
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()  # go, all at once
        proc.stdin = None
    return procs


def finish(procs: list[subprocess.Popen[str]]) -> list[str]:
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        outputs.append(out)
    return outputs


def test_eight_processes_count_exactly_under_the_lock(
    server: RedisServer, name: str, tmp_path: Path
) -> None:
    read_end, write_end = os.pipe()
    styles = ["with", "perl", "with", "perl", "with", "perl", "perl5", "perl5"]
    procs = start_workers(server, name, tmp_path, styles, 200, 30.0, write_end)
    os.close(write_end)
    finish(procs)
    os.close(read_end)
    count, last_token = (int(x) for x in (tmp_path / "counter").read_text().split())
    assert count == 8 * 200
    with server.client() as client:
        assert int(client.get(fence_of(name))) >= last_token > 0
        assert client.exists(key_of(name)) == 0


def test_holder_killed_with_sigkill_frees_after_its_ttl_not_before(
    server: RedisServer, name: str
) -> None:
    stale = 1.0
    code = (
        "import sys, time\nfrom perlcompat import Lock\n"
        "held = Lock(sys.argv[1], url=sys.argv[2], stale=float(sys.argv[3]))  # imports redis\n"
        "before = time.monotonic()\n"
        "held.acquire()\n"
        "print(repr(before), flush=True)\nsys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, name, server.url, str(stale)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert holder.stdout is not None
    before = float(holder.stdout.readline())
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert lock(name, url=server.url, stale=stale, retry=0) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    assert lock(name, url=server.url, stale=stale, retry=100, wait=0.05) == 1
    freed = time.monotonic() - before
    assert stale - 0.002 <= freed < stale + 0.5
    assert unlock(name, url=server.url) == 1


def read_until(fd: int, wanted: bytes, count: int, timeout: float = 30) -> bytes:
    """Read from *fd* until *wanted* has been seen *count* times; return what was read."""
    seen = b""
    deadline = time.monotonic() + timeout
    while seen.count(wanted) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"waited for {count} x {wanted!r}, saw {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, f"pipe closed after {seen!r}"
            seen += chunk
    return seen


def test_server_restart_mid_run_never_lets_two_hold_at_once(
    own_server: RedisServer, name: str, tmp_path: Path
) -> None:
    # The hold-off after the restart lasts max_lease from the server's start.  This
    # test's own hold ends (its marker goes) while the server is down, so the workers'
    # marker check never depends on how soon this process runs again; that no grant
    # comes inside the hold-off is checked on the grant times.
    stale, n = 5.0, 60
    url = own_server.url + "?max_lease=5"
    read_end, write_end = os.pipe()
    procs = start_workers(own_server, name, tmp_path, ["with"] * 8, n, stale, write_end, url)
    os.close(write_end)
    seen = read_until(read_end, b"+", 200)
    # This test's process takes the lock and is inside its critical section
    # (marker present) while the server restarts with empty memory.
    ours = Lock(name, url=url, stale=stale, retry=None)
    ours.acquire()
    marker = os.open(tmp_path / "marker", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    killed = time.monotonic()
    own_server.stop()
    seen += read_until(read_end, b"E", 1)  # the workers see the server gone
    os.close(marker)
    os.unlink(tmp_path / "marker")
    before_start = time.monotonic()
    own_server.start()  # same port, no locks, no epoch
    probe = Lock(name, url=url, stale=stale)
    try:
        probe.acquire(timeout=0.5)
    except LockError:
        pass  # still held off
    else:  # only possible once a whole max_lease has passed since the server started
        probe.release()
        assert time.monotonic() - before_start >= stale - 0.002, "granted inside the hold-off"
    with pytest.raises(ExpiredLockError):
        ours.release()  # we learn the lock may have been lost
    outputs = finish(procs)
    while chunk := os.read(read_end, 4096):
        seen += chunk
    os.close(read_end)
    count, _ = (int(x) for x in (tmp_path / "counter").read_text().split())
    assert count == 8 * n == seen.count(b"+")
    assert b"E" in seen
    grants = sorted(float(g) for out in outputs for g in out.split())
    after = [g for g in grants if g > killed]
    assert after, "no worker got the lock after the restart"
    assert after[0] - killed >= stale - 0.002  # held off for the full lease


@pytest.mark.parametrize("style", ["with", "perl"])
def test_no_redis_process_leaks_a_key(server: RedisServer, name: str, style: str) -> None:
    with server.client() as client:
        if style == "with":
            with Lock(name, url=server.url):
                pass
        else:
            assert lock(name, url=server.url) == 1
            assert unlock(name, url=server.url) == 1
        assert client.exists(key_of(name)) == 0
        assert client.ttl(fence_of(name)) == -1  # the counter is kept for ever


def test_wait_for_release_gives_up_with_the_timeout(
    server: RedisServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_lock.RedisBackend, "WAIT_CAP", 5.0)
    holder = redis_lock.RedisBackend(name, stale=30, url=server.url)
    waiter = redis_lock.RedisBackend(name, stale=30, url=server.url)
    assert holder.try_acquire() and not waiter.try_acquire()
    started = time.monotonic()
    waiter.wait_for_release(0.2)
    assert 0.19 <= time.monotonic() - started < 1.0
    assert holder.release()


def test_redis_py_errors_map_to_errnos() -> None:
    rx = redis.exceptions
    cases = [
        (rx.AuthenticationError("WRONGPASS"), errno.EACCES),
        (rx.NoPermissionError("NOPERM"), errno.EACCES),
        (rx.BusyLoadingError("LOADING"), errno.EAGAIN),
        (rx.TimeoutError("Timeout reading"), errno.ETIMEDOUT),
        (rx.ConnectionError("Connection closed by server."), errno.ECONNRESET),
        (rx.ReadOnlyError("READONLY"), errno.EROFS),
        (rx.ResponseError("ERR something"), errno.EIO),
        # what older redis-py (4.2) leaves as plain error replies
        (rx.ResponseError("WRONGPASS invalid username-password pair"), errno.EACCES),
        (rx.ResponseError("NOAUTH Authentication required."), errno.EACCES),
        (rx.ResponseError("NOPERM this user has no permissions to run 'x'"), errno.EACCES),
        (rx.ResponseError("Protocol error: unauthenticated multibulk length"), errno.EACCES),
        (rx.ResponseError("The user executing the script can't run this command"), errno.EACCES),
        (rx.ResponseError("OOM command not allowed when used memory > 'maxmemory'."), errno.ENOMEM),
        (rx.ResponseError("LOADING Redis is loading the dataset in memory"), errno.EAGAIN),
        (rx.ResponseError("READONLY You can't write against a read only replica."), errno.EROFS),
    ]
    if hasattr(rx, "OutOfMemoryError"):  # not in redis-py 4.2
        cases.append((rx.OutOfMemoryError("OOM"), errno.ENOMEM))
    for exc, number in cases:
        assert redis_lock.url._errno_of(exc) == number, exc
    try:
        try:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
        except OSError:
            raise rx.ConnectionError("Error 111 connecting") from None
    except rx.ConnectionError as exc:
        chained = exc
    chained.__context__ = ConnectionRefusedError(errno.ECONNREFUSED, "refused")
    assert redis_lock.url._errno_of(chained) == errno.ECONNREFUSED


def test_held_off_warning_is_given_once_per_restart(own_server: RedisServer, name: str) -> None:
    with own_server.client() as client:
        client.delete("perlcompat:epoch")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert lock(name, url=own_server.url, stale=5, retry=0) == 0
        assert lock(name, url=own_server.url, stale=5, retry=0) == 0
    assert len([w for w in caught if "no record of its locks" in str(w.message)]) == 1
    own_server.declare_empty()
    assert lock(name, url=own_server.url, stale=5) == 1
    assert unlock(name, url=own_server.url) == 1


def uptime_of(srv: RedisServer) -> int:
    with srv.client() as client:
        return int(client.info("server")["uptime_in_seconds"])


@pytest.mark.parametrize("user", ["default", "no INFO"])
def test_hold_off_after_a_lost_epoch_counts_from_the_server_start(
    own_server: RedisServer, name: str, user: str
) -> None:
    url = own_server.url + "?max_lease=5"
    with own_server.client() as client:
        client.delete("perlcompat:epoch")
        if user == "no INFO":  # the server's start is unknown: held off from now
            client.execute_command("ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "+@all", "-info")
            url = url.replace("redis://", "redis://noinfo:pw@")
        run_id = client.info("server")["run_id"]
    before = uptime_of(own_server)
    backend = redis_lock.RedisBackend(name, stale=2, url=url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not backend.try_acquire()
    after = uptime_of(own_server)
    assert backend.held_off  # the max lease (5 s), not this client's stale (2 s)
    busy = backend._busy_ms
    assert busy is not None
    if user == "no INFO":
        assert 4900 < busy <= 5000
    else:  # from the server's start, its uptime counted 1 s short
        assert 5000 - after * 1000 - 100 < busy <= 5000 - max(before - 1, 0) * 1000
    with own_server.client() as client:
        epoch = client.get("perlcompat:epoch").decode().split()
    assert epoch[1:] == (["5000"] if user == "no INFO" else ["5000", run_id])


# -- lock names never collide with another lock's internal keys ----------------
def test_every_key_belongs_to_one_lock_and_kind() -> None:
    names = ["q", "q:wake", "q:fence", "q:waiting", "wake:q", "lock:q", "fence:q", "epoch", ""]
    keys = {redis_lock.EPOCH_KEY}
    for name in names:
        backend = redis_lock.RedisBackend(name or "x", stale=1, url="redis://127.0.0.1:1/0")
        keys |= {backend.key, backend._fence_key, backend._waiting_key, backend._wake_key}
    assert len(keys) == 4 * len(names) + 1


#: holds lock argv[2] until stdin closes; prints its release result and $!
NAMED_HOLDER = r"""
import os, sys
from perlcompat import lock, unlock, OS_ERROR
url, name, marker = sys.argv[1:4]
got = lock(name, url=url, stale=30, retry=200, wait=0.05)
if not got:
    sys.exit(f"lock {name}: {OS_ERROR}")
try:
    mark = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
except FileExistsError:
    sys.exit("TWO HOLDERS AT ONCE")
print("held", flush=True)
sys.stdin.read()
os.close(mark)
os.unlink(marker)
print(unlock(name, url=url), int(OS_ERROR), flush=True)
"""


@pytest.mark.parametrize("suffix", ["wake", "fence", "waiting"])
def test_a_lock_named_like_an_internal_key_is_its_own_lock(
    own_server: RedisServer, name: str, tmp_path: Path, suffix: str
) -> None:
    """Lock "q:wake" is not lock "q"'s wake-up list (nor "q:fence" its counter ...)."""
    other = f"{name}:{suffix}"

    def holder(lock_name: str, marker: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", NAMED_HOLDER, own_server.url, lock_name, marker],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        assert proc.stdout is not None
        return proc

    def output(proc: subprocess.Popen[str]) -> str:
        """Let *proc* release its lock (close its stdin) and return what it printed."""
        assert proc.stdin is not None
        proc.stdin.close()
        proc.stdin = None
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        return out

    first = holder(other, str(tmp_path / "other"))  # holds "q:wake" throughout
    assert first.stdout is not None and first.stdout.readline() == "held\n", first.stderr
    second = holder(name, str(tmp_path / "q"))  # holds "q"
    assert second.stdout is not None and second.stdout.readline() == "held\n", second.stderr
    waiter = holder(name, str(tmp_path / "q"))  # waits for "q": marks it waited for
    with own_server.client() as client:
        deadline = time.monotonic() + 30
        while not any(c["cmd"] == "blpop" for c in client.client_list()):
            assert time.monotonic() < deadline, "the waiter never blocked"
            time.sleep(0.002)
    # "q" is released while the waiter waits: a wake-up is pushed
    assert output(second).split() == ["1", "0"]
    assert waiter.stdout is not None and waiter.stdout.readline() == "held\n", waiter.stderr
    assert output(waiter).split() == ["1", "0"]
    # "q:wake" is still held by the first process: nobody else gets it
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom perlcompat import lock, OS_ERROR\n"
            "print(lock(sys.argv[2], url=sys.argv[1], stale=30, retry=2, wait=0.1), int(OS_ERROR))",
            own_server.url,
            other,
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert probe.stdout.split() == ["0", str(errno.EWOULDBLOCK)], probe.stderr
    assert output(first).split() == ["1", "0"]  # its lock was intact to the end


def test_a_perl_script_records_the_epoch_itself(
    own_server: RedisServer, name: str, tmp_path: Path
) -> None:
    """The epoch names no server (SET perlcompat:epoch 0): the Perl script runs START_EPOCH."""
    procs = start_workers(own_server, name, tmp_path, ["perl5"], 3, 30.0, -1)
    finish(procs)
    assert (tmp_path / "counter").read_text().split()[0] == "3"
    with own_server.client() as client:
        run_id = client.info("server")["run_id"]
        assert client.get("perlcompat:epoch").decode().split() == ["0", "180000", run_id]


def test_a_foreign_key_without_ttl_is_busy_and_does_not_spin(
    server: RedisServer, name: str
) -> None:
    waiter = redis_lock.RedisBackend(name, stale=30, url=server.url)
    with server.client() as client:
        client.set(key_of(name), "set by hand")
        assert not waiter.try_acquire()
        assert "without an expiry" in waiter.why_busy()
        started = time.monotonic()
        waiter.wait_for_release(0.3)  # blocks for the timeout, not a hot loop
        assert time.monotonic() - started >= 0.29
        assert client.get(key_of(name)) == b"set by hand"
        client.delete(key_of(name))
