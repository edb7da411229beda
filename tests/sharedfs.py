"""Shared storage as two hosts: one directory mounted twice with sshfs over a loopback sshd.

:func:`sshd` starts a throwaway ``sshd`` on 127.0.0.1 (its own host key,
client key, port and config in a temp directory; no system file is touched
except the privilege-separation directory ``/run/sshd`` it needs, made if
missing).  :class:`SharedDir` mounts one backing directory twice with
``sshfs``: mount ``a`` is host A, mount ``b`` is host B, whose processes run in
their own UTS and pid namespace (``unshare --uts --pid --fork --mount-proc``)
under another hostname.  ``caching=False`` mounts with every sshfs/FUSE cache
off (:data:`NO_CACHE`).  Teardown unmounts (``fusermount -u``) and stops sshd.

:func:`hammer` runs ``workers`` processes per host, each doing ``increments``
read-increment-write cycles of one counter file under one lock method, and
counts lost updates and *double holders*: inside its critical section a holder
creates a marker file with O_EXCL; finding one there means someone else is
inside too.  :func:`takeover` plants an old lock, starts waiters on both hosts
with a short ``stale`` and counts double holders while they break and take it.

``python tests/sharedfs.py`` prints both tables (the figures in docs/locks.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
#: sshfs options that turn off its name/attribute caches and FUSE's.
NO_CACHE = "cache=no,entry_timeout=0,attr_timeout=0,negative_timeout=0"
#: hostname of host B (host A keeps this machine's).
HOST_B = "perlcompat-host-b"

#: methods measured by :func:`hammer`: ``control`` is a flock on a *local* file (a real
#: lock, so lost updates in its row come from client caching of the data file);
#: ``flock()`` is Perl's ``flock(OUT, 2)`` on the data file itself.
HAMMER_METHODS = ["control", "flock()", "flock", "mkdir", "symlink", "excl", "rename", "toplock"]
TAKEOVER_METHODS = ["mkdir", "symlink", "excl", "rename", "toplock"]


# -- the server -----------------------------------------------------------------------
class Sshd:
    """A running throwaway sshd: ``port`` and ``key`` (the client's private key)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.key = home / "client_key"
        for name in ("host_key", "client_key"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / name)],
                check=True,
            )
        shutil.copy(home / "client_key.pub", home / "authorized_keys")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None
        for _ in range(5):  # a port picked free can be taken before sshd binds it
            self.port = _free_port()
            config = home / "sshd_config"
            config.write_text(
                f"Port {self.port}\nListenAddress 127.0.0.1\n"
                f"HostKey {home / 'host_key'}\nAuthorizedKeysFile {home / 'authorized_keys'}\n"
                f"PidFile {home / 'sshd.pid'}\n"
                "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
                "Subsystem sftp internal-sftp\nLogLevel ERROR\nMaxStartups 100\n"
            )
            log = open(home / "sshd.log", "ab")  # noqa: SIM115 (kept for the process)
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=log)
            log.close()
            if self._wait_listening():
                return
            self.stop()
        raise RuntimeError(f"sshd did not start: {(home / 'sshd.log').read_text()}")

    def _wait_listening(self) -> bool:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn,
            ):
                if conn.recv(4).startswith(b"SSH-"):
                    return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def running_sshd() -> Iterator[Sshd]:
    """Start a throwaway sshd for the block, then stop it and remove its files."""
    home = Path(tempfile.mkdtemp(prefix="perlcompat-sshd-"))
    server = None
    try:
        server = Sshd(home)
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(home, ignore_errors=True)


# -- the two mounts -------------------------------------------------------------------
def _fusermount() -> str:
    return shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount"


