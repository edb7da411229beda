"""One HTTP request to a ported CGI: mod_cgi, ``perlcompat serve``, and the Perl original.

The access counter of ``examples/counter`` (a ``+<`` read-increment-write under
``flock``) under a real lighttpd, three ways, one request at a time, interleaved
so that load drift hits every row alike:

* ``count.py`` via mod_cgi (a Python interpreter started per request),
* ``count.py`` via ``perlcompat serve`` (lighttpd mod_fastcgi; a forked child per request),
* ``count.cgi``, the Perl original, via mod_cgi.

Printed per row: median and minimum wall time of a whole HTTP request, the
median's ratio to the Perl original via mod_cgi, and the CPU time per request of
the processes that served the row (each row has its own lighttpd; user + system
time from /proc, the web server's and the script processes', and for serve its
parent's, its forker's and the script processes').  All three share one count file.

    python bench/bench_request.py [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from webserver import PACKAGE_ROOT, CgiServer, ServeProcess, copy_examples  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="requests per row (default 200)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-request-") as tmp:
        base = Path(tmp)
        www, data = base / "www", base / "data"
        www.mkdir()
        data.mkdir()
        copy_examples(www)
        env = {"PERLCOMPAT_DATA_DIR": str(data), "PYTHONPATH": PACKAGE_ROOT}
        serve = ServeProcess(www, base / "serve.sock", env=env).start()
        servers = []
        for name in ("cgi-py", "fcgi", "cgi-perl"):  # each writes its config at start()
            server = CgiServer(www, env, fastcgi=str(serve.sock) if name == "fcgi" else None)
            server.errorlog = base / f"{name}-error.log"
            servers.append(server)
        rows = {
            "port via mod_cgi (python per request)": (servers[0], "counter/count.py", []),
            "port via perlcompat serve (fastcgi)": (servers[1], "counter/count.py", [serve]),
            "Perl original via mod_cgi": (servers[2], "counter/count.cgi", []),
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        cpu: dict[str, float] = {}
        try:
            for server in servers:
                server.start()
            for server, path, _ in rows.values():  # warm: compile, page cache
                assert server.request(path)[0] == 200
            before = {name: _cpu(server, extra) for name, (server, _, extra) in rows.items()}
            for _ in range(args.runs):
                for name, (server, path, _) in rows.items():
                    started = time.perf_counter()
                    status, _ = server.request(path)
                    times[name].append(time.perf_counter() - started)
                    assert status == 200
            for name, (server, _, extra) in rows.items():  # children are reaped as they end
                cpu[name] = _cpu(server, extra) - before[name]
        finally:
            for server in servers:
                server.stop()
            serve.stop()
        perl = statistics.median(times["Perl original via mod_cgi"])
        print(f"examples/counter under lighttpd, {args.runs} requests per row, interleaved")
        print(f"{'':40} {'median':>9} {'min':>9} {'vs Perl':>8} {'CPU/request':>12}")
        for name, samples in times.items():
            median = statistics.median(samples)
            print(
                f"{name:40} {median * 1000:7.2f}ms {min(samples) * 1000:7.2f}ms"
                f" {median / perl:7.2f}x {cpu[name] / args.runs * 1000:10.2f}ms"
            )
    return 0


def _cpu(server: CgiServer, extra: list[ServeProcess]) -> float:
    """CPU seconds (user + system, own and reaped children's) of *server* and *extra*."""
    total = 0.0
    assert server.process is not None
    pids = [server.process.pid]
    for serve in extra:  # serve's forker is its child; the script processes are the forker's
        pids.append(serve.pid)
        pids += [
            int(c) for c in Path(f"/proc/{serve.pid}/task/{serve.pid}/children").read_text().split()
        ]
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


if __name__ == "__main__":
    sys.exit(main())
