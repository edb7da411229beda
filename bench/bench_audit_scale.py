"""How ``perlcompat audit``'s time grows with the size of a script, for generated scripts.

Each generator writes a script of *n* repeated units: locks taken and held at once
(``open`` + ``flock`` never closed), a long ``if``/``elsif`` chain, read-modify-write
blocks each under its own flock, many subs that lock and call each other, many mkdir
lock subs and many handles opened at once.  Each is audited in this process
(:func:`perlcompat.tools.audit.run.audit`, best of ``--runs``) at *n*, 2n, 4n ...
Printed per generator: the seconds at each size, microseconds per unit, and the
ratio of each time to the one before it: about 2 when the audit is linear, 4 when
quadratic (the doubling ratio; a busy machine adds noise, so read the trend).

    python bench/bench_audit_scale.py [--start 1000] [--steps 4] [--runs 3] [--only elsif]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from perlcompat.tools.audit.run import audit


def held_flocks(n: int) -> str:
    return "".join(f'open(F{i}, ">>/tmp/f{i}") or die;\nflock(F{i}, 2) or die;\n' for i in range(n))


def elsif_chain(n: int) -> str:
    arms = "".join(f'elsif ($a == {i}) {{ print "{i}"; }}\n' for i in range(1, n))
    return f'if ($a == 0) {{ print "0"; }}\n{arms}else {{ print "x"; }}\n'


def updates(n: int) -> str:
    return "".join(
        f'open(C{i}, "+< /tmp/c{i}") or die; flock(C{i}, 2) or die; $c = <C{i}>;'
        f" seek(C{i}, 0, 0); print C{i} $c + 1; truncate(C{i}, tell(C{i})); close(C{i});\n"
        for i in range(n)
    )


def subs(n: int) -> str:
    return "".join(
        f'sub s{i} {{ open(L, ">/tmp/l{i % 50}"); flock(L, 2); &s{i + 1}(); close(L); }}\n'
        for i in range(n)
    )


def mkdir_locks(n: int) -> str:
    return "".join(
        f"sub lock{i} {{ foreach (1..5) {{ if (mkdir('/tmp/d{i}', 0755)) {{ return 1; }}"
        f" sleep(1); }} return 0; }}\n&lock{i}() or die;\n"
        for i in range(n)
    )


def open_handles(n: int) -> str:
    return "".join(f'open(H{i}, "</tmp/h{i}") or die;\n$x .= <H{i}>;\n' for i in range(n))


GENERATORS: dict[str, Callable[[int], str]] = {
    "flocks held at once": held_flocks,
    "elsif chain": elsif_chain,
    "locked updates": updates,
    "subs calling subs": subs,
    "mkdir lock subs": mkdir_locks,
    "handles open at once": open_handles,
}


def seconds(text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        audit([("bench.pl", text)])
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--start", type=int, default=1000, help="units in the smallest script")
    parser.add_argument("--steps", type=int, default=4, help="sizes, each twice the one before")
    parser.add_argument("--runs", type=int, default=3, help="audits per size (best is kept)")
    parser.add_argument("--only", default="", help="only the generators whose name has this")
    args = parser.parse_args()
    sizes = [args.start * 2**k for k in range(args.steps)]
    print(f"{'generator':22} {'units':>7} {'KiB':>7} {'seconds':>8} {'us/unit':>8} {'x prev':>7}")
    for name, make in GENERATORS.items():
        if args.only not in name:
            continue
        before = 0.0
        for n in sizes:
            text = make(n)
            took = seconds(text, args.runs)
            ratio = f"{took / before:7.2f}" if before else "      -"
            size, per = len(text) / 1024, took / n * 1e6
            print(f"{name:22} {n:7d} {size:7.0f} {took:8.3f} {per:8.1f} {ratio}", flush=True)
            before = took
    print("x prev: time over the time at half the size (2 = linear, 4 = quadratic)")


if __name__ == "__main__":
    main()
