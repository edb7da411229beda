"""What ``import perlcompat`` adds to a CGI request: interpreter start-up, side by side.

Each row is a fresh ``python -c CODE`` process; the rows are run interleaved,
``--runs`` times each, so drift hits all of them alike.  Printed per row: the
median and minimum wall time, the median CPU time (user + system, from
``wait4``; steadier than wall time on a busy machine) and both medians' ratio
to a bare ``python -c pass`` (target for ``import perlcompat``: <= 1.15x).
``perl -e1`` is shown for scale, and portalocker's import for contrast.

    python bench/bench_import.py [--runs 60] [--python PATH] [--importtime] [--against DIR]

``--against DIR`` adds each perlcompat row again with another copy of the
package first on ``PYTHONPATH`` (say an older checkout: ``git archive REV | tar
-x -C DIR``), so a change's import cost is measured beside the code before it.

Measure in a clean venv: a site-packages whose .pth files import things at
start-up inflates every row and hides the difference.
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

ROWS = [
    ("python -c pass", "pass"),
    ("import perlcompat", "import perlcompat"),
    (
        "from perlcompat import open_, flock, close, die, OS_ERROR",
        "from perlcompat import open_, flock, close, die, OS_ERROR",
    ),
    (
        "... and run one +< lock cycle",
        "import sys\n"
        "from perlcompat import open_, flock, close, seek, print_, truncate, tell\n"
        "fh = open_('+< ' + sys.argv[1]); flock(fh, 2); n = fh.readline(); seek(fh, 0, 0)\n"
        "print_(fh, int(n or 0) + 1); truncate(fh, tell(fh)); close(fh)",
    ),
    (
        "... lock() + unlock() (the mkdir lock subs, mkdir)",
        "import sys\n"
        "from perlcompat import lock, unlock\n"
        "lock(sys.argv[1] + '.lk') or sys.exit(1); unlock(sys.argv[1] + '.lk')",
    ),
    ("import re (most ports import it anyway)", "import re"),
    (
        "perlcompat.cgi: CGI() of a GET, param(), header() to STDOUT",
        "import os\n"
        "os.environ.update(REQUEST_METHOD='GET', QUERY_STRING='name=Taro&tag=a;tag=b')\n"
        "from perlcompat import STDOUT, print_\n"
        "from perlcompat.cgi import CGI\n"
        "q = CGI(); print_(STDOUT, q.header(), q.param('name'), q.multi_param('tag'))",
    ),
    ("import fcntl, os (the raw way)", "import fcntl, os"),
    ("import portalocker", "import portalocker"),
]


def _time_once(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run *argv*; return (wall seconds, CPU seconds user+system of the child)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv} exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--importtime", action="store_true", help="show -X importtime too")
    parser.add_argument("--against", metavar="DIR", help="also time the perlcompat in DIR")
    args = parser.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: without cached bytecode every import"
            " compiles its source, which a deployed script does not pay; unset it (and run"
            " once to write the caches) to measure what a CGI request pays"
        )

    workdir = tempfile.mkdtemp(prefix="perlcompat-bench-")
    counter = os.path.join(workdir, "counter.txt")
    with open(counter, "w") as fh:
        fh.write("0")
    # the counter path is passed to every row (only the lock-cycle row uses it)
    rows = [(name, [args.python, "-c", code, counter], None) for name, code in ROWS]
    if args.against:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(args.against)}
        rows += [
            (f"{name} [--against]", argv, env)
            for name, argv, _env in rows
            if "perlcompat" in argv[2]
        ]
    perl = shutil.which("perl")
    if perl:
        rows.append(("perl -MFcntl=:flock -e1", [perl, "-MFcntl=:flock", "-e1"], None))
    for _name, argv, env in rows:  # warm up: bytecode caches, page cache
        for _ in range(3):
            _time_once(argv, env)
    wall: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for _ in range(args.runs):
        for name, argv, env in rows:
            seconds, cpu_seconds = _time_once(argv, env)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)

    version = subprocess.run(
        [args.python, "-c", "import sys; print(sys.version.split()[0], sys.prefix)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"interpreter: {args.python} (Python {version}); {args.runs} runs per row")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    base_wall = statistics.median(wall[rows[0][0]])
    base_cpu = statistics.median(cpu[rows[0][0]])
    print(f"{'row':70} {'wall ms':>8} {'(min)':>7} {'ratio':>6}   {'CPU ms':>7} {'ratio':>6}")
    for name, _argv, _env in rows:
        median = statistics.median(wall[name])
        cpu_median = statistics.median(cpu[name])
        print(
            f"{name:70} {median * 1000:8.2f} {min(wall[name]) * 1000:7.2f}"
            f" {median / base_wall:5.2f}x   {cpu_median * 1000:7.2f} {cpu_median / base_cpu:5.2f}x"
        )
    if args.against:
        print(f"\nthis checkout against {args.against} (median wall, CPU):")
        for name, _argv, env in rows:
            if env is not None:
                here = name.removesuffix(" [--against]")
                ratio = statistics.median(wall[here]) / statistics.median(wall[name])
                cpu_ratio = statistics.median(cpu[here]) / statistics.median(cpu[name])
                print(f"  {here:56} {ratio:5.2f}x   {cpu_ratio:5.2f}x")
    if args.importtime:
        proc = subprocess.run(
            [args.python, "-X", "importtime", "-c", ROWS[2][1]],
            capture_output=True,
            text=True,
            check=True,
        )
        print("\n-X importtime for the from-import row (modules beyond a bare start-up):")
        print(proc.stderr)
    shutil.rmtree(workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
