"""Huge, negative, infinite and NaN numbers: Perl's false value and ``$!``, never OverflowError.

Where Perl has an answer (``seek``/``truncate`` beyond off_t, ``alarm``/``sleep``
beyond a C int or negative), perlcompat gives the same one, checked against the
real perl.  Where the argument is perlcompat's own (an fd given to ``stat``) or
Perl's answer is garbage (``utime`` and ``mkdir`` wrap the number), the error
is clear: EBADF, or a ValueError naming the value.
"""

from __future__ import annotations

import errno
import math
import os
import signal
import warnings
from pathlib import Path

import pytest
from perlutil import run_perl

from perlcompat import (
    OS_ERROR,
    alarm,
    close,
    filetest,
    mkdir,
    open_,
    seek,
    sleep,
    stat,
    tell,
    truncate,
    undef,
    utime,
)

HUGE = [2**63, 2**70, -(2**63) - 1, -(2**70), 10**30]


def _perl_results(code: str, *args: str) -> list[str]:
    proc = run_perl("no warnings; sub res { print join(' ', @_), qq(\\n) }\n" + code, *args)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode().splitlines()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.txt"
    path.write_bytes(b"hello\n")
    return path


def test_seek_and_truncate_beyond_off_t_as_perl(data: Path) -> None:
    perl = _perl_results(
        "open(FH, '+<', $ARGV[0]) or die;\n"
        "for my $p (2**63, 2**70, -2**70, 1e30) {\n"
        "  $! = 0; my $r = seek(FH, $p, 0); res(($r ? 1 : 0) . ' E' . ($! + 0) . ' ' . tell(FH));\n"
        "  $! = 0; $r = truncate(FH, $p); res(($r ? 1 : 0) . ' E' . ($! + 0));\n"
        "  $! = 0; $r = truncate($ARGV[0], $p); res(($r ? 1 : 0) . ' E' . ($! + 0));\n"
        "}",
        str(data),
    )
    fh = open_("+<", data)
    assert fh is not None
    ours = []
    for p in [2**63, 2**70, -(2**70), 10**30]:
        OS_ERROR.set(0)
        r = seek(fh, p, 0)
        ours.append(f"{r} E{int(OS_ERROR)} {tell(fh)}")
        OS_ERROR.set(0)
        ours.append(f"{truncate(fh, p)} E{int(OS_ERROR)}")
        OS_ERROR.set(0)
        ours.append(f"{truncate(str(data), p)} E{int(OS_ERROR)}")
    assert ours == perl
    assert ours[0] == f"0 E{errno.EINVAL} 0"
    for whence in (0, 1, 2):
        for p in HUGE:
            assert seek(fh, p, whence) == 0
            assert OS_ERROR == errno.EINVAL
    assert close(fh) == 1
    assert data.read_bytes() == b"hello\n"


def test_seek_beyond_off_t_on_a_python_file(data: Path) -> None:
    with open(data, "rb") as fh:
        assert seek(fh, 2**70) == 0  # type: ignore[arg-type]
        assert OS_ERROR == errno.EINVAL


@pytest.mark.parametrize("fd", [2**31, 2**70, -1, -(2**70)])
def test_stat_of_a_number_that_is_no_descriptor(fd: int) -> None:
    """An int is a descriptor to perlcompat's stat; one that cannot be is EBADF, like fd -1."""
    OS_ERROR.set(0)
    result = stat(fd)
    assert result == []
    assert OS_ERROR == errno.EBADF
    assert filetest("-e", fd) is undef
    assert OS_ERROR == errno.EBADF


class _HugeDescriptor:
    """A file-like object whose fileno() no C int can hold."""

    def fileno(self) -> int:
        return 2**70

    def flush(self) -> None:
        pass


def test_descriptors_no_int_can_hold_are_ebadf() -> None:
    for target in (2**70, _HugeDescriptor()):
        OS_ERROR.set(0)
        assert truncate(target, 0) == 0  # type: ignore[arg-type]
        assert OS_ERROR == errno.EBADF
        OS_ERROR.set(0)
        assert stat(target) == []
        assert OS_ERROR == errno.EBADF


def test_alarm_out_of_range_as_perl() -> None:
    perl = _perl_results(
        "alarm(7);\n"
        "for my $s (-1, 2**31, 2**70, 1e300, 9**9**9) {\n"
        "  $! = 0; my $r = alarm($s); res((defined $r ? $r : 'undef') . ' E' . ($! + 0));\n"
        "}\n"
        "res(alarm(0));"
    )
    signal.signal(signal.SIGALRM, lambda *a: None)
    try:
        alarm(7)
        ours = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for s in (-1, 2**31, 2**70, 1e300, math.inf):
                OS_ERROR.set(0)
                r = alarm(s)
                ours.append(f"{'undef' if r is None else r} E{int(OS_ERROR)}")
        ours.append(str(alarm(0)))  # the pending alarm was left as it was
    finally:
        alarm(0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    assert ours == perl
    assert ours[:2] == [f"undef E{errno.EINVAL}"] * 2 and ours[-1] == "7"
    assert len(caught) == 5 and all(w.category is RuntimeWarning for w in caught)
    assert "alarm() with negative argument" in str(caught[0].message)
    assert caught[0].filename == __file__  # the warning names the caller's line


def test_alarm_nan_is_refused() -> None:
    """Perl takes NaN as 0 and cancels the pending alarm: a silent loss of a timeout."""
    with pytest.raises(ValueError, match="alarm needs a number of seconds, not nan"):
        alarm(math.nan)


def test_sleep_out_of_range_as_perl() -> None:
    perl = _perl_results(
        "for my $s (-1, 2**31, 2**70, 1e300, 9**9**9) {\n"
        "  $! = 0; my $r = sleep($s); res(qq($r E) . ($! + 0));\n"
        "}"
    )
    ours = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in (-1, 2**31, 2**70, 1e300, math.inf):
            OS_ERROR.set(0)
            ours.append(f"{sleep(s)} E{int(OS_ERROR)}")
    assert ours == perl == [f"0 E{errno.EINVAL}"] * 5
    assert [str(w.message) for w in caught][:2] == [
        "sleep() with negative argument (-1)",
        "sleep() with argument too large (2147483648)",
    ]
    with pytest.raises(ValueError, match="sleep needs a number of seconds, not nan"):
        sleep(math.nan)


@pytest.mark.parametrize("bad", [2**70, 1e300, math.inf, -math.inf, math.nan, "1"])
def test_utime_refuses_times_no_file_can_have(data: Path, bad: object) -> None:
    before = os.stat(data).st_mtime_ns
    with pytest.raises(ValueError, match="utime needs times in seconds"):
        utime(bad, 0, str(data))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="utime needs times in seconds"):
        utime(None, bad, str(data))  # type: ignore[arg-type]
    assert os.stat(data).st_mtime_ns == before


@pytest.mark.parametrize("bad", [2**70, 2**32, -1, 0o200000, 1.5])
def test_mkdir_refuses_modes_that_are_no_permission_bits(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="mkdir mode must be permission bits"):
        mkdir(str(tmp_path / "d"), bad)  # type: ignore[arg-type]
    assert not (tmp_path / "d").exists()
    assert mkdir(str(tmp_path / "d"), 0o40755) == 1  # a whole st_mode, as (stat $x)[2] gives
