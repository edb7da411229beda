"""The forker of ``perlcompat serve`` on its own: spares, requests, exits, in both of its modes.

Where the system has pidfds the forker forks with the C library's ``fork()`` (no
``os.register_at_fork`` handlers) and watches each child through its pidfd; elsewhere
it uses ``os.fork`` and a SIGCHLD handler.  Both are run here, in the test process.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Iterator

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="serve needs fork")

SCRIPT = """
import os, random, subprocess, sys
print("Content-Type: text/plain\\n")
print(random.random(), os.getpid(), os.environ["QUERY_STRING"], sys.stdin.read())
os.environ["ADDED"] = "added"
del os.environ["GONE"]
shell = 'echo "$QUERY_STRING|$ADDED|$GONE|$HTTP_PROXY|$SERVER_OWN|$C_ONLY"'
sys.stdout.flush()
print(subprocess.run(["sh", "-c", shell], capture_output=True, text=True).stdout.strip())
links = []
for fd in os.listdir("/proc/self/fd"):
    try:
        links.append(os.readlink("/proc/self/fd/" + fd))
    except OSError:
        pass
print(sum("pidfd" in link for link in links))
"""


@pytest.fixture(params=["pidfd", "sigchld", "pidfd, a variable only C code set"])
def forker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    if sys.platform == "win32":
        pytest.skip("serve needs fork")
    from perlcompat.tools import forker as forker_module

    c_only = request.param.endswith("C code set")
    if c_only:  # in the C library's environment, not in os.environ
        os.putenv("C_ONLY", "from C")
        request.addfinalizer(lambda: os.unsetenv("C_ONLY"))
    request.node.c_only = "from C" if c_only else ""
    if request.param == "sigchld":
        monkeypatch.setattr(forker_module, "_pidfds", lambda: False)
    else:
        try:
            os.close(os.pidfd_open(os.getpid()))
        except (AttributeError, OSError):
            pytest.skip("this system has no pidfds")
    monkeypatch.setenv("SERVER_OWN", "server's own")
    started = forker_module.Forker(lambda: None)
    try:
        yield started
    finally:
        started.close()


def _wait_for(forker: object, kind: bytes, pid: int = 0) -> tuple[int, int, list[int]]:
    """The next message of *kind* (for *pid*, if given): (pid, status, fds)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for got, got_pid, status, fds in forker.messages():  # type: ignore[attr-defined]
            if got == kind and (not pid or got_pid == pid):
                return got_pid, status, fds
            for fd in fds:
                os.close(fd)
        select.select([forker.sock], [], [], 1.0)  # type: ignore[attr-defined]
    raise AssertionError(f"no {kind!r} message from the forker within 30 s")


def _run(spare: tuple[int, list[int]], path: str, query: str) -> tuple[bytes, int]:
    """Send one request to *spare*; return (its stdout, the status it reported)."""
    from perlcompat.tools import runner

    _pid, (ctl, out, err) = spare
    code = compile(SCRIPT, path, "exec")
    env = {"QUERY_STRING": query, "GONE": "x", "HTTP_PROXY": "http://evil.example/"}
    os.write(ctl, runner.request_message(path, code, "", env, b"body"))
    answer = bytearray()
    while True:
        chunk = os.read(out, 65536)
        if not chunk:
            break
        answer += chunk
    status = os.read(ctl, 16)
    for fd in (ctl, out, err):
        os.close(fd)
    return bytes(answer), status[0]


def test_spares_run_requests_and_their_exits_are_reported(
    forker: object, tmp_path, request: pytest.FixtureRequest
) -> None:
    path = str(tmp_path / "script.py")
    spares = []
    for _ in range(3):
        assert forker.ask()  # type: ignore[attr-defined]
        pid, _status, fds = _wait_for(forker, b"S")
        assert len(fds) == 3
        spares.append((pid, fds))
    answers = []
    for number, spare in enumerate(spares[:2]):
        answer, status = _run(spare, path, f"q{number}")
        assert status == 0
        assert _wait_for(forker, b"X", spare[0])[1] == 0  # exited with 0, reaped, reported
        head, body = answer.split(b"\n\n", 1)
        assert head == b"Content-Type: text/plain"
        number_line, shell_line, pidfds = body.decode().splitlines()
        # the C library's environment: the request's variables, the server's own, the
        # script's changes; never HTTP_PROXY from a request
        assert shell_line == f"q{number}|added|||server's own|{request.node.c_only}"
        random_value, child_pid, query, stdin = number_line.split()
        assert (int(child_pid), query, stdin) == (spare[0], f"q{number}", "body")
        assert pidfds == "0"  # the forker watches the others through pidfds: none is inherited
        answers.append(random_value)
    assert answers[0] != answers[1]  # random is reseeded in every child
    killed = spares[2][0]
    os.kill(killed, signal.SIGKILL)
    status = _wait_for(forker, b"X", killed)[1]
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    for fd in spares[2][1]:
        os.close(fd)


SHARED = """
import sys
from perlcompat.tools import runner
print("Content-Type: text/plain\\n")
print(sys._getframe().f_code in runner.CODES.values(), len(runner.CODES))
"""


def test_a_scripts_code_reaches_the_spares_forked_after_it(forker: object, tmp_path) -> None:
    """The first request of a script sends its code; the forker keeps a copy, and the
    spares forked after that run the copy (no unmarshalling in the child)."""
    from perlcompat.tools import runner

    code = compile(SHARED, str(tmp_path / "shared.py"), "exec")
    seen = []
    for _ in range(3):
        assert forker.ask()  # type: ignore[attr-defined]
        _pid, _status, (ctl, out, err) = _wait_for(forker, b"S")
        os.write(ctl, runner.request_message(str(tmp_path / "shared.py"), code, "", {}, b""))
        answer = bytearray()
        while chunk := os.read(out, 65536):
            answer += chunk
        for fd in (ctl, out, err):
            os.close(fd)
        seen.append(answer.split(b"\n\n", 1)[1].strip().decode())
    # the first spare was forked before the code was sent: it unmarshalled it
    assert seen == ["False 0", "True 1", "True 1"]


def test_a_forker_with_a_second_thread_forks_with_os_fork() -> None:
    """The C library's fork() would copy locks another thread may hold: only one thread."""
    import threading

    from perlcompat.tools import forker as forker_module

    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        pytest.skip("this system has no pidfds")
    release = threading.Event()
    other = threading.Thread(target=release.wait, args=(60,))
    other.start()
    try:
        assert forker_module._pidfds() is False
    finally:
        release.set()
        other.join()
    if threading.active_count() == 1:  # pytest's own threads, if any, would keep it False
        # a joined thread's OS thread may still be exiting: /proc lists it a moment longer
        deadline = time.monotonic() + 30
        while len(os.listdir("/proc/self/task")) != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert forker_module._pidfds() is True