def mount(server: Sshd, backing: Path, where: Path, caching: bool) -> None:
    """Mount *backing* at *where* with sshfs through *server*."""
    where.mkdir(parents=True, exist_ok=True)
    options = (
        f"IdentityFile={server.key},IdentitiesOnly=yes,BatchMode=yes,"
        "StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,LogLevel=ERROR"
    )
    if not caching:
        options += "," + NO_CACHE
    result = subprocess.run(
        ["sshfs", "-p", str(server.port), "-o", options, f"root@127.0.0.1:{backing}", str(where)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"sshfs failed: {result.stderr.decode(errors='replace')}")


def unmount(where: Path) -> None:
    """Unmount an sshfs mount (lazily if it is busy)."""
    result = subprocess.run([_fusermount(), "-u", str(where)], capture_output=True, check=False)
    if result.returncode != 0:
        subprocess.run([_fusermount(), "-u", "-z", str(where)], capture_output=True, check=False)


def is_mounted(where: Path) -> bool:
    """True if *where* is a mount point in this mount namespace."""
    target = str(where.resolve())
    with open("/proc/self/mountinfo") as stream:
        return any(line.split()[4] == target for line in stream)


class SharedDir:
    """One backing directory seen by two "hosts": mounts ``a`` and ``b``, and a local dir.

    Host B's processes run under :meth:`argv` in their own UTS and pid namespace.
    """

    def __init__(self, base: Path, server: Sshd, caching: bool, host_b: str | None = HOST_B):
        self.base = base
        self.backing = base / "backing"
        self.local = base / "local"
        self.a = base / "host-a"
        self.b = base / "host-b"
        self.caching = caching
        self.host_b = host_b
        self.backing.mkdir(parents=True)
        self.local.mkdir()
        mount(server, self.backing, self.a, caching)
        try:
            mount(server, self.backing, self.b, caching)
        except BaseException:
            unmount(self.a)
            raise

    @classmethod
    def local_only(cls, base: Path, host_b: str | None = None) -> SharedDir:
        """Both hosts on one local directory (containers on one volume): no mounts."""
        shared = cls.__new__(cls)
        shared.base = shared.backing = shared.a = shared.b = base
        shared.local = base / "local"
        shared.local.mkdir(exist_ok=True)
        shared.caching = False
        shared.host_b = host_b
        return shared

    def mount_of(self, host: str) -> Path:
        return self.a if host == "a" else self.b

    def argv(self, host: str, argv: list[str]) -> list[str]:
        """Return *argv* run on *host* ("b": in a new UTS + pid namespace)."""
        if host == "a":
            return argv
        return ["unshare", "--uts", "--pid", "--fork", "--mount-proc", "--kill-child", *argv]

    def close(self) -> None:
        unmount(self.a)
        unmount(self.b)


@contextlib.contextmanager
def shared_dir(
    server: Sshd, base: Path, caching: bool, host_b: str | None = HOST_B
) -> Iterator[SharedDir]:
    """Mount a fresh backing directory under *base* twice for the block."""
    shared = SharedDir(base, server, caching, host_b)
    try:
        yield shared
    finally:
        shared.close()


# -- pytest fixtures (re-exported by conftest.py) -------------------------------------
@pytest.fixture(scope="session")
def sshd_server() -> Iterator[Sshd]:
    """A throwaway sshd on 127.0.0.1 for the whole session."""
    with running_sshd() as server:
        yield server


@pytest.fixture(params=[True, False], ids=["cached", "uncached"])
def two_hosts(request: pytest.FixtureRequest, sshd_server: Sshd, tmp_path: Path) -> Iterator[Any]:
    """One directory mounted twice (hosts a and b), with sshfs default caching or none."""
    with shared_dir(sshd_server, tmp_path, caching=request.param) as shared:
        yield shared


@pytest.fixture
def two_hosts_uncached(sshd_server: Sshd, tmp_path: Path) -> Iterator[SharedDir]:
    """Two hosts on a mount with every cache off (the recommended sshfs options)."""
    with shared_dir(sshd_server, tmp_path, caching=False) as shared:
        yield shared


# -- the processes of one host ----------------------------------------------------------
#: One host's processes: forks ``workers`` children that wait for "go" together, run the
#: job, and report counts as JSON; the parent prints their sum.
RUNNER = r"""
import errno, json, os, re, socket, sys, time
spec = json.loads(sys.argv[1])
if spec.get("hostname"):
    socket.sethostname(spec["hostname"])
import fcntl, warnings
import perlcompat
from perlcompat import Lock, LockError, ExpiredLockError
# measured here, not news (older versions have no such warning)
warnings.simplefilter("ignore", getattr(perlcompat, "SharedStorageWarning", UserWarning))

def inside(marker, counts):
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        counts["doubles"] += 1
        return False
    except PermissionError:  # sshfs maps some EEXIST collisions to EPERM
        counts["doubles" if os.path.lexists(marker) else "marker_errors"] += 1
        return False
    os.close(fd)
    return True

def outside(marker, created):
    if created:
        os.unlink(marker)

def number(data):  # Perl's numification: leading digits, else 0 (a torn read has junk)
    digits = re.match(rb"\s*(\d*)", data)[1]
    return int(digits or 0)

def bump(counter):
    fd = os.open(counter, os.O_RDWR)
    try:
        os.pwrite(fd, b"%d\n" % (number(os.read(fd, 64)) + 1), 0)
    finally:
        os.close(fd)

def take(lk, counts, limit):
    deadline = time.monotonic() + limit
    while True:
        try:
            lk.acquire(timeout=max(deadline - time.monotonic(), 0))
            return True
        except LockError:
            counts["timeouts"] += 1
            return False
        except OSError as exc:  # a lock() that would return 0 with this $!
            key = "error_" + errno.errorcode.get(exc.errno or 0, str(exc.errno))
            if spec.get("debug"):
                import traceback
                frames = traceback.extract_tb(exc.__traceback__)
                key += " in " + " < ".join(f"{f.name}:{f.lineno}" for f in frames[::-1][:3])
            counts[key] = counts.get(key, 0) + 1
            if time.monotonic() > deadline:
                return False

def give(lk, counts):
    try:
        lk.release()
    except ExpiredLockError:
        counts["expired"] += 1

def hammer(counts):
    method, n = spec["method"], spec["increments"]
    counter, marker = spec["counter"], spec["marker"]
    if method == "control":
        fd = os.open(spec["local_lock"], os.O_RDWR | os.O_CREAT, 0o644)
        for _ in range(n):
            fcntl.flock(fd, fcntl.LOCK_EX)
            created = inside(marker, counts)
            bump(counter)
            outside(marker, created)
            fcntl.flock(fd, fcntl.LOCK_UN)
        return
    if method == "flock()":
        from perlcompat import close, flock, open_, print_, seek, tell, truncate
        for _ in range(n):
            OUT = open_("+< " + counter)
            flock(OUT, 2)
            created = inside(marker, counts)
            value = number(OUT.readline().encode("utf-8", "surrogateescape"))
            seek(OUT, 0, 0)
            print_(OUT, value + 1)
            truncate(OUT, tell(OUT))
            outside(marker, created)
            close(OUT)
        return
    lk = Lock(
        spec["lock"], method=method, retry=None, stale=spec["stale"], **spec.get("options", {})
    )
    for _ in range(n):
        if not take(lk, counts, spec["limit"]):
            continue
        created = inside(marker, counts)
        bump(counter)
        outside(marker, created)
        give(lk, counts)

def takeover(counts):
    lk = Lock(spec["lock"], method=spec["method"], retry=None, stale=spec["stale"])
    if not take(lk, counts, spec["limit"]):
        return
    counts["held"] += 1
    created = inside(spec["marker"], counts)
    time.sleep(spec["hold"])
    outside(spec["marker"], created)
    give(lk, counts)

job = hammer if spec["job"] == "hammer" else takeover
go_r, go_w = os.pipe()
out_r, out_w = os.pipe()
children = []
for _ in range(spec["workers"]):
    pid = os.fork()
    if pid == 0:
        os.close(go_w); os.close(out_r)
        counts = {"doubles": 0, "marker_errors": 0, "timeouts": 0, "expired": 0, "held": 0}
        os.read(go_r, 1)
        try:
            job(counts)
        except BaseException as exc:
            import traceback
            where = traceback.extract_tb(exc.__traceback__)[-1]
            counts["crash"] = f"{exc!r} in {where.name} line {where.lineno}"
        os.write(out_w, (json.dumps(counts) + "\n").encode())
        os._exit(0)
    children.append(pid)
os.close(go_r); os.close(out_w)
print("ready", flush=True)
sys.stdin.readline()
os.write(go_w, b"g" * len(children))
total = {}
with os.fdopen(out_r) as results:
    for line in results:
        for key, value in json.loads(line).items():
            if isinstance(value, int):
                total[key] = total.get(key, 0) + value
            else:
                total.setdefault("crashes", []).append(value)
for pid in children:
    os.waitpid(pid, 0)
print(json.dumps(total), flush=True)
"""

CHILD_ENV = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_hosts(
    shared: SharedDir, specs: dict[str, dict[str, Any]], timeout: float
) -> dict[str, Any]:
    """Start each host's runner with its spec, release them together, return summed counts."""
    procs = {}
    try:
        for host, spec in specs.items():
            if host == "b":
                spec = dict(spec, hostname=shared.host_b)
            argv = shared.argv(host, [sys.executable, "-c", RUNNER, json.dumps(spec)])
            procs[host] = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=CHILD_ENV,
                text=True,
            )
        for host, proc in procs.items():
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line == "ready\n", f"host {host} runner said {line!r}"
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        total: dict[str, Any] = {}
        for host, proc in procs.items():
            out, _ = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, f"host {host} runner failed: {out!r}"
            for key, value in json.loads(out).items():
                if isinstance(value, list):
                    total.setdefault(key, []).extend(value)
                else:
                    total[key] = total.get(key, 0) + value
        return total
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _names(shared: SharedDir, host: str, stem: str) -> dict[str, str]:
    where = shared.mount_of(host)
    return {
        "lock": str(where / f"{stem}.lock"),
        "counter": str(where / f"{stem}.count"),
        "marker": str(shared.local / f"{stem}.inside"),  # local: exact, no client cache
        "local_lock": str(shared.local / f"{stem}.control"),
    }


