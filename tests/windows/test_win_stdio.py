"""STDIN/STDOUT as Perl's on Windows: ``:crlf`` by default, ``binmode`` keeps bytes.

Perl on Windows reads STDIN and writes STDOUT through ``:crlf`` (a CR LF read is
``\\n``, a ``\\n`` printed is CR LF) until ``binmode``; on Linux bytes pass
unchanged.  Each case runs a child Python with the request on its stdin.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WINDOWS = sys.platform == "win32"
REPO = str(Path(__file__).resolve().parents[2])


def child(code: str, stdin: bytes) -> bytes:
    prelude = (
        f"import sys; sys.path.insert(0, {REPO!r})\n"
        "from perlcompat import *\nfrom perlcompat import readline\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", prelude + code], input=stdin, capture_output=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_read_and_print_go_through_crlf_until_binmode() -> None:
    out = child(
        "buf = Scalar()\n"
        "n = read(STDIN, buf, 8)\n"
        "print_(STDOUT, n, ' ', repr(buf.value), '\\n')\n"
        "binmode(STDOUT)\n"
        "print_(STDOUT, 'raw\\n')\n",
        b"a\r\nb\r\nc\r\n",
    )
    if WINDOWS:  # 9 bytes in, 6 characters after :crlf (fewer than asked: end of input)
        assert out == b"6 'a\\nb\\nc\\n'\r\nraw\n"
    else:
        assert out == b"8 'a\\r\\nb\\r\\nc\\r'\nraw\n"


def test_binmode_stdin_reads_the_body_bytes() -> None:
    body = b"name=%95%5C&msg=a\r\nb"
    out = child(
        "binmode(STDIN)\nbinmode(STDOUT)\nbuf = Scalar()\n"
        f"n = read(STDIN, buf, {len(body)})\n"
        "print_(STDOUT, n, ':', buf.value)\n",
        body,
    )
    assert out == b"%d:" % len(body) + body


def test_use_cgi_binmodes_the_handles_as_cgi_pm_does() -> None:
    """CGI.pm's _set_binmode: on Windows ``use CGI`` drops :crlf from STDIN/STDOUT/STDERR."""
    out = child(
        "import perlcompat.cgi\n"
        "buf = Scalar()\nread(STDIN, buf, 4)\n"
        "print_(STDOUT, type(buf.value).__name__, ' ', repr(buf.value), '\\n')\n",
        b"a\r\nb",
    )
    assert out == b"str 'a\\r\\nb'\n"  # bytes unchanged, the value still a str


def test_readparse_binmodes_without_changing_types() -> None:
    out = child(
        "import os\nos.environ.update(REQUEST_METHOD='GET', QUERY_STRING='a=1')\n"
        "from perlcompat.cgi import ReadParse\nin_ = ReadParse()\n"
        "print_(STDOUT, in_['a'], '\\n', type(readline(STDIN)).__name__, '\\n')\n",
        b"line\r\n",
    )
    assert out == b"1\nstr\n"
