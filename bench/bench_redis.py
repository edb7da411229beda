"""Uncontended acquire+release round trips per second: perlcompat's Redis lock vs redis-py's.

    python bench/bench_redis.py [--url redis://host:port/db] [--cycles N] [--rounds R]

Without ``--url`` a throw-away ``redis-server`` is started on a free loopback
port.  Both locks run in this one process against the same server, in many
short alternating rounds so that background load hits both alike.  Printed per
lock: cycles per second over all its rounds, and its best round; the ratios are
perlcompat / redis-py over all rounds and the median of the per-round ratios
(>= 0.9 is the target).
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

import redis  # noqa: E402

from perlcompat import Lock, lock, unlock  # noqa: E402


def rate(cycle: object, cycles: int) -> float:
    """Run *cycle* (an acquire+release) *cycles* times; return cycles per second."""
    started = time.perf_counter()
    for _ in range(cycles):
        cycle()  # type: ignore[operator]
    return cycles / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="use this server instead of starting one")
    parser.add_argument("--cycles", type=int, default=300, help="cycles per round")
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()

    server = None
    url = args.url
    if url is None:
        from redis_server import RedisServer

        server = RedisServer(tempfile.mkdtemp(prefix="bench-redis-")).start()
        server.declare_empty()
        url = server.url
    try:
        ours = Lock("bench-perlcompat", url=url, stale=180)
        theirs = redis.Redis.from_url(url).lock("bench-redis-py", timeout=180)

        def perlcompat_cycle() -> None:
            ours.acquire()
            ours.release()

        def perl_style_cycle() -> None:
            if not lock("bench-perl-style", url=url, stale=180):
                raise RuntimeError("lock() failed")
            unlock("bench-perl-style", url=url)

        def redis_py_cycle() -> None:
            theirs.acquire()
            theirs.release()

        cycles = {
            "perlcompat Lock": perlcompat_cycle,
            "redis-py Lock": redis_py_cycle,
            "perlcompat lock()/unlock()": perl_style_cycle,
        }
        results: dict[str, list[float]] = {label: [] for label in cycles}
        for cycle in cycles.values():
            rate(cycle, 200)  # warm up: connect, load the scripts
        for round_ in range(args.rounds):
            order = list(cycles.items())
            if round_ % 2:
                order.reverse()
            for label, cycle in order:
                results[label].append(rate(cycle, args.cycles))

        print(f"server {url}, {args.rounds} rounds x {args.cycles} uncontended cycles per lock")
        overall = {
            label: len(rates) / sum(1 / r for r in rates) for label, rates in results.items()
        }
        for label, rates in results.items():
            print(f"  {label:28s} {overall[label]:8.0f}/s overall, best round {max(rates):8.0f}/s")
        ours_, theirs_ = results["perlcompat Lock"], results["redis-py Lock"]
        ratio = overall["perlcompat Lock"] / overall["redis-py Lock"]
        median = statistics.median(a / b for a, b in zip(ours_, theirs_))
        print(f"ratio perlcompat Lock / redis-py Lock: {ratio:.2f}x overall, {median:.2f}x median")
        perl = overall["perlcompat lock()/unlock()"] / overall["redis-py Lock"]
        print(f"ratio lock()/unlock() (a new Lock per call) / redis-py Lock: {perl:.2f}x overall")
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
