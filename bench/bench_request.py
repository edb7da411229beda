"""One HTTP request to a ported CGI: ``perlcompat serve`` against the Perl original.

The access counter of ``examples/counter`` (a ``+<`` read-increment-write under
``flock``) under a real lighttpd, each side with a lighttpd of its own:

* ``count.py`` via ``perlcompat serve`` (lighttpd mod_fastcgi; a forked child per request),
* ``count.py`` via ``perlcompat serve --reuse N`` (a child runs the next request when the
  last left it clean; ``--reuse 0`` leaves this side out),
* ``count.cgi``, the Perl original, via mod_cgi (lighttpd starts perl per request),
* with ``--python-cgi``: ``count.py`` via mod_cgi (a Python interpreter per request).

Back to back (the default): a block of requests to one side, then a block to the
other, as a site gets them; the order of the sides alternates from round to round.
``--interleaved`` alternates one request to each side instead (which lets ``serve``
fork its next child while the other side's request runs: it flatters ``serve``).
One client, one request at a time, raw HTTP/1.0 over a new connection each time.

Printed: each side's median, 90th percentile and minimum wall time of a whole
request and the ratio to the Perl original's; CPU per request (user + system from
/proc/PID/stat, the processes' own and their reaped children's) of every process of
the side: lighttpd, and serve's parent, forker and children (or the perl processes
lighttpd reaped); then a saturation run, ``--clients`` (8) clients each sending
requests back to back for ``--seconds``: requests per second and CPU per request.
``--hogs N`` runs N busy-looping processes beside it all (a loaded machine).

    python bench/bench_request.py [--runs 150] [--rounds 3] [--interleaved]
        [--clients 8] [--seconds 5] [--hogs 2] [--python-cgi] [--reuse 1000]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from webserver import PACKAGE_ROOT, CgiServer, ServeProcess, copy_examples  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PERL = "Perl original via mod_cgi"
SERVE = "port via perlcompat serve"
REUSE = "port via serve --reuse"
PYCGI = "port via mod_cgi (python)"


def get(port: int, path: str) -> int:
    """GET *path* over a new connection (HTTP/1.0, read to the end); the status code."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(f"GET /{path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        reply = bytearray()
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0


def _stat(pid: int) -> tuple[float, float]:
    """(own, reaped children's) CPU seconds of *pid*; (0, 0) if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    own = (int(fields[11]) + int(fields[12])) / TICK
    return own, (int(fields[13]) + int(fields[14])) / TICK


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@dataclass
class Side:
    """One way of serving the counter: its lighttpd, its path, (for serve) its server."""

    name: str
    http: CgiServer
    path: str
    serve: ServeProcess | None = None
    times: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)

    def cpu_now(self) -> dict[str, float]:
        """CPU seconds so far of each process of this side, by role."""
        assert self.http.process is not None
        web, reaped = _stat(self.http.process.pid)
        if self.serve is None:
            live = sum(_stat(c)[0] for c in _children(self.http.process.pid))
            return {"lighttpd": web, "scripts": reaped + live}
        parent, _ = _stat(self.serve.pid)
        roles = {"lighttpd": web + reaped, "parent": parent, "forker": 0.0, "children": 0.0}
        for forker in _children(self.serve.pid):  # the parent's one child
            own, reaped = _stat(forker)
            roles["forker"] += own
            roles["children"] += reaped + sum(_stat(c)[0] for c in _children(forker))
        return roles

    def measure(self, count: int) -> None:
        """*count* requests one after another, timed; their CPU added to :attr:`cpu`."""
        before = self.cpu_now()
        for _ in range(count):
            self.one()
        settle()
        self.add_cpu(before)

    def one(self) -> None:
        started = time.perf_counter()
        status = get(self.http.port, self.path)
        self.times.append(time.perf_counter() - started)
        assert status == 200, f"{self.name}: HTTP {status}"

    def add_cpu(self, before: dict[str, float]) -> None:
        for role, seconds in self.cpu_now().items():
            self.cpu[role] = self.cpu.get(role, 0.0) + seconds - before[role]


def settle() -> None:
    """Let the last request's processes end and be reaped (and spares get ready)."""
    time.sleep(0.3)


def saturate(side: Side, clients: int, seconds: float) -> tuple[float, float]:
    """*clients* processes sending requests back to back: (requests/s, CPU s per request)."""
    before = side.cpu_now()
    start_at = time.monotonic() + 0.5
    pids, pipes = [], []
    for _ in range(clients):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            done = 0
            try:
                os.close(read_end)
                while time.monotonic() < start_at:
                    time.sleep(0.005)
                while time.monotonic() < start_at + seconds:
                    if get(side.http.port, side.path) == 200:
                        done += 1
                os.write(write_end, str(done).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        pids.append(pid)
        pipes.append(read_end)
    total = 0
    for pid, read_end in zip(pids, pipes):
        with os.fdopen(read_end, "rb") as answer:
            total += int(answer.read() or b"0")
        os.waitpid(pid, 0)
    settle()
    after = side.cpu_now()
    cpu = sum(after.values()) - sum(before.values())
    return total / seconds, cpu / max(total, 1)


def start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    """*count* processes that spin on a CPU each until stopped."""
    return [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=150, help="requests per side (default 150)")
    parser.add_argument("--rounds", type=int, default=3, help="blocks per side (default 3)")
    parser.add_argument(
        "--interleaved", action="store_true", help="alternate one request to each side"
    )
    parser.add_argument("--clients", type=int, default=8, help="saturation clients (default 8)")
    parser.add_argument(
        "--seconds", type=float, default=5.0, help="saturation run per side (default 5)"
    )
    parser.add_argument("--hogs", type=int, default=0, help="busy-looping processes beside it")
    parser.add_argument("--python-cgi", action="store_true", help="also count.py via mod_cgi")
    parser.add_argument(
        "--reuse", type=int, default=1000, help="serve --reuse N side (default 1000; 0: none)"
    )
    args = parser.parse_args()
    hogs = start_hogs(args.hogs)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-request-") as tmp:
            return run(Path(tmp), args)
    finally:
        for hog in hogs:
            hog.send_signal(signal.SIGKILL)
            hog.wait()


def run(base: Path, args: argparse.Namespace) -> int:
    www, data = base / "www", base / "data"
    www.mkdir()
    data.mkdir()
    copy_examples(www)
    copied = time.monotonic()
    env = {"PERLCOMPAT_DATA_DIR": str(data), "PYTHONPATH": PACKAGE_ROOT}
    serve = ServeProcess(www, base / "serve.sock", env=env).start()
    servers = [serve]
    sides = [
        Side(SERVE, CgiServer(www, env, fastcgi=str(serve.sock)), "counter/count.py", serve),
        Side(PERL, CgiServer(www, env), "counter/count.cgi"),
    ]
    if args.reuse:
        reused = ServeProcess(www, base / "reuse.sock", "--reuse", str(args.reuse), env=env)
        servers.append(reused.start())
        http = CgiServer(www, env, fastcgi=str(reused.sock))
        sides.append(Side(REUSE, http, "counter/count.py", reused))
    if args.python_cgi:
        sides.append(Side(PYCGI, CgiServer(www, env), "counter/count.py"))
    for number, side in enumerate(sides):
        side.http.errorlog = base / f"lighttpd-{number}-error.log"
    load_before = os.getloadavg()
    saturation: dict[str, tuple[float, float]] = {}
    try:
        for side in sides:
            side.http.start()
            for _ in range(5):  # warm: first compile, first perl exec from disk
                side.one()
            side.times.clear()
        # serve compiles a script changed in the last 2 s on every request (racy file
        # times); the copies are new: wait, as a site's scripts are older than that
        time.sleep(max(0.0, copied + 2.5 - time.monotonic()))
        settle()
        if args.interleaved:
            before = {side.name: side.cpu_now() for side in sides}
            for _ in range(args.runs):
                for side in sides:
                    side.one()
            settle()
            for side in sides:
                side.add_cpu(before[side.name])
        else:
            block = max(1, args.runs // args.rounds)
            for number in range(args.rounds):
                for side in sides if number % 2 == 0 else sides[::-1]:
                    side.measure(block)
        for side in [s for s in sides if s.name != PYCGI] if args.clients else []:
            saturation[side.name] = saturate(side, args.clients, args.seconds)
    finally:
        for side in sides:
            side.http.stop()
        for server in servers:
            server.stop()
    report(sides, saturation, args, load_before)
    return 0


def report(
    sides: list[Side],
    saturation: dict[str, tuple[float, float]],
    args: argparse.Namespace,
    load_before: tuple[float, float, float],
) -> None:
    requests = len(sides[0].times)
    how = (
        "interleaved (one request to each side in turn)"
        if args.interleaved
        else f"back to back ({args.rounds} blocks per side, alternating)"
    )
    load = " ".join(f"{x:.2f}" for x in load_before)
    print(f"examples/counter under lighttpd: {requests} requests per side, {how}")
    print(f"{os.cpu_count()} CPUs, load average {load} before; {args.hogs} CPU hogs beside it")
    perl = next(s for s in sides if s.name == PERL)
    perl_median = statistics.median(perl.times)
    perl_cpu = sum(perl.cpu.values()) / len(perl.times)
    print(
        f"{'':28} {'median':>8} {'p90':>8} {'min':>8} {'vs Perl':>8} {'CPU/req':>8} {'vs Perl':>8}"
    )
    for side in sides:
        median = statistics.median(side.times)
        p90 = statistics.quantiles(side.times, n=10)[-1]
        cpu = sum(side.cpu.values()) / len(side.times)
        print(
            f"{side.name:28} {median * 1e3:6.2f}ms {p90 * 1e3:6.2f}ms"
            f" {min(side.times) * 1e3:6.2f}ms {median / perl_median:7.2f}x"
            f" {cpu * 1e3:6.2f}ms {cpu / perl_cpu:7.2f}x"
        )
    print("CPU per request, by process (ms):")
    for side in sides:
        parts = "  ".join(
            f"{role} {seconds / len(side.times) * 1e3:.2f}" for role, seconds in side.cpu.items()
        )
        print(f"  {side.name:26} {parts}")
    if saturation:
        print(f"saturation: {args.clients} clients, {args.seconds:g} s per side")
        perl_rate = saturation[PERL][0]
        for name, (rate, cpu) in saturation.items():
            print(
                f"  {name:26} {rate:8.1f} req/s {rate / perl_rate:6.2f}x"
                f"  CPU/request {cpu * 1e3:.2f} ms"
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
