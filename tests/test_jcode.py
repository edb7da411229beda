"""perlcompat.jcode against the real jcode.pl 2.13 (one perl process, many inputs).

Exhaustive over every one- and two-byte character shape each conversion reads,
then hypothesis over random mixes of Shift_JIS, EUC-JP, JIS escapes, half-width
kana, 0x5C second bytes, NEC/IBM rows and broken sequences.  Both the converted
bytes and the return value (input code, count) must equal jcode.pl's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from jcodeperl import JcodePerl, patched_jcode
from perlutil import run_perl

from perlcompat import jcode

OPS = [
    "sjis2euc",
    "sjis2jis",
    "euc2sjis",
    "euc2jis",
    "jis2euc",
    "jis2sjis",
    "jis2jis",
    "sjis2sjis",
    "euc2euc",
    "h2z_sjis",
    "h2z_euc",
    "h2z_jis",
    "z2h_sjis",
    "z2h_euc",
    "z2h_jis",
]
OPTS = [None, "z", "h", "zh"]
ESCAPES = [b"\x1b$B", b"\x1b$@", b"\x1b&@\x1b$B", b"\x1b$(D", b"\x1b(B", b"\x1b(J", b"\x1b(I"]


@pytest.fixture(scope="module")
def perl() -> Iterator[JcodePerl]:
    driver = JcodePerl()
    yield driver
    driver.close()


def python_side(op: str, data: bytes, args: Sequence[str | None]) -> tuple[bytes, str]:
    """What perlcompat.jcode answers, in the driver's (value, result) form."""
    if op == "getcode":
        matched, code = jcode.getcode(data, wantarray=True)  # type: ignore[misc]
        return data, f"{matched},{code or 'undef'}"
    if op == "convert":
        out, icode = jcode.convert(data, *args)
        return out, icode or "undef"
    out, count = getattr(jcode, op)(data, *args[:1])
    return out, str(count)


def check_all(perl: JcodePerl, requests: list[tuple[str, bytes, Sequence[str | None]]]) -> None:
    answers = perl.call_many(requests)
    bad = []
    for (op, data, args), (perl_out, perl_result) in zip(requests, answers):
        out, result = python_side(op, data, args)
        if op == "jis2sjis" and b"\x1b$(D" in data:
            result = perl_result  # jcode.pl returns length($_) there: not a count
        if (out, result) != (perl_out, perl_result):
            bad.append((op, data, args, perl_out, perl_result, out, result))
    assert not bad[:5], f"{len(bad)} of {len(requests)} differ, e.g. {bad[:5]}"


def test_form_value_from_the_issue(perl: JcodePerl) -> None:
    # half-width kana sent as raw bytes: jcode guesses EUC, so the Perl script stores 89 51 8A 53 B5
    value = bytes.fromhex("B1B2B3B4B5")
    assert jcode.convert(value, "sjis") == (bytes.fromhex("89518A53B5"), "euc")
    assert perl.call("convert", value, "sjis") == (bytes.fromhex("89518A53B5"), "euc")


def test_str_values_are_the_surrogateescape_form_of_bytes() -> None:
    raw = "表ソ能".encode("cp932")
    text = raw.decode("utf-8", "surrogateescape")
    out, code = jcode.convert(text, "euc")
    assert isinstance(out, str) and code == "sjis"
    assert out.encode("utf-8", "surrogateescape") == jcode.convert(raw, "euc")[0]
    assert out.encode("utf-8", "surrogateescape") == "表ソ能".encode("euc_jp")


def test_every_two_byte_sequence(perl: JcodePerl) -> None:
    pairs = [bytes((a, b)) for a in range(0x80, 0x100) for b in range(0x1B, 0x100)]
    requests: list[tuple[str, bytes, Sequence[str | None]]] = []
    for pair in pairs:
        text = b"a" + pair + b"\n"
        requests.append(("getcode", text, ()))
        for op in ("sjis2euc", "sjis2jis", "euc2sjis", "euc2jis", "z2h_sjis", "z2h_euc"):
            requests.append((op, text, ()))
    check_all(perl, requests)


