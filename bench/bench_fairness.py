"""Fairness to Perl in a mixed deployment: who gets the "busy" answers, default vs ``poll=``.

``--n`` Perl processes run the mkdir lock sub (mkdir, 5 tries, ``sleep 1``
between them: gives up after ~4 s) and ``--n`` Python processes run
``perlcompat.lock()`` on the same lock directory.  Each process repeats a
request cycle for ``--seconds``: take the lock (a busy answer counts and the
request is dropped, as a CGI would print "busy"), read-increment-write a
shared counter file, hold ``--hold`` seconds in all, release, think a random
0 to 2 x ``--think`` seconds (so that requests arrive at random phases, not in
lockstep with the one-second sleeps).  Requests started before the end are
finished and counted.  The counter must equal the sum of the granted requests
(a lost update would mean the lock failed).

Rows, one run each: Python with the default backoff (short jittered pauses,
a released lock is taken within milliseconds), and Python with ``poll=1.0``
(the fair mode: a try about every second, the Perl sub's cadence).  Columns per
side: requests, busy answers and their share, granted requests per second.

    python bench/bench_fairness.py [--n 8] [--seconds 6] [--hold 0.02] [--think 0.05]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MKDIR_SUB_PERL = r"""
use strict; use warnings; use Time::HiRes ();
my ($dir, $counter, $start, $end, $hold, $think) = @ARGV;
# the mkdir lock column's sub, verbatim but for `my`: 5 tries 1 s apart, 3-minute stale removal
sub lock {
    my $dir = $_[0];
    if (-e $dir) { my $t = (stat($dir))[9]; if ($t < time - 180) { &unlock($dir); } }
    my $retry = 5;
    while (!mkdir($dir, 0755)) { if (--$retry <= 0) { return 0; } sleep(1); }
    return 1;
}
sub unlock { rmdir("$_[0]"); }
my ($ok, $busy) = (0, 0);
Time::HiRes::sleep($start - Time::HiRes::time()) if $start > Time::HiRes::time();
while (Time::HiRes::time() < $end) {
    if (!&lock($dir)) { $busy++; Time::HiRes::sleep(rand(2 * $think)); next; }
    my $t0 = Time::HiRes::time();
    open(my $fh, '+<', $counter) or die "$counter: $!";
    my $n = <$fh> // 0; seek($fh, 0, 0); print $fh $n + 1, "\n"; truncate($fh, tell($fh));
    close($fh);
    my $left = $hold - (Time::HiRes::time() - $t0);
    Time::HiRes::sleep($left) if $left > 0;
    &unlock($dir);
    $ok++;
    Time::HiRes::sleep(rand(2 * $think));
}
print "$ok $busy\n";
"""


def python_worker(
    directory: str, counter: str, start: float, end: float, hold: float, think: float, poll: str
) -> None:
    """One Python process's request cycles; prints "granted busy"."""
    from perlcompat import lock, unlock

    fair = float(poll) if poll != "none" else None
    ok = busy = 0
    if start > time.time():
        time.sleep(start - time.time())
    while time.time() < end:
        if not lock(directory, poll=fair):
            busy += 1
            time.sleep(random.uniform(0, 2 * think))
            continue
        t0 = time.monotonic()
        with open(counter, "r+") as fh:
            n = int(fh.read() or 0)
            fh.seek(0)
            fh.write(f"{n + 1}\n")
            fh.truncate()
        left = hold - (time.monotonic() - t0)
        if left > 0:
            time.sleep(left)
        assert unlock(directory) == 1
        ok += 1
        time.sleep(random.uniform(0, 2 * think))
    print(ok, busy)


def run_mode(
    n: int, seconds: float, hold: float, think: float, poll: str
) -> dict[str, tuple[int, int]]:
    """Run n Perl and n Python workers on one lock; return per-side figures."""
    with tempfile.TemporaryDirectory() as tmp:
        lockdir = os.path.join(tmp, "lockdir")
        counter = os.path.join(tmp, "count")
        with open(counter, "w") as fh:
            fh.write("0\n")
        start = time.time() + 1.0  # all processes started: begin together
        end = start + seconds
        common = [lockdir, counter, repr(start), repr(end), repr(hold), repr(think)]
        procs: dict[str, list[subprocess.Popen[str]]] = {"perl": [], "python": []}
        for _ in range(n):
            procs["perl"].append(
                subprocess.Popen(
                    ["perl", "-e", MKDIR_SUB_PERL, *common], stdout=subprocess.PIPE, text=True
                )
            )
            procs["python"].append(
                subprocess.Popen(
                    [sys.executable, __file__, "--worker", *common, poll],
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        result: dict[str, tuple[int, int]] = {}
        granted = 0
        for side, group in procs.items():
            ok = busy = 0
            for proc in group:
                out, _ = proc.communicate()
                if proc.returncode != 0:
                    raise SystemExit(f"{side} worker failed with status {proc.returncode}")
                a, b = out.split()
                ok, busy = ok + int(a), busy + int(b)
            granted += ok
            result[side] = (ok, busy)
        with open(counter) as fh:
            total = int(fh.read())
        if total != granted:
            raise SystemExit(f"lost updates: counter {total} != {granted} granted requests")
        return result


def main() -> None:
    if sys.argv[1:2] == ["--worker"]:
        d, c, s, e, h, t, p = sys.argv[2:9]
        python_worker(d, c, float(s), float(e), float(h), float(t), p)
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--n", type=int, default=8, help="processes per side (default 8)")
    parser.add_argument("--seconds", type=float, default=6.0, help="per mode (default 6)")
    parser.add_argument("--hold", type=float, default=0.02, help="critical section (s)")
    parser.add_argument("--think", type=float, default=0.05, help="mean pause between requests (s)")
    args = parser.parse_args()
    print(
        f"{args.n} Perl (mkdir lock sub) + {args.n} Python (lock()) processes on one mkdir lock,"
        f" {args.seconds:g} s per mode, hold {args.hold:g} s, think {args.think:g} s"
    )
    header = (
        f"{'python waits':<22} {'side':<7} {'requests':>8} {'busy':>6} {'busy %':>7}"
        f" {'granted/s':>9}"
    )
    print(header)
    print("-" * len(header))
    for label, poll in (("default backoff", "none"), ("poll=1.0 (fair)", "1.0")):
        result = run_mode(args.n, args.seconds, args.hold, args.think, poll)
        for side in ("perl", "python"):
            ok, busy = result[side]
            requests = ok + busy
            share = 100.0 * busy / requests if requests else 0.0
            print(
                f"{label:<22} {side:<7} {requests:>8} {busy:>6} {share:>6.1f}%"
                f" {ok / args.seconds:>9.1f}"
            )
            label = ""


if __name__ == "__main__":
    main()
