"""``perlcompat serve``: ported CGI scripts over FastCGI, a forked child per request.

Three kinds of client: a real lighttpd (mod_fastcgi to serve for ``.py``, mod_cgi
running perl for ``.cgi``), Debian's ``cgi-fcgi`` (libfcgi-bin) for raw params, and a
raw FastCGI client written here (independent of ``perlcompat.tools.fastcgi``) for
multiplexed, aborted and dropped requests.
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
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from redis_server import RedisServer
from webserver import PACKAGE_ROOT, CgiServer, ServeProcess, copy_examples, find_tool

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="serve needs fork")

TIMEOUT = 3  # --timeout of the main server (s)
ENV_WITH_PACKAGE = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}

SCRIPTS = {
    # globals and module state are fresh in every request
    "fresh.py": """
import json
try:
    hits += 1
except NameError:
    hits = 1
json.__dict__.setdefault("_serve_hits", []).append(1)
print("Content-Type: text/plain\\n")
print(hits, len(json._serve_hits), __name__, __file__)
""",
    # a file written and never closed: Python's exit writes it (before: lost)
    "unclosed.py": """
import os
f = open(os.path.join(os.environ["PERLCOMPAT_DATA_DIR"], "unclosed.txt"), "a")
f.write("written, never closed\\n")
print("Content-Type: text/plain\\n\\nok")
""",
    # the usual re-encoding of stdout (serve's own stdout is /dev/null here: seekable)
    "reconfigure.py": """
import sys
sys.stdout.reconfigure(encoding="cp932")
print("Content-Type: text/plain\\n")
print("\\u65e5\\u672c")
""",
    # exit(3) in the middle: what was printed is the answer
    "exit3.py": """
import sys
print("Content-Type: text/plain\\n")
print("before")
sys.exit(3)
print("after")
""",
    "die_early.py": """
from perlcompat import die
die("broken early")
""",
    "raise_early.py": """
raise RuntimeError("an exception before any header")
""",
    "crash.py": """
import os, resource, signal
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
os.kill(os.getpid(), signal.SIGSEGV)
""",
    "no_blank_line.py": """
import sys
sys.stdout.write("Content-Type: text/plain\\nno blank line, then the end")
""",
    "bad_header.py": """
print("this is not a header\\n")
print("body")
""",
    "syntax.py": """
