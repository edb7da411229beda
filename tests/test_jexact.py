"""The exact Japanese layers: any bytes read and printed back are unchanged.

Literals are written in the file's encoding.
"""

from __future__ import annotations

import codecs
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import perlcompat.jcode  # noqa: F401  (registers sjis-exact and euc-jp-exact)
from perlcompat import close, open_, print_, seek, tell, truncate

NEC_IBM = bytes.fromhex("87 90 87 9A FA 5C")
JAPANESE = st.one_of(
    st.binary(max_size=40),
    st.lists(
        st.one_of(
            st.binary(min_size=1, max_size=3),
            st.sampled_from(
                [bytes.fromhex(h) for h in ("8790", "879A", "FA5C", "ED40", "F040", "8740")]
            ),
            st.sampled_from([s.encode("cp932") for s in "表ソ能＼～①纊ｱ\n"]),
            st.sampled_from([s.encode("euc_jp") for s in "表ソ能ｱ丂"]),
            st.sampled_from([bytes.fromhex(h) for h in ("ADA1", "F9A1", "8FA2AF", "8E", "8F")]),
        ),
        max_size=20,
    ).map(b"".join),
)


def test_cp932_layer_rewrites_nec_ibm_duplicates() -> None:
    # the premise: CPython's cp932 is not a round trip
    assert NEC_IBM.decode("cp932").encode("cp932") == bytes.fromhex("81 E0 81 E6 ED 40")


@pytest.mark.parametrize("name", ["sjis-exact", "euc-jp-exact"])
@settings(max_examples=400, deadline=None)
@given(data=JAPANESE)
def test_any_bytes_decode_and_encode_back(name: str, data: bytes) -> None:
    text = data.decode(name)
    assert text.encode(name) == data
    assert text.encode(name, "surrogateescape") == data
    decoder = codecs.getincrementaldecoder(name)()
    pieces = [decoder.decode(data[i : i + 1]) for i in range(len(data))]
    assert "".join(pieces) + decoder.decode(b"", final=True) == text


@pytest.mark.parametrize(
    ("layer", "base"),
    [("sjis-exact", "cp932"), ("euc-jp-exact", "euc_jp"), ("cp932-exact", "cp932")],
)
def test_rewriting_a_file_through_the_layer_keeps_old_lines(
    tmp_path: Path, layer: str, base: str
) -> None:
    old = NEC_IBM + b"<>" + "表ソ能".encode(base) + b"\x85\x40\x81\xff\x80<>\n"
    old += "ｱｲｳ".encode(base) + bytes.fromhex("ADA1 F9A1 8F8E A1") + b"\n"
    path = tmp_path / "bbs.dat"
    path.write_bytes(old)
    fh = open_(f"+<:encoding({layer})", path)
    assert fh is not None
    lines = fh.readlines()
    assert seek(fh, 0, 0) == 1
    assert print_(fh, "無題<>表示\n", *lines) == 1
    assert truncate(fh, tell(fh)) == 1
    assert close(fh) == 1
    assert path.read_bytes() == "無題<>表示\n".encode(base) + old


def test_literals_and_read_text_are_the_same_characters(tmp_path: Path) -> None:
    path = tmp_path / "sjis.dat"
    path.write_bytes("無題<>表\n".encode("cp932"))
    fh = open_("<:encoding(sjis-exact)", path)
    assert fh is not None
    assert fh.readline().split("<>") == ["無題", "表\n"]
    assert close(fh) == 1


def test_euc_layer_writes_nec_row_13_as_cp51932() -> None:
    assert "①～".encode("euc-jp-exact") == bytes.fromhex("ADA1 A1C1")
    assert bytes.fromhex("ADA1").decode("euc-jp-exact") == "①"


def test_unencodable_text_raises_unless_an_error_handler_says_otherwise() -> None:
    with pytest.raises(UnicodeEncodeError, match="sjis-exact"):
        "x\U0001f600".encode("sjis-exact")
    assert "x\U0001f600y".encode("sjis-exact", "replace") == b"x?y"


def test_unknown_encoding_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot find encoding 'sjis-exactly'"):
        open_("<:encoding(sjis-exactly)", tmp_path / "x")


def test_import_perlcompat_does_not_load_the_codecs() -> None:
    code = (
        "import sys, perlcompat; "
        "print(sorted(m for m in sys.modules"
        " if m.startswith(('perlcompat.j', 'perlcompat.perl.j'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
