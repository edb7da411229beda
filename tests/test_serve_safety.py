"""``perlcompat serve`` behind any web server and beside other local users (issue 31, part 2).

Each test reproduces a hostile case found by review, against a real ``perlcompat serve``:
a raw FastCGI client (another local user can connect to a TCP port), lighttpd and nginx
in front of it.  Memory is read from /proc (VmRSS of the server), never guessed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_serve import Raw, Reply, nv, rec, request_records, split, wait_gone
from webserver import PACKAGE_ROOT, CgiServer, NginxServer, ServeProcess, free_port

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="serve needs fork")

MiB = 1024 * 1024
MAX_CHILDREN = 4  # --max-children of the shared server: FCGI_MAX_REQS

SCRIPTS = {
    "fresh.py": 'print("Content-Type: text/plain\\n")\nprint("fresh")\n',
    # what the script's environment holds, and whether `date` from PATH ran
    "env.py": """
import json, os, subprocess
ran = subprocess.run(["date"], capture_output=True, check=False).returncode
print("Content-Type: application/json\\n")
print(json.dumps({"env": dict(os.environ), "date": ran}))
""",
    # a truncate-then-write counter that sends a dot a tick while it works; between the
    # truncate and the write it tells the test (the FIFO) and works on until its output
    # fails (the client is gone: EPIPE, as a Perl script's SIGPIPE), or for 20 s; then
    # it warns on stderr (which must not fail) and writes the counter
    "update.py": """
import os, time
from perlcompat import LOCK_EX, OS_ERROR, close, die, flock, open_, print_, seek, truncate
data = os.environ["PERLCOMPAT_DATA_DIR"]
COUNT = open_("+< " + data + "/counter.dat") or die(f"counter: {OS_ERROR}")
flock(COUNT, LOCK_EX)
n = int(COUNT.readline() or 0)
seek(COUNT, 0, 0)
truncate(COUNT, 0)
print("Content-Type: text/plain\\n", flush=True)
with open(data + "/window.fifo", "w") as fifo:
    fifo.write(f"{os.getpid()}\\n")
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        os.write(1, b".")
    except BrokenPipeError:
        break
    time.sleep(0.05)
os.write(2, b"update.py: writing the counter\\n")  # a warning: to the log, and no failure
print_(COUNT, n + 1, "\\n")
close(COUNT)
""",
    # holds its child until the test writes to the gate FIFO
    "gate.py": """
import os, sys
print("Content-Type: text/plain\\n")
print(os.getpid(), flush=True)
with open(os.environ["PERLCOMPAT_DATA_DIR"] + "/gate.fifo", "rb") as gate:
    gate.read(1)
print("released")
""",
    # 32 MiB to stderr, nothing to stdout
    "flood.py": """
import os
with open(os.environ["PERLCOMPAT_DATA_DIR"] + "/pid.fifo", "w") as fifo:
    fifo.write(f"{os.getpid()}\\n")
chunk = b"e" * 65536
for _ in range(512):
    os.write(2, chunk)
print("Content-Type: text/plain\\n")
""",
    # leaves `sleep 300` holding its stdout: in a session of its own (?session), or not
    "detach.py": """
import os, subprocess
alone = os.environ["QUERY_STRING"] == "session"
child = subprocess.Popen(["sleep", "300"], start_new_session=alone)
print("Content-Type: text/plain\\n")
print(child.pid)
""",
    "sha.py": """
import hashlib, sys
body = sys.stdin.buffer.read()
print("Content-Type: text/plain\\n")
print(len(body), hashlib.sha256(body).hexdigest())
""",
    # 8 MiB out
    "big.py": """
import sys
sys.stdout.write("Content-Type: application/octet-stream\\n\\n")
sys.stdout.flush()
for i in range(128):
    sys.stdout.buffer.write(bytes([i]) * 65536)
""",
    # a request's work, noted in a shared log: who ran in which order
    "nap.py": """