def test_every_kana_with_every_following_byte(perl: JcodePerl) -> None:
    requests: list[tuple[str, bytes, Sequence[str | None]]] = []
    for kana in range(0xA1, 0xE0):
        for nxt in range(0x80, 0x100):
            requests.append(("h2z_sjis", bytes((kana, nxt)), ()))
            requests.append(("h2z_euc", bytes((0x8E, kana, 0x8E, nxt)), ()))
            requests.append(("convert", bytes((kana, nxt, kana)), ("sjis",)))
        for nxt in range(0x21, 0x80):
            requests.append(("h2z_jis", b"\x1b(I" + bytes((kana - 0x80, nxt)) + b"\x1b(B", ()))
    check_all(perl, requests)


def test_every_jis_pair_under_every_escape(perl: JcodePerl) -> None:
    requests: list[tuple[str, bytes, Sequence[str | None]]] = []
    for esc in ESCAPES:
        for a in range(0x21, 0x7F):
            for b in range(0x21, 0x7F, 3):
                text = esc + bytes((a, b, a, b + 1)) + b"\x1b(B\n"
                for op in ("jis2sjis", "jis2euc", "z2h_jis", "h2z_jis"):
                    requests.append((op, text, ()))
    check_all(perl, requests)


def test_nec_ibm_and_0x5c_characters(perl: JcodePerl) -> None:
    text = "表ソ能十①≒∵纊髙".encode("cp932") + bytes.fromhex("87908790879AFA5CED40F040F9FC")
    requests: list[tuple[str, bytes, Sequence[str | None]]] = []
    for ocode in ("sjis", "euc", "jis", "noconv", None):
        for opt in OPTS:
            requests.append(("convert", text, (ocode, None, opt)))
            requests.append(("convert", text + b"\xb1\xde", (ocode, "sjis", opt)))
    check_all(perl, requests)


# -- random mixes ---------------------------------------------------------------
def _byte(lo: int, hi: int) -> st.SearchStrategy[bytes]:
    return st.integers(lo, hi).map(lambda b: bytes((b,)))


TOKENS = st.one_of(
    st.sampled_from([b"a", b" ", b"\n", b"\\", b"\x00", b"\x7f", b"\xff", b"%", b"!"]),
    st.sampled_from(ESCAPES),
    st.tuples(_byte(0x81, 0xFC), _byte(0x40, 0xFC)).map(b"".join),  # Shift_JIS shapes
    st.sampled_from([s.encode("cp932") for s in "表ソ能十ガパヴ＼①≒纊"]),
    st.sampled_from([bytes.fromhex(h) for h in ("8790", "879A", "FA5C", "ED40", "F040")]),
    _byte(0xA1, 0xDF),  # half-width kana
    st.sampled_from([b"\xde", b"\xdf", b"\x8e\xde", b"\x8e\xdf"]),
    st.tuples(_byte(0xA1, 0xFE), _byte(0xA1, 0xFE)).map(b"".join),  # EUC X 0208
    st.tuples(st.just(b"\x8e"), _byte(0x80, 0xFF)).map(b"".join),  # EUC kana
    st.tuples(st.just(b"\x8f"), _byte(0xA1, 0xFE), _byte(0xA1, 0xFE)).map(b"".join),
    st.tuples(_byte(0x21, 0x7E), _byte(0x21, 0x7E)).map(b"".join),  # JIS 7-bit pair
    st.sampled_from([b"%!", b"%v", b"%n", b"%,", b"!#", b"!<", b"!+"]),  # JIS kana
    _byte(0x00, 0xFF),
)
TEXTS = st.lists(TOKENS, max_size=24).map(b"".join)


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=TEXTS, opt=st.sampled_from(OPTS))
def test_random_text_every_function(perl: JcodePerl, text: bytes, opt: str | None) -> None:
    requests: list[tuple[str, bytes, Sequence[str | None]]] = [("getcode", text, ())]
    for op in OPS:
        requests.append((op, text, () if op[1] == "2" else (opt,)))  # h2z_*/z2h_* take no opt
    for ocode in ("sjis", "euc", "jis", "noconv"):
        requests.append(("convert", text, (ocode, None, opt)))
        for icode in ("sjis", "euc", "jis"):
            requests.append(("convert", text, (ocode, icode, opt)))
    check_all(perl, requests)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="no conversion from 'sjis' to 'utf8'"):
        jcode.convert("表".encode("cp932"), "utf8")
    with pytest.raises(TypeError, match="expected bytes or str, not int"):
        jcode.convert(5, "sjis")  # type: ignore[type-var]


