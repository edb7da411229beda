"""split, num, truth, localtime/gmtime, crypt, chmod/chown: checked against the real perl.

One long-running perl process answers every case (a line in, a line out), so
hypothesis can try hundreds of inputs per second.
"""

from __future__ import annotations

import errno
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from perlutil import CHILD_ENV, PERL

import perlcompat
from perlcompat import (
    OS_ERROR,
    chmod,
    chown,
    crypt,
    gmtime,
    localtime,
    num,
    scalar_gmtime,
    scalar_localtime,
    split,
    stat,
    truth,
    undef,
)

DRIVER = r"""
use strict; no warnings;
$| = 1;
sub h { my $s = shift; defined $s ? "v" . unpack("H*", $s) : "U" }
sub uh { my $s = shift; $s eq "U" ? undef : pack("H*", substr($s, 1)) }
while (my $line = <STDIN>) {
    chomp $line;
    my ($cmd, @a) = split / /, $line, -1;
    if ($cmd eq "split") {
        my ($pat, $str, $limit) = (uh($a[0]), uh($a[1]), $a[2]);
        my @r;
        if ($pat eq " ") { @r = split(" ", $str, $limit) }
        elsif ($pat eq "^") { @r = split(/^/, $str, $limit) }
        else { @r = split(/$pat/, $str, $limit) }
        print join(" ", "ok", map { h($_) } @r), "\n";
    } elsif ($cmd eq "num") {
        my $n = uh($a[0]) + 0;
        print "ok $n\n";
    } elsif ($cmd eq "truth") {
        print "ok ", (uh($a[0]) ? 1 : 0), "\n";
    } elsif ($cmd eq "time") {
        my ($kind, $t) = @a;
        my @l = $kind eq "gm" ? gmtime($t) : localtime($t);
        my $s = $kind eq "gm" ? scalar gmtime($t) : scalar localtime($t);
        print "ok ", h(join(",", @l)), " ", h($s), "\n";
    } elsif ($cmd eq "crypt") {
        $! = 0; my $r = crypt(uh($a[0]), uh($a[1]));
        print "ok ", h($r), " ", (defined $r ? 0 : $! + 0), "\n";
    } elsif ($cmd eq "chmod") {
        my $mode = oct($a[0]); my @f = map { uh($_) } @a[1 .. $#a];
        $! = 0; my $n = chmod($mode, @f);
        print "ok $n ", $! + 0, "\n";
    } elsif ($cmd eq "stat") {
        my @s = stat(uh($a[0]));
        my $m = (stat(uh($a[0])))[9];
        print "ok ", scalar(@s), " ", h($m), "\n";
    } else { print "bad\n" }
}
"""


