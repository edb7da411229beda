"""Run a Perl script and its port line for line, and compare what they do.

Each runs as ``./script`` in a directory of its own (``perl/`` and ``py/`` under
the test's tmp_path), so `` at ./script line N.`` must match too; the outputs,
the streams they went to and the exit status are compared.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from perlutil import CHILD_ENV, PERL

#: the port's first line: the names the snippets use (``E`` is ``$!``, ``Q`` is ``$?``)
PY_HEAD = (
    "from perlcompat import *; from perlcompat import OS_ERROR as E, CHILD_ERROR as Q; "
    "import sys, re\n"
)
PL_HEAD = "use strict; no warnings;\n"


def run_script(
    interpreter: str, code: str, where: Path, input: bytes | None = None
) -> tuple[int, bytes, bytes]:
    """Run *code* as ``./script`` in *where*: (exit status, stdout, stderr)."""
    where.mkdir(exist_ok=True)
    (where / "script").write_text(code)
    proc = subprocess.run(
        [interpreter, "./script"],
        cwd=where,
        input=input,
        capture_output=True,
        timeout=60,
        env=CHILD_ENV,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def both(
    tmp_path: Path, perl: str, python: str, input: bytes | None = None
) -> tuple[int, bytes, bytes]:
    """Run *perl* and its port *python*; assert they agree; return what both gave."""
    assert perl.count("\n") == python.count("\n"), "keep the lines aligned"
    want = run_script(PERL, PL_HEAD + perl, tmp_path / "perl", input)
    got = run_script(sys.executable, PY_HEAD + python, tmp_path / "py", input)
    assert got == want
    return want