def test_jis_inout_changes_the_escapes() -> None:
    try:
        assert jcode.jis_inout("@", "J") == (b"\x1b$@", b"\x1b(J")
        out, _ = jcode.convert("表".encode("cp932"), "jis")
        assert out == b"\x1b$@" + "表".encode("iso2022_jp")[3:5] + b"\x1b(J"
    finally:
        jcode.jis_inout(b"\x1b$B", b"\x1b(B")
    assert jcode.get_inout(b"x\x1b$@ab\x1b(Jc") == (b"\x1b$@", b"\x1b(J")


def test_valid_text_agrees_with_jcode_pm() -> None:
    """Jcode.pm 2.06, the second reference: the same bytes on valid JIS X 0208 text.

    (Jcode.pm differs from jcode.pl on broken input, e.g. a lone trailing kana byte;
    perlcompat.jcode follows jcode.pl there, which the tests above check.)
    """
    import random

    rng = random.Random(16)
    texts = []
    for _ in range(300):
        # JIS X 0208 rows 4-5 (kana) and 16-47 (level 1 kanji), plus ASCII
        chars = []
        for _ in range(rng.randint(1, 20)):
            row = rng.choice([4, 5, *range(16, 48)])
            cell = rng.randint(1, 83 if row in (4, 5) else 94)
            if row == 47:
                cell = min(cell, 51)
            chars.append(bytes((0xA0 + row, 0xA0 + cell)).decode("euc_jp"))
            if rng.random() < 0.2:
                chars.append(rng.choice("a1 <>&\n"))
        texts.append("".join(chars))
    lines = []
    for text in texts:
        for icode, encoding in (("sjis", "cp932"), ("euc", "euc_jp"), ("jis", "iso2022_jp")):
            lines.append(f"{icode} {text.encode(encoding).hex()}")
    code = (
        "use Jcode; binmode STDOUT; while (<STDIN>) { chomp; my ($i, $h) = split / /;"
        " my $j = Jcode->new(pack('H*', $h), $i);"
        " print join(' ', map { unpack('H*', $j->$_) } qw(sjis euc jis)), \"\\n\" }"
    )
    done = run_perl(code, input=("\n".join(lines) + "\n").encode())
    assert done.returncode == 0, done.stderr
    answers = done.stdout.decode().split("\n")
    for line, answer in zip(lines, answers):
        icode, hexed = line.split()
        ours = " ".join(
            jcode.to(o, bytes.fromhex(hexed), icode).hex() for o in ("sjis", "euc", "jis")
        )
        assert ours == answer, line
    assert len(answers) >= len(lines)


TR_PIECES = st.one_of(
    st.sampled_from([b"a", b"z", b"-", b"\\", b"\\-", b"\\\\", b"A-Z", b"a-z", b"0-9", b"z-a"]),
    st.sampled_from([s.encode("euc_jp") for s in ("あ", "ん", "ア", "ン", "表", "ー")]),
    st.sampled_from([b"\xa4\xa2-\xa4\xf3", b"\xa5\xa2-\xa5\xf3", b"\xa5\xf3-\xa5\xa2"]),
    st.sampled_from([s.encode("cp932") for s in ("表", "ソ", "あ")]),
    st.sampled_from([b'\x1b$B$"\x1b(B', b'\x1b$B%"-%s\x1b(B']),
    _byte(0x00, 0xFF),
)


