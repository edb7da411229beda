"""write-under-shared-lock: the loss it warns of, shown with real ``perl``.

The classic counter takes ``flock(OUT, 1)``: LOCK_SH.  Four copies hold that lock at
once, all read one count and all write it plus one.  Here each round makes the four
Perl processes meet after their read (each says "read" and waits for "go"), so the
loss is exact, not a matter of timing: 4 x 25 increments end at 25.  The same script
with ``flock(OUT, 2)`` cannot meet (LOCK_EX lets one process in at a time) and counts
every one of 4 x 100.  ``perlcompat audit`` reports the first and not the second.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from perlutil import PERL

from perlcompat.tools.audit.run import audit

#: the classic counter; MEET makes the processes meet between the read and the write
COUNTER = r"""
$| = 1;
$file = $ARGV[0];
for (1 .. $ARGV[1]) {
    open(OUT, "+<$file") || die "open: $!";
    flock(OUT, LOCK) || die "flock: $!";
    $count = <OUT>;
    MEET
    $count++;
    seek(OUT, 0, 0);
    print OUT $count;
    truncate(OUT, tell(OUT));
    close(OUT);
    print "done\n";
}
"""
MEET = 'print "read\\n"; <STDIN>;'


def counter(lock: int, meet: bool) -> str:
    return COUNTER.replace("LOCK", str(lock)).replace("MEET", MEET if meet else "")


def run_counters(script: Path, data: Path, procs: int, rounds: int, meet: bool) -> int:
    data.write_text("0")
    children = [
        subprocess.Popen(
            [PERL, str(script), str(data), str(rounds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(procs)
    ]
    try:
        if meet:
            for _ in range(rounds):
                for child in children:  # all four hold LOCK_SH and have read the count
                    assert child.stdout is not None
                    assert child.stdout.readline() == "read\n"
                for child in children:
                    assert child.stdin is not None
                    child.stdin.write("go\n")
                    child.stdin.flush()
                for child in children:  # all four wrote and closed: the next round
                    assert child.stdout is not None
                    assert child.stdout.readline() == "done\n"
        for child in children:
            child.communicate(timeout=120)
            assert child.returncode == 0
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    return int(data.read_text())


def test_the_shared_lock_counter_loses_three_of_four_updates(tmp_path: Path) -> None:
    script = tmp_path / "count_sh.pl"
    script.write_text(counter(1, meet=True))
    assert run_counters(script, tmp_path / "count.txt", procs=4, rounds=25, meet=True) == 25
    rules = {(f.line, f.rule) for f in audit([(str(script), script.read_text())])}
    assert (6, "write-under-shared-lock") in rules


def test_the_exclusive_lock_counter_counts_every_update(tmp_path: Path) -> None:
    script = tmp_path / "count_ex.pl"
    script.write_text(counter(2, meet=False))
    assert run_counters(script, tmp_path / "count.txt", procs=4, rounds=100, meet=False) == 400
    rules = {f.rule for f in audit([(str(script), script.read_text())])}
    assert "write-under-shared-lock" not in rules