import os, time
with open(os.environ["PERLCOMPAT_DATA_DIR"] + "/order.log", "a") as log:
    log.write(os.environ["QUERY_STRING"] + "\\n")
time.sleep(0.5)
print("Content-Type: text/plain\\n\\nok")
""",
    # a non-daemon thread still working when the script's main code ends
    "threads.py": """
import sys, threading, time
def late():
    time.sleep(0.5)
    print("from the thread", flush=True)
print("Content-Type: text/plain\\n", flush=True)
threading.Thread(target=late).start()
""",
    # a threading exit hook (what concurrent.futures registers), no other thread alive
    "thread_hook.py": """
import threading
print("Content-Type: text/plain\\n", flush=True)
threading._register_atexit(lambda: print("hook ran"))
""",
}


@dataclass
class Front:
    base: Path
    www: Path
    data: Path
    serve: ServeProcess
    lighttpd: CgiServer
    nginx: NginxServer

    @property
    def sock(self) -> Path:
        return self.serve.sock


def make_site(base: Path) -> tuple[Path, Path]:
    www, data = base / "www", base / "data"
    www.mkdir()
    data.mkdir()
    for name, code in SCRIPTS.items():
        (www / name).write_text(code.lstrip())
    for name in ("window.fifo", "gate.fifo", "pid.fifo"):
        os.mkfifo(data / name)
    return www, data


def start_serve(base: Path, data: Path, *args: str, **kw: object) -> ServeProcess:
    env = {"PERLCOMPAT_DATA_DIR": str(data)}
    sock = base / f"s{len(list(base.glob('s*.sock')))}.sock"
    return ServeProcess(base / "www", sock, *args, env=env, **kw).start()  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    base = tmp_path_factory.mktemp("safety")
    www, data = make_site(base)
    serve = start_serve(base, data, "--timeout", "30", "--max-children", str(MAX_CHILDREN))
    nginx_dir = base / "nginx"
    nginx_dir.mkdir()
    env = {"PERLCOMPAT_DATA_DIR": str(data), "PYTHONPATH": PACKAGE_ROOT}
    lighttpd = CgiServer(www, env, fastcgi=str(serve.sock), stream=True)
    nginx = NginxServer(www, str(serve.sock), nginx_dir)
    try:
        lighttpd.start()
        nginx.start()
        yield Front(base, www, data, serve, lighttpd, nginx)
    finally:
        nginx.stop()
        lighttpd.stop()
        assert serve.stop() == 0, serve.log


# -- helpers -------------------------------------------------------------------------
def params(front_www: Path, script: str, query: str = "", body: bytes = b"") -> dict[str, str]:
    return {
        "SCRIPT_FILENAME": str(front_www / script),
        "REQUEST_METHOD": "POST" if body else "GET",
        "QUERY_STRING": query,
        "CONTENT_LENGTH": str(len(body)),
    }


def ask(sock: Path | tuple[str, int], script_params: dict[str, str], body: bytes = b"") -> Raw:
    """A connection that has sent one request (id 1) and GET_VALUES after it."""
    client = connect(sock)
    client.send(*request_records(1, script_params, body), rec(9, 0, nv({"FCGI_MAX_REQS": ""})))
    return client


def connect(where: Path | tuple[str, int], source: str = "", timeout: float = 30) -> Raw:
    client = Raw.__new__(Raw)
    if isinstance(where, Path):
        client.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        client.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if source:
            client.sock.bind((source, 0))
    client.sock.settimeout(timeout)
    client.sock.connect(str(where) if isinstance(where, Path) else where)
    client.buf = bytearray()
    client.replies = {}
    return client


def until_values(client: Raw) -> list[tuple[int, int, bytes]]:
    """The records before the GET_VALUES_RESULT: the server has read what came before it."""
    seen = []
    while True:
        kind, rid, content = client._record()
        if kind == 10:
            return seen
        seen.append((kind, rid, content))
        if kind == 6:
            client.replies.setdefault(rid, Reply()).stdout += content
        elif kind == 3:
            client.replies.setdefault(rid, Reply()).app_status = struct.unpack("!IB3x", content)[0]


def read_fifo(path: Path, timeout: float = 30) -> bytes:
    """One line a script writes into the FIFO at *path*."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    data = b""
    deadline = time.monotonic() + timeout
    try:
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            readable, _, _ = select.select([fd], [], [], max(left, 0))
            assert readable, f"nothing came through {path.name} in {timeout} s"
            chunk = os.read(fd, 4096)
            data += chunk
    finally:
        os.close(fd)
    return data


