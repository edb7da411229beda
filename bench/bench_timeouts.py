"""Costs of issue 4's pieces, measured side by side in one run (python bench/bench_timeouts.py).

1. Semaphore acquire+release vs a flock lock() / raw fcntl.flock on one file (uncontended).
2. replace_file (fsync'd, and fsync=False) vs Perl's in-place ``+<`` rewrite through open_.
3. How late the ALRM handler runs: real SIGALRM (main thread) vs cooperative (worker thread),
   both ending a flock that real perl holds.
"""

from __future__ import annotations

import fcntl
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from perlcompat import (
    Die,
    Semaphore,
    alarm,
    close,
    die,
    flock,
    local_sig,
    lock,
    open_,
    print_,
    replace_file,
    seek,
    tell,
    truncate,
    unlock,
)


def per_op(func: object, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        func()  # type: ignore[operator]
    return (time.perf_counter() - start) / rounds


def bench_semaphore(tmp: str) -> None:
    rounds = 3000
    raw_path = os.path.join(tmp, "raw.lck")

    def raw() -> None:
        fd = os.open(raw_path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)

    name = os.path.join(tmp, "flocklock")

    def flock_lock() -> None:
        lock(name, method="flock")
        unlock(name, method="flock")

    sem1 = Semaphore(os.path.join(tmp, "sem1"), 1)
    sem8 = Semaphore(os.path.join(tmp, "sem8"), 8)
    busy = [Semaphore(os.path.join(tmp, "sem8"), 8) for _ in range(7)]

    def sem(s: Semaphore) -> None:
        s.acquire()
        s.release()

    base = per_op(raw, rounds)
    rows = [("raw os.open+fcntl.flock+close", base)]
    rows.append(("lock(method='flock') + unlock", per_op(flock_lock, rounds)))
    rows.append(("Semaphore(n=1) acquire+release", per_op(lambda: sem(sem1), rounds)))
    rows.append(("Semaphore(n=8), 0 of 8 busy", per_op(lambda: sem(sem8), rounds)))
    for b in busy:
        b.acquire()
    rows.append(("Semaphore(n=8), 7 of 8 busy", per_op(lambda: sem(sem8), rounds)))
    for b in busy:
        b.release()
    print(f"\n1. uncontended acquire+release, {rounds} rounds")
    for label, secs in rows:
        print(f"   {label:34} {secs * 1e6:8.1f} us   {secs / base:5.2f}x raw")


def bench_replace(tmp: str) -> None:
    rounds = 300
    path = os.path.join(tmp, "data.txt")
    body = "".join(f"{i}<>name<>message {i}\n" for i in range(300))  # ~8 KB
    with open(path, "w") as f:
        f.write(body)

    def in_place() -> None:
        out = open_("+< " + path) or die()
        flock(out, 2) or die()
        data = out.read()
        seek(out, 0, 0) or die()
        print_(out, data) or die()
        truncate(out, tell(out)) or die()
        close(out)

    def replaced(sync: bool) -> None:
        replace_file(path, lambda old: old, fsync=sync)

    base = per_op(in_place, rounds)
    rows = [("in-place +< seek/print/truncate", base)]
    rows.append(("replace_file(fsync=False)", per_op(lambda: replaced(False), rounds)))
    rows.append(("replace_file (fsync file + dir)", per_op(lambda: replaced(True), rounds)))
    print(f"\n2. read-modify-write of an 8 KB file, {rounds} rounds (this disk)")
    for label, secs in rows:
        print(f"   {label:34} {secs * 1e6:8.1f} us   {secs / base:5.2f}x in-place")


HOLD = (
    'use Fcntl qw(:flock); open(my $f, "+<", $ARGV[0]) or die; flock($f, LOCK_EX) or die;'
    ' $| = 1; print "locked\\n"; <STDIN>;'
)


def lateness(datafile: str) -> float:
    fh = open_("< " + datafile) or die()
    try:
        with local_sig("ALRM", lambda *a: die("time out")):
            start = time.monotonic()
            alarm(0.2)
            flock(fh, 2)
    except Die:
        return time.monotonic() - start - 0.2
    finally:
        close(fh)
    raise AssertionError("flock returned")


def bench_alarm(tmp: str) -> None:
    datafile = os.path.join(tmp, "held.dat")
    open(datafile, "w").close()
    perl = subprocess.Popen(
        ["perl", "-e", HOLD, datafile], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert perl.stdout is not None and perl.stdout.readline() == b"locked\n"
    trials = 15
    main = [lateness(datafile) for _ in range(trials)]
    worker: list[float] = []
    for _ in range(trials):
        t = threading.Thread(target=lambda: worker.append(lateness(datafile)))
        t.start()
        t.join()
    perl.kill()
    perl.wait()
    print(f"\n3. handler lateness after alarm(0.2) ending a flock perl holds, {trials} trials")
    for label, xs in (
        ("main thread (real SIGALRM)", main),
        ("worker thread (cooperative)", worker),
    ):
        print(
            f"   {label:34} median {statistics.median(xs) * 1e3:6.2f} ms"
            f"   max {max(xs) * 1e3:6.2f} ms"
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bench_semaphore(tmp)
        bench_replace(tmp)
        bench_alarm(tmp)


if __name__ == "__main__":
    main()
