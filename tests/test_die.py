"""``die`` and ``warn``: Perl's messages, and an uncaught ``Die`` exits as Perl does."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, run_perl

from perlcompat import Die, die, warn
from perlcompat.perl.errno import set_errno


def _line_of(marker: str) -> int:
    """Return the line number in this file holding *marker* (not counting this call)."""
    lines = Path(__file__).read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if marker in line and "_line_of" not in line]
    assert len(hits) == 1, hits
    return hits[0]


def test_die_appends_file_and_line_like_perl() -> None:
    set_errno(0)
    with pytest.raises(Die) as info:
        die("Can't open ", "data.txt")  # marker:die-line
    line = _line_of("marker:die-line")
    assert str(info.value) == f"Can't open data.txt at {__file__} line {line}.\n"
    assert info.value.message == str(info.value)
    assert info.value.status == 255


def test_die_with_trailing_newline_keeps_the_message_as_is() -> None:
    with pytest.raises(Die) as info:
        die("busy\n")
    assert str(info.value) == "busy\n"


def test_die_without_arguments_says_died() -> None:
    with pytest.raises(Die) as info:
        die()  # marker:died
    assert str(info.value) == f"Died at {__file__} line {_line_of('marker:died')}.\n"


def test_die_stringifies_each_argument() -> None:
    with pytest.raises(Die) as info:
        die("n=", 3, " x=", None, "\n")
    assert str(info.value) == "n=3 x=None\n"


def test_die_status_is_errno_when_set() -> None:
    set_errno(errno.ENOENT)
    with pytest.raises(Die) as info:
        die("gone\n")
    assert info.value.status == errno.ENOENT
    set_errno(0)


def test_die_is_an_exception_that_eval_style_code_can_catch() -> None:
    try:
        die("time out\n")
    except Exception as exc:  # what ``eval { ... }; if ($@ =~ /time out/)`` becomes
        assert "time out" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("die did not raise")


def test_warn_prints_to_stderr_and_returns_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert warn("disk ", "low") == 1  # marker:warn-line
    assert warn("plain\n") == 1
    assert warn() == 1  # marker:warn-empty
    err = capsys.readouterr().err
    assert err == (
        f"disk low at {__file__} line {_line_of('marker:warn-line')}.\n"
        "plain\n"
        f"Warning: something's wrong at {__file__} line {_line_of('marker:warn-empty')}.\n"
    )


SCRIPT = """\
import atexit, sys
from perlcompat import OS_ERROR, die, open_
atexit.register(lambda: open(sys.argv[2], "w").write("atexit ran"))
print("output before dying", end="")
fh = open_("<", sys.argv[1]) or die(f"Can't open {sys.argv[1]}: ", OS_ERROR)
"""


def test_uncaught_die_prints_only_the_message_and_exits_like_perl(tmp_path: Path) -> None:
    import subprocess

    missing = str(tmp_path / "missing.txt")
    marker = tmp_path / "atexit.txt"
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), missing, str(marker)],
        capture_output=True,
        env=CHILD_ENV,
        timeout=60,
        check=False,
    )
    perl = run_perl('open(FH, "<", $ARGV[0]) or die "Can\'t open $ARGV[0]: $!";', missing)
    # same status as perl: $! (ENOENT) is the exit code
    assert proc.returncode == perl.returncode == errno.ENOENT
    # only the message, no traceback; same text as perl apart from the file name
    assert (
        proc.stderr.decode()
        == f"Can't open {missing}: No such file or directory at {script} line 5.\n"
    )
    assert (
        perl.stderr.decode() == f"Can't open {missing}: No such file or directory at -e line 1.\n"
    )
    assert proc.stdout == b"output before dying"  # buffered stdout is flushed
    assert marker.read_text() == "atexit ran"


def test_uncaught_die_without_errno_exits_255(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", "from perlcompat import die\ndie('bad input\\n')"],
        capture_output=True,
        env=CHILD_ENV,
        timeout=60,
        check=False,
    )
    perl = run_perl('die "bad input\\n"')
    assert proc.returncode == perl.returncode == 255
    assert proc.stderr == perl.stderr == b"bad input\n"


def test_other_uncaught_exceptions_still_print_a_traceback(tmp_path: Path) -> None:
    import subprocess

    code = (
        "from perlcompat import die\n"
        "try:\n    die('x')\nexcept Exception:\n    pass\n"  # installs the hook
        "raise KeyError('boom')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=CHILD_ENV, timeout=60, check=False
    )
    assert proc.returncode == 1
    assert b"Traceback" in proc.stderr
    assert b"KeyError: 'boom'" in proc.stderr
