"""A handle whose open failed, or that was closed, reads as Perl's does; lists index like Perl's.

Perl's ``open(IN, "< $f")`` that fails leaves ``IN`` a closed handle: ``<IN>``
is undef, ``while (<IN>)`` runs zero times, and the other calls return false
with ``$!`` = EBADF.  ``open_`` returns such a handle (false, so ``open_(...) or
die(...)`` still works).  Each call's value and ``$!`` are compared with the real
perl's, on a failed open and on a handle closed after use.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, run_perl

from perlcompat import (
    OS_ERROR,
    Die,
    PerlWarning,
    binmode,
    close,
    die,
    eof,
    flock,
    lstat,
    open_,
    print_,
    readline,
    seek,
    stat,
    tell,
    truncate,
    undef,
)

PERL_CALLS = r"""
no warnings;
sub r { my ($n, $v) = @_; print "$n ", (defined $v ? $v : "undef"), " E", $! + 0, "\n"; $! = 77 }
my ($open_path, $data) = @ARGV;
if ($open_path eq "-") { open(IN, "<", $data) or die; close(IN); }
else { open(IN, "<", $open_path); }
$! = 77;  # every call's $! shows, including "left alone"
my $l = <IN>; r("readline", $l);
my @l = <IN>; r("readlines", scalar(@l));
my $n = 0; while (<IN>) { $n++ } r("while", $n);
r("eof", eof(IN) ? 1 : 0);
r("tell", tell(IN));
r("seek", seek(IN, 0, 0) ? 1 : 0);
r("flock", flock(IN, 2) ? 1 : 0);
r("print", (print IN "x") ? 1 : 0);
r("binmode", binmode(IN) ? 1 : 0);
r("truncate", truncate(IN, 0) ? 1 : 0);
my $buf; r("read", read(IN, $buf, 10));
my @s = stat(IN); r("stat", scalar(@s));
r("close", close(IN) ? 1 : 0);
"""


def python_calls(fh: object) -> list[str]:
    """The same calls through perlcompat, printed as PERL_CALLS prints them."""
    out = []

    def r(name: str, value: object) -> None:
        out.append(f"{name} {'undef' if value is None else value} E{int(OS_ERROR)}")
        OS_ERROR.set(77)

    OS_ERROR.set(77)
    r("readline", readline(fh))  # type: ignore[arg-type]
    r("readlines", len(fh.readlines()))  # type: ignore[attr-defined]
    n = 0
    for _line in fh:  # type: ignore[attr-defined]
        n += 1
    r("while", n)
    r("eof", eof(fh))  # type: ignore[arg-type]
    r("tell", tell(fh))  # type: ignore[arg-type]
    r("seek", seek(fh, 0, 0))  # type: ignore[arg-type]
    r("flock", flock(fh, 2))
    r("print", print_(fh, "x"))  # type: ignore[arg-type]
    r("binmode", binmode(fh))  # type: ignore[arg-type]
    r("truncate", truncate(fh, 0))  # type: ignore[arg-type]
    r("read", fh.read(10))  # type: ignore[attr-defined]
    r("stat", len(stat(fh)))
    r("close", close(fh))  # type: ignore[arg-type]
    return out


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.txt"
    path.write_bytes(b"one\ntwo\n")
    return path


@pytest.mark.parametrize("how", ["failed open", "closed after use"])
def test_calls_on_a_closed_handle_as_perl(tmp_path: Path, data: Path, how: str) -> None:
    missing = str(tmp_path / "missing")
    perl = run_perl(PERL_CALLS, missing if how == "failed open" else "-", str(data))
    assert perl.returncode == 0, perl.stderr
    if how == "failed open":
        fh = open_("<", missing)
        assert OS_ERROR == errno.ENOENT
        assert not fh
    else:
        fh = open_("<", data)
        assert fh
        close(fh)
    ours = python_calls(fh)
    assert ours == perl.stdout.decode().splitlines()
    # Perl's values: reads give undef/empty and leave $! alone; the rest EBADF
    assert ours[0] == "readline undef E77" and ours[2] == "while 0 E77"
    assert ours[6] == f"flock 0 E{errno.EBADF}"
    assert data.read_bytes() == b"one\ntwo\n"


def test_or_die_and_if_not_still_work(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(Die, match=r"Can't open .*: No such file or directory"):
        open_("<", missing) or die(f"Can't open {missing}: {OS_ERROR}")
    IN = open_("< " + str(missing))
    assert not IN
    assert (IN.readline() if IN else "") == ""  # the old workaround keeps working
    assert [line for line in IN or ()] == []
    assert IN.readline() is None and IN.readlines() == [] and list(IN) == []
    assert IN.read() is None and OS_ERROR == errno.EBADF
    assert "failed" in repr(IN) and IN.closed
    with open_("<", missing) as fh:  # a with block on a failed handle: no exception
        assert fh.readlines() == []
    good = open_("<", __file__)
    assert good and bool(good) is True
    close(good)
    assert bool(good) is True  # only a failed open gives a false handle


def test_readline_function_is_perls_scalar_readline(data: Path) -> None:
    fh = open_("<", data)
    assert readline(fh) == "one\n"
    assert readline(fh) == "two\n"
    assert readline(fh) is None  # end of file: undef, where fh.readline() gives ''
    assert fh.readline() == ""
    close(fh)
    assert readline(fh) is None
    out = open_(">>", data)
    OS_ERROR.set(0)
    assert readline(out) is None
    assert OS_ERROR == errno.EBADF  # as Perl: <OUT> on a write-only handle
    assert close(out) == 0  # and, as Perl, the handle's error flag is set
    assert data.read_bytes() == b"one\ntwo\n"


def test_readlines_index_past_the_end_is_undef(data: Path) -> None:
    fh = open_("<", data)
    lines = fh.readlines()
    assert lines == ["one\n", "two\n"] and lines[5] is undef and lines[-1] == "two\n"
    assert lines[1:][1] is undef  # a slice is a PerlList too
    close(fh)


def test_the_warning_is_off_by_default_and_perl_w_like_when_on(tmp_path: Path) -> None:
    code = (
        "import sys, warnings\n"
        "from perlcompat import PerlWarning, open_, print_\n"
        "if sys.argv[1] == 'on':\n"
        "    warnings.simplefilter('default', PerlWarning)\n"
        "IN = open_('<', sys.argv[2])\n"
        "line = IN.readline()\n"
        "for x in IN: pass\n"
        "print_(IN, 'x')\n"
    )
    missing = str(tmp_path / "missing")
    off = subprocess.run(
        [sys.executable, "-c", code, "off", missing], capture_output=True, env=CHILD_ENV, check=True
    )
    assert off.stderr == b""
    on = subprocess.run(
        [sys.executable, "-c", code, "on", missing], capture_output=True, env=CHILD_ENV, check=True
    )
    # Python 3.13 also prints each -c source line under its warning: keep the warnings
    lines = [line for line in on.stderr.decode().splitlines() if "PerlWarning" in line]
    assert lines[0] == (
        f"<string>:6: PerlWarning: readline() on closed filehandle {missing!r} (its open failed)"
    )
    assert lines[1].startswith("<string>:7: PerlWarning: readline() on closed")
    assert lines[2].startswith("<string>:8: PerlWarning: print() on closed")
    assert len(lines) == 3
    # -W works too (PerlWarning is a UserWarning)
    w = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", code, "off", missing],
        capture_output=True,
        env=CHILD_ENV,
        check=False,
    )
    assert w.returncode == 1 and b"PerlWarning: readline() on closed" in w.stderr


def test_the_warning_stays_off_after_catch_warnings() -> None:
    with warnings.catch_warnings():
        warnings.resetwarnings()  # drops every filter, ours included
        fh = open_("<", "/no/such/file")
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("default", category=UserWarning, module="nothing")
        fh.readline()
    assert caught == []
    with pytest.warns(PerlWarning, match=r"readline\(\) on closed filehandle '/no/such/file'"):
        warnings.simplefilter("default", PerlWarning)
        fh.readline()


# -- stat and lstat: Perl lists ------------------------------------------------------
def test_stat_of_a_missing_file_indexes_as_undef(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    perl = run_perl(
        "my $m = (stat($ARGV[0]))[9]; my @s = stat($ARGV[0]); my @l = lstat($ARGV[0]);"
        'print defined $m ? "def" : "undef", " ", scalar(@s), " ", scalar(@l), " ", $! + 0;',
        missing,
    )
    assert perl.stdout.decode() == f"undef 0 0 {errno.ENOENT}"
    assert stat(missing)[9] is undef
    assert stat(missing) == [] and not stat(missing)
    assert lstat(missing)[9] is undef and lstat(missing) == []
    assert OS_ERROR == errno.ENOENT


def test_lstat_sees_the_link_as_perl(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("x")
    link = tmp_path / "link"
    os.symlink("target", link)
    perl = run_perl(
        'print join(",", (lstat($ARGV[0]))[1,2,7]), " ", join(",", (stat($ARGV[0]))[1,2,7]);',
        str(link),
    )
    ours = [lstat(str(link))[i] for i in (1, 2, 7)], [stat(str(link))[i] for i in (1, 2, 7)]
    assert perl.stdout.decode() == " ".join(",".join(map(str, row)) for row in ours)
    assert lstat(str(link))[13] is undef  # past the end