print("Content-Type: text/plain\\n")
def (
""",
    # 8 MiB out: more than the server buffers for a connection (back pressure)
    "big.py": """
import sys
sys.stdout.write("Content-Type: application/octet-stream\\n\\n")
sys.stdout.flush()
for i in range(128):
    sys.stdout.buffer.write(bytes([i]) * 65536)
""",
    # Perl's STDIN/STDOUT/STDERR handles (made in the parent by --preload of every name)
    "stdio.py": """
import os
from perlcompat import STDERR, STDIN, STDOUT, Scalar, print_, read
buf = Scalar()
read(STDIN, buf, int(os.environ["CONTENT_LENGTH"]))
print("Content-Type: text/plain")
print_(STDOUT, "\\n")
print("python print")
print_(STDOUT, buf.value, "\\n")
print_(STDERR, "to the log\\n")
print("last")
""",
    "redirect.py": """
print("Location: http://example.com/next\\n")
""",
    # takes a mkdir lock and a flock, then never ends (?ignore-term: not even on SIGTERM)
    "hold.py": """
import os, signal, sys
from perlcompat import LOCK_EX, flock, lock, open_
data = os.environ["PERLCOMPAT_DATA_DIR"]
if os.environ.get("QUERY_STRING") == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
assert lock(data + "/hold.lock") == 1
OUT = open_(">> " + data + "/held.dat")
assert flock(OUT, LOCK_EX) == 1
print("Content-Type: text/plain\\n")
print(os.getpid(), flush=True)
while True:
    signal.pause()
""",
    # the lock and flock hold.py takes: free now?
    "take.py": """
import os
from perlcompat import LOCK_EX, LOCK_NB, Lock, LockTimeout, flock, open_
data = os.environ["PERLCOMPAT_DATA_DIR"]
try:
    with Lock(data + "/hold.lock", timeout=2):  # a dead holder's lock is recovered at once
        got = 1
except LockTimeout:
    got = 0
OUT = open_(">> " + data + "/held.dat")
print("Content-Type: text/plain\\n")
print("lock", got, "flock", flock(OUT, LOCK_EX | LOCK_NB))
""",
    # what the child inherited: fds, signal dispositions, perlcompat state
    "state.py": """
import gc, os, signal, sys
from perlcompat import alarm
from perlcompat.locks import cleanup
fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        fds[name] = os.readlink("/proc/self/fd/" + name)
    except OSError:
        pass
own = {fd: t for fd, t in fds.items() if fd in ("0", "1", "2")}
others = {fd: t for fd, t in fds.items() if fd not in own and not t.startswith("/proc/")}
print("Content-Type: application/json\\n")
import json
print(json.dumps({
    "std": sorted(own), "others": others,
    "term": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
    "chld": signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL,
    "tracked": len(cleanup.tracked()), "alarm": alarm(0), "cwd": os.getcwd(),
    "argv": sys.argv, "pgid_is_pid": os.getpgid(0) == os.getpid(),
    "stdin": sys.stdin.read(), "proxy": os.environ.get("HTTP_PROXY"), "gc": gc.isenabled(),
}))
""",
    "sha.py": """
import hashlib, os, sys
body = sys.stdin.buffer.read()
print("Content-Type: text/plain\\n")
print(len(body), os.environ.get("CONTENT_LENGTH"), hashlib.sha256(body).hexdigest())
""",
    # prints its pid, holds a flock, blocks: for abort and disconnect
    "slow.py": """
import os, signal
from perlcompat import LOCK_EX, flock, open_
OUT = open_(">> " + os.environ["PERLCOMPAT_DATA_DIR"] + "/held.dat")
flock(OUT, LOCK_EX)
print("Content-Type: text/plain\\n")
print(os.getpid(), flush=True)
while True:
    signal.pause()
""",
    # for --max-children: how many run at once
    "overlap.py": """
import os, time
from perlcompat import LOCK_EX, close, flock, open_, print_
log = os.environ["PERLCOMPAT_DATA_DIR"] + "/overlap.log"
def note(word):
    OUT = open_(">> " + log)
    flock(OUT, LOCK_EX)
    print_(OUT, word + "\\n")
    close(OUT)
note("start")
time.sleep(0.3)  # the work a request does; overlap is read from the log, not from timing
note("end")
print("Content-Type: text/plain\\n\\nok")
""",
}

#: run by nothing: a 403 must come before any of it runs
EVIL = "import pathlib\npathlib.Path(__file__).with_suffix('.ran').write_text('ran')\n"


@dataclass
class Site:
    base: Path
    www: Path
    data: Path
    serve: ServeProcess
    http: CgiServer

    @property
    def sock(self) -> Path:
        return self.serve.sock


def write_scripts(www: Path) -> None:
    for name, code in SCRIPTS.items():
        (www / name).write_text(code.lstrip())
    outside = www.parent / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text(EVIL)
    (www / "evil.cgi").write_text(EVIL)  # right place, extension not allowed
    (www / "escape.py").symlink_to(outside / "evil.py")  # inside by name, outside resolved
    (www / "subdir.py").mkdir()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    base = tmp_path_factory.mktemp("serve")
    www, data = base / "www", base / "data"
    www.mkdir()
    data.mkdir()
    copy_examples(www)
    write_scripts(www)
    env = {"PERLCOMPAT_DATA_DIR": str(data)}
    serve = ServeProcess(
        www, base / "fcgi.sock", "--timeout", str(TIMEOUT), "--preload", "json", env=env
    ).start()
    http = CgiServer(www, {**env, "PYTHONPATH": PACKAGE_ROOT}, fastcgi=str(serve.sock))
    try:
        http.start()
        yield Site(base, www, data, serve, http)
    finally:
        http.stop()
        assert serve.stop() == 0, serve.log


# -- a raw FastCGI client ------------------------------------------------------------
def rec(kind: int, rid: int, content: bytes = b"") -> bytes:
    pad = -len(content) % 8
    return struct.pack("!BBHHBx", 1, kind, rid, len(content), pad) + content + bytes(pad)


def nv(params: dict[str, str]) -> bytes:
    out = b""
    for name, value in params.items():
        for part in (name.encode(), value.encode()):
            out += bytes([len(part)]) if len(part) < 128 else struct.pack("!I", len(part) | 1 << 31)
        out += name.encode() + value.encode()
    return out


def request_records(rid: int, params: dict[str, str], body: bytes = b"") -> list[bytes]:
    records = [rec(1, rid, struct.pack("!HB5x", 1, 1)), rec(4, rid, nv(params)), rec(4, rid)]
    records += [rec(5, rid, body[i : i + 65535]) for i in range(0, len(body), 65535)]
    return [*records, rec(5, rid)]


def cgi_params(site: Site, script: str, query: str = "", body: bytes = b"") -> dict[str, str]:
    return {
        "SCRIPT_FILENAME": str(site.www / script),
        "REQUEST_METHOD": "POST" if body else "GET",
        "QUERY_STRING": query,
        "CONTENT_LENGTH": str(len(body)),
        "PERLCOMPAT_DATA_DIR": str(site.data),
    }


@dataclass
class Reply:
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    app_status: int | None = None


class Raw:
    """One FastCGI connection; ``read(rids)`` collects records until those requests end."""

    def __init__(self, sock_path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(str(sock_path))
        self.buf = bytearray()
        self.replies: dict[int, Reply] = {}

    def send(self, *records: bytes) -> None:
        self.sock.sendall(b"".join(records))

    def _record(self) -> tuple[int, int, bytes]:
        while True:
            if len(self.buf) >= 8:
                _v, kind, rid, length, pad = struct.unpack("!BBHHBx", self.buf[:8])
                if len(self.buf) >= 8 + length + pad:
                    content = bytes(self.buf[8 : 8 + length])
                    del self.buf[: 8 + length + pad]
                    return kind, rid, content
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("the server closed the connection")
            self.buf += data

    def read_until(self, rid: int, want: bytes) -> Reply:
        """Read until request *rid*'s stdout contains *want* (or it ends)."""
        reply = self.replies.setdefault(rid, Reply())
        while want not in reply.stdout and reply.app_status is None:
            self._one()
        return reply

    def read(self, *rids: int) -> dict[int, Reply]:
        for rid in rids:
            self.replies.setdefault(rid, Reply())
        while any(self.replies[r].app_status is None for r in rids):
            self._one()
        return {rid: self.replies[rid] for rid in rids}

    def _one(self) -> None:
        kind, rid, content = self._record()
        reply = self.replies.setdefault(rid, Reply())
        if kind == 6:
            reply.stdout += content
        elif kind == 7:
            reply.stderr += content
        elif kind == 3:
            reply.app_status = struct.unpack("!IB3x", content)[0]

    def close(self) -> None:
        self.sock.close()


def raw_request(site: Site, script: str, query: str = "", body: bytes = b"") -> Reply:
    client = Raw(site.sock)
    try:
        client.send(*request_records(1, cgi_params(site, script, query, body), body))
        return client.read(1)[1]
    finally:
        client.close()


def split(stdout: bytes | bytearray) -> tuple[bytes, bytes]:
    head, _, body = bytes(stdout).partition(b"\r\n\r\n")
    return head, body


def cgi_fcgi(site: Site, params: dict[str, str], body: bytes = b"") -> tuple[int, bytes, bytes]:
    tool = find_tool("cgi-fcgi")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **params}
    run = subprocess.run(
        [tool, "-bind", "-connect", str(site.sock)],
        input=body,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return run.returncode, run.stdout, run.stderr


def running_pid(client: Raw, rid: int) -> int:
    """Read request *rid*'s answer until the pid line after its header (the script runs)."""
    reply = client.read_until(rid, b"\r\n\r\n")
    while not split(reply.stdout)[1].endswith(b"\n"):
        client._one()
    return int(split(reply.stdout)[1])


def wait_gone(pid: int) -> None:
    """Wait (up to 20 s) until process *pid* has exited: its pidfd becomes readable."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        readable, _, _ = select.select([fd], [], [], 20)
        assert readable, f"process {pid} still runs"
    finally:
        os.close(fd)


def assert_unlocked(path: Path) -> None:
    with open(path, "rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def open_files(pid: int) -> dict[str, str]:
    """fd -> what it is, for process *pid* (an fd closed while looking is left out)."""
    found = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            found[name] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
    return found


def parent_files(pid: int) -> list[str]:
    """What the server process has open, besides sockets, pipes and /dev/null."""
    return [
        target
        for target in open_files(pid).values()
        if not target.startswith(("socket:", "pipe:", "anon_inode:", "/dev/"))
    ]


def flocks_of(pid: int) -> list[str]:
    return [line for line in Path("/proc/locks").read_text().splitlines() if f" {pid} " in line]


# -- through lighttpd: the counter, half Perl (mod_cgi), half the port (serve) --------
def test_counter_hammered_by_8_clients_half_perl_half_serve(site: Site) -> None:
    clients, each = 8, 50
    paths = [("counter/count.cgi", "counter/count.py")[i % 2] for i in range(clients * each)]
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(site.http.request, paths))
    assert [status for status, _ in results] == [200] * len(paths), results[:3]
    numbers = sorted(int(body) for _, body in results)
    assert numbers == list(range(1, len(paths) + 1))  # every number handed out exactly once
    count_file = site.data / "count.dat"
    assert count_file.read_bytes() == f"{len(paths)}\n".encode()
    assert_unlocked(count_file)
    # the parent opened no data file and holds no lock
    assert parent_files(site.serve.pid) == []
    assert flocks_of(site.serve.pid) == []


def test_globals_are_fresh_in_every_request(site: Site) -> None:
    www = site.www
    for _ in range(5):
        status, body = site.http.request("fresh.py")
        assert (status, body.decode()) == (200, f"1 1 __main__ {www / 'fresh.py'}\n")


def test_a_file_the_script_never_closed_is_written(site: Site) -> None:
    for _ in range(3):
        assert site.http.request("unclosed.py") == (200, b"ok\n")
    assert (site.data / "unclosed.txt").read_text() == "written, never closed\n" * 3


def test_a_script_re_encoding_stdout_runs(site: Site) -> None:
    """(Before: ESPIPE: the streams, made in the forker on serve's own seekable stdout,
    asked the child's pipe for its position.)"""
    reply = raw_request(site, "reconfigure.py")
    assert reply.app_status == 0, reply.stderr
    assert split(reply.stdout)[1] == "\u65e5\u672c\n".encode("cp932")


def test_a_forker_whose_parent_is_gone_ends() -> None:
    """A forker whose parent ended before it ran (serve stopped at once) ends too (before:
    it read its parent's pid late, found init's, and polled for ever)."""
    code = (
        "import os, socket\n"
        "from perlcompat.tools import forker\n"
        "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        "forker._forker_loop(b, os.getppid() + 1)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], timeout=60, env=ENV_WITH_PACKAGE)
    assert done.returncode == 0


@pytest.mark.parametrize("reuse", ["1", "5"])
def test_serve_started_with_fds_0_1_2_closed_answers(tmp_path: Path, reuse: str) -> None:
    """A daemon manager may start serve with fd 0, 1 and 2 closed (before: its first socket
    took fd 0, a child's streams were put onto it, and serve exited 1 at once)."""
    www = tmp_path / "www"
    www.mkdir()
    (www / "echo.py").write_text(
        "import os, sys\nprint('Content-Type: text/plain\\n')\n"
        "print(os.getpid(), sys.stdin.read())\nsys.stderr.write('to the log\\n')\n"
    )
    sock = tmp_path / "s.sock"
    argv = [sys.executable, "-m", "perlcompat", "serve", "--fastcgi", f"unix:{sock}"]
    argv += ["--root", str(www), "--reuse", reuse]

    def close_std() -> None:
        for fd in (0, 1, 2):
            os.close(fd)

    proc = subprocess.Popen(argv, env=ENV_WITH_PACKAGE, preexec_fn=close_std)
    try:
        deadline = time.monotonic() + 60
        while True:  # no stderr to say "listening": its socket answering is the signal
            assert proc.poll() is None, f"serve exited with {proc.returncode}"
            try:
                client = Raw(sock)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                assert time.monotonic() < deadline, "serve never listened"
                time.sleep(0.05)
        pids = set()
        for rid in (1, 2, 3):
            body = b"body%d" % rid
            params = {"SCRIPT_FILENAME": str(www / "echo.py"), "REQUEST_METHOD": "POST"}
            params["CONTENT_LENGTH"] = str(len(body))
            client.send(*request_records(rid, params, body))
            reply = client.read(rid)[rid]
            assert reply.app_status == 0 and reply.stderr == b"to the log\n", reply
            pid, echoed = split(reply.stdout)[1].split()
            assert echoed == body
            pids.add(pid)
        client.close()
        assert len(pids) == (3 if reuse == "1" else 1)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0


def test_exit_mid_request_answers_what_was_printed(site: Site) -> None:
    assert site.http.request("exit3.py") == (200, b"before\n")
    reply = raw_request(site, "exit3.py")
    assert reply.app_status == 3
    assert split(reply.stdout)[1] == b"before\n"
    assert site.http.request("fresh.py")[0] == 200  # the next request works


@pytest.mark.parametrize(
    ("script", "logged"),
    [  # the script's stderr goes to lighttpd's error log; serve's own words to its stderr
        ("die_early.py", "lighttpd: broken early at "),
        ("raise_early.py", "lighttpd: RuntimeError: an exception before any header"),
        ("syntax.py", "lighttpd: SyntaxError: invalid syntax"),
        ("crash.py", "serve: crash.py: ended (status 139) before a header: 500"),
        ("no_blank_line.py", "serve: no_blank_line.py: ended (status 0) before a header: 500"),
        ("bad_header.py", "serve: bad_header.py: malformed response header: 500"),
    ],
)
def test_a_script_that_ends_before_a_header_is_a_500(site: Site, script: str, logged: str) -> None:
    status, body = site.http.request(script)
    assert status == 500
    assert b"broken" not in body and b"Traceback" not in body  # details go to the log only
    where, _, text = logged.partition(": ")
    if where == "serve":
        assert site.serve.wait_for(text), site.serve.log
    else:  # lighttpd logs each FCGI_STDERR record as it comes, before the answer
        assert text in site.http.errorlog.read_text()
    assert site.http.request("fresh.py")[0] == 200


def test_an_edited_script_runs_its_new_version(site: Site) -> None:
    """Same size, same inode, and the old mtime put back (as ``cp -p`` does)."""
    script = site.www / "edited.py"
    for version in ("one", "two", "six"):
        script.write_text(f'print("Content-Type: text/plain\\n")\nprint("{version}")\n')
        os.utime(script, ns=(1_000_000_000, 1_000_000_000))
        assert site.http.request("edited.py") == (200, f"{version}\n".encode())


def test_die_status_reaches_the_web_server(site: Site) -> None:
    reply = raw_request(site, "die_early.py")
    assert reply.app_status == 255  # Perl's die status ($! unset)
    assert reply.stderr.startswith(b"broken early at ")
    assert b"Status: 500 Internal Server Error\r\n" in reply.stdout


def test_perl_stdio_handles_write_the_answer_in_order(site: Site) -> None:
    body = "名前=テスト".encode("cp932")  # Shift_JIS bytes: out as they came in
    reply = raw_request(site, "stdio.py", body=body)
    assert reply.app_status == 0, reply
    head, answer = split(reply.stdout)
    assert (head, answer) == (b"Content-Type: text/plain", b"python print\n" + body + b"\nlast\n")
    assert bytes(reply.stderr) == b"to the log\n"


def test_absolute_location_becomes_a_302(site: Site) -> None:
    head, _ = split(raw_request(site, "redirect.py").stdout)
    assert head == b"Status: 302 Found\r\nLocation: http://example.com/next"


def test_a_scripts_forked_copy_is_not_the_script(tmp_path: Path) -> None:
    """A copy the script makes with os.fork() that exits first neither gives the request its
    status nor ends it: the script's own status is the answer's, and a script still running
    at --timeout is stopped (before, the copy's status 0 ended the request and the script
    ran on, never signalled)."""
    www = tmp_path / "www"
    www.mkdir()
    (www / "forkstatus.py").write_text(
        "import os, sys\n"
        "print('Content-Type: text/plain\\n', flush=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "sys.exit(3)\n"
    )
    (www / "forkhang.py").write_text(
        "import os, sys, time\n"
        "print('Content-Type: text/plain\\n', flush=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print(os.getpid(), flush=True)\n"
        "while True:\n"
        "    time.sleep(1)\n"
    )
    serve = ServeProcess(www, tmp_path / "s.sock", "--timeout", "1").start()
    try:
        client = Raw(serve.sock)
        client.send(*request_records(1, {"SCRIPT_FILENAME": str(www / "forkstatus.py")}))
        assert client.read(1)[1].app_status == 3
        client.send(*request_records(2, {"SCRIPT_FILENAME": str(www / "forkhang.py")}))
        reply = client.read(2)[2]
        assert reply.app_status == 128 + signal.SIGTERM, reply
        wait_gone(int(split(reply.stdout)[1]))
    finally:
        assert serve.stop() == 0


def test_a_forker_out_of_descriptors_goes_on_and_times_out_what_runs(tmp_path: Path) -> None:
    """The forker out of descriptors (EMFILE at its next spare) says "no spare" and goes on
    watching: the running script is stopped at --timeout and answered (before, the forker
    died, the script ran on unsignalled and its request was never answered)."""
    import resource

    www = tmp_path / "www"
    www.mkdir()
    (www / "hang.py").write_text(
        "import time\nprint('Content-Type: text/plain\\n', flush=True)\nwhile True:\n"
        "    time.sleep(1)\n"
    )
    (www / "hello.py").write_text("print('Content-Type: text/plain\\n')\nprint('hello')\n")
    serve = ServeProcess(www, tmp_path / "s.sock", "--timeout", "1").start()
    try:
        client = Raw(serve.sock)
        client.send(*request_records(1, {"SCRIPT_FILENAME": str(www / "hello.py")}))
        assert client.read(1)[1].app_status == 0  # spares are forked and waiting
        children = Path(f"/proc/{serve.pid}/task/{serve.pid}/children").read_text().split()
        assert len(children) == 1  # the forker (the scripts are its children)
        forker = int(children[0])
        used = len(os.listdir(f"/proc/{forker}/fd"))
        soft, hard = resource.prlimit(forker, resource.RLIMIT_NOFILE)
        resource.prlimit(forker, resource.RLIMIT_NOFILE, (used, hard))
        assert soft > used
        client.send(*request_records(2, {"SCRIPT_FILENAME": str(www / "hang.py")}))
        reply = client.read(2)[2]
        assert reply.app_status == 128 + signal.SIGTERM, reply
        resource.prlimit(forker, resource.RLIMIT_NOFILE, (soft, hard))
        client.send(*request_records(3, {"SCRIPT_FILENAME": str(www / "hello.py")}))
        assert split(client.read(3)[3].stdout)[1] == b"hello\n"
        assert "the forker process ended" not in serve.log
    finally:
        assert serve.stop() == 0


@pytest.mark.parametrize("query", ["", "ignore-term"])
def test_timeout_kills_the_request_and_its_locks_are_free(site: Site, query: str) -> None:
    """SIGTERM lets perlcompat release the mkdir lock; a script that ignores it gets
    SIGKILL and leaves a dead holder's lock, which the next lock() recovers at once."""
    started = time.monotonic()
    reply = raw_request(site, "hold.py", query)
    elapsed = time.monotonic() - started
    head, body = split(reply.stdout)
    assert head.startswith(b"Content-Type: text/plain"), reply  # printed before the time-out
    pid = int(body)
    assert reply.app_status == (128 + signal.SIGKILL if query else 128 + signal.SIGTERM)
    assert TIMEOUT <= elapsed < TIMEOUT + 15
    wait_gone(pid)
    reply = raw_request(site, "take.py")
    assert split(reply.stdout)[1] == b"lock 1 flock 1\n", reply
    assert site.serve.wait_for(f"hold.py: killed after --timeout {TIMEOUT} s")


def test_a_timeout_before_any_header_is_a_504(tmp_path: Path) -> None:
    www = tmp_path / "www"
    www.mkdir()
    (www / "spin.py").write_text("while True:\n    pass\n")
    serve = ServeProcess(www, tmp_path / "s.sock", "--timeout", "0.5").start()
    try:
        client = Raw(serve.sock)
        client.send(*request_records(1, {"SCRIPT_FILENAME": str(www / "spin.py")}))
        reply = client.read(1)[1]
        assert split(reply.stdout)[0].startswith(b"Status: 504 Gateway Timeout")
        assert reply.app_status == 128 + signal.SIGTERM
    finally:
        assert serve.stop() == 0


# -- the port via serve against the Perl original via mod_cgi --------------------------
# -- raw params: cgi-fcgi and the raw client -----------------------------------------
@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("../outside/evil.py", 403),  # .. out of --root
        ("escape.py", 403),  # a symlink out of --root
        ("evil.cgi", 403),  # an extension not allowed
        ("subdir.py", 403),  # not a file
        ("missing.py", 404),
        ("relative", 403),
        ("", 403),
    ],
)
def test_only_scripts_inside_root_run(site: Site, name: str, status: int) -> None:
    if name == "relative":
        filename = "fresh.py"
    elif name:
        filename = str(site.www / name)
    else:
        filename = ""
    params = {"SCRIPT_FILENAME": filename, "REQUEST_METHOD": "GET"}
    if not filename:
        del params["SCRIPT_FILENAME"]
    code, out, _err = cgi_fcgi(site, params)
    assert code == 0
    assert out.startswith(f"Status: {status} ".encode()), out
    assert not list(site.base.rglob("*.ran"))  # nothing ran