class Perl:
    """A perl process that answers one command line with one result line."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [PERL, "-e", DRIVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def ask(self, *words: str) -> list[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((" ".join(words) + "\n").encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the perl driver died (exit {self.proc.wait()}) on {words}")
        reply = line.decode().rstrip("\n").split(" ")
        assert reply[0] == "ok", reply
        return reply[1:]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def perl() -> Iterator[Perl]:
    process = Perl()
    yield process
    process.close()


def hx(text: str | bytes | None) -> str:
    if text is None:
        return "U"
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
    return "v" + data.hex()


def unhx(word: str) -> str | None:
    if word == "U":
        return None
    assert word.startswith("v"), word
    return bytes.fromhex(word[1:]).decode("utf-8", "surrogateescape")


#: no deadline and no speed health check: a loaded machine (CI, parallel runs) is slow
SETTINGS = settings(
    max_examples=int(os.environ.get("PERLFUNCS_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# -- split -----------------------------------------------------------------

PATTERNS = [
    "<>",
    ",",
    ":",
    " ",
    "^",
    "",
    r"\s+",
    r"\s*",
    "x*",
    ",?",
    "(,)",
    "(<)(>)?",
    "(a)|b",
    r"\d",
    "[[:space:]]+",
    "[[:punct:]]",
    "[^[:alnum:]]+",
    "[[:alpha:]]",
    "a|",
    "(?:<>)+",
    r"\|",
    "b*",
]
split_text = st.text(alphabet="a,b:x<> \t\n1|", max_size=14)


@SETTINGS
@given(st.sampled_from(PATTERNS), split_text, st.sampled_from([-1, 0, 1, 2, 3, 5]))
@example("<>", "name<>mail<>text<><>", 0)
@example(" ", "  lead  and trail  ", 0)
@example("", "abc", 0)
@example("x*", "axb", -1)
def test_split_matches_perl(perl: Perl, pattern: str, text: str, limit: int) -> None:
    want = [unhx(word) for word in perl.ask("split", hx(pattern), hx(text), str(limit)) if word]
    got = split(pattern, text, limit)
    assert got == [undef if field is None else field for field in want]
    assert [field is undef for field in got] == [field is None for field in want]  # undef as undef


def test_split_of_shift_jis_log_line_keeps_bytes() -> None:
    line = b"\x95\\\x8e\xa6<>\x83\\\x83t\x83g<>1\n".decode("utf-8", "surrogateescape")
    fields = split("<>", line)
    assert [f.encode("utf-8", "surrogateescape") for f in fields if f is not None] == [
        b"\x95\\\x8e\xa6",
        b"\x83\\\x83t\x83g",
        b"1\n",
    ]


# -- num and truth ---------------------------------------------------------

NUMBERS = [
    "12abc",
    "",
    "abc",
    " 3 ",
    "1e3",
    "0x10",
    ".5",
    "+3",
    "-0",
    "1_000",
    "\n12",
    "5.",
    "1e",
    "1e+",
    "Inf",
    "-inf",
    "nan",
    "Infinity",
    "info",
    "0 but true",
    "  -12.5e-1x",
    "00012",
    "1.0",
    "9" * 25,
    "1e400",
    "１２",
    "٣",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
]


def _same_number(ours: float, theirs: str) -> bool:
    if theirs in ("Inf", "-Inf"):
        return ours == float(theirs.lower())
    if theirs == "NaN":
        return isinstance(ours, float) and math.isnan(ours)
    return math.isclose(float(ours), float(theirs), rel_tol=1e-14)


@SETTINGS
@given(st.one_of(st.sampled_from(NUMBERS), st.text(alphabet=" +-.e0123456789xa\t", max_size=8)))
def test_num_matches_perl(perl: Perl, text: str) -> None:
    (theirs,) = perl.ask("num", hx(text))
    ours = num(text)
    assert _same_number(ours, theirs), (text, ours, theirs)


def test_num_is_a_double_beyond_perls_integers() -> None:
    assert num("18446744073709551615") == 2**64 - 1
    assert isinstance(num("18446744073709551616"), float)
    assert isinstance(num("-9223372036854775809"), float)
    assert num("１２") == 0  # full-width digits are not digits to Perl


def test_num_returns_int_for_integral_values() -> None:
    assert num("1e3") == 1000 and isinstance(num("1e3"), int)
    assert num("12abc") == 12 and num(None) == 0 and num("0.5") == 0.5


@SETTINGS
@given(
    st.one_of(st.sampled_from(["0", "", "0.0", "00", " ", "0E0", "a", "-0"]), st.text(max_size=3))
)
def test_truth_of_strings_matches_perl(perl: Perl, text: str) -> None:
    (theirs,) = perl.ask("truth", hx(text))
    assert truth(text) is (theirs == "1")


def test_truth_of_non_strings() -> None:
    assert [truth(v) for v in (None, 0, 0.0, 1, -1, [], [0])] == [
        False,
        False,
        False,
        True,
        True,
        False,
        True,
    ]


# -- localtime / gmtime ----------------------------------------------------

times = st.one_of(
    st.integers(-(2**31), 2**34),
    st.sampled_from([0, 951782400, 1774170000, 1793574000, 2**31 - 1]),
)


@SETTINGS
@given(times)
def test_gmtime_matches_perl(perl: Perl, t: int) -> None:
    listed, scalar = perl.ask("time", "gm", str(t))
    assert ",".join(map(str, gmtime(t))) == unhx(listed)
    assert scalar_gmtime(t) == unhx(scalar) == str(gmtime(t))


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/New_York", "UTC"])
def test_localtime_matches_perl_in_zone(zone: str) -> None:
    if not Path("/usr/share/zoneinfo", zone).exists():
        pytest.fail(f"tzdata is missing /usr/share/zoneinfo/{zone} (apt install tzdata)")
    env = dict(CHILD_ENV, TZ=zone)
    stamps = [0, 1000000000, 1710054000, 1710061200, 1730613600, 1730620800, 1795000000]
    code = (
        "import sys, perlcompat as p\n"
        "for t in map(int, sys.argv[1:]):\n"
        "    print(','.join(map(str, p.localtime(t))) + '|' + p.scalar_localtime(t))\n"
    )
    ours = subprocess.run(
        [sys.executable, "-c", code, *map(str, stamps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    theirs = subprocess.run(
        [
            PERL,
            "-e",
            'for (@ARGV) { print join(",", localtime($_)), "|", scalar localtime($_), "\\n" }',
            *map(str, stamps),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert ours == theirs
    if zone == "America/New_York":
        assert {line.split("|")[0].split(",")[8] for line in ours} == {"0", "1"}  # DST seen


def test_time_list_reads_like_a_perl_list() -> None:
    t = gmtime(86400 * 365)
    assert t[5] == 71 and t[99] is undef and len(t) == 9
    assert localtime(float("inf")) == () and str(localtime(float("inf"))) == ""
    assert int(OS_ERROR) == errno.EOVERFLOW
    assert scalar_localtime(0) == str(localtime(0))
    assert perlcompat.time() == int(perlcompat.time())


# -- crypt -----------------------------------------------------------------

SALT_CHARS = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
salts = st.one_of(
    st.text(alphabet=SALT_CHARS, min_size=2, max_size=2),
    st.sampled_from(["$1$abcdefgh$", "$5$rounds=1000$saltsalt$", "$6$x$", "!!", "", "a", "$9$x"]),
)
keys = st.one_of(
    st.binary(max_size=12).filter(lambda b: b"\0" not in b),
    st.sampled_from([b"\x82\xa0\x82\xa2", b"\xa4\xa2\xa4\xa4", "削除".encode("cp932"), b"pass"]),
)


@settings(SETTINGS, max_examples=150)
@given(keys, salts)
def test_crypt_matches_perl_byte_for_byte(perl: Perl, key: bytes, salt: str) -> None:
    hashed, number = perl.ask("crypt", hx(key), hx(salt))
    ours = crypt(key.decode("utf-8", "surrogateescape"), salt)
    assert ours == unhx(hashed)
    assert crypt(key, salt) == ours  # bytes in: the same
    if ours is None:
        assert int(OS_ERROR) == int(number)


def test_crypt_verifies_a_stored_delete_key() -> None:
    stored = crypt("削除".encode("cp932"), "ab")
    assert stored is not None and stored.startswith("ab")
    assert crypt("削除".encode("cp932"), stored) == stored
    assert crypt("other", stored) != stored


def test_crypt_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="plaintext"):
        crypt([1], "ab")  # type: ignore[arg-type]


# -- chmod / chown / stat --------------------------------------------------


def test_chmod_counts_like_perl(perl: Perl, tmp_path: Path) -> None:
    there = tmp_path / "there"
    there.write_text("x")
    missing = tmp_path / "missing"
    count, number = perl.ask("chmod", "0640", hx(str(there)), hx(str(missing)))
    assert os.stat(there).st_mode & 0o777 == 0o640
    assert chmod(0o600, there, missing) == int(count) == 1
    assert int(OS_ERROR) == int(number) == errno.ENOENT
    assert os.stat(there).st_mode & 0o777 == 0o600
    assert chmod(0o644) == 0


def test_chown_counts_and_keeps_with_minus_one(tmp_path: Path) -> None:
    there = tmp_path / "there"
    there.write_text("x")
    before = os.stat(there)
    assert chown(-1, -1, there, tmp_path / "missing") == 1
    assert int(OS_ERROR) == errno.ENOENT
    after = os.stat(there)
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)


def test_stat_of_missing_file_indexes_like_perl(perl: Perl, tmp_path: Path) -> None:
    count, mtime = perl.ask("stat", hx(str(tmp_path / "missing")))
    assert count == "0" and mtime == "U"
    assert len(stat(str(tmp_path / "missing"))) == 0


def test_localtime_of_a_string_numifies_it_as_perl(perl: Perl) -> None:
    listed, scalar = perl.ask("time", "gm", "1000000000")
    assert ",".join(map(str, gmtime("1000000000\n"))) == unhx(listed)
    assert scalar_gmtime("1000000000abc") == unhx(scalar)
