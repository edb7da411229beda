"""sysopen, chomp, chop, strftime, undef, array and hash reads, split into variables, vs perl."""

from __future__ import annotations

import errno
import json
import os
import random
import stat as stat_module
import subprocess
import sys
import time
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, PERL, run_perl

import perlcompat
from perlcompat import (
    O_APPEND,
    O_CREAT,
    O_EXCL,
    O_RDONLY,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    OS_ERROR,
    PerlHash,
    PerlList,
    chomp,
    chop,
    close,
    defined,
    elem,
    flock,
    hval,
    pop,
    print_,
    push,
    seek,
    shift,
    split,
    strftime,
    sysopen,
    truncate,
    undef,
    unshift,
)


def _perl_json(code: str, *args: str, env: dict[str, str] | None = None) -> object:
    """Run *code* (which prints one JSON-ish line built by hand) and parse it."""
    proc = subprocess.run(
        [PERL, "-e", code, "--", *args],
        capture_output=True,
        timeout=60,
        check=True,
        env=env,
    )
    return json.loads(proc.stdout)


PERL_Q = r'sub qh { my $s = shift; defined $s ? "\"" . unpack("H*", $s) . "\"" : "null" }'


def _unq(value: str | None) -> str | None:
    return None if value is None else bytes.fromhex(value).decode("utf-8", "surrogateescape")


# -- sysopen -----------------------------------------------------------------


def test_sysopen_rdwr_creat_is_wwwboards_number_file(tmp_path: Path) -> None:
    # sysopen(NUMBER, $f, O_RDWR|O_CREAT); flock; read; seek; print; truncate; close
    perl_file, py_file = tmp_path / "perl.txt", tmp_path / "py.txt"
    for _ in range(3):
        run_perl(
            "use Fcntl; sysopen(N, $ARGV[0], O_RDWR|O_CREAT) or die; flock(N, 2);"
            " my $n = <N>; seek(N, 0, 0); print N $n + 1; truncate(N, tell(N)); close(N);",
            str(perl_file),
        )
        NUMBER = sysopen(py_file, O_RDWR | O_CREAT) or pytest.fail(str(OS_ERROR))
        assert flock(NUMBER, 2) == 1
        n = NUMBER.readline()
        seek(NUMBER, 0, 0)
        print_(NUMBER, perlcompat.num(n) + 1)
        truncate(NUMBER, NUMBER.tell())
        assert close(NUMBER) == 1
    assert perl_file.read_bytes() == py_file.read_bytes() == b"3"
    assert stat_module.S_IMODE(perl_file.stat().st_mode) == stat_module.S_IMODE(
        py_file.stat().st_mode
    )


