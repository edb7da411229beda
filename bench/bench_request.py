"""One HTTP request to a ported CGI: mod_cgi, ``perlcompat serve``, and the Perl original.

The access counter of ``examples/counter`` (a ``+<`` read-increment-write under
``flock``) under a real lighttpd, three ways, one request at a time, interleaved
so that load drift hits every row alike:

* ``count.py`` via mod_cgi (a Python interpreter started per request),
* ``count.py`` via ``perlcompat serve`` (lighttpd mod_fastcgi; a forked child per request),
* ``count.cgi``, the Perl original, via mod_cgi.

Printed per row: median and minimum wall time of a whole HTTP request and the
median's ratio to the Perl original via mod_cgi.  All three share one count file.

    python bench/bench_request.py [--runs 200]
"""

from __future__ import annotations

import argparse
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
        plain = CgiServer(www, env)  # each writes its config at start(), one after the other
        plain.errorlog = base / "cgi-error.log"
        fast = CgiServer(www, env, fastcgi=str(serve.sock))
        fast.errorlog = base / "fcgi-error.log"
        rows = {
            "port via mod_cgi (python per request)": (plain, "counter/count.py"),
            "port via perlcompat serve (fastcgi)": (fast, "counter/count.py"),
            "Perl original via mod_cgi": (plain, "counter/count.cgi"),
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        try:
            plain.start()
            fast.start()
            for server, path in rows.values():  # warm: compile, page cache
                assert server.request(path)[0] == 200
            for _ in range(args.runs):
                for name, (server, path) in rows.items():
                    started = time.perf_counter()
                    status, _ = server.request(path)
                    times[name].append(time.perf_counter() - started)
                    assert status == 200
        finally:
            fast.stop()
            plain.stop()
            serve.stop()
        perl = statistics.median(times["Perl original via mod_cgi"])
        print(f"examples/counter under lighttpd, {args.runs} requests per row, interleaved")
        print(f"{'':40} {'median':>9} {'min':>9} {'vs Perl':>8}")
        for name, samples in times.items():
            median = statistics.median(samples)
            print(
                f"{name:40} {median * 1000:7.2f}ms {min(samples) * 1000:7.2f}ms"
                f" {median / perl:7.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