def test_large_body_through_cgi_fcgi(site: Site) -> None:
    body = os.urandom(3 * 1024 * 1024 + 17)
    params = cgi_params(site, "sha.py", body=body)
    code, out, err = cgi_fcgi(site, params, body)
    assert code == 0, err
    assert split(out.replace(b"\n\n", b"\r\n\r\n", 1))[1].decode().split() == [
        str(len(body)),
        str(len(body)),
        hashlib.sha256(body).hexdigest(),
    ]


def test_proxy_header_never_becomes_http_proxy(site: Site) -> None:
    params = cgi_params(site, "state.py")
    params["HTTP_PROXY"] = "http://attacker.example:8080"
    code, out, _err = cgi_fcgi(site, params)
    assert code == 0
    assert json.loads(split(out)[1])["proxy"] is None
    request = urllib.request.Request(site.http.url("state.py"), headers={"Proxy": "http://x:1"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert json.loads(response.read())["proxy"] is None


def test_multiplexed_requests_on_one_connection(site: Site) -> None:
    client = Raw(site.sock)
    try:
        bodies = {rid: os.urandom(70000 + rid * 1000) for rid in (1, 2, 3, 4)}
        streams = {
            rid: request_records(rid, cgi_params(site, "sha.py", body=b), b)
            for rid, b in bodies.items()
        }
        while any(streams.values()):  # interleave the four requests' records
            for records in streams.values():
                if records:
                    client.send(records.pop(0))
        replies = client.read(*bodies)
    finally:
        client.close()
    for rid, body in bodies.items():
        assert replies[rid].app_status == 0
        assert split(replies[rid].stdout)[1].split() == [
            str(len(body)).encode(),
            str(len(body)).encode(),
            hashlib.sha256(body).hexdigest().encode(),
        ]


def test_a_large_answer_read_slowly_arrives_whole(site: Site) -> None:
    client = Raw(site.sock)
    try:
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.send(*request_records(1, cgi_params(site, "big.py")))
        reply = client.read(1)[1]
    finally:
        client.close()
    assert reply.app_status == 0
    body = split(reply.stdout)[1]
    assert body == b"".join(bytes([i]) * 65536 for i in range(128))


def test_get_values(site: Site) -> None:
    client = Raw(site.sock)
    try:
        client.send(rec(9, 0, nv({"FCGI_MPXS_CONNS": "", "FCGI_MAX_REQS": "", "OTHER": ""})))
        kind, rid, content = client._record()
    finally:
        client.close()
    assert (kind, rid) == (10, 0)
    assert content == nv({"FCGI_MPXS_CONNS": "1", "FCGI_MAX_REQS": "16"})


def test_an_aborted_request_ends_its_child_and_frees_its_lock(site: Site) -> None:
    """The abort closes the script's output pipes; slow.py writes nothing more, so
    --timeout ends it (SIGTERM), and its END_REQUEST comes then."""
    client = Raw(site.sock)
    try:
        client.send(*request_records(7, cgi_params(site, "slow.py")))
        pid = running_pid(client, 7)  # it runs and holds the flock
        client.send(rec(2, 7))  # FCGI_ABORT_REQUEST
        reply = client.read(7)[7]
    finally:
        client.close()
    assert reply.app_status == 128 + signal.SIGTERM
    wait_gone(pid)
    assert_unlocked(site.data / "held.dat")


def test_a_client_that_disconnects_ends_its_child(site: Site) -> None:
    """Its output pipes are closed (never a SIGTERM mid-update: test_serve_safety);
    slow.py writes nothing more and --timeout ends it."""
    client = Raw(site.sock)
    client.send(*request_records(1, cgi_params(site, "slow.py")))
    pid = running_pid(client, 1)
    client.close()
    wait_gone(pid)
    assert_unlocked(site.data / "held.dat")
    assert site.http.request("fresh.py")[0] == 200


def test_a_child_inherits_no_socket_and_no_other_request(site: Site) -> None:
    busy = Raw(site.sock)  # another request's connection, open while ours runs
    try:
        busy.send(*request_records(1, cgi_params(site, "slow.py")))
        running_pid(busy, 1)
        reply = raw_request(site, "state.py", body=b"the body")
        parent_sockets = set(open_files(site.serve.pid).values())
        busy.send(rec(2, 1))
        busy.read(1)
    finally:
        busy.close()
    state = json.loads(split(reply.stdout)[1])
    assert state["std"] == ["0", "1", "2"]
    # its own exit-status channel only: no listener, no connection, no other child's pipe
    assert len(state["others"]) == 1
    assert next(iter(state["others"].values())).startswith("socket:")
    assert not set(state["others"].values()) & parent_sockets
    assert state["stdin"] == "the body"
    assert (state["term"], state["chld"], state["pgid_is_pid"]) == (True, True, True)
    assert (state["tracked"], state["alarm"], state["gc"]) == (0, 0, True)
    assert state["cwd"] == str(site.www)
    assert state["argv"] == [str(site.www / "state.py")]


def test_a_killed_forker_or_spare_is_replaced(site: Site) -> None:
    def children(pid: int) -> list[int]:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]

    assert site.http.request("fresh.py")[0] == 200  # a spare is forked while idle after it
    (forker,) = children(site.serve.pid)
    spares = children(forker)
    assert spares
    for spare in spares:
        with contextlib.suppress(ProcessLookupError):  # (the last request's child, ending)
            os.kill(spare, signal.SIGKILL)
    for spare in spares:
        wait_gone(spare)  # dead before the request: one killed under a request is its 500
    assert site.http.request("fresh.py")[0] == 200
    (forker,) = children(site.serve.pid)
    os.kill(forker, signal.SIGKILL)
    wait_gone(forker)
    for _ in range(3):
        assert site.http.request("fresh.py")[0] == 200
    assert site.serve.wait_for("the forker process ended; starting another")
    assert children(site.serve.pid) != [forker]


# -- bounds and listening ------------------------------------------------------------
def test_children_and_body_size_are_bounded(tmp_path: Path) -> None:
    www, data = tmp_path / "www", tmp_path / "data"
    www.mkdir()
    data.mkdir()
    write_scripts(www)
    serve = ServeProcess(
        www,
        tmp_path / "s.sock",
        "--max-children",
        "2",
        "--max-body",
        "1K",
        env={"PERLCOMPAT_DATA_DIR": str(data)},
    ).start()
    fake = Site(tmp_path, www, data, serve, None)  # type: ignore[arg-type]
    try:
        with ThreadPoolExecutor(6) as pool:
            replies = list(pool.map(lambda _: raw_request(fake, "overlap.py"), range(6)))
        assert [split(r.stdout)[1] for r in replies] == [b"ok\n"] * 6
        running = peak = 0
        for word in (data / "overlap.log").read_text().split():
            running += 1 if word == "start" else -1
            peak = max(peak, running)
        assert peak == 2  # never more than --max-children, and they did overlap
        too_big = raw_request(fake, "sha.py", body=b"x" * 1025)
        assert split(too_big.stdout)[0].startswith(b"Status: 413 ")
        assert split(raw_request(fake, "sha.py", body=b"x" * 1024).stdout)[1].startswith(b"1024 ")
    finally:
        assert serve.stop() == 0


def test_listening_defaults(tmp_path: Path) -> None:
    from webserver import free_port

    from perlcompat.tools.listen import listen

    sock = listen(str(free_port()))
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()
    path = tmp_path / "s.sock"
    sock = listen(f"unix:{path}")
    try:
        assert path.stat().st_mode & 0o777 == 0o660
        with pytest.raises(ValueError, match="another server is listening"):
            listen(f"unix:{path}")
    finally:
        sock.close()
    stale = listen(f"unix:{path}")  # a dead server's socket is replaced
    stale.close()
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="not a socket"):
        listen(f"unix:{tmp_path / 'file'}")


