"""Three processes increment one counter per way of locking: exact counts, nothing lost.

Run under Windows by scripts/test-windows.sh (the workers are Windows processes
started by the Windows Python), and natively on Linux.  The three workers are
started once and run every job in turn (a Windows Python start costs ~2.5 s
under wine); each job runs until every worker has started it, so they contend.
The symlink method is not a job on Windows: it refuses there (test_win_errors).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKERS = 3
CYCLES = 100
METHODS = ["mkdir", "flock", "excl", "rename", "toplock"]
if sys.platform != "win32":
    METHODS.append("symlink")
JOBS = ["idiom", "semaphore", "replace", *(f"lock:{m}" for m in METHODS)]
WORKER = Path(__file__).with_name("hammer_worker.py")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, int, str]]]:
    """Run the workers over every job; job -> [(cycles done, errors, first error)]."""
    workdir = tmp_path_factory.mktemp("hammer")
    for job in JOBS:
        (workdir / (job.replace(":", "-") + ".count")).write_bytes(b"0")
    children = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(workdir), ",".join(JOBS), str(CYCLES), str(WORKERS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(WORKERS)
    ]
    out: dict[str, list[tuple[int, int, str]]] = {job: [] for job in JOBS}
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            assert child.stdout is not None
            for line in child.stdout:
                if line.strip() == "end":
                    break
                _, job, done, errors, first = [*line.rstrip("\n").split(" ", 4), ""][:5]
                out[job].append((int(done), int(errors), first))
            assert child.wait(timeout=60) == 0
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    out["_workdir"] = [(0, 0, str(workdir))]
    return out


@pytest.mark.parametrize("job", JOBS)
def test_three_processes_lose_nothing(
    results: dict[str, list[tuple[int, int, str]]], job: str
) -> None:
    reports = results[job]
    assert len(reports) == WORKERS
    errors = [first for _, count, first in reports if count]
    assert errors == []
    expected = sum(done for done, _, _ in reports)
    assert all(done >= CYCLES for done, _, _ in reports)
    workdir = Path(results["_workdir"][0][2])
    got = int((workdir / (job.replace(":", "-") + ".count")).read_bytes() or b"0")
    assert got == expected


def test_no_lock_is_left_behind(results: dict[str, list[tuple[int, int, str]]]) -> None:
    workdir = Path(results["_workdir"][0][2])
    left = sorted(
        name
        for name in os.listdir(workdir)
        if name.endswith((".lk", ".lk.locked")) or name.endswith(".tmp")
    )
    # the flock method's lock file and the rename method's free marker stay
    assert left == ["lock-flock.lk", "lock-rename.lk"]
