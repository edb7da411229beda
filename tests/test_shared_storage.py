"""Locks on shared storage: one directory mounted twice with sshfs, two "hosts" (sharedfs.py).

Host B runs in its own UTS and pid namespace under another hostname, as a second
web host or a container on the same volume would.  The mounts use the options
docs/locks.md recommends for sshfs (every cache off) unless a test says otherwise.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from sharedfs import (
    CHILD_ENV,
    HOST_B,
    SharedDir,
    hammer,
    is_mounted,
    plant_old_lock,
    takeover,
)

import perlcompat
from perlcompat import Lock, lock, unlock

#: the methods docs/locks.md recommends on shared storage (with the sshfs/NFS options there);
#: not toplock: O_APPEND is not atomic between NFS or sshfs clients (lines overwrite each other)
#: rename is left out: its first-use marker can race another host's release (docs/locks.md)
RECOMMENDED = ["mkdir", "excl", "symlink"]
STALE_METHODS = ["mkdir", "symlink", "excl", "rename", "toplock"]


def run_on(shared: SharedDir, host: str, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Python *code* on *host* ("a" or "b") to completion."""
    argv = shared.argv(host, [sys.executable, "-c", code, *args])
    return subprocess.run(argv, capture_output=True, text=True, env=CHILD_ENV, timeout=120)


WHO = r"""
import json, os, socket, sys
if len(sys.argv) > 1:
    socket.sethostname(sys.argv[1])
print(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                  "pidns": os.readlink("/proc/self/ns/pid")}))
"""


def test_the_harness_gives_two_hosts_on_one_directory(two_hosts_uncached: SharedDir) -> None:
    shared = two_hosts_uncached
    assert is_mounted(shared.a) and is_mounted(shared.b)
    (shared.a / "hello").write_text("from a\n")
    assert (shared.b / "hello").read_text() == "from a\n"
    assert (shared.backing / "hello").read_text() == "from a\n"
    a = json.loads(run_on(shared, "a", WHO).stdout)
    b = json.loads(run_on(shared, "b", WHO, HOST_B).stdout)
    assert b["host"] == HOST_B != a["host"]
    assert b["pidns"] != a["pidns"]
    assert b["pid"] == 1  # the first process of its own pid namespace
    assert os.uname().nodename == a["host"]  # this host's name is untouched


# -- the hammer: 4 processes per host ---------------------------------------------------
@pytest.mark.parametrize("method", RECOMMENDED)
def test_hammer_recommended_methods_exclude_across_hosts(
    two_hosts_uncached: SharedDir, method: str
) -> None:
    counts = hammer(two_hosts_uncached, method, workers=4, increments=20)
    assert counts.get("crashes") is None
    assert counts["doubles"] == 0
    assert counts["lost"] == 0
    assert counts["timeouts"] == 0 and counts["expired"] == 0
    assert not [key for key in counts if key.startswith("error_")], counts


@pytest.mark.parametrize("method", ["excl"])
def test_hammer_default_caching_no_double_holders(two_hosts: SharedDir, method: str) -> None:
    """With sshfs's caches on, updates of the data file may be lost, but never two holders."""
    counts = hammer(two_hosts, method, workers=4, increments=15)
    assert counts.get("crashes") is None
    assert counts["doubles"] == 0
    assert not [key for key in counts if key.startswith("error_")], counts


def test_link_method_excludes_and_recovers_across_hosts(two_hosts_uncached: SharedDir) -> None:
    """link() is the NFS-safe lock (issue 22 item 5): sshfs reports one link whatever the
    count, so a link() that succeeded is held without the nlink == 2 check."""
    counts = hammer(two_hosts_uncached, "link", workers=4, increments=20, timeout=240)
    assert counts.get("crashes") is None
    assert (counts["doubles"], counts["lost"], counts["timeouts"]) == (0, 0, 0), counts
    assert not [key for key in counts if key.startswith("error_")], counts
    taken = takeover(two_hosts_uncached, "link", trials=3, workers=3, stale=2.0)
    assert taken.get("crashes") is None
    assert (taken["doubles"], taken["expired"]) == (0, 0), taken
    assert taken["held"] == 3 * 2 * 3  # every waiter got the lock once the old one broke


