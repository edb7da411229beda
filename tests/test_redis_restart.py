"""Redis locks when the server misbehaves: restarts with clients of different ``stale``,
a server stopped with SIGSTOP, TLS spoken to a plain server.

Real ``redis-server`` processes (``tests/redis_server.py``), killed with SIGKILL and
restarted on the same port, or stopped with SIGSTOP; holders run in separate
processes and create an O_EXCL marker inside their critical section, so two
holders at once fail loudly.
"""

from __future__ import annotations

import errno
import os
import signal
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
from redis_server import RedisServer

from perlcompat import OS_ERROR, Lock, lock, unlock
from perlcompat.locks.methods import redis as redis_lock

REPO = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
MAX_LEASE_ENV = "PERLCOMPAT_REDIS_MAX_LEASE"  # documented in docs/redis.md
ENV.pop(MAX_LEASE_ENV, None)


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RedisServer]:
    srv = RedisServer(str(tmp_path / "redis")).start()
    srv.declare_empty()
    yield srv
    srv.resume()
    srv.stop()


@pytest.fixture
def name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture(autouse=True)
def no_max_lease_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_LEASE_ENV, raising=False)


# -- restarts: the hold-off covers the longest lease, whoever comes back first ----
#: holds the lock from before its first attempt until *hold* seconds after it
HOLDER = r"""
import os, sys, time
from perlcompat import Lock, ExpiredLockError
url, name, marker, stale, hold = sys.argv[1:6]
held = Lock(name, url=url, stale=float(stale))
before = time.monotonic()  # the server granted no earlier: the lease ends after before + stale
held.acquire(timeout=10)
mark = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
print("inside", repr(before), held.fencing_token, flush=True)
time.sleep(max(before + float(hold) - time.monotonic(), 0))  # the critical section's work
left = time.monotonic()
os.close(mark)
os.unlink(marker)
try:
    held.release()
except ExpiredLockError:
    pass  # the restart lost the key: expected
print("left", repr(left), flush=True)
"""

#: takes the lock once with a long patience; the marker proves it is alone inside
CONTENDER = r"""
import os, sys, time, warnings
from perlcompat import Lock
warnings.simplefilter("ignore")
url, name, marker, stale = sys.argv[1:5]
held = Lock(name, url=url, stale=float(stale))
held.acquire(timeout=30)
granted = time.monotonic()
try:
    mark = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
except FileExistsError:
    sys.exit("TWO HOLDERS AT ONCE")
os.close(mark)
os.unlink(marker)
token = held.fencing_token
held.release()
print(repr(granted), token, flush=True)
"""