def open_gate(data: Path) -> None:
    """Let gate.py go on: a byte through its FIFO, once it has opened it."""

    def release() -> None:
        with open(data / "gate.fifo", "wb") as gate:  # opens when gate.py has
            gate.write(b"g")

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "gate.py never opened its gate"


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"


# -- 1. a request sets only CGI variables --------------------------------------------
def test_params_cannot_set_what_the_script_and_its_children_load(
    front: Front, tmp_path: Path
) -> None:
    """LD_PRELOAD, PATH, PYTHONPATH, PERLCOMPAT_LOCK_*, http_proxy from params: none
    arrives; the script's `date` is the real one and no library of the client's loads."""
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "ran"
    (evil / "date").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (evil / "date").chmod(0o755)
    preload = "/nonexistent/evil.so"
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler:  # a real library that leaves a mark when loaded
        (evil / "evil.c").write_text(
            "#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void"
            f' mark(void) {{ close(open("{marker}.so", O_CREAT | O_WRONLY, 0644)); }}\n'
        )
        preload = str(evil / "evil.so")
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-o", preload, str(evil / "evil.c")], check=True
        )
    hostile = {
        "LD_PRELOAD": preload,
        "PATH": str(evil),
        "PYTHONPATH": str(evil),
        "PERLCOMPAT_LOCK_ROOT": str(evil),
        "PERLCOMPAT_LOCK_URL": "redis://evil.example:6379/0",
        "PERLCOMPAT_DATA_DIR": str(evil),
        "http_proxy": "http://evil.example:8080",
        "HTTP_PROXY": "http://evil.example:8080",
        "BASH_ENV": str(evil / "env.sh"),
        "SSL_CERT_FILE": str(evil / "ca.pem"),
        "HTTP_X_BAD-NAME": "x",
    }
    wanted = {"HTTP_X_TOKEN": "kept", "SERVER_NAME": "example.org", "REMOTE_USER": "alice"}
    client = ask(front.sock, {**params(front.www, "env.py"), **hostile, **wanted})
    try:
        reply = client.read(1)[1]
    finally:
        client.close()
    assert reply.app_status == 0, reply
    seen = json.loads(split(reply.stdout)[1])
    env = seen["env"]
    own = front.serve.env  # the server's own environment
    for name in hostile:
        assert env.get(name) == own.get(name), (name, env.get(name))
    for name, value in wanted.items():
        assert env[name] == value
    assert seen["date"] == 0
    assert not marker.exists() and not Path(f"{marker}.so").exists()


def test_the_environment_filter_itself() -> None:
    from perlcompat.tools.request import cgi_environment

    env = cgi_environment(
        {
            b"QUERY_STRING": b"a=1",
            b"HTTP_COOKIE": b"c=1",
            b"HTTP_PROXY": b"http://x",
            b"http_proxy": b"http://x",
            b"LD_LIBRARY_PATH": b"/x",
            b"HTTP_lower": b"x",
            b"CONTENT_TYPE": b"text/plain\0hidden",
            b"SERVER_PORT": b"80",
            b"SSL_CLIENT_S_DN_CN": b"alice",
            b"SSL_CERT_FILE": b"/x",
            b"SSL_CERT_DIR": b"/x",
        }
    )
    assert env == {
        "QUERY_STRING": "a=1",
        "HTTP_COOKIE": "c=1",
        "SERVER_PORT": "80",
        "SSL_CLIENT_S_DN_CN": "alice",
    }