TR_VALUES = ["ひらがなカタカナ abc".encode("euc_jp"), b'\xa4\xa2\x1b$B$"\x1b(B' + b"a-z" * 2]


def check_tr(perl: JcodePerl, value: bytes, frm: bytes, to: bytes, opt: str | None) -> None:
    perl_out, perl_count = perl.call("tr", value, frm.hex(), to.hex(), opt)
    out, count = jcode.tr(value, frm, to, opt)
    assert (out, str(count)) == (perl_out, perl_count), (value, frm, to, opt)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    text=TEXTS,
    frm=st.lists(TR_PIECES, max_size=6).map(b"".join),
    to=st.lists(TR_PIECES, max_size=6).map(b"".join),
)
@example(text=b"", frm="ア-ン".encode("euc_jp"), to=b"")  # found flaky: 'd' table reused
@example(text=b"ab", frm=b"a", to=b"")
def test_tr_random(perl: JcodePerl, text: bytes, frm: bytes, to: bytes) -> None:
    # the same from and to with each option in turn: jcode.pl would reuse its last
    # table across options; the driver forgets it, perlcompat keys it on all three
    for opt in ("d", None, "d"):
        for value in (text, *TR_VALUES, text + b'\x1b$B$"\x1b(B'):
            check_tr(perl, value, frm, to, opt)


def test_tr_answers_do_not_depend_on_earlier_calls(perl: JcodePerl) -> None:
    """The driver answers each tr as a fresh perl does, whatever came before it."""
    frm, to = "ア-ン".encode("euc_jp"), b""
    for opt in ("d", None, "d", None):
        check_tr(perl, TR_VALUES[0], frm, to, opt)
    assert perl.call("tr", TR_VALUES[0], frm.hex(), to.hex(), None) == (TR_VALUES[0], "0")


def test_jcode_pl_reuses_its_tr_table_across_options(tmp_path: Path) -> None:
    """The quirk the driver undoes: in one process the second call deletes too."""
    code = (
        "require $ARGV[0]; $s = $t = 'abc';"
        " &jcode'tr(*s, 'b', '', 'd'); &jcode'tr(*t, 'b', ''); print \"$s $t\";"
    )
    done = run_perl(code, str(patched_jcode(tmp_path)))
    assert (done.returncode, done.stdout) == (0, b"ac ac"), done.stderr
    assert jcode.tr(b"abc", b"b", b"", "d") == (b"ac", 1)
    assert jcode.tr(b"abc", b"b", b"") == (b"abc", 0)


def test_tr_katakana_to_hiragana() -> None:
    text = "カタカナ and ascii".encode("euc_jp")
    frm = "ア-ン".encode("euc_jp") + b"a-z"
    to = "あ-ん".encode("euc_jp") + b"A-Z"
    assert jcode.tr(text, frm, to) == ("かたかな AND ASCII".encode("euc_jp"), 12)
    assert jcode.trans(text, b"a-z", b"", "d") == "カタカナ  ".encode("euc_jp")


def test_tr_from_threads_uses_each_callers_table() -> None:
    """Two threads with different tables never see each other's (a shared cache raced)."""
    import threading

    wrong: list[tuple[bytes, bytes]] = []

    def work(frm: bytes, to: bytes, want: bytes) -> None:
        for _ in range(400):
            got, _count = jcode.tr(b"hello", frm, to)
            if got != want:
                wrong.append((frm, got))

    threads = [
        threading.Thread(target=work, args=(b"a-z", b"A-Z", b"HELLO")),
        threading.Thread(target=work, args=(b"el", b"01", b"h011o")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_tr_option_is_part_of_the_table() -> None:
    assert jcode.tr(b"hello", b"l", b"", "d") == (b"heo", 2)
    assert jcode.tr(b"hello", b"l", b"") == (b"hello", 0)  # as jcode.pl in a fresh process


def test_jis_inout_with_perl_false_arguments_keeps_the_escapes() -> None:
    before = jcode.jis_inout()
    assert jcode.jis_inout("0", b"0") == before  # jcode.pl: shift || $esc
    assert jcode.jis_inout("", None) == before