def hammer(
    shared: SharedDir,
    method: str,
    workers: int = 4,
    increments: int = 50,
    stale: float = 600.0,
    timeout: float = 600.0,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run *workers* processes per host x *increments* under *method* (with ``Lock``
    *options*, such as ``record=``); counts and lost updates."""
    stem = method.replace("()", "_data")
    (shared.backing / f"{stem}.count").write_text("0\n")
    specs = {
        host: dict(
            _names(shared, host, stem),
            job="hammer",
            method=method,
            workers=workers,
            increments=increments,
            stale=stale,
            limit=timeout / 2,
            debug=True,  # an error's key names where it came from
            options=options or {},
        )
        for host in ("a", "b")
    }
    started = time.monotonic()
    counts = run_hosts(shared, specs, timeout)
    counts["seconds"] = time.monotonic() - started
    got = int(re.match(rb"\s*(\d*)", (shared.backing / f"{stem}.count").read_bytes())[1] or 0)
    counts["expected"] = 2 * workers * increments
    counts["lost"] = counts["expected"] - got
    return counts


def plant_old_lock(where: Path, method: str, stem: str, age: float) -> None:
    """Make, directly in the backing directory, a lock of *method* whose holder is gone.

    Its mtime is set *age* seconds back (the rename lock's age is its ctime, which
    cannot be set: the caller waits instead).
    """
    path = where / f"{stem}.lock"
    then = time.time() - age
    if method == "mkdir":
        path.mkdir()
    elif method == "symlink":
        os.symlink(".", path)  # seed 000's first form: no pid to judge, age decides
    elif method == "excl":
        path.write_bytes(b"")  # a shell `set -C` lock: no owner record
    elif method == "rename":
        (where / f"{stem}.lock.locked").write_bytes(b"")
        return
    elif method == "toplock":
        path.write_text(f"{'1' * 20}<>{int(then)}<>\n")
    elif method == "link":  # a holder on a host gone for good: age decides
        path.write_text("perlcompat link pid=12345 host=gone-host token=planted\n")
    os.utime(path, (then, then), follow_symlinks=False)


def takeover(
    shared: SharedDir,
    method: str,
    trials: int = 10,
    workers: int = 3,
    stale: float = 2.0,
    hold: float = 0.02,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Plant an old lock *trials* times; waiters on both hosts break it; summed counts."""
    for trial in range(trials):
        plant_old_lock(shared.backing, method, f"t{trial}", 100.0)
    if method == "rename":
        time.sleep(stale + 0.2)  # its age is the ctime: let the planted markers grow old
    total: dict[str, Any] = {"trials": trials}
    started = time.monotonic()
    for trial in range(trials):
        specs = {
            host: dict(
                _names(shared, host, f"t{trial}"),
                job="takeover",
                method=method,
                workers=workers,
                stale=stale,
                hold=hold,
                limit=timeout / 2,
                debug=True,
            )
            for host in ("a", "b")
        }
        for key, value in run_hosts(shared, specs, timeout).items():
            if isinstance(value, list):
                total.setdefault(key, []).extend(value)
            else:
                total[key] = total.get(key, 0) + value
    total["seconds"] = time.monotonic() - started
    return total


def _row(counts: dict[str, Any], keys: list[str]) -> str:
    extra = {
        k: v
        for k, v in counts.items()
        if k not in keys and k not in ("seconds", "held", "trials") and v
    }
    cells = " ".join(f"{key}={counts.get(key, 0)}" for key in keys)
    return f"{cells} {counts['seconds']:.1f}s {extra if extra else ''}"


def main(argv: list[str]) -> int:
    """Print the hammer and takeover tables for both caching settings."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--increments", type=int, default=200)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--methods", default=",".join(HAMMER_METHODS))
    parser.add_argument("--takeover-methods", default=",".join(TAKEOVER_METHODS))
    parser.add_argument("--caching", choices=["both", "cached", "uncached"], default="both")
    parser.add_argument("--same-hostname", action="store_true", help="host B keeps the hostname")
    args = parser.parse_args(argv)
    settings = {"both": [True, False], "cached": [True], "uncached": [False]}[args.caching]
    host_b = None if args.same_hostname else HOST_B
    with running_sshd() as server:
        for caching in settings:
            label = "default caching" if caching else "caching off"
            for method in filter(None, args.methods.split(",")):
                with (
                    tempfile.TemporaryDirectory() as base,
                    shared_dir(server, Path(base), caching, host_b) as shared,
                ):
                    counts = hammer(shared, method, args.workers, args.increments)
                print(f"hammer {label:15} {method:8} {_row(counts, ['lost', 'doubles'])}")
            for method in filter(None, args.takeover_methods.split(",")):
                with (
                    tempfile.TemporaryDirectory() as base,
                    shared_dir(server, Path(base), caching, host_b) as shared,
                ):
                    counts = takeover(shared, method, args.trials)
                print(f"takeover {label:15} {method:8} {_row(counts, ['doubles', 'expired'])}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