# -- 2. a client that goes away loses no data ----------------------------------------
@pytest.mark.parametrize("client", ["raw", "lighttpd", "nginx"])
def test_a_client_gone_mid_update_leaves_the_counter_whole(front: Front, client: str) -> None:
    """The counter is truncated, then written; the client leaves in between.  serve
    closes the script's output pipes (as mod_cgi does) instead of SIGTERM: the update
    completes and the counter goes from 41 to 42, never to empty.  (lighttpd streams
    answers here: buffering them, the default, it does not see the client go.)"""
    counter = front.data / "counter.dat"
    counter.write_text("41\n")
    if client == "raw":
        conn = ask(front.sock, params(front.www, "update.py"))
        pid = int(read_fifo(front.data / "window.fifo"))
        conn.close()
    else:
        server = front.lighttpd if client == "lighttpd" else front.nginx
        http = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        http.sendall(b"GET /update.py HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        pid = int(read_fifo(front.data / "window.fifo"))
        http.close()
    wait_gone(pid)
    assert counter.read_text() == "42\n"
    assert front.serve.wait_for("update.py: writing the counter")  # its stderr: serve's log


# -- 3. nothing unbounded in the parent ----------------------------------------------
def test_one_connection_gets_fcgi_max_reqs_requests_and_no_more(front: Front) -> None:
    """200 multiplexed requests with 250 KiB params, never finished: the ones over
    FCGI_MAX_REQS are refused (FCGI_OVERLOADED) and the server does not hold their params."""
    before = rss(front.serve.pid)
    big = nv({"SCRIPT_FILENAME": str(front.www / "fresh.py"), "HTTP_X_PAD": "p" * 250_000})
    client = connect(front.sock)
    try:
        for rid in range(1, 201):
            records = [rec(1, rid, struct.pack("!HB5x", 1, 1))]
            records += [rec(4, rid, big[i : i + 65535]) for i in range(0, len(big), 65535)]
            client.send(*records)  # no empty PARAMS: the requests stay open
        client.send(rec(9, 0, nv({"FCGI_MAX_REQS": ""})))
        seen = until_values(client)
        grown = rss(front.serve.pid) - before
    finally:
        client.close()
    overloaded = {rid for kind, rid, content in seen if kind == 3 and content[4] == 2}
    assert overloaded == set(range(MAX_CHILDREN + 1, 201))
    assert grown < 24 * MiB, f"the server grew by {grown / MiB:.1f} MiB"


def test_bodies_of_queued_requests_are_spooled_not_held(tmp_path: Path) -> None:
    """Three 16 MiB bodies wait behind a running request: the server's memory grows by
    far less than their 48 MiB, and each body then reaches its script whole."""
    www, data = make_site(tmp_path)
    serve = start_serve(tmp_path, data, "--max-children", "1", "--timeout", "60")
    clients: list[Raw] = []
    try:
        gate = ask(serve.sock, params(www, "gate.py"))
        clients.append(gate)
        gate.read_until(1, b"\r\n\r\n")  # it runs and holds the only child
        before = rss(serve.pid)
        bodies = [os.urandom(16 * MiB) for _ in range(3)]
        for body in bodies:
            clients.append(ask(serve.sock, params(www, "sha.py", body=body), body))
            until_values(clients[-1])  # its body is all in
        grown = rss(serve.pid) - before
        open_gate(data)
        answers = [split(c.read(1)[1].stdout)[1] for c in clients[1:]]
    finally:
        for client in clients:
            client.close()
        assert serve.stop() == 0, serve.log
    assert grown < 16 * MiB, f"the server grew by {grown / MiB:.1f} MiB"
    for body, answer in zip(bodies, answers):
        assert answer.split() == [
            str(len(body)).encode(),
            hashlib.sha256(body).hexdigest().encode(),
        ]


def pipe_full(pid: int, fd: int) -> bool | None:
    """Whether the pipe on *pid*'s *fd* is full (None once the process is gone)."""
    try:
        end = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        size = fcntl.fcntl(end, 1032)  # F_GETPIPE_SZ
        pending = struct.unpack("i", fcntl.ioctl(end, termios.FIONREAD, b"\0" * 4))[0]
    finally:
        os.close(end)
    return bool(pending >= size)


def test_stderr_to_a_client_that_does_not_read_is_not_buffered(front: Front) -> None:
    """32 MiB of stderr for a client that reads nothing: the server stops reading the
    script's stderr (its pipe stays full) instead of holding it; all of it arrives later."""
    before = rss(front.serve.pid)
    client = ask(front.sock, params(front.www, "flood.py"))
    try:
        pid = int(read_fifo(front.data / "pid.fifo"))
        full_for = 0
        deadline = time.monotonic() + 60
        while full_for < 10 and time.monotonic() < deadline:  # full for 1 s: not read
            state = pipe_full(pid, 2)
            if state is None:
                break  # it wrote everything: the server took it all
            full_for = full_for + 1 if state else 0
            time.sleep(0.1)
        grown = rss(front.serve.pid) - before
        reply = client.read(1)[1]
    finally:
        client.close()
    assert grown < 12 * MiB, f"the server grew by {grown / MiB:.1f} MiB"
    assert len(reply.stderr) == 32 * MiB and reply.app_status == 0


# -- 4. connections: idle ones, one peer's share -------------------------------------
def test_300_idle_connections_lock_nobody_out(tmp_path: Path) -> None:
    """Another local user (here 127.0.0.2) opens 300 connections and sends nothing: it
    gets its share of --max-connections (256) and a request from 127.0.0.1 is served at once."""
    www, data = make_site(tmp_path)
    port = free_port()
    serve = start_serve(tmp_path, data, fastcgi=f"127.0.0.1:{port}")
    idle = []
    try:
        for _ in range(300):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.2", 0))
            sock.connect(("127.0.0.1", port))
            idle.append(sock)
        client = ask(("127.0.0.1", port), params(www, "fresh.py"))
        client.sock.settimeout(20)
        reply = client.read(1)[1]
        client.close()
        closed = 0
        for sock in idle:
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError, ConnectionError):
                closed += sock.recv(1) == b""
    finally:
        for sock in idle:
            sock.close()
        assert serve.stop() == 0, serve.log
    assert split(reply.stdout)[1] == b"fresh\n"
    assert closed >= 300 - 128  # one peer: half of --max-connections
    assert "TCP 127.0.0.1 is open to every local user" in serve.log  # said at start