@pytest.mark.parametrize("record", ["{host}.{pid}\n", "{pid}\n"])
def test_hammer_excl_with_a_declared_record_excludes_across_hosts(
    two_hosts_uncached: SharedDir, record: str
) -> None:
    """``record=`` carries no token: on shared storage the release tells its own lock by
    the bytes it wrote, and a waiter judges a record without ``{host}`` by age only."""
    counts = hammer(
        two_hosts_uncached, "excl", workers=4, increments=20, options={"record": record}
    )
    assert counts.get("crashes") is None
    assert counts["doubles"] == 0
    assert counts["lost"] == 0
    assert counts["timeouts"] == 0 and counts["expired"] == 0
    assert not [key for key in counts if key.startswith("error_")], counts


# -- stale takeover across hosts ----------------------------------------------------------
@pytest.mark.parametrize("method", RECOMMENDED)
def test_takeover_of_an_old_lock_by_waiters_on_both_hosts(
    two_hosts_uncached: SharedDir, method: str
) -> None:
    counts = takeover(two_hosts_uncached, method, trials=3, workers=3, stale=2.0)
    assert counts.get("crashes") is None
    assert counts["doubles"] == 0
    assert counts["expired"] == 0
    assert counts["held"] == 3 * 2 * 3  # every waiter got the lock once


# -- a live holder is never judged dead from another host or pid namespace -------------
HOLD = r"""
import sys
from perlcompat import Lock
lk = Lock(sys.argv[1], method=sys.argv[2], stale=600)
lk.acquire()
print("locked", flush=True)
sys.stdin.readline()
lk.release()
print("released", flush=True)
"""

TRY = r"""
import json, sys
from perlcompat import OS_ERROR, lock
got = lock(sys.argv[1], method=sys.argv[2], retry=4, wait=0.1, stale=600)
print(json.dumps([got, int(OS_ERROR)]))
"""


