"""Helpers to run real ``perl`` (and Python children) next to perlcompat in tests.

``run_perl(code, *args)`` runs a snippet to completion.  ``Child`` starts a
long-lived Perl or Python process whose stdin/stdout are pipes, so a test can
wait for a readiness line ("locked") and tell it when to go on ("release")
instead of sleeping.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

PERL = shutil.which("perl") or "/usr/bin/perl"
REPO = Path(__file__).resolve().parent.parent

#: environment for Python children: perlcompat importable from this checkout
CHILD_ENV = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def perl_bytes(data: bytes) -> str:
    """Return a Perl expression for *data* (``pack("H*", ...)``), safe for any bytes."""
    return f'pack("H*", "{data.hex()}")'


def run_perl(
    code: str, *args: str, input: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """Run Perl *code* with *args* to completion and return the finished process."""
    return subprocess.run(
        [PERL, "-e", code, "--", *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def run_python(
    code: str, *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run Python *code* with perlcompat importable and return the finished process."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        timeout=timeout,
        check=False,
        env=CHILD_ENV if env is None else env,
    )


class Child:
    """A Perl or Python process driven line by line over pipes."""

    def __init__(self, argv: list[str], timeout: float = 30) -> None:
        self.timeout = timeout
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=CHILD_ENV,
        )

    @classmethod
    def perl(cls, code: str, *args: str) -> Child:
        """Start ``perl -e CODE ARGS`` (stdout is made unbuffered)."""
        return cls([PERL, "-e", "$| = 1;\n" + code, "--", *args])

    @classmethod
    def python(cls, code: str, *args: str) -> Child:
        """Start ``python -u -c CODE ARGS``."""
        return cls([sys.executable, "-u", "-c", code, *args])

    def expect(self, wanted: str) -> str:
        """Read one line and assert it is *wanted*; return it (the child is killed after
        ``timeout`` seconds without a line, so a stuck child fails the test, not hangs it)."""
        assert self.proc.stdout is not None
        import threading

        timer = threading.Timer(self.timeout, self.proc.kill)
        timer.start()
        try:
            line = self.proc.stdout.readline().decode()
        finally:
            timer.cancel()
        if line.rstrip("\n") != wanted:
            rest = self._finish()
            raise AssertionError(f"expected {wanted!r}, got {line!r}; stderr: {rest}")
        return line

    def readline(self) -> str:
        """Read one line of output (without its newline)."""
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().decode().rstrip("\n")

    def send(self, line: str) -> None:
        """Write *line* and a newline to the child's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def wait(self) -> tuple[int, str, str]:
        """Close stdin, wait, and return (status, remaining stdout, stderr)."""
        out, err = self.proc.communicate(timeout=self.timeout)
        return self.proc.returncode, out.decode(), err.decode()

    def _finish(self) -> str:
        self.proc.kill()
        _out, err = self.proc.communicate(timeout=self.timeout)
        return err.decode()

    def kill(self) -> None:
        """Kill the child if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=self.timeout)


def hammer_together(children: list[Child], counter: Path, cycles: int) -> None:
    """Start *children* at once (each says "ready", then gets "go"), and check the hammer:
    no overlap in any, each did its *cycles*, *counter* counts every update, and every
    process started before any finished (they really ran together).

    Each child ends by printing ``done OVERLAPS DONE START END``.
    """
    try:
        for child in children:
            child.expect("ready")
        for child in children:
            child.send("go")
        reports = []
        for child in children:
            status, out, err = child.wait()
            assert status == 0, err
            _word, overlaps, done, start, end = out.split()
            reports.append((int(overlaps), int(done), float(start), float(end)))
    finally:
        for child in children:
            child.kill()
    assert [r[0] for r in reports] == [0] * len(children)
    assert all(r[1] >= cycles for r in reports)
    assert int(counter.read_text()) == sum(r[1] for r in reports)
    assert max(r[2] for r in reports) < min(r[3] for r in reports)  # they overlapped


def flock_holders(path: str | os.PathLike[str]) -> list[tuple[int, str, bool]]:
    """Return (pid, "READ"/"WRITE", waiting) for each flock(2) lock on *path* (/proc/locks)."""
    st = os.stat(path)
    found = []
    on_device = []
    with open("/proc/locks") as locks:
        for line in locks:
            fields = line.split()
            waiting = len(fields) > 1 and fields[1] == "->"
            if waiting:
                del fields[1]
            # "1: FLOCK  ADVISORY  WRITE 13623 fe:00:2146598 0 EOF"
            if len(fields) < 6 or fields[1] != "FLOCK":
                continue
            major, minor, inode = fields[5].split(":")
            if int(inode) != st.st_ino:
                continue
            found.append((int(fields[4]), fields[3], waiting))
            if (int(major, 16), int(minor, 16)) == (os.major(st.st_dev), os.minor(st.st_dev)):
                on_device.append(found[-1])
    # the same inode number on another device is another file; but some file systems
    # (btrfs subvolumes) report a device in stat() that /proc/locks does not show
    return on_device or found


def wait_until_blocked(pid: int, path: str | os.PathLike[str], timeout: float = 20) -> None:
    """Wait until process *pid* is blocked in flock(2) on *path* (a waiter in /proc/locks)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p == pid and waiting for p, _kind, waiting in flock_holders(path)):
            return
        time.sleep(0.002)
    raise AssertionError(f"process {pid} never blocked in flock on {path}: {flock_holders(path)}")


#: the unprivileged uid/gid that :func:`as_unprivileged` drops to when the tests run as root.
NOBODY = 65534


@contextlib.contextmanager
def shared_directory() -> Iterator[Path]:
    """A fresh directory under /tmp that an unprivileged uid can reach (mode 0755)."""
    base = Path(tempfile.mkdtemp(prefix="pcshared", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for root, dirs, files in os.walk(base):
            for name in dirs + files:
                entry = os.path.join(root, name)
                if not os.path.islink(entry):
                    os.chmod(entry, 0o755)
        shutil.rmtree(base)


def require_root(what: str) -> None:
    """Fail (never skip) a ``privileged`` test that is not running as root."""
    assert os.geteuid() == 0, f"{what} needs root: run as root, or deselect -m 'not privileged'"


def as_unprivileged(func: Callable[[], object]) -> object:
    """Run *func* in a forked child, as uid/gid 65534 when we are root; return its result.

    Root bypasses permission checks, so checks of EACCES paths need another user.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        status = 0
        try:
            os.close(read_end)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            data = pickle.dumps(("ok", func()))
        except BaseException as exc:
            data = pickle.dumps(("error", repr(exc)))
            status = 1
        with os.fdopen(write_end, "wb") as stream:
            stream.write(data)
        os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as stream:
        data = stream.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    assert kind == "ok", value
    return value


def raised_in_thread(func: Callable[[], object], timeout: float = 30) -> BaseException | None:
    """Run *func* in another thread (which waits like another process); what it raised."""
    import threading

    caught: list[BaseException] = []

    def run() -> None:
        try:
            func()
        except BaseException as exc:
            caught.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout)
    return caught[0] if caught else None