def test_a_connection_without_a_whole_request_is_closed_after_idle_timeout(
    tmp_path: Path,
) -> None:
    www, data = make_site(tmp_path)
    serve = start_serve(tmp_path, data, "--idle-timeout", "1")
    try:
        slow = connect(serve.sock)  # a request begun and never finished (slowloris)
        slow.send(rec(1, 1, struct.pack("!HB5x", 1, 1)), rec(4, 1, nv({"QUERY_STRING": ""})))
        assert slow.sock.recv(1) == b""
        slow.close()
        kept = ask(serve.sock, params(www, "fresh.py"))  # answered, then idle: closed too
        assert split(kept.read(1)[1].stdout)[1] == b"fresh\n"
        assert kept.sock.recv(1) == b""
        kept.close()
        assert serve.wait_for("idle past --idle-timeout")
    finally:
        assert serve.stop() == 0, serve.log


def test_one_peer_cannot_crowd_out_another(tmp_path: Path) -> None:
    """127.0.0.2 opens 12 connections with two requests each: it gets half of
    --max-connections 8 (eight requests, two running), the other connections are closed;
    127.0.0.1's request then starts as soon as a child is free, not after the flood
    (the next to run is the peer's with the fewest running, then the least served)."""
    www, data = make_site(tmp_path)
    port = free_port()
    args = ("--max-children", "2", "--max-connections", "8")
    serve = start_serve(tmp_path, data, *args, fastcgi=f"127.0.0.1:{port}")
    flood: list[Raw] = []
    refused = 0
    try:
        for i in range(12):
            client = connect(("127.0.0.1", port), source="127.0.0.2", timeout=10)
            flood.append(client)
            try:
                for rid in (1, 2):
                    client.send(*request_records(rid, params(www, "nap.py", f"flood{i}.{rid}")))
                client.send(rec(9, 0, nv({"FCGI_MAX_REQS": ""})))
                until_values(client)
            except (EOFError, ConnectionError):
                refused += 1
        mine = ask(("127.0.0.1", port), params(www, "nap.py", "mine"))
        assert split(mine.read(1)[1].stdout)[1] == b"ok\n"
        mine.close()
    finally:
        for client in flood:
            client.close()
        assert serve.stop() == 0, serve.log
    order = (data / "order.log").read_text().split()
    assert refused >= 4
    assert order.index("mine") <= 5, order  # first come, first served: 8


