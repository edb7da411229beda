"""Peak memory of reading one big upload: the port beside CGI.pm, in one run.

A multipart/form-data body with one file of ``--mb`` MiB is given on STDIN to a
Python process that reads it with ``perlcompat.cgi.CGI()`` and to a perl process
that reads it with CGI.pm (``$q->upload``), each reading the file through in 64
KiB pieces.  Printed per row: the peak resident set size (``VmHWM`` the reader
reads from ``/proc/self/status`` at its end: Linux; ``ru_maxrss`` from ``wait4``
would carry this process's own peak over the exec) and its ratio to CGI.pm's.  ``--against DIR``
adds the port again from another copy of the package (``git archive REV | tar -x
-C DIR``): the code before a change, beside it.

    python bench/bench_upload_rss.py [--mb 50] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PYTHON_READER = """
import re
import perlcompat.cgi as cgi
f = cgi.CGI().upload("f")
n = 0
for chunk in iter(lambda: f.read(1 << 16), b""):
    n += len(chunk)
print(n, re.search(r"VmHWM:\\s*(\\d+)", open("/proc/self/status").read())[1])
"""
PERL_READER = """
use CGI; my $f = CGI->new->upload("f"); my $n = 0;
while (my $got = read($f, my $buf, 65536)) { $n += $got }
open(my $st, "<", "/proc/self/status") or die; my ($hwm) = join("", <$st>) =~ /VmHWM:\\s*(\\d+)/;
print "$n $hwm\\n";
"""


def peak_kib(cmd: list[str], body: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run *cmd* with *body* on STDIN; its peak RSS (KiB) and the byte count it read."""
    # (cwd: ``python -c`` puts the working directory first on sys.path)
    with body.open("rb") as stdin:
        run = subprocess.run(cmd, stdin=stdin, capture_output=True, env=env, cwd=body.parent)
    if run.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {run.stderr.decode()}")
    count, hwm = run.stdout.decode().split()
    return int(hwm), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=50, help="upload size in MiB (50)")
    parser.add_argument("--against", metavar="DIR", help="another copy of the package")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        body = Path(tmp) / "body"
        with open(body, "wb") as out:
            out.write(b'--B\r\nContent-Disposition: form-data; name="f"; filename="big.bin"\r\n')
            out.write(b"Content-Type: application/octet-stream\r\n\r\n")
            for _ in range(args.mb * 4):
                out.write(bytes(range(256)) * 1024)
            out.write(b"\r\n--B--\r\n")
        env = {
            "PATH": os.environ.get("PATH", ""),
            "TMPDIR": tmp,
            "REQUEST_METHOD": "POST",
            "CONTENT_TYPE": "multipart/form-data; boundary=B",
            "CONTENT_LENGTH": str(body.stat().st_size),
        }
        perl = shutil.which("perl") or "perl"
        rows = [("CGI.pm (perl)", [perl, "-e", PERL_READER], env)]
        rows.append(
            (
                "perlcompat.cgi",
                [sys.executable, "-c", PYTHON_READER],
                {**env, "PYTHONPATH": str(root)},
            )
        )
        if args.against:
            rows.append(
                (f"perlcompat.cgi from {args.against}", [sys.executable, "-c", PYTHON_READER],
                 {**env, "PYTHONPATH": args.against}),
            )  # fmt: skip
        results = [(name, *peak_kib(cmd, body, row_env)) for name, cmd, row_env in rows]
    want = str(args.mb << 20)
    base = results[0][1]
    print(f"reading a {args.mb} MiB upload: peak RSS")
    for name, kib, count in results:
        ok = "" if count == want else f"  (read {count} bytes, not {want})"
        print(f"  {name:<40} {kib / 1024:8.1f} MiB  {kib / base:5.2f}x CGI.pm{ok}")


if __name__ == "__main__":
    main()