@pytest.mark.privileged  # a pid namespace (unshare)
@pytest.mark.parametrize("holder_host", ["a", "b"])
@pytest.mark.parametrize("method", STALE_METHODS)
def test_live_holder_in_another_pid_namespace_same_hostname_is_kept(
    tmp_path: Path, method: str, holder_host: str
) -> None:
    """Containers on one local volume: same hostname, own pid namespaces."""
    shared = SharedDir.local_only(tmp_path, host_b=None)
    path = str(tmp_path / "shared.lock")
    waiter_host = "b" if holder_host == "a" else "a"
    holder = subprocess.Popen(
        shared.argv(holder_host, [sys.executable, "-c", HOLD, path, method]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=CHILD_ENV,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "locked\n"
        result = run_on(shared, waiter_host, TRY, path, method)
        assert json.loads(result.stdout) == [0, errno.EWOULDBLOCK], result.stderr
        holder.stdin.write("release\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == "released\n"  # not ExpiredLockError
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.privileged  # a pid namespace (unshare)
@pytest.mark.parametrize("method", ["mkdir", "excl", "rename", "toplock"])
def test_locks_cli_says_a_lock_from_another_pid_namespace_is_judged_by_age(
    tmp_path: Path, method: str
) -> None:
    shared = SharedDir.local_only(tmp_path, host_b=None)
    locks = tmp_path / "locks"
    locks.mkdir()
    path = str(locks / "shared.lock")
    holder = subprocess.Popen(
        shared.argv("b", [sys.executable, "-c", HOLD, path, method]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=CHILD_ENV,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        out = subprocess.run(
            [sys.executable, "-m", "perlcompat", "locks", str(locks), "--json"],
            capture_output=True,
            text=True,
            env=CHILD_ENV,
            check=True,
        ).stdout
        (row,) = json.loads(out)["locks"]
        assert row["alive"] is None
        assert row["judged"] == "age only: another pid namespace"
        table = subprocess.run(
            [sys.executable, "-m", "perlcompat", "locks", str(locks)],
            capture_output=True,
            text=True,
            env=CHILD_ENV,
            check=True,
        ).stdout
        assert "age only: another pid namespace" in table
    finally:
        holder.kill()
        holder.wait()


SKEWED = r"""
import json, sys, time
real = time.time
time.time = lambda: real() + float(sys.argv[3])  # this host's clock runs ahead
from perlcompat import OS_ERROR, lock
got = lock(sys.argv[1], method=sys.argv[2], retry=4, wait=0.1, stale=180)
print(json.dumps([got, int(OS_ERROR)]))
"""


@pytest.mark.parametrize("method", RECOMMENDED)
def test_clock_skew_does_not_break_a_live_lock_of_another_host(
    two_hosts_uncached: SharedDir, method: str
) -> None:
    shared = two_hosts_uncached
    holder = subprocess.Popen(
        shared.argv("b", [sys.executable, "-c", HOLD, str(shared.b / "x.lock"), method]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=CHILD_ENV,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "locked\n"
        result = run_on(shared, "a", SKEWED, str(shared.a / "x.lock"), method, "300")
        assert json.loads(result.stdout) == [0, errno.EWOULDBLOCK], result.stderr
        holder.stdin.write("release\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == "released\n"
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.filterwarnings("ignore::perlcompat.perl.fsinfo.SharedStorageWarning")  # toplock
def test_an_old_lock_is_still_broken_with_the_storage_clock(two_hosts_uncached: SharedDir) -> None:
    """The storage clock judges age: a 100 s old lock goes at stale=2 from either host."""
    shared = two_hosts_uncached
    for method in ["mkdir", "excl", "symlink", "toplock"]:
        plant_old_lock(shared.backing, method, method, 100.0)
        assert lock(str(shared.a / f"{method}.lock"), method=method, retry=6, wait=0.6, stale=2)
        assert unlock(str(shared.a / f"{method}.lock"), method=method)


# -- collisions reported as EPERM/EACCES ------------------------------------------------
@pytest.mark.parametrize("method", ["mkdir", "excl", "symlink"])
@pytest.mark.parametrize("number", [errno.EPERM, errno.EACCES])
def test_a_collision_reported_as_eperm_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, number: int
) -> None:
    """sshfs maps some EEXIST to EPERM: with the name there, the lock is busy, not failed."""
    path = str(tmp_path / "x.lock")
    plant_old_lock(tmp_path, method, "x", 0.0)  # a fresh lock with no owner record: busy
    real = {"mkdir": os.mkdir, "excl": os.open, "symlink": os.symlink}[method]

    def collide(*args: object, **kwargs: object) -> object:
        if path in args:  # os.symlink(target, path): the lock path is not always first
            raise OSError(number, os.strerror(number), path)
        return real(*args, **kwargs)  # type: ignore[operator]

    monkeypatch.setattr(
        os, {"mkdir": "mkdir", "excl": "open", "symlink": "symlink"}[method], collide
    )
    start = time.monotonic()
    assert lock(path, method=method, retry=3, wait=0.1) == 0
    assert int(perlcompat.OS_ERROR) == errno.EWOULDBLOCK  # busy, after waiting
    assert time.monotonic() - start >= 0.15


@pytest.mark.parametrize("method", ["mkdir", "excl", "symlink"])
def test_eperm_from_a_directory_that_refuses_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    path = str(tmp_path / "x.lock")

    def refusing(real: Any) -> Any:
        def refuse(*args: object, **kwargs: object) -> object:
            if any(str(arg).startswith(path) for arg in args):  # nothing may be made there
                raise PermissionError(errno.EPERM, "Operation not permitted", path)
            return real(*args, **kwargs)

        return refuse

    for name in ("mkdir", "open", "symlink"):
        monkeypatch.setattr(os, name, refusing(getattr(os, name)))
    assert lock(path, method=method, retry=3, wait=0.1) == 0
    assert int(perlcompat.OS_ERROR) == errno.EPERM


@pytest.mark.parametrize("method", ["mkdir", "excl", "symlink"])
def test_eperm_for_a_lock_released_in_between_is_busy_then_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    """sshfs: the collision is reported as EPERM, and the name is gone by the time we look."""
    path = str(tmp_path / "x.lock")
    name = {"mkdir": "mkdir", "excl": "open", "symlink": "symlink"}[method]
    real = getattr(os, name)
    collisions = []

    def collide_once(*args: object, **kwargs: object) -> object:
        if path in args and not collisions:
            collisions.append(args)
            raise PermissionError(errno.EPERM, "Operation not permitted", path)
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, collide_once)
    assert lock(path, method=method, retry=2, wait=0.1) == 1
    assert collisions
    assert unlock(path, method=method) == 1


# -- flock on shared storage: detected and warned about ---------------------------------
FLOCK_HOLD = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()
"""


def test_flock_does_not_exclude_across_the_two_mounts_and_perlcompat_warns(
    two_hosts_uncached: SharedDir, fresh_fsinfo: None
) -> None:
    shared = two_hosts_uncached
    holder = subprocess.Popen(
        shared.argv("b", [sys.executable, "-c", FLOCK_HOLD, str(shared.b / "f.lock")]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        from perlcompat import SharedStorageWarning

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # flock(2) does not see host B's lock: granted, and perlcompat says why
            with Lock(str(shared.a / "f.lock"), method="flock", retry=0):
                pass
            with Lock(str(shared.a / "f.lock"), method="flock", retry=0):
                pass  # once per file system, not per lock
            OUT = perlcompat.open_("+< " + str(shared.a / "f.lock"))
            assert perlcompat.flock(OUT, perlcompat.LOCK_EX | perlcompat.LOCK_NB) == 1
            perlcompat.close(OUT)
        shared_warnings = [w for w in caught if issubclass(w.category, SharedStorageWarning)]
        assert len(shared_warnings) == 1, [str(w.message) for w in caught]
        text = str(shared_warnings[0].message)
        assert "fuse.sshfs" in text and "flock" in text and "mkdir" in text
    finally:
        holder.kill()
        holder.wait()


def test_flock_on_a_local_file_system_does_not_warn(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Lock(str(tmp_path / "f.lock"), method="flock"):
            pass
        OUT = perlcompat.open_("+> " + str(tmp_path / "data"))
        assert perlcompat.flock(OUT, perlcompat.LOCK_EX) == 1
        perlcompat.close(OUT)


@pytest.fixture
def fresh_fsinfo() -> None:
    """Forget which file systems were seen and warned about (mounts come and go in tests,
    and a new mount can reuse an old one's device number)."""
    from perlcompat.perl import fsinfo as _fsinfo

    _fsinfo._types.clear()
    _fsinfo._warned.clear()
    _fsinfo._warned_methods.clear()


@pytest.mark.parametrize("method", ["rename", "toplock"])
def test_methods_unsafe_across_hosts_warn_once_on_shared_storage(
    two_hosts_uncached: SharedDir, tmp_path: Path, method: str, fresh_fsinfo: None
) -> None:
    from perlcompat import SharedStorageWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # once per file system and method, not per lock
            with Lock(str(two_hosts_uncached.a / f"{method}.lock"), method=method, retry=0):
                pass
        local = tmp_path / "on-local-disk"
        local.mkdir()
        with Lock(str(local / f"{method}.lock"), method=method, retry=0):
            pass  # a local disk: no warning
    shared_warnings = [w for w in caught if issubclass(w.category, SharedStorageWarning)]
    assert len(shared_warnings) == 1, [str(w.message) for w in caught]
    text = str(shared_warnings[0].message)
    assert repr(method) in text and "fuse.sshfs" in text and "mkdir" in text