def test_on_windows_serve_says_it_needs_fork(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from perlcompat.tools import serve

    monkeypatch.setattr(sys, "platform", "win32")
    assert serve.main(["--fastcgi", "9000", "--root", "."]) == 2
    assert "needs fork" in capsys.readouterr().err


# -- fork safety of perlcompat's own state ---------------------------------------------
PRELOAD = """
import os
from perlcompat import SIG, Lock, alarm
data = os.environ["PERLCOMPAT_DATA_DIR"]
HELD = Lock(data + "/parent.lock")  # mkdir: tracked for cleanup in the parent
HELD.acquire()
REDIS = Lock("serve-parent", url=os.environ["TEST_REDIS_URL"])
REDIS.acquire()  # a held Redis lock and an idle connection in the parent
from perlcompat.locks.methods import redis as redis_method
IDLE = redis_method.server_for(os.environ["TEST_REDIS_URL"]).idle
with open(data + "/parent_port", "w") as out:
    out.write(str(IDLE[0]._sock.getsockname()[1]))
SIG["ALRM"] = lambda *_: None
alarm(3600)
"""

FORK_STATE = """
import os
import statepreload
from perlcompat import Lock, LockTimeout, alarm
from perlcompat.locks import cleanup
from perlcompat.locks.methods import redis as redis_method
server = redis_method.server_for(os.environ["TEST_REDIS_URL"])
try:
    Lock(statepreload.data + "/parent.lock", timeout=0).acquire()
    mkdir = "taken"
except LockTimeout:
    mkdir = "busy"
def ports():
    return {c._sock.getsockname()[1] for c in server.idle if getattr(c, "_sock", None)}
inherited = ports()
with Lock("serve-child", url=os.environ["TEST_REDIS_URL"]):
    pass
fresh_conn = bool(ports()) and not ports() & inherited
print("Content-Type: text/plain\\n")
print(alarm(0), len(cleanup.tracked()), statepreload.HELD.is_locked,
      statepreload.REDIS.is_locked, mkdir, len(inherited), fresh_conn)
"""


def test_children_get_none_of_the_parents_locks_alarm_or_redis_connections(
    tmp_path: Path,
) -> None:
    """A --preload that takes locks and sets an alarm in the parent (the parent of
    ``serve`` itself takes none): the child holds none of them, releases none at exit,
    has no alarm pending and opens its own Redis connection."""
    www, data, lib = tmp_path / "www", tmp_path / "data", tmp_path / "lib"
    for d in (www, data, lib):
        d.mkdir()
    (lib / "statepreload.py").write_text(PRELOAD)
    (www / "forkstate.py").write_text(FORK_STATE)
    redis_srv = RedisServer(str(tmp_path / "redis")).start()
    redis_srv.declare_empty()
    env = {
        "PERLCOMPAT_DATA_DIR": str(data),
        "TEST_REDIS_URL": redis_srv.url + "?max_lease=600",
        "PYTHONPATH": os.pathsep.join([str(lib), PACKAGE_ROOT]),
    }
    serve = ServeProcess(www, tmp_path / "s.sock", "--preload", "statepreload", env=env).start()
    try:
        fake = Site(tmp_path, www, data, serve, None)  # type: ignore[arg-type]
        for _ in range(2):
            reply = raw_request(fake, "forkstate.py")
            assert split(reply.stdout)[1] == b"0 0 False False busy 1 True\n", reply
        assert (data / "parent.lock").is_dir()  # the children released nothing of the parent's
        with redis_srv.client() as client:
            assert client.exists("perlcompat:lock:serve-parent") == 1
            port = (data / "parent_port").read_text()
            addrs = [c["addr"] for c in client.client_list()]
            assert f"127.0.0.1:{port}" in addrs  # the parent's connection: not closed by a child
    finally:
        assert serve.stop() == 0
        redis_srv.stop()
    shutil.rmtree(data / "parent.lock", ignore_errors=True)


def test_a_finished_child_closes_every_fd_but_its_request_pipe() -> None:
    """``runner.close_fds_but`` closes what /proc/self/fd lists, up to the highest fd allowed.

    (Python 3.9's ``os.closerange`` tries every number up to the limit: 2 ms a request.)
    """
    from perlcompat.tools import runner

    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            high = os.dup2(report_w, runner.MAX_FD - 1)
            extra = os.open(os.devnull, os.O_RDONLY)
            watched = [0, 1, 2, report_r, high, extra]
            runner.close_fds_but(report_w)
            still_open = []
            for fd in watched:
                try:
                    os.fstat(fd)
                except OSError:
                    continue
                still_open.append(fd)
            os.write(report_w, json.dumps(still_open).encode())
        finally:
            os._exit(0)
    os.close(report_w)
    with os.fdopen(report_r, "rb") as report:
        answer = report.read()
    assert os.waitpid(pid, 0)[1] == 0
    assert json.loads(answer) == []  # and the kept fd still wrote the answer
