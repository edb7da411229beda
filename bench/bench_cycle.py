"""Contended ``+<`` read-increment-write cycle: perlcompat against the raw syscalls and others.

``--procs`` processes (default 4) each run ``--cycles`` cycles (default 1500) of
the Perl locking article's idiom on one counter file::

    open(OUT, "+< $f") or die; flock(OUT, 2); $n = <OUT>;
    seek(OUT, 0, 0); print OUT $n + 1; truncate(OUT, tell(OUT)); close(OUT);

Rows:

* raw: ``os.open`` + ``fcntl.flock`` + ``os.pread``/``os.pwrite`` + ``os.ftruncate``,
  the floor for any Python port;
* perlcompat: the idiom as ported (``open_``, ``flock``, ``readline``, ``seek``,
  ``print_``, ``truncate``, ``tell``, ``close``);
* perl: the idiom itself, run by perl;
* portalocker: ``open(f, "r+")`` + ``portalocker.lock(fh, LockFlags.EXCLUSIVE)``;
* python open: ``open(f, "r+")`` + ``fcntl.flock``.

Workers start, import, say "ready" and wait; the clock runs from "go" until the
last one is done, so interpreter start-up is not counted.  Each row runs
``--rounds`` times, interleaved with the others; the median wall time is printed
with its ratio to raw (targets: perlcompat <= 1.5x raw, faster than portalocker),
and the median CPU time all workers spent in the loop (user + system; steadier on
a busy machine), also per cycle.  Every run must end with the counter at procs * cycles.

    python bench/bench_cycle.py [--procs 4] [--cycles 1500] [--rounds 5] [--against DIR]

``--against DIR`` adds the perlcompat row again with another copy of the package
first on ``PYTHONPATH`` (say an older checkout), measured in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PERL = r"""
use Time::HiRes qw(clock_gettime CLOCK_PROCESS_CPUTIME_ID);  # times() counts in 10 ms ticks
$| = 1;
my ($f, $cycles) = @ARGV;
print "ready\n"; <STDIN>;
my $cpu0 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID);
for (1 .. $cycles) {
    open(OUT, "+< $f") or die "Can't open: $!";
    flock(OUT, 2) or die "Can't flock: $!";
    my $n = <OUT>;
    seek(OUT, 0, 0);
    print OUT $n + 1;
    truncate(OUT, tell(OUT));
    close(OUT);
}
printf "done %.6f\n", clock_gettime(CLOCK_PROCESS_CPUTIME_ID) - $cpu0;
"""


def cycle_raw(path: str, cycles: int) -> None:
    import fcntl

    for _ in range(cycles):
        fd = os.open(path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = os.pread(fd, 64, 0)
        out = b"%d" % (int(data or b"0") + 1)
        os.pwrite(fd, out, 0)
        os.ftruncate(fd, len(out))
        os.close(fd)


def cycle_perlcompat(path: str, cycles: int) -> None:
    from perlcompat import OS_ERROR, close, die, flock, open_, print_, seek, tell, truncate

    spec = "+< " + path
    for _ in range(cycles):
        OUT = open_(spec) or die(f"Can't open: {OS_ERROR}")
        flock(OUT, 2) or die(f"Can't flock: {OS_ERROR}")
        n = OUT.readline()
        seek(OUT, 0, 0)
        print_(OUT, int(n or 0) + 1)
        truncate(OUT, tell(OUT))
        close(OUT)


def cycle_portalocker(path: str, cycles: int) -> None:
    import portalocker

    exclusive = portalocker.LockFlags.EXCLUSIVE
    for _ in range(cycles):
        with open(path, "r+") as fh:
            portalocker.lock(fh, exclusive)
            n = fh.readline()
            fh.seek(0)
            fh.write(str(int(n or 0) + 1))
            fh.truncate()


def cycle_python_open(path: str, cycles: int) -> None:
    import fcntl

    for _ in range(cycles):
        with open(path, "r+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            n = fh.readline()
            fh.seek(0)
            fh.write(str(int(n or 0) + 1))
            fh.truncate()


CYCLES = {
    "raw os.open+flock+pread/pwrite": cycle_raw,
    "perlcompat (the +< idiom)": cycle_perlcompat,
    "portalocker.lock + open('r+')": cycle_portalocker,
    "python open('r+') + fcntl.flock": cycle_python_open,
}
PERL_ROW = "perl (the +< idiom)"
AGAINST = " [--against]"


def worker(name: str, path: str, cycles: int) -> None:
    """Child process: import what the row needs, wait for "go", run, report."""
    run = CYCLES[name.removesuffix(AGAINST)]
    run(path, 0)  # import everything before the clock starts
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()
    cpu = time.process_time()
    run(path, cycles)
    sys.stdout.write(f"done {time.process_time() - cpu:.6f}\n")
    sys.stdout.flush()


def run_row(
    name: str, python: str, path: str, procs: int, cycles: int, against: str | None = None
) -> tuple[float, float]:
    """Run one row once; return (seconds from "go" to the last "done", CPU seconds of all)."""
    with open(path, "w") as fh:
        fh.write("0")
    if name == PERL_ROW:
        argv = ["perl", "-e", PERL, path, str(cycles)]
    else:
        argv = [python, os.path.abspath(__file__), "--worker", name, path, str(cycles)]
    env = None
    if name.endswith(AGAINST) and against:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(against)}
    children = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        for _ in range(procs)
    ]
    for child in children:
        assert child.stdout is not None
        if child.stdout.readline() != b"ready\n":
            raise SystemExit(f"{name}: a worker failed to start")
    start = time.perf_counter()
    for child in children:
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.flush()
    cpu = 0.0
    for child in children:
        assert child.stdout is not None
        line = child.stdout.readline().split()
        if not line or line[0] != b"done":
            raise SystemExit(f"{name}: a worker failed")
        cpu += float(line[1])
    elapsed = time.perf_counter() - start
    for child in children:
        child.communicate()
    with open(path) as fh:
        total = int(fh.read())
    if total != procs * cycles:
        raise SystemExit(f"{name}: counter is {total}, expected {procs * cycles}: lost updates")
    return elapsed, cpu


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--against", metavar="DIR", help="also time the perlcompat in DIR")
    args = parser.parse_args()

    rows = list(CYCLES)
    if args.against:
        rows.insert(2, "perlcompat (the +< idiom)" + AGAINST)
    if shutil.which("perl"):
        rows.insert(2, PERL_ROW)
    workdir = tempfile.mkdtemp(prefix="perlcompat-bench-")
    path = os.path.join(workdir, "counter.txt")
    times: dict[str, list[float]] = {name: [] for name in rows}
    cpus: dict[str, list[float]] = {name: [] for name in rows}
    try:
        for _ in range(args.rounds):
            for name in rows:
                elapsed, cpu = run_row(
                    name, args.python, path, args.procs, args.cycles, args.against
                )
                times[name].append(elapsed)
                cpus[name].append(cpu)
    finally:
        shutil.rmtree(workdir)
    print(
        f"interpreter: {args.python}; {args.procs} processes x {args.cycles} cycles, "
        f"median of {args.rounds} rounds; load average {os.getloadavg()[0]:.2f} "
        f"on {os.cpu_count()} CPUs"
    )
    base = statistics.median(times[rows[0]])
    base_cpu = statistics.median(cpus[rows[0]])
    print(
        f"{'row':40} {'seconds':>8} {'(min)':>7} {'ratio to raw':>13}   {'CPU s':>6} {'ratio':>6}"
        f" {'CPU us/cycle':>13}"
    )
    for name in rows:
        median = statistics.median(times[name])
        cpu = statistics.median(cpus[name])
        print(
            f"{name:40} {median:8.3f} {min(times[name]):7.3f} {median / base:12.2f}x"
            f"   {cpu:6.3f} {cpu / base_cpu:5.2f}x {cpu / (args.procs * args.cycles) * 1e6:13.2f}"
        )
    if args.against:
        here, there = "perlcompat (the +< idiom)", "perlcompat (the +< idiom)" + AGAINST
        print(
            f"\nthis checkout against {args.against}: "
            f"{statistics.median(times[here]) / statistics.median(times[there]):.2f}x wall, "
            f"{statistics.median(cpus[here]) / statistics.median(cpus[there]):.2f}x CPU"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