def test_restart_hold_off_covers_the_longest_lease_whoever_comes_back_first(
    own_server: RedisServer, name: str, tmp_path: Path
) -> None:
    """Issue 11: H1 (stale=3) inside; kill -9 and restart; a stale=1 client comes first."""
    max_lease = 3.0
    env = dict(ENV, **{MAX_LEASE_ENV: str(max_lease)})
    url = own_server.url
    marker = str(tmp_path / "marker")
    holder, _token = start_holder(url, name, marker, env)
    killed = time.monotonic()
    own_server.restart()  # SIGKILL, then a new server on the same port: no keys, no epoch
    # the client with the short lease comes back first and meets the missing epoch
    first = subprocess.run(
        [
            sys.executable,
            "-c",
            CONTENDER.replace("timeout=30", "timeout=0"),
            url,
            name,
            marker,
            "1",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    grants = [float(first.stdout.split()[0])] if first.returncode == 0 else []  # if very slow
    assert grants or "LockTimeout" in first.stderr, first.stderr
    contenders = [
        subprocess.Popen(
            [sys.executable, "-c", CONTENDER, url, name, marker, str(stale)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for stale in (1.0, max_lease, 1.0, max_lease)
    ]
    for proc in contenders:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        grants.append(float(out.split()[0]))
    out, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, err
    left = float(out.split()[-1])
    assert min(grants) > left  # nobody inside while the old holder still was
    assert min(grants) >= killed + max_lease - 0.002  # held off for the max lease


def start_holder(
    url: str, name: str, marker: str, env: dict[str, str]
) -> tuple[subprocess.Popen[str], int]:
    """A process inside *name* with a max lease, for 0.4 s less; returns it and its token."""
    lease = float(env[MAX_LEASE_ENV])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, name, marker, str(lease), str(lease - 0.4)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert holder.stdout is not None
    line = holder.stdout.readline().split()
    assert line[:1] == ["inside"], holder.communicate()
    return holder, int(line[2])


def contend(
    url: str, name: str, marker: str, env: dict[str, str], stales: tuple[float, ...]
) -> list[tuple[float, int]]:
    """Contenders in separate processes, all at once: [(granted, token)]."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONTENDER, url, name, marker, str(stale)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for stale in stales
    ]
    grants = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        granted, token = out.split()
        grants.append((float(granted), int(token)))
    return grants


def left_at(holder: subprocess.Popen[str]) -> float:
    out, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, err
    return float(out.split()[-1])


def test_a_flush_holds_off_but_first_use_of_a_long_running_server_does_not(
    own_server: RedisServer, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FLUSHDB, FLUSHALL, SWAPDB on a server up longer than the max lease: held off from then."""
    max_lease = 2.0
    env = dict(ENV, **{MAX_LEASE_ENV: str(max_lease)})
    monkeypatch.setenv(MAX_LEASE_ENV, str(max_lease))
    url = own_server.url
    marker = str(tmp_path / "marker")
    with own_server.client() as client:
        while int(client.info("server")["uptime_in_seconds"]) < max_lease + 2:
            time.sleep(0.1)  # the server's own clock: until it has run past the hold-off
        client.delete("perlcompat:epoch")  # first use, no flush seen: granted at once
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert lock(name, url=url, stale=1, retry=0) == 1
        assert unlock(name, url=url) == 1
        for flush in (("FLUSHDB",), ("FLUSHALL",), ("SWAPDB", "0", "1")):
            holder, token = start_holder(url, name, marker, env)
            flushed = time.monotonic()
            client.execute_command(*flush)  # the lock key and the epoch are gone from db 0
            grants = contend(url, name, marker, env, (1.0, max_lease, 1.0))
            left = left_at(holder)
            first = min(granted for granted, _ in grants)
            assert first > left, f"{flush}: granted while the holder was inside"
            assert first >= flushed + max_lease - 0.002, flush
            assert all(later > token for _, later in grants), flush


def test_a_restart_that_restores_a_snapshot_holds_off(
    own_server: RedisServer, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An RDB snapshot brings back an older epoch (and fence counter): a restart all the same."""
    max_lease = 3.0
    env = dict(ENV, **{MAX_LEASE_ENV: str(max_lease)})
    monkeypatch.setenv(MAX_LEASE_ENV, str(max_lease))
    url = own_server.url
    marker = str(tmp_path / "marker")
    with Lock(name, url=url, stale=1):  # records the epoch and a fence counter
        pass
    with own_server.client() as client:
        client.save()  # the periodic snapshot (dump.rdb in the server's directory)
        old_epoch = client.get("perlcompat:epoch")
    holder, token = start_holder(url, name, marker, env)
    killed = time.monotonic()
    own_server.restart()  # SIGKILL, then a new server on the same port loads the snapshot
    with own_server.client() as client:
        assert client.get("perlcompat:epoch") == old_epoch  # restored
        assert client.exists(redis_lock.KEY_PREFIX + name) == 0  # taken after the snapshot
        assert int(client.get(redis_lock.FENCE_PREFIX + name)) < token
    grants = contend(url, name, marker, env, (1.0, max_lease, 1.0, max_lease))
    left = left_at(holder)
    first = min(granted for granted, _ in grants)
    assert first > left  # nobody inside while the old holder still was
    assert first >= killed + max_lease - 0.002  # held off for the max lease
    assert all(later > token for _, later in grants)  # tokens never go backwards


@pytest.mark.parametrize(
    ("policy", "maxmemory", "refused"),
    [
        ("volatile-ttl", "4mb", True),
        ("allkeys-lru", "4mb", True),
        ("volatile-lru", "0", False),  # no memory limit: nothing is evicted
        ("noeviction", "4mb", False),
    ],
)
def test_a_server_that_may_evict_held_locks_is_refused(
    tmp_path: Path, name: str, policy: str, maxmemory: str, refused: bool
) -> None:
    srv = RedisServer(
        str(tmp_path / "redis"), "--maxmemory", maxmemory, "--maxmemory-policy", policy
    ).start()
    try:
        srv.declare_empty()
        if not refused:
            assert lock(name, url=srv.url, stale=5) == 1
            assert unlock(name, url=srv.url) == 1
            return
        with pytest.warns(RuntimeWarning, match="maxmemory-policy"):
            assert lock(name, url=srv.url, stale=5) == 0
        assert OS_ERROR == errno.EOPNOTSUPP
        with pytest.raises(OSError, match=f"maxmemory-policy {policy}.*noeviction") as info:
            Lock(name, url=srv.url, stale=5).acquire()
        assert info.value.errno == errno.EOPNOTSUPP and srv.url in str(info.value)
        with srv.client() as client:
            assert client.exists(redis_lock.KEY_PREFIX + name) == 0
            # a user who may not read the configuration: the policy is assumed fine
            client.execute_command("ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-config")
            assert lock(name, url=srv.url.replace("//", "//app:pw@"), stale=5) == 1
            assert unlock(name, url=srv.url.replace("//", "//app:pw@")) == 1
            client.delete("perlcompat:epoch")
            client.config_set("maxmemory-policy", "noeviction")
        srv.declare_empty()
        assert lock(name, url=srv.url, stale=5) == 1
        assert unlock(name, url=srv.url) == 1
    finally:
        srv.stop()


def test_a_stale_longer_than_the_max_lease_is_refused(
    own_server: RedisServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match=r"stale 200 s is longer than the max lease 180 s"):
        Lock(name, url=own_server.url, stale=200)
    assert lock(name, url=own_server.url, stale=180) == 1  # the default stale fits
    assert unlock(name, url=own_server.url) == 1
    with pytest.raises(ValueError, match=r"stale 8 s is longer than the max lease 2\.5 s"):
        lock(name, url=own_server.url + "?max_lease=2.5", stale=8)
    monkeypatch.setenv(MAX_LEASE_ENV, "4")
    with pytest.raises(ValueError, match=f"stale 5 s .* max lease 4 s .*{MAX_LEASE_ENV}"):
        Lock(name, url=own_server.url, stale=5)
    for bad in ("0", "-1", "nan", "inf", "soon"):
        monkeypatch.setenv(MAX_LEASE_ENV, bad)
        with pytest.raises(ValueError, match=f"{MAX_LEASE_ENV} must be a number"):
            Lock(name, url=own_server.url, stale=1)
    with pytest.raises(ValueError, match=r"max_lease in lock url .* must be a number"):
        Lock(name, url=own_server.url + "?max_lease=x", stale=1)


def test_clients_must_agree_on_the_max_lease(own_server: RedisServer, name: str) -> None:
    def recorded() -> list[bytes]:
        with own_server.client() as client:
            return list(client.get("perlcompat:epoch").split()[:2])

    assert lock(name, url=own_server.url + "?max_lease=5", stale=1) == 1
    assert unlock(name, url=own_server.url + "?max_lease=5") == 1
    assert recorded() == [b"0", b"5000"]  # recorded by the first client
    # a shorter one would hold off too briefly after the next restart: refused,
    # lock() returns 0 with $! (a warning says why and how to lower the record)
    short = own_server.url + "?max_lease=2"
    with pytest.warns(RuntimeWarning, match=r"max lease 2 s is shorter than the 5 s recorded"):
        assert lock(name, url=short, stale=1) == 0
    assert OS_ERROR == errno.EINVAL
    with pytest.raises(ValueError, match=r"SET perlcompat:epoch 0") as info:
        Lock(name, url=short, stale=1).acquire()
    assert isinstance(info.value, OSError) and info.value.errno == errno.EINVAL
    assert recorded() == [b"0", b"5000"]
    # a longer one raises the record
    assert lock(name, url=own_server.url + "?max_lease=8", stale=1) == 1
    assert unlock(name, url=own_server.url + "?max_lease=8") == 1
    assert recorded() == [b"0", b"8000"]
    with pytest.warns(RuntimeWarning, match=r"shorter than the 8 s recorded"):
        assert lock(name, url=own_server.url + "?max_lease=5", stale=1) == 0
    assert OS_ERROR == errno.EINVAL
    own_server.declare_empty()  # what the message says: the record is lowered
    assert lock(name, url=own_server.url + "?max_lease=5", stale=1) == 1
    assert unlock(name, url=own_server.url + "?max_lease=5") == 1
    assert recorded() == [b"0", b"5000"]


def test_the_max_lease_query_is_not_passed_to_redis_py(own_server: RedisServer, name: str) -> None:
    url = own_server.url + "?socket_timeout=3&max_lease=7"
    backend = redis_lock.RedisBackend(name, stale=7, url=url)
    assert backend.max_lease == 7
    assert backend._server.read_cap == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backend.try_acquire() and backend.release()


# -- a server that answers nothing: the caller's patience, not 10 s ----------------
class PublicOnly:
    """A redis-py connection seen through its public API only: a private name is missing."""

    def __init__(self, real: Any) -> None:
        object.__setattr__(self, "_real", real)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._real, name)

    def __setattr__(self, name: str, value: object) -> None:
        if name.startswith("_"):
            raise AttributeError(name)
        setattr(self._real, name, value)


def test_requests_use_only_redis_pys_public_connection_api(
    own_server: RedisServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_lock.connection, "_servers", {})
    server = redis_lock.server_for(own_server.url)
    made: list[PublicOnly] = []
    real = server.make

    def make(**kwargs: object) -> PublicOnly:
        made.append(PublicOnly(real(**kwargs)))
        return made[-1]

    monkeypatch.setattr(server, "make", make)
    for _ in range(3):
        assert lock(name, url=own_server.url) == 1, OS_ERROR
        assert unlock(name, url=own_server.url) == 1, OS_ERROR
    assert len(made) == 1 and server.idle == made  # one connection, reused
    own_server.pause()  # the pooled connection keeps its first timeouts: the 0.2 s wins
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=f"at {own_server.url}: no answer within"):
        Lock(name, url=own_server.url).acquire(timeout=0.2)
    assert time.monotonic() - started < 1.5
    own_server.resume()
    assert lock(name, url=own_server.url) == 1, OS_ERROR  # a fresh connection after the timeout
    assert unlock(name, url=own_server.url) == 1, OS_ERROR
    assert len(made) == 2


@pytest.mark.parametrize("connection", ["pooled", "fresh"])
def test_a_stopped_server_times_out_within_the_patience(
    own_server: RedisServer, name: str, connection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert lock(name, url=own_server.url) == 1  # leaves a pooled connection
    assert unlock(name, url=own_server.url) == 1
    if connection == "fresh":
        monkeypatch.setattr(redis_lock.connection, "_servers", {})
    own_server.pause()
    started = time.monotonic()
    assert lock(name, url=own_server.url, retry=2, wait=0.5) == 0
    took = time.monotonic() - started
    assert OS_ERROR == errno.ETIMEDOUT  # no answer: not "busy"
    assert 0.45 <= took < 1.5
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=f"at {own_server.url}: no answer within"):
        Lock(name, url=own_server.url).acquire(timeout=0.2)
    assert time.monotonic() - started < 1.5  # MIN_TIMEOUT: a request gets 0.5 s at least
    own_server.resume()
    # the server now runs the acquires it had received: this process adopts their grant
    assert lock(name, url=own_server.url, retry=2, wait=0.5) == 1
    assert unlock(name, url=own_server.url) == 1
    with own_server.client() as client:
        assert client.exists(redis_lock.KEY_PREFIX + name) == 0


def test_a_stopped_server_ends_a_wait_for_release_within_the_patience(
    own_server: RedisServer, name: str
) -> None:
    other = redis_lock.RedisBackend(name, stale=30, url=own_server.url)
    assert other.try_acquire()

    def pause_once_waiting() -> None:  # stop the server while the waiter blocks in BLPOP
        with own_server.client() as client:
            deadline = time.monotonic() + 10
            while not any(c["cmd"] == "blpop" for c in client.client_list()):
                assert time.monotonic() < deadline, "the waiter never blocked"
                time.sleep(0.002)
        own_server.pause()

    pauser = threading.Thread(target=pause_once_waiting)
    pauser.start()
    started = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        Lock(name, url=own_server.url, timeout=0.8).acquire()
    took = time.monotonic() - started
    pauser.join()
    assert took < 2.0  # old code: the 5 s socket timeout
    assert "no answer within" in str(info.value)
    own_server.resume()
    assert other.release()


def test_rediss_to_a_plain_server_times_out_within_the_patience(
    own_server: RedisServer, name: str
) -> None:
    url = own_server.url.replace("redis://", "rediss://")
    started = time.monotonic()
    assert lock(name, url=url, retry=2, wait=0.5) == 0
    assert time.monotonic() - started < 1.5
    assert OS_ERROR in (errno.ETIMEDOUT, errno.ECONNRESET)


HELD = r"""
import sys
from perlcompat import Lock
held = Lock(sys.argv[1], url=sys.argv[2])
held.acquire()
print("held", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("end", ["SIGTERM", "exit"])
def test_cleanup_of_a_holder_is_bounded_while_the_server_is_stopped(
    own_server: RedisServer, name: str, end: str
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HELD, name, own_server.url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline() == "held\n"
    own_server.pause()
    started = time.monotonic()
    if end == "SIGTERM":
        holder.send_signal(signal.SIGTERM)
    else:
        holder.stdin.close()  # normal exit with the lock held: atexit releases
    holder.wait(timeout=30)
    took = time.monotonic() - started
    assert took < 3.0, f"cleanup took {took:.3g} s"  # CLEANUP_TIMEOUT is 1 s
    assert holder.returncode == (-signal.SIGTERM if end == "SIGTERM" else 0)
    own_server.resume()


def test_cleanup_release_still_releases_on_a_running_server(
    own_server: RedisServer, name: str
) -> None:
    held = Lock(name, url=own_server.url)
    held.acquire()
    assert held._abandon() is True  # what exit and signal cleanup call
    with own_server.client() as client:
        assert client.exists(redis_lock.KEY_PREFIX + name) == 0
    held.release()  # released by cleanup: a no-op now
