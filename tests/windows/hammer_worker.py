"""One worker of the Windows hammer: runs every job in turn on one shared counter per job.

    python hammer_worker.py <workdir> <jobs,...> <cycles> <workers>

It says "ready", waits for "go" on stdin, then for each job appends a byte to
``<job>.started`` and increments ``<job>.count`` under that job's lock until it
has done *cycles* increments *and* every worker has started the job (so the
workers really contend), then prints ``job <name> <cycles done> <errors>``.
Errors (an ``unlock`` or ``replace_file`` that failed) are counted, not fatal,
so one bad job does not hide the others; a job gives up after DEADLINE seconds.
An error is reported with where it came from (:func:`where`).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import time
import traceback

import perlcompat
from perlcompat import (
    LOCK_EX,
    OS_ERROR,
    Semaphore,
    close,
    flock,
    lock,
    open_,
    print_,
    read_file,
    replace_file,
    seek,
    tell,
    truncate,
    unlock,
)

DEADLINE = 150.0
O_BINARY = getattr(os, "O_BINARY", 0)


PACKAGE = os.path.dirname(os.path.abspath(perlcompat.__file__))


def where(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of *exc* in perlcompat or in this worker."""
    found = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        name = os.path.abspath(frame.filename)
        if name == os.path.abspath(__file__) or name.startswith(PACKAGE + os.sep):
            found = f"{os.path.relpath(name, os.path.dirname(PACKAGE))}:{frame.lineno}"
    return found.replace(os.sep, "/")


def bump(path: str) -> None:
    """Read-modify-write the counter at *path* with plain descriptors (no lock of its own)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | O_BINARY, 0o666)
    try:
        n = int(os.read(fd, 64) or b"0")
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, str(n + 1).encode())
    finally:
        os.close(fd)


def cycle(job: str, base: str, errors: list[str]) -> None:
    """One locked increment of *job*'s counter."""
    count = base + ".count"
    if job == "idiom":  # seed 000: open +<, flock 2, read, seek, print, truncate, close
        fh = open_("+< " + count)
        if not fh or not flock(fh, LOCK_EX):
            errors.append(f"open/flock: {OS_ERROR}")
            return
        n = int(fh.readline() or 0)
        seek(fh, 0, 0)
        print_(fh, n + 1)
        truncate(fh, tell(fh))
        close(fh)
    elif job == "semaphore":
        with Semaphore(base + ".sem", 1, retry=None):
            bump(count)
    elif job == "replace":
        replace_file(count, lambda old: str(int(old or 0) + 1))
        # a reader without any lock, as a display CGI does, while other workers rename
        # new versions over the file: read_file (a plain open() fails on Windows for
        # the moment a rename holds the file, see test_win_readers)
        shown = read_file(count)
        if not (isinstance(shown, str) and shown.isdigit()):
            errors.append(f"read_file gave {shown!r}, not a whole version")
    else:
        method = job.partition(":")[2]
        if not lock(base + ".lk", method=method, retry=None, stale=60):
            errors.append(f"lock: {int(OS_ERROR)} {OS_ERROR}")
            return
        bump(count)
        if not unlock(base + ".lk", method=method):
            errors.append(f"unlock: {int(OS_ERROR)} {OS_ERROR}")


def main() -> None:
    workdir, jobs, cycles, workers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print("ready", flush=True)
    sys.stdin.readline()
    for job in jobs.split(","):
        base = os.path.join(workdir, job.replace(":", "-"))
        started = base + ".started"
        with open(started, "ab") as stream:
            stream.write(b"x")
        errors: list[str] = []
        done = 0
        give_up = time.monotonic() + DEADLINE
        while (done < cycles or os.path.getsize(started) < workers) and not (
            time.monotonic() > give_up
        ):
            done += 1
            try:
                cycle(job, base, errors)
            except OSError as exc:
                errors.append(f"{type(exc).__name__}: {exc} at {where(exc)}")
        first = errors[0] if errors else ""
        print(f"job {job} {done} {len(errors)} {first}", flush=True)
    print("end", flush=True)


if __name__ == "__main__":
    main()