def test_running_out_of_descriptors_does_not_spin(tmp_path: Path) -> None:
    """With its descriptors used up by connections that all have a request, serve stops
    watching the listener for a while (a readable listener it cannot accept from made
    the loop spin, a log line each turn); when requests end, the rest are served."""
    www, data = make_site(tmp_path)
    serve = start_serve(tmp_path, data, "--max-children", "1", "--timeout", "60")
    clients: list[Raw] = []
    try:
        gate = ask(serve.sock, params(www, "gate.py"))
        clients.append(gate)
        gate.read_until(1, b"\r\n\r\n")
        used = len(os.listdir(f"/proc/{serve.pid}/fd"))
        import resource

        hard = resource.prlimit(serve.pid, resource.RLIMIT_NOFILE)[1]
        resource.prlimit(serve.pid, resource.RLIMIT_NOFILE, (used + 3, hard))
        for _ in range(8):  # 3 fit, each with a request queued; 5 wait in the backlog
            clients.append(ask(serve.sock, params(www, "fresh.py")))
        assert serve.wait_for("accept: Too many open files")
        time.sleep(1)  # the window in which a spinning loop logs thousands of lines
        open_gate(data)
        answers = [split(client.read(1)[1].stdout)[1] for client in clients[1:]]
        for client in clients:
            client.close()
        clients = []
        resource.prlimit(serve.pid, resource.RLIMIT_NOFILE, (hard, hard))
        after = ask(serve.sock, params(www, "fresh.py"))
        clients.append(after)
        assert split(after.read(1)[1].stdout)[1] == b"fresh\n"
    finally:
        for client in clients:
            client.close()
        assert serve.stop() == 0, serve.log
    # each got an answer: its script's, or a 503 where no descriptor was left to open it
    assert set(answers) <= {b"fresh\n", b"503 Service Unavailable\n"}, answers
    assert serve.log.count("accept: ") < 100, serve.log[-2000:]


