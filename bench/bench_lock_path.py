"""The cost of one uncontended ``lock()`` + ``unlock()`` per method, against Perl's mkdir sub.

One process, no contention: the path of one lock, as a CGI request pays it.  Each
row repeats ``lock(name, method=M)`` + ``unlock(name, method=M)`` on a relative name
(the working directory is the bench's temporary directory, as a CGI script's lock
name is relative to its own directory) and reports microseconds per pair.  In the
same run, side by side:

* "perl sub": Perl's ``sub lock { mkdir($_[0], 0755) }`` / ``sub unlock { rmdir($_[0]) }``
  called in a loop by real ``perl`` (timed inside perl, start-up excluded);
* "raw os": ``os.mkdir`` + ``os.rmdir`` in a Python loop: the floor of any mkdir lock.

The rows run in rounds (every row once per round, ``--rounds`` rounds); each row's
figure is its median round, so a noisy moment on a shared machine touches every
row alike.  The ratios are to the Perl sub and to the raw loop of the same run.
Two figures per row: wall-clock time, and the CPU time the process spent (user +
system: Python's ``time.process_time``; for perl its ``wait4`` usage less that of a
run of no cycles), which other processes on a busy machine disturb less.

    python bench/bench_lock_path.py [--cycles 2000] [--rounds 7] [--dir DIR] [--methods ...]
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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from perlcompat import lock, unlock

METHODS = ["mkdir", "flock", "excl", "symlink", "rename", "link", "toplock"]
PERL = "perl sub mkdir/rmdir"
RAW = "raw os.mkdir/rmdir"

PERL_LOOP = r"""
use strict; use warnings; use Time::HiRes ();
sub lock { mkdir($_[0], 0755) }
sub unlock { rmdir($_[0]) }
my ($name, $cycles) = @ARGV;
my $t = Time::HiRes::time();
for (1 .. $cycles) { lock($name) or die "lock: $!"; unlock($name) or die "unlock: $!"; }
printf "%.9f\n", Time::HiRes::time() - $t;
"""


def _perl_run(name: str, cycles: int) -> tuple[float, float]:
    """(wall seconds of the loop, CPU seconds of the whole perl process)."""
    child = subprocess.Popen(
        ["perl", "-e", PERL_LOOP, name, str(cycles)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise RuntimeError(f"perl loop failed ({child.returncode})")
    return float(out), usage.ru_utime + usage.ru_stime


_perl_start: list[float] = []


def _perl(name: str, cycles: int) -> tuple[float, float]:
    if not _perl_start:  # perl's own start-up and exit, measured once: a run of no cycles
        _perl_start.append(statistics.median(_perl_run(name, 0)[1] for _ in range(5)))
    wall, cpu = _perl_run(name, cycles)
    return wall, max(cpu - _perl_start[0], 0.0)


def _raw(name: str, cycles: int) -> tuple[float, float]:
    mkdir, rmdir = os.mkdir, os.rmdir
    cpu, began = time.process_time(), time.perf_counter()
    for _ in range(cycles):
        mkdir(name, 0o755)
        rmdir(name)
    return time.perf_counter() - began, time.process_time() - cpu


def _method(method: str, name: str, cycles: int) -> tuple[float, float]:
    if lock(name, method=method) != 1 or unlock(name, method=method) != 1:  # warm
        raise RuntimeError(f"{method}: lock()/unlock() failed")
    cpu, began = time.process_time(), time.perf_counter()
    for _ in range(cycles):
        if lock(name, method=method) != 1 or unlock(name, method=method) != 1:
            raise RuntimeError(f"{method}: lock()/unlock() failed")
    return time.perf_counter() - began, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dir", help="directory to run in (default: the temporary directory)")
    parser.add_argument("--methods", nargs="*", default=METHODS)
    args = parser.parse_args()
    has_perl = shutil.which("perl") is not None
    rows = ([PERL] if has_perl else []) + [RAW, *args.methods]
    walls: dict[str, list[float]] = {row: [] for row in rows}
    cpus: dict[str, list[float]] = {row: [] for row in rows}
    here = os.getcwd()
    with tempfile.TemporaryDirectory(dir=args.dir) as workdir:
        os.chdir(workdir)
        try:
            for _ in range(args.rounds):
                for row in rows:
                    name = f"{row.split()[0]}.lock"
                    if row == PERL:
                        wall, cpu = _perl(name, args.cycles)
                    elif row == RAW:
                        wall, cpu = _raw(name, args.cycles)
                    else:
                        wall, cpu = _method(row, name, args.cycles)
                    walls[row].append(wall / args.cycles * 1e6)
                    cpus[row].append(cpu / args.cycles * 1e6)
        finally:
            os.chdir(here)
    print(
        f"lock()+unlock() of one relative name, {args.cycles} cycles x {args.rounds} rounds"
        f" (median round), in {args.dir or tempfile.gettempdir()}"
    )
    print(f"{'':<22}{'wall-clock':^32}{'CPU (user + system)':^32}")
    head = f"{'us/cycle':>10}{'x perl sub':>12}{'x raw os':>10}"
    print(f"{'row':<22}{head}{head}")
    columns = [
        {row: statistics.median(values) for row, values in found.items()} for found in (walls, cpus)
    ]
    for row in rows:
        line = f"{row:<22}"
        for per in columns:
            perl_us = per.get(PERL)
            ratio = f"{per[row] / perl_us:>11.2f}x" if perl_us else f"{'-':>12}"
            raw = f"{per[row] / per[RAW]:>9.2f}x" if per[RAW] else f"{'-':>10}"
            line += f"{per[row]:>10.1f}{ratio}{raw}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
