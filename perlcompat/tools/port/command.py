"""``perlcompat port SCRIPT [-o OUT.py]``: write the port, say how much stayed ``# PORT:``.

Without ``-o`` the port goes to standard output.  With ``-o``, the libraries the script
``require``s from beside it are ported too, each beside OUT as ``NAME.py``, and OUT is
made executable (a CGI script).  Exit status 0 when every statement was translated, 1
when some stayed ``# PORT:`` (the count is printed on stderr), 2 when the script cannot
be parsed.
"""

from __future__ import annotations

import os
import sys

from .ppi import PortError
from .writer import Result, port


def _write(path: str, text: str, executable: bool) -> None:
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)
    if executable:
        os.chmod(path, os.stat(path).st_mode | 0o111)


def _report(result: Result) -> str:
    return (
        f"{result.path}: {result.done} of {result.total} statements translated "
        f"({100 * result.coverage:.0f}%), {result.port_lines} line(s) left as # PORT"
    )


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="perlcompat port",
        description="Write a first Python port of a Perl CGI script on perlcompat, statement "
        "for statement; what it cannot translate exactly stays as '# PORT: <perl>' with a reason.",
    )
    parser.add_argument("script", help="the Perl script (any encoding)")
    parser.add_argument("-o", "--output", help="write the port here (default: standard output)")
    parser.add_argument("--perl", default="perl", help="the perl that runs PPI (default: perl)")
    args = parser.parse_args(argv)
    try:
        result = port(args.script, perl=args.perl)
    except PortError as exc:
        sys.stderr.write(f"perlcompat port: {exc}\n")
        return 2
    results = [result, *result.libraries]
    if args.output:
        _write(args.output, result.text, executable=True)
        for lib in result.libraries:  # where the script's require() looks: same relative path
            name = os.path.splitext(os.path.normpath(lib.rel))[0] + ".py"
            target = os.path.join(os.path.dirname(args.output) or ".", name)
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            _write(target, lib.text, False)
    else:
        sys.stdout.write(result.text)
    left = 0
    for r in results:
        sys.stderr.write(_report(r) + "\n")
        left += r.port_lines
    return 1 if left else 0