def test_sysopen_excl_on_an_existing_file_gives_0_and_eexist_as_perl(tmp_path: Path) -> None:
    target = tmp_path / "lock"
    target.write_bytes(b"held")
    perl = run_perl(
        "use Fcntl; my $r = sysopen(L, $ARGV[0], O_WRONLY|O_CREAT|O_EXCL) ? 1 : 0;"
        ' print "$r ", $!+0, " $!";',
        str(target),
    )
    fh = sysopen(target, O_WRONLY | O_CREAT | O_EXCL)
    ours = f"{1 if fh else 0} {int(OS_ERROR)} {OS_ERROR}"
    assert ours == perl.stdout.decode() == f"0 {errno.EEXIST} File exists"
    assert target.read_bytes() == b"held"
    # and a new one is created, with the perms asked for (less the umask), as Perl's
    fresh = tmp_path / "fresh"
    fh = sysopen(fresh, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    assert fh and print_(fh, os.getpid()) == 1 and close(fh) == 1
    assert stat_module.S_IMODE(fresh.stat().st_mode) == 0o600
    assert fresh.read_text() == str(os.getpid())


@pytest.mark.parametrize(
    ("flags", "perl_flags"),
    [
        (O_RDONLY, "O_RDONLY"),
        (O_WRONLY | O_TRUNC, "O_WRONLY|O_TRUNC"),
        (O_WRONLY | O_APPEND, "O_WRONLY|O_APPEND"),
        (O_RDWR | O_APPEND, "O_RDWR|O_APPEND"),
        (O_WRONLY, "O_WRONLY"),
        (O_RDWR | O_CREAT | O_TRUNC, "O_RDWR|O_CREAT|O_TRUNC"),
    ],
)
def test_sysopen_flags_write_and_read_as_perl(tmp_path: Path, flags: int, perl_flags: str) -> None:
    results = {}
    for who in ("perl", "py"):
        f = tmp_path / who
        f.write_bytes(b"old line\nsecond\n")
        if who == "perl":
            proc = run_perl(
                f"use Fcntl; sysopen(F, $ARGV[0], {perl_flags}) or die $!; my $l = <F>;"
                ' print F "new"; close(F); print defined $l ? "[$l]" : "undef";',
                str(f),
            )
            read = proc.stdout.decode()
        else:
            fh = sysopen(f, flags)
            line = perlcompat.readline(fh)
            print_(fh, "new")
            close(fh)
            read = f"[{line}]" if line is not None else "undef"
        results[who] = (read, f.read_bytes())
    assert results["py"] == results["perl"]


def test_sysopen_missing_file_without_creat_is_enoent(tmp_path: Path) -> None:
    fh = sysopen(tmp_path / "missing", O_RDWR)
    assert not fh and OS_ERROR == errno.ENOENT and close(fh) == 0


# -- chomp and chop ----------------------------------------------------------

STRINGS = ["a\n", "a", "", "a\r\n", "a\n\n", "\n", "ab", "日本\n", "x\ny"]


def test_chomp_and_chop_match_perl() -> None:
    code = (
        PERL_Q + ' my @out; for my $h (@ARGV) { my $s = pack("H*", $h); my $t = $s; chomp($t);'
        ' my $u = $s; chop($u); push @out, "[" . qh($t) . "," . qh($u) . "]" }'
        ' my @l = map { pack("H*", $_) } @ARGV; chomp(@l);'
        ' print "[[", join(",", @out), "],[", join(",", map { qh($_) } @l), "]]";'
    )
    hexed = [s.encode().hex() for s in STRINGS]
    pairs, listed = _perl_json(code, *hexed)  # type: ignore[misc]
    for text, (chomped, chopped) in zip(STRINGS, pairs):
        assert chomp(text) == _unq(chomped) and chop(text) == _unq(chopped)
        assert chomp(text.encode()) == _unq(chomped).encode()  # type: ignore[union-attr]
    lines = list(STRINGS)
    assert chomp(lines) is lines  # a list is chomped in place, as chomp(@lines)
    assert lines == [_unq(x) for x in listed]
    assert chomp(undef) is undef and chop(undef) is undef and chomp(None) is None


def test_chomp_of_the_documented_example() -> None:
    assert chomp("a\n") == "a"


# -- undef, arrays, hashes ---------------------------------------------------

INDEXES = ["3abc", "-1", "1.7", "-1.5", "-4", "abc", " 2", "0x2", "2e0", "-0.5", "", "10", "-3"]


def test_array_reads_with_form_value_indexes_match_perl() -> None:
    code = PERL_Q + ' my @a = ("x", "y", "z"); print "[", join(",", map { qh($a[$_]) } @ARGV), "]";'
    want = [_unq(v) for v in _perl_json(code, *INDEXES)]  # type: ignore[union-attr]
    array = ["x", "y", "z"]
    got = [elem(array, index) for index in INDEXES]
    assert [None if v is undef else v for v in got] == want
    assert [PerlList(array)[index] for index in INDEXES] == got
    assert [PerlList(array)[index] is undef for index in INDEXES] == [v is None for v in want]


ASSIGNMENTS = ["5", "1abc", "-1", "1.7", "-3", "0", "-4", "-10", "7"]


def test_array_assignments_with_form_value_indexes_match_perl() -> None:
    # $a[$i] = $v: past the end grows the array with undef; before the start Perl dies
    code = (
        PERL_Q + ' my @a = ("x", "y", "z"); my @out;'
        ' for my $i (@ARGV) { if (eval { $a[$i] = "v$i"; 1 }) { push @out, \'"ok"\' }'
        " else { push @out, $@ =~ /^Modification of non-creatable array value attempted,"
        ' subscript (-?\\d+)/ ? qq("die $1") : \'"other"\' } }'
        ' print "[[", join(",", @out), "],[", join(",", map { qh($_) } @a), "]]";'
    )
    outcomes, want = _perl_json(code, *ASSIGNMENTS)  # type: ignore[misc]
    array = PerlList(["x", "y", "z"])
    got = []
    for index in ASSIGNMENTS:
        try:
            array[index] = f"v{index}"
            got.append("ok")
        except IndexError as exc:
            got.append(f"die {str(exc).rsplit(' ', 1)[1]}")
            assert str(exc).startswith("Modification of non-creatable array value attempted")
    assert got == outcomes
    assert [None if v is undef else v for v in array] == [_unq(v) for v in want]
    before = list(array)
    array[1:3] = ["s"]  # a slice assigns as a list's does
    assert list(array) == [before[0], "s", *before[3:]]


def test_hash_reads_missing_keys_as_undef_without_adding_them() -> None:
    form = PerlHash(name="perl", one="1")
    assert form["missing"] is undef and "missing" not in form
    assert f"<>{form['missing']}<>{form['name']}<>" == "<>" + "<>perl<>"
    assert hval({"1": "one"}, 1.0) == "one" and hval({}, "x") is undef  # $h{1.0} is $h{"1"}
    assert PerlHash({"1": "one"})[1] == "one"


def test_pop_shift_push_unshift_as_perl() -> None:
    code = (
        PERL_Q + " my @e; my $p = pop(@e); my $s = shift(@e); my @a = (1);"
        " my $n = push(@a, 2, 3); my $m = unshift(@a, 8, 9);"
        ' print "[", join(",", qh($p), qh($s), $n, $m, qh(join(":", @a))), "]";'
    )
    p, s, n, m, joined = _perl_json(code)  # type: ignore[misc]
    empty: list[object] = []
    assert pop(empty) is undef and shift(empty) is undef and p is None and s is None
    a: list[object] = [1]
    assert (push(a, 2, 3), unshift(a, 8, 9)) == (n, m)
    assert ":".join(map(str, a)) == _unq(joined)
    assert pop(a) == 3 and shift(a) == 8


def test_undef_reads_as_perls_undef() -> None:
    proc = run_perl('my $u; print "[$u]", $u + 1, " ", ($u ? "t" : "f"), " ", $u == 0 ? 1 : 0;')
    ours = f"[{undef}]{undef + 1} {'t' if undef else 'f'} {1 if undef == 0 else 0}"
    assert ours == proc.stdout.decode() == "[]1 f 1"
    assert undef + "x" == "x" and "x" + undef == "x" and 2 - undef == 2 and undef * 3 == 0
    assert not defined(undef) and not defined(None) and defined("") and defined(0)
    assert repr(undef) == "undef" and f"{undef:>3d}" == "  0" and int(undef) == 0
    assert undef < 1 and undef >= 0 and undef < "a"
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(undef)) is undef and copy.deepcopy(undef) is undef


