"""``perlcompat serve`` under the hostile loads of issue 31 at full size: what the parent holds.

``python bench/bench_serve_hostile.py [--quick]`` starts ``perlcompat serve`` on a unix
socket and, one case after another, measures the growth of the parent's resident memory
(VmRSS, from /proc) and whether requests are still answered:

- 1000 multiplexed requests with 250 KiB params each, on one connection, never finished;
- 8 requests with 60 MiB bodies queued behind a running one (``--max-children 1``);
- 64 MiB to stderr, then 64 MiB to stdout, for a client that reads nothing;
- 300 idle connections, then one request from the same user, tried again when refused
  (answered, and how long it took);
- 20,000 random FastCGI records on 200 connections;
- 2,000 requests one after another (a leak shows as growth).

The suite (``tests/test_serve_safety.py``) runs each case small; this runs them at the
sizes the review used.  ``--quick`` divides the sizes by 8.  Linux only (/proc).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from test_serve import nv, rec, request_records, split  # noqa: E402
from test_serve_safety import (  # noqa: E402
    ask,
    connect,
    make_site,
    open_gate,
    params,
    rss,
    start_serve,
    until_values,
)

MiB = 1024 * 1024

FLOOD = """
import os, sys
chunk = b"o" * 65536
count = int(os.environ["QUERY_STRING"])
for _ in range(count):
    sys.stderr.buffer.write(chunk)
sys.stdout.write("Content-Type: application/octet-stream\\n\\n")
sys.stdout.flush()
for _ in range(count):
    sys.stdout.buffer.write(chunk)
"""


def grown(pid: int, before: int) -> str:
    return f"{(rss(pid) - before) / MiB:+7.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes divided by 8")
    scale = 8 if parser.parse_args().quick else 1
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        base = Path(tmp)
        www, data = make_site(base)
        (www / "flood_out.py").write_text(FLOOD)
        serve = start_serve(base, data, "--max-children", "1", "--timeout", "120")
        pid = serve.pid
        try:
            # 1. multiplexed requests with big params, never finished
            before = rss(pid)
            big = nv({"SCRIPT_FILENAME": str(www / "fresh.py"), "HTTP_X_PAD": "p" * 250_000})
            client = connect(serve.sock, timeout=120)
            for rid in range(1, 1000 // scale + 1):
                records = [rec(1, rid, struct.pack("!HB5x", 1, 1))]
                records += [rec(4, rid, big[i : i + 65535]) for i in range(0, len(big), 65535)]
                client.send(*records)
            client.send(rec(9, 0, nv({"FCGI_MAX_REQS": ""})))
            refused = sum(1 for kind, _, c in until_values(client) if kind == 3 and c[4] == 2)
            rows.append(
                (
                    f"{1000 // scale} requests x 250 KiB params",
                    grown(pid, before),
                    f"{refused} refused (FCGI_OVERLOADED)",
                )
            )
            client.close()

            # 2. queued big bodies
            gate = ask(serve.sock, params(www, "gate.py"))
            gate.read_until(1, b"\r\n\r\n")
            before = rss(pid)
            body = os.urandom(60 * MiB // scale)
            waiting = []
            for _ in range(8):
                waiting.append(ask(serve.sock, params(www, "sha.py", body=body), body))
                until_values(waiting[-1])
            held = grown(pid, before)
            open_gate(data)
            ok = sum(
                split(c.read(1)[1].stdout)[1].startswith(str(len(body)).encode()) for c in waiting
            )
            rows.append((f"8 queued bodies x {len(body) // MiB} MiB", held, f"{ok}/8 bodies whole"))
            for c in [gate, *waiting]:
                c.close()

            # 3. output to a client that reads nothing
            before = rss(pid)
            chunks = 1024 // scale  # 64 KiB each, to stderr, then to stdout
            deaf = ask(serve.sock, params(www, "flood_out.py", str(chunks)))
            time.sleep(3)  # what the server takes meanwhile is what it holds
            held = grown(pid, before)
            reply = deaf.read(1)[1]
            rows.append(
                (
                    f"{2 * chunks // 16} MiB out, unread",
                    held,
                    f"{(len(reply.stdout) + len(reply.stderr)) // MiB} MiB arrived later",
                )
            )
            deaf.close()

            # 4. idle connections
            before = rss(pid)
            idle = []
            for _ in range(300):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(serve.sock))
                idle.append(sock)
            started = time.monotonic()
            refused = 0
            result = "not answered in 40 s"
            while time.monotonic() - started < 40:
                try:
                    late = ask(serve.sock, params(www, "fresh.py"))
                    late.sock.settimeout(40)
                    answered = split(late.read(1)[1].stdout)[1] == b"fresh\n"
                    late.close()
                    result = f"answered: {answered}, after {time.monotonic() - started:.1f} s"
                    break
                except (ConnectionError, EOFError):
                    refused += 1  # the same peer (user) as the idle ones: closed at once
                except OSError as exc:
                    result = f"not answered: {exc!r}"
                    break
            result += f" ({refused} tries refused)"
            rows.append(("300 idle connections, then a request", grown(pid, before), result))
            for sock in idle:
                sock.close()

            # 5. fuzz
            before = rss(pid)
            rng = random.Random(31)
            for _ in range(200):
                fuzz = connect(serve.sock, timeout=10)
                records = []
                for _ in range(100):
                    kind = rng.choice([1, 2, 4, 5, 8, 9, 11, rng.randrange(256)])
                    content = rng.randbytes(rng.choice([0, 8, 100, 3000]))
                    if kind == 1 and rng.random() < 0.7:
                        content = struct.pack("!HB5x", rng.choice([1, 2, 3]), rng.randrange(2))
                    records.append(rec(kind, rng.choice([0, 1, 2, rng.randrange(65536)]), content))
                with contextlib.suppress(OSError):
                    fuzz.send(*records)
                fuzz.close()
            check = ask(serve.sock, params(www, "fresh.py"))
            alive = split(check.read(1)[1].stdout)[1] == b"fresh\n"
            check.close()
            rows.append(("20,000 random records", grown(pid, before), f"still serving: {alive}"))

            # 6. many requests
            before = rss(pid)
            count = 2000 // scale
            for _ in range(count):
                one = connect(serve.sock)
                one.send(*request_records(1, params(www, "fresh.py")))
                one.read(1)
                one.close()
            rows.append((f"{count} requests one by one", grown(pid, before), "leak check"))
        finally:
            serve.stop()
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  parent RSS   result")
    for case, memory, result in rows:
        print(f"{case:<{width}}  {memory}  {result}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
