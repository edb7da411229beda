"""Lock methods under contention: cycles/s and hand-off latency, side by side in one run.

Each of ``--procs`` processes (default 4) repeats ``--cycles`` times: take the
lock, read-increment-write a shared counter file, release.  Every hold's
acquire and release instants are recorded; the hand-off latency is the time
from one holder starting its release to the next holder's acquire returning.
The counter must end at procs * cycles (a lost update means the lock failed).

Rows: every perlcompat method through ``Lock`` (default patience, smart
backoff); "bare mkdir/rmdir", the same loop with nothing but ``os.mkdir`` and
``os.rmdir`` (the floor any mkdir lock pays on that filesystem); then the mkdir
lock sub's own loop (``mkdir`` / ``sleep(1)`` retries) run by real Perl with fewer
cycles, for contrast.  "cost" is wall time per cycle relative to the flock
method in the same run and directory.  The whole table is printed once for the
temporary directory (usually a disk) and once for /dev/shm (tmpfs) when it
exists: a directory costs far more to create and remove on a disk.

    python bench/bench_lock_methods.py [--procs 4] [--cycles 400] [--perl-cycles 12]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from perlcompat.locks.api import Lock

METHODS = ["flock", "mkdir", "symlink", "excl", "rename", "toplock"]
BARE = "bare mkdir/rmdir"

MKDIR_SUB_PERL = r"""
use strict; use warnings; use Time::HiRes ();
my ($dir, $counter, $cycles, $out, $go) = @ARGV;
# the mkdir lock column's sub, verbatim but for `my`: 5 tries 1 s apart, 3-minute stale removal
sub lock {
    my $dir = $_[0];
    if (-e $dir) { my $t = (stat($dir))[9]; if ($t < time - 180) { &unlock($dir); } }
    my $retry = 5;
    while (!mkdir($dir, 0755)) { if (--$retry <= 0) { return 0; } sleep(1); }
    return 1;
}
sub unlock { rmdir("$_[0]"); }
open(my $log, '>', $out) or die "$out: $!";
select(undef, undef, undef, 0.001) until -e $go;
for (1 .. $cycles) {
    until (&lock($dir)) { }
    my $t_acq = Time::HiRes::time();
    open(my $fh, '+<', $counter) or die "$counter: $!";
    my $n = <$fh> // 0; seek($fh, 0, 0); print $fh $n + 1, "\n"; truncate($fh, tell($fh));
    close($fh);
    my $t_rel = Time::HiRes::time();
    &unlock($dir);
    print $log "$t_acq $t_rel\n";
}
close($log);
"""


class _Bare:
    """mkdir/rmdir and nothing else, polled like ``Lock.acquire`` polls."""

    def __init__(self, path: str) -> None:
        self.path = path

    def acquire(self) -> None:
        pause = 0.0005
        while True:
            try:
                os.mkdir(self.path)
                return
            except FileExistsError:
                time.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 1.6, 0.01)

    def release(self) -> None:
        os.rmdir(self.path)


def _worker(path: str, method: str, counter: str, cycles: int, start: object, out: object) -> None:
    lock = _Bare(path) if method == BARE else Lock(path, method=method, retry=None, stale=60)
    holds = []
    fd = os.open(counter, os.O_RDWR)
    start.wait()  # type: ignore[attr-defined]
    for _ in range(cycles):
        lock.acquire()
        t_acq = time.time()
        value = int(os.pread(fd, 32, 0) or b"0")
        data = b"%d\n" % (value + 1)
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        t_rel = time.time()
        lock.release()
        holds.append((t_acq, t_rel))
    os.close(fd)
    out.send(holds)  # type: ignore[attr-defined]


def _python_run(
    workdir: str, method: str, procs: int, cycles: int
) -> tuple[float, list[tuple[float, float]], int]:
    counter = os.path.join(workdir, "counter-" + method.replace("/", "-").replace(" ", "-"))
    with open(counter, "w") as stream:
        stream.write("0\n")
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(procs + 1)
    pipes = [ctx.Pipe(duplex=False) for _ in range(procs)]
    path = os.path.join(workdir, "lock-" + method.replace("/", "-").replace(" ", "-"))
    workers = [
        ctx.Process(target=_worker, args=(path, method, counter, cycles, start, sender))
        for _, sender in pipes
    ]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    holds: list[tuple[float, float]] = []
    for receiver, _ in pipes:
        while not receiver.poll(0.5):
            if any(worker.exitcode not in (None, 0) for worker in workers):
                for worker in workers:
                    worker.kill()
                raise RuntimeError(f"a {method} worker failed")
        holds += receiver.recv()
    elapsed = time.perf_counter() - began
    for worker in workers:
        worker.join()
    with open(counter) as stream:
        total = int(stream.read())
    return elapsed, holds, total


def _perl_run(
    workdir: str, procs: int, cycles: int
) -> tuple[float, list[tuple[float, float]], int]:
    counter = os.path.join(workdir, "counter-mkdir-sub")
    with open(counter, "w") as stream:
        stream.write("0\n")
    script = os.path.join(workdir, "mkdir_sub.pl")
    with open(script, "w") as stream:
        stream.write(MKDIR_SUB_PERL)
    lockdir = os.path.join(workdir, "lock-mkdir-sub")
    outs = [os.path.join(workdir, f"mkdir-sub-{i}.log") for i in range(procs)]
    go = os.path.join(workdir, "mkdir_sub.go")
    children = [
        subprocess.Popen(["perl", script, lockdir, counter, str(cycles), out, go]) for out in outs
    ]
    time.sleep(0.2)  # let every perl start and wait for the go file
    began = time.perf_counter()
    with open(go, "w"):
        pass
    for child in children:
        child.wait()
    elapsed = time.perf_counter() - began
    holds = []
    for out in outs:
        with open(out) as stream:
            holds += [(float(a), float(b)) for a, b in (line.split() for line in stream)]
    with open(counter) as stream:
        total = int(stream.read())
    return elapsed, holds, total


def _handoffs(holds: list[tuple[float, float]]) -> tuple[list[float], int]:
    """Hand-off latencies (s) between consecutive holds, and how many holds overlapped."""
    ordered = sorted(holds)
    gaps = [b[0] - a[1] for a, b in zip(ordered, ordered[1:])]
    return [g for g in gaps if g >= 0], sum(1 for g in gaps if g < 0)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _table(base: str, args: argparse.Namespace) -> None:
    methods = ["flock", *[m for m in args.methods if m != "flock"]]
    if "mkdir" in methods:
        methods.insert(methods.index("mkdir") + 1, BARE)
    rows = []
    with tempfile.TemporaryDirectory(dir=base) as workdir:
        for method in methods:
            run = _python_run(workdir, method, args.procs, args.cycles)
            rows.append((method, args.cycles, *run))
        if args.perl_cycles:
            run = _perl_run(workdir, args.procs, args.perl_cycles)
            rows.append(("mkdir lock sub, perl sleep(1)", args.perl_cycles, *run))
    flock_per_cycle = rows[0][2] / (args.procs * rows[0][1])
    kind = _fs_type(base)
    print(f"\n{base} ({kind}): {args.procs} processes; cycle = lock, read-increment-write, unlock")
    header = f"{'method':<24}{'cycles':>7}{'total s':>9}{'cycles/s':>10}{'cost':>8}"
    header += f"{'hand-off median':>17}{'p99':>10}{'lost':>6}{'overlap':>9}"
    print(header)
    for name, cycles, elapsed, holds, total in rows:
        expected = args.procs * cycles
        gaps, overlaps = _handoffs(holds)
        per_cycle = elapsed / expected
        median = statistics.median(gaps) * 1000 if gaps else float("nan")
        p99 = _pct(gaps, 0.99) * 1000 if gaps else float("nan")
        print(
            f"{name:<24}{expected:>7}{elapsed:>9.2f}{expected / elapsed:>10.0f}"
            f"{per_cycle / flock_per_cycle:>7.1f}x{median:>14.3f} ms{p99:>7.2f} ms"
            f"{expected - total:>6}{overlaps:>9}"
        )


def _fs_type(path: str) -> str:
    """The filesystem type holding *path*, from /proc/mounts ("?" if unknown)."""
    best, kind = "", "?"
    try:
        with open("/proc/mounts") as stream:
            for line in stream:
                fields = line.split()
                mount = fields[1]
                if (path == mount or path.startswith(mount.rstrip("/") + "/")) and len(mount) > len(
                    best
                ):
                    best, kind = mount, fields[2]
    except OSError:
        pass
    return kind


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=400)
    parser.add_argument("--perl-cycles", type=int, default=12)
    parser.add_argument("--methods", nargs="*", default=METHODS)
    parser.add_argument("--dir", action="append", help="directory to run in (repeatable)")
    args = parser.parse_args()
    bases = args.dir or [tempfile.gettempdir()]
    if not args.dir and os.path.isdir("/dev/shm") and _fs_type("/dev/shm") != _fs_type(bases[0]):
        bases.append("/dev/shm")
    for base in bases:
        _table(os.path.realpath(base), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