def test_undef_is_zero_in_every_arithmetic_operator_as_in_perl() -> None:
    # a missing count or total ($h{$k} / $n, $sum % 7, $n ** 2) is 0 in Perl, not a TypeError
    proc = run_perl(
        "my $u; print join ' ', $u / 2, $u * 3, $u - 1, 2 - $u, $u ** 2, 2 ** $u, abs($u),"
        " int($u), $u % 3, -$u, $u + 0.5, 7 / 2 + $u;"
        " for my $e ('2 / $u', '3 % $u') { eval $e; print $@ =~ /^Illegal/ ? ' dies' : ' lives' }"
    )
    ours = [undef / 2, undef * 3, undef - 1, 2 - undef, undef**2, 2**undef, abs(undef)]
    ours += [int(undef), undef % 3, -undef, undef + 0.5, 7 / 2 + undef, undef // 2]
    for zero_division in (lambda: 2 / undef, lambda: 3 % undef, lambda: 3 // undef):
        with pytest.raises(ZeroDivisionError):
            zero_division()
    perl = proc.stdout.decode().split()
    assert perl[-2:] == ["dies", "dies"]
    assert [perlcompat.num(v) for v in perl[:-2]] == ours[:-1] and ours[-1] == 0
    assert round(undef) == 0 and "%s|%d" % (undef, undef) == "|0"  # noqa: UP031  (formatting)


def test_undef_printed_to_a_handle_is_empty(tmp_path: Path) -> None:
    out = tmp_path / "out"
    fh = perlcompat.open_(">", out)
    print_(fh, "a", undef, "b\n", f"<>{undef}<>")
    close(fh)
    assert out.read_bytes() == b"ab\n<><>"


# -- split into N variables --------------------------------------------------


def test_split_into_variables_matches_perls_list_assignment() -> None:
    rng = random.Random(24)
    cases = []
    for _ in range(300):
        text = "".join(rng.choice("ab=,<> ") for _ in range(rng.randrange(0, 10)))
        pattern = rng.choice(["=", ",", "<>", r"\s+", "(,)", "(=)|,"])
        cases.append((pattern, text, rng.randrange(1, 5)))
    code = (
        PERL_Q + " my @out; while (@ARGV) { my ($p, $t, $n) = splice(@ARGV, 0, 3);"
        ' $p = pack("H*", $p); $t = pack("H*", $t); my @v;'
        " if ($n == 1) { my ($a) = split(/$p/, $t); @v = ($a) }"
        " elsif ($n == 2) { my ($a, $b) = split(/$p/, $t); @v = ($a, $b) }"
        " elsif ($n == 3) { my ($a, $b, $c) = split(/$p/, $t); @v = ($a, $b, $c) }"
        " else { my ($a, $b, $c, $d) = split(/$p/, $t); @v = ($a, $b, $c, $d) }"
        ' push @out, "[" . join(",", map { qh($_) } @v) . "]" } print "[", join(",", @out), "]";'
    )
    args = [w for p, t, n in cases for w in (p.encode().hex(), t.encode().hex(), str(n))]
    wanted = _perl_json(code, *args)
    for (pattern, text, n), want in zip(cases, wanted):  # type: ignore[call-overload]
        got = split(pattern, text, fields=n)
        assert len(got) == n
        assert [None if v is undef else v for v in got] == [_unq(v) for v in want], (
            pattern,
            text,
        )
    k, v = split("=", "flag", fields=2)
    assert f"{k}<>{v}<>" == "flag<><>"  # Perl's "$k<>$v<>", never "None"


# -- POSIX strftime ----------------------------------------------------------

FORMATS = [
    "%Y-%m-%d %H:%M:%S",
    "%a %A %b %B %j %U %W %w %u %V %G %g",
    "%y/%C/%e/%D/%F/%T/%R/%I%p",
    "%Z|%z|%s",
    "%c|%x|%X",
    "%Y年%m月%d日(%a) %%",
    "%-d %_m %02H %10A",
]
ZONES = ["UTC", "Asia/Tokyo", "America/New_York", "Europe/London"]


@pytest.mark.parametrize("zone", ZONES)
def test_strftime_matches_perls_posix_strftime(zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(zone)
    cases: list[list[int]] = []
    for _ in range(150):  # a localtime list of a time in 1902..2037
        cases.append([rng.randrange(-(2**31), 2**31)])
    for _ in range(150):  # fields out of range, as scripts compute them (mday + 7 ...)
        cases.append(
            [
                rng.randrange(-70, 130),
                rng.randrange(-70, 130),
                rng.randrange(-30, 50),
                rng.randrange(-40, 70),
                rng.randrange(-14, 26),
                rng.randrange(0, 200),
                rng.randrange(-1, 7),
                rng.choice([-1, rng.randrange(0, 365)]),
                rng.choice([-1, 0, 1]),
            ]
        )
    env = dict(os.environ, TZ=zone, LC_ALL="C")
    fmt_hex = [f.encode().hex() for f in FORMATS]
    code = (
        "use POSIX qw(strftime); my @fmts = map { pack('H*', $_) } split(/,/, shift(@ARGV));"
        " my @out; for my $c (@ARGV) { my @f = split(/,/, $c);"
        " @f = localtime($f[0]) if @f == 1;"
        ' push @out, "[" . join(",", map { "\\"" . unpack("H*", strftime($_, @f)) . "\\"" } @fmts)'
        ' . "]" }'
        ' print "[", join(",", @out), "]";'
    )
    wanted = _perl_json(code, ",".join(fmt_hex), *[",".join(map(str, c)) for c in cases], env=env)
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        for case, want in zip(cases, wanted):  # type: ignore[call-overload]
            fields = list(perlcompat.localtime(case[0])) if len(case) == 1 else case
            for fmt, expected in zip(FORMATS, want):
                got = strftime(fmt, *fields).encode("utf-8", "surrogateescape")
                assert got == bytes.fromhex(expected), f"{zone} {fmt} {fields}"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_strftime_takes_fields_read_from_a_file() -> None:
    assert strftime("%Y/%m/%d", "0", "0", "0", "24\n", "10", "126") == "2026/11/24"


# -- names -------------------------------------------------------------------


def _stdlib_module_names() -> set[str]:
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return set(names)
    import pkgutil  # 3.9: the modules beside os.py, and the built-in ones
    import sysconfig

    found = {m.name for m in pkgutil.iter_modules([sysconfig.get_paths()["stdlib"]])}
    return found | set(sys.builtin_module_names)


def test_star_import_never_shadows_a_standard_module() -> None:
    clashes = sorted(set(perlcompat.__all__) & _stdlib_module_names())
    assert clashes == []
    assert {"time", "stat", "crypt", "readline"} <= set(dir(perlcompat))  # still importable


def test_import_time_then_star_keeps_the_time_module() -> None:
    code = "import time\nfrom perlcompat import *\nprint(int(time.time()) > 0, callable(sysopen))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=CHILD_ENV, check=False
    )
    assert proc.stdout == b"True True\n", proc.stderr
