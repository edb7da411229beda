"""Perl's byte answers (``length``, ``substr``, ``tr``, bytes regexes) and magic ``++`` vs ``perl``.

Perl without ``use utf8`` sees bytes; the port reads text decoded as UTF-8 with
surrogateescape.  Every expectation here is what ``perl`` printed for the same
input in the same run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from perlutil import run_perl
from portcheck import both

from perlcompat import Die, as_bytes, from_bytes, inc, length, substr, tr

JAPANESE = "日本語"


def _perl_lines(code: str) -> list[str]:
    proc = run_perl("no warnings;\n" + code)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().splitlines()


def _hex(value: str | bytes | None) -> str:
    return "undef" if value is None else as_bytes(value).hex()


def test_textcounters_count_file_name_and_length_from_a_file_read_as_perl_reads_it(
    tmp_path: Path,
) -> None:
    # TextCounter: $file = $ENV{DOCUMENT_URI}; $file =~ s/[^\w]/_/g  -> one count file per page
    for side in ("perl", "py"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "uri").write_bytes("/café.html\n".encode())
    status, out, _ = both(
        tmp_path,
        'open(IN, "<uri") or die; my $uri = <IN>; chomp($uri); close(IN);\n'
        'print length($uri), " ", substr($uri, 0, 5), "\\n";\n'
        '(my $file = $uri) =~ s/[^\\w]/_/g; print "$file\\n";\n',
        'IN = open_("<uri") or die(); uri = chomp(IN.readline()); close(IN)\n'
        "print(length(uri), substr(uri, 0, 5))\n"
        'file = from_bytes(re.sub(rb"[^\\w]", b"_", as_bytes(uri))); print(file)\n',
    )
    assert (status, out) == (0, b"11 /caf\xc3\n_caf___html\n")


def test_python_len_and_str_regex_give_the_other_answer() -> None:
    # why the functions exist: a str regex sees one "é" where Perl sees two bytes
    assert len("/café.html") == 10 and length("/café.html") == 11
    assert re.sub(r"[^\w]", "_", "/café.html", flags=re.ASCII) == "_caf__html"


def test_tr_range_of_high_bytes_deletes_every_byte_of_a_japanese_word() -> None:
    (perl,) = _perl_lines(
        'my $t = "Title: \\xe6\\x97\\xa5\\xe6\\x9c\\xac\\xe8\\xaa\\x9e!";'
        ' my $n = ($t =~ tr/\\200-\\377//d); print "$t $n\\n";'
    )
    new, count = tr(f"Title: {JAPANESE}!", r"\200-\377", "", "d")
    assert f"{new} {count}" == perl == "Title: ! 9"
    assert tr(f"Title: {JAPANESE}!".encode(), b"\200-\377", b"", "d") == (b"Title: !", 9)


TR_CASES = [
    ("hello world", "a-z", "A-Z", ""),
    ("hello world", "a-y", "b-z", ""),
    ("aabbccdd", "a-c", "x", ""),
    ("aabbccdd", "a-c", "x", "s"),
    ("aabbccdd", "a-c", "", "d"),
    ("aabbccdd", "ab", "x", "d"),
    ("a+b+c%20d", "+", " ", ""),
    ("hello, world!", "a-zA-Z", "", "cd"),
    ("hello,  world!!", "a-zA-Z", " ", "cs"),
    ("abcabc", "abc", "", ""),
    ("café 日本", r"\200-\377", "", "d"),
    ("café 日本", r"\x80-\xff", "?", "s"),
    ("café", r"\303\251", "E", "d"),
    ("x-y-z", r"a\-z", "_", ""),
    ("tab\there\r\n", r"\t\r\n", "TRN", ""),
    ("aaa bbb", "a-z", "", "s"),
    ("abcd", "abca", "wxyz", ""),
    ("hello", "a-z", "A-C", ""),
    ("hello", "a-z", "A-C", "d"),
    ("aXbXc", "a-z", "_", "cs"),
    ("aab", "ab", "xx", "s"),
    ("abba", "ab", "ba", "s"),
    ("x\x01y\x1f", r"\x00-\x1f", "", "d"),
    ("z-a", "-az", "123", ""),
    ("日本", "日", "x", ""),
]


def test_tr_against_perl() -> None:
    code = []
    for text, search, replace, flags in TR_CASES:
        code.append(
            f'{{ my $s = pack("H*", "{text.encode().hex()}");'
            f" my $n = ($s =~ tr/{search}/{replace}/{flags});"
            ' print unpack("H*", $s), " $n\\n"; }'
        )
    perl = _perl_lines("use utf8 ();\n" + "\n".join(code))  # (source bytes: UTF-8, no utf8 pragma)
    mine = []
    for text, search, replace, flags in TR_CASES:
        new, count = tr(text, search, replace, flags)
        mine.append(f"{_hex(new)} {count}")
    assert mine == perl


def test_tr_refuses_a_latin1_character_that_meant_a_perl_escape() -> None:
    with pytest.raises(ValueError, match="ambiguous"):
        tr("café", "\200-\377", "", "d")  # "\200" without r: U+0080, not byte 0x80
    with pytest.raises(ValueError, match="Invalid range"):
        tr("abc", "z-a", "", "")
    with pytest.raises(ValueError, match="unknown flags"):
        tr("abc", "a", "b", "x")


def test_substr_against_perl() -> None:
    grid = [
        (text, offset, count)
        for text in ("", "abc", "héllo 日本")
        for offset in range(-12, 13, 1)
        for count in (None, -12, -3, -1, 0, 1, 2, 5, 20)
    ]
    code = []
    for text, offset, count in grid:
        args = f"{offset}" if count is None else f"{offset}, {count}"
        code.append(
            f'{{ my $s = pack("H*", "{text.encode().hex()}"); my $r = substr($s, {args});'
            ' print defined $r ? unpack("H*", $r) : "undef", "\\n"; }'
        )
    perl = _perl_lines("\n".join(code))
    assert [_hex(substr(text, offset, count)) for text, offset, count in grid] == perl


def test_substr_with_a_replacement_against_perl() -> None:
    grid = [
        (text, offset, count, new)
        for text in ("abc", "héllo")
        for offset in (-2, 0, 1, 3)
        for count in (-1, 0, 2)
        for new in ("", "XY")
    ]
    code = []
    for text, offset, count, new in grid:
        code.append(
            f'{{ my $s = pack("H*", "{text.encode().hex()}");'
            f' my $r = substr($s, {offset}, {count}, "{new}");'
            ' print unpack("H*", $s), " ", unpack("H*", $r), "\\n"; }'
        )
    perl = _perl_lines("\n".join(code))
    mine = []
    for text, offset, count, new in grid:
        changed, part = substr(text, offset, count, new)
        mine.append(f"{_hex(changed)} {_hex(part)}")
    assert mine == perl
    (message,) = run_perl('my $s = "abc"; substr($s, 5, 1, "x");').stderr.decode().splitlines()
    with pytest.raises(Die) as info:
        substr("abc", 5, 1, "x")
    assert (
        message.split(" at ")[0] == str(info.value).split(" at ")[0] == "substr outside of string"
    )


def test_length_of_values_against_perl() -> None:
    perl = _perl_lines(
        'print length("caf\\xc3\\xa9"), " ", length(12.50), " ", length(-3), " ",'
        ' defined(length(undef)) ? "def" : "undef", "\\n";'
    )
    assert perl == ["5 4 2 undef"]
    assert f"{length('café')} {length(12.50)} {length(-3)} {length(None)}" == "5 4 2 None"
    assert length(b"caf\xc3\xa9") == 5
    assert length(from_bytes(b"\x82\xa0")) == 2  # Shift_JIS read as text: still two bytes


INC_CASES = ["0099", "Az", "zz", "a9", "Zz", "", "1.5", "9", "99", "z9", "zZ9", "a", "zzz99"]
INC_CASES += ["12abc", " 12", "-3", "abc-", "1e3", "0", "18446744073709551615", "3 apples"]


def test_inc_against_perl() -> None:
    code = [f'{{ my $v = "{value}"; $v++; print "$v\\n"; }}' for value in INC_CASES]
    code += ['{ my $v; $v++; print "$v\\n"; }', '{ my $v = 41; $v++; print "$v\\n"; }']
    code += ['{ my $v = 2.5; $v++; print "$v\\n"; }']
    perl = _perl_lines("\n".join(code))
    mine = [str(inc(value)) for value in [*INC_CASES, None, 41, 2.5]]
    assert mine == perl
    assert (inc("0099"), inc("1.5"), inc(None), inc(41)) == ("0100", 2.5, 1, 42)


def test_inc_keeps_counters_strings_and_numbers_numbers() -> None:
    assert inc("0099") == "0100" and isinstance(inc("0099"), str)
    assert inc(99) == 100 and isinstance(inc(99), int)
    assert inc(b"Az") == b"Ba"