# -- 5. the script checked is the script run -----------------------------------------
@pytest.mark.parametrize("swap", ["dir-symlink", "fifo", "dev-zero"])
def test_a_script_swapped_after_its_check_is_not_what_runs(tmp_path: Path, swap: str) -> None:
    """The request is checked, then waits for the only child; meanwhile its directory
    becomes a symlink out of --root, or the script a FIFO or /dev/zero.  The script
    opened at the check runs; nothing outside runs, the server neither blocks nor dies."""
    www, data = make_site(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.py").write_text('print("Content-Type: text/plain\\n")\nprint("outside")\n')
    sub = www / "sub"
    sub.mkdir()
    (sub / "s.py").write_text('print("Content-Type: text/plain\\n")\nprint("inside")\n')
    serve = start_serve(tmp_path, data, "--max-children", "1", "--timeout", "60")
    clients: list[Raw] = []
    try:
        gate = ask(serve.sock, params(www, "gate.py"))
        clients.append(gate)
        gate.read_until(1, b"\r\n\r\n")
        queued = ask(serve.sock, params(www, "sub/s.py"))
        clients.append(queued)
        queued.sock.settimeout(20)
        until_values(queued)  # checked and queued
        if swap == "dir-symlink":
            sub.rename(www / "sub.old")
            sub.symlink_to(outside)
        else:
            (sub / "s.py").rename(sub / "s.old")
            if swap == "fifo":
                os.mkfifo(sub / "s.py")
            else:
                (sub / "s.py").symlink_to("/dev/zero")
        open_gate(data)
        reply = queued.read(1)[1]
        after = ask(serve.sock, params(www, "fresh.py"))
        clients.append(after)
        assert split(after.read(1)[1].stdout)[1] == b"fresh\n"  # the server still serves
    finally:
        for client in clients:
            client.close()
        if swap == "fifo":
            with pytest.raises(OSError):  # nobody blocked on it: no reader to meet
                os.open(sub / "s.py", os.O_WRONLY | os.O_NONBLOCK)
        assert serve.stop() == 0, serve.log
    assert split(reply.stdout)[1] == b"inside\n"


def test_the_descriptor_is_checked_not_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory swapped for a symlink between the path check and the open (made
    certain here by a realpath that does not resolve), a FIFO, a script too big."""
    from perlcompat.tools import scripts

    www, outside = tmp_path / "www", tmp_path / "outside"
    www.mkdir()
    outside.mkdir()
    (outside / "s.py").write_text("print('outside')\n")
    (www / "link").symlink_to(outside)
    os.mkfifo(www / "fifo.py")
    (www / "huge.py").write_bytes(b"#" * (scripts.MAX_SCRIPT + 1))
    (www / "ok.py").write_text("x = 1\n")
    logged: list[str] = []
    found = scripts.Scripts(str(www), (".py",), logged.append)
    assert found.load(str(www / "fifo.py")) == 403  # and it did not block
    assert found.load(str(www / "huge.py")) == 403
    path, code = found.load(str(www / "ok.py"))  # type: ignore[misc]
    assert path == str(www / "ok.py") and not isinstance(code, BaseException)
    monkeypatch.setattr(scripts.os.path, "realpath", lambda p: p)
    assert found.load(str(www / "link" / "s.py")) == 403
    assert "outside --root" in logged[-1]


# -- 6. --timeout with a process holding the script's stdout -------------------------
def test_timeout_answers_while_a_detached_process_holds_stdout(tmp_path: Path) -> None:
    """`sleep 300` in a session of its own holds the script's stdout: the answer comes at
    --timeout (the pipes are closed), while that process still runs."""
    www, data = make_site(tmp_path)
    serve = start_serve(tmp_path, data, "--timeout", "1")
    try:
        client = ask(serve.sock, params(www, "detach.py", "session"))
        client.sock.settimeout(40)
        reply = client.read(1)[1]
        client.close()
        sleeper = int(split(reply.stdout)[1])
        assert alive(sleeper)  # answered before it ended
        os.kill(sleeper, signal.SIGKILL)
    finally:
        assert serve.stop() == 0, serve.log
    assert reply.app_status == 0


def test_a_script_that_has_exited_is_never_signalled(tmp_path: Path) -> None:
    """The script exits, leaving `sleep 300` (its process group) holding stdout; at
    --timeout serve closes the pipes and sends no signal to the reaped pid's group."""
    www, data = make_site(tmp_path)
    serve = start_serve(tmp_path, data, "--timeout", "1")
    try:
        client = ask(serve.sock, params(www, "detach.py", "group"))
        reply = client.read(1)[1]
        client.close()
        sleeper = int(split(reply.stdout)[1])
        assert alive(sleeper)  # no SIGTERM to a group whose leader was reaped
        os.kill(sleeper, signal.SIGKILL)
        # and the log says what was done: no "killed" for a script that had ended
        assert serve.wait_for("detach.py: its output cut (it had ended) after --timeout 1 s")
        assert "killed" not in serve.log
    finally:
        assert serve.stop() == 0, serve.log
    assert reply.app_status == 0


def test_never_signals_a_request_whose_exit_is_known() -> None:
    from perlcompat.tools.request import Connection, Request
    from perlcompat.tools.server import _alive

    request = Request(Connection(socket.socket()), 1, False, pid=os.getpid())
    assert _alive(request)
    request.exit_status = 0
    assert not _alive(request)
    request.exit_status, request.app_status = None, 0
    assert not _alive(request)
    request.conn.sock.close()


# -- also: slow readers, leftover threads --------------------------------------------
def test_a_client_that_stops_reading_is_let_go(tmp_path: Path) -> None:
    """8 MiB to a client that reads nothing: --timeout stops the script, then the
    connection, idle, is closed: nothing waits for that client forever."""
    www, data = make_site(tmp_path)
    serve = start_serve(tmp_path, data, "--timeout", "1", "--idle-timeout", "1")
    try:
        client = connect(serve.sock)
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.send(*request_records(1, params(www, "big.py")))
        assert serve.wait_for("idle past --idle-timeout", timeout=30)
        with pytest.raises(EOFError):
            client.read(1)
        client.close()
    finally:
        assert serve.stop() == 0, serve.log


def test_a_scripts_threads_finish_before_it_exits(front: Front) -> None:
    client = ask(front.sock, params(front.www, "threads.py"))
    try:
        reply = client.read(1)[1]
    finally:
        client.close()
    assert split(reply.stdout)[1] == b"from the thread\n"
    client = ask(front.sock, params(front.www, "thread_hook.py"))
    try:
        reply = client.read(1)[1]
    finally:
        client.close()
    assert split(reply.stdout)[1] == b"hook ran\n"  # run even with no thread to wait for


# -- behind nginx as behind lighttpd -------------------------------------------------
@pytest.mark.parametrize("server", ["lighttpd", "nginx"])
def test_requests_through_the_web_server(front: Front, server: str) -> None:
    http = front.lighttpd if server == "lighttpd" else front.nginx
    assert http.request("fresh.py") == (200, b"fresh\n")
    body = os.urandom(300_000)
    status, answer = http.request("sha.py", data=body)
    assert (status, answer.split()) == (200, [b"300000", hashlib.sha256(body).hexdigest().encode()])
    status, answer = http.request("big.py")
    assert status == 200 and answer == b"".join(bytes([i]) * 65536 for i in range(128))


# -- short fuzz: random records crash nothing ----------------------------------------
def test_random_records_crash_nothing(front: Front) -> None:
    import random

    rng = random.Random(31)
    before = rss(front.serve.pid)
    for _ in range(20):
        client = connect(front.sock, timeout=10)
        records = []
        for _ in range(100):
            kind = rng.choice([1, 2, 4, 5, 8, 9, 11, rng.randrange(256)])
            rid = rng.choice([0, 1, 2, rng.randrange(65536)])
            content = rng.randbytes(rng.choice([0, 8, 100, 3000]))
            if kind == 1 and rng.random() < 0.7:
                content = struct.pack("!HB5x", rng.choice([1, 1, 2, 3]), rng.randrange(2))
            records.append(rec(kind, rid, content))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            client.send(*records)  # dropped as not FastCGI: fine
        client.close()
    fresh = ask(front.sock, params(front.www, "fresh.py"))
    assert split(fresh.read(1)[1].stdout)[1] == b"fresh\n"
    fresh.close()
    assert rss(front.serve.pid) - before < 24 * MiB
