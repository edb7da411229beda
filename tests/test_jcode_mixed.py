"""bbs.cgi (Perl + jcode.pl) and bbs.py (perlcompat.jcode + sjis-exact) post into one board.

The same form values, sent as Shift_JIS, EUC-JP, JIS, raw half-width kana, 0x5C
second bytes, NEC/IBM rows and broken bytes, go to both scripts.  Each script
converts with its jcode and rewrites the board under flock; every line the
Python side writes must equal the Perl side's byte for byte, and no write may
change an earlier line.  Then both post concurrently into the same file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from jcodeperl import patched_jcode
from perlutil import PERL

from perlcompat import jcode

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "bbs_sjis"
ROOT = str(Path(__file__).resolve().parent.parent)

FORMS: list[tuple[bytes, bytes]] = [
    ("名無し".encode("cp932"), "表示ソ能十 テスト".encode("cp932")),
    ("山田".encode("euc_jp"), "こんにちは、世界".encode("euc_jp")),
    (b"JIS", "日本語のテキスト".encode("iso2022_jp")),
    (b"kana", bytes.fromhex("B1B2B3B4B5")),
    (b"dakuten", "ｶﾞｷﾞﾊﾟ".encode("cp932")),
    (b"nec-ibm", bytes.fromhex("87908790879AFA5CED40") + "①髙".encode("cp932")),
    (b"mixed", "表".encode("cp932") + "表".encode("euc_jp") + "ソ".encode("cp932")),
    (b"broken", b"\x81abc\x85\x40\xa0\xfd"),
    (b"binary", b"\xff\x80<b>"),
    ("ソソソ".encode("cp932"), b'<b>&"x"\r\nline2'),
    (b"jis-kana", b"\x1b(I123\x1b(B"),
]


def perl_escape(value: bytes) -> bytes:
    """bbs.cgi's four s///g and its newline rule, on bytes."""
    for old, new in ((b"&", b"&amp;"), (b"<", b"&lt;"), (b">", b"&gt;"), (b'"', b"&quot;")):
        value = value.replace(old, new)
    return value.replace(b"\r\n", b"<br>").replace(b"\r", b"<br>").replace(b"\n", b"<br>")


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    for name in ("bbs.cgi", "bbs.py"):
        shutil.copy2(EXAMPLE / name, tmp_path / name)
    patched_jcode(tmp_path)
    return tmp_path


def post(site: Path, script: str, name: bytes, message: bytes) -> bytes:
    body = b"name=" + urllib.parse.quote_from_bytes(name).encode()
    body += b"&message=" + urllib.parse.quote_from_bytes(message).encode()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "REQUEST_METHOD": "POST",
        "CONTENT_LENGTH": str(len(body)),
        "SCRIPT_NAME": script,
        "PERLCOMPAT_DATA_DIR": str(site),
        "PYTHONPATH": ROOT,
    }
    argv = [PERL, "bbs.cgi"] if script == "bbs.cgi" else [sys.executable, "bbs.py"]
    done = subprocess.run(argv, input=body, cwd=site, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert b"No." in done.stdout, done.stdout
    return done.stdout


def fields(line: bytes) -> list[bytes]:
    return line.split(b"<>")


def test_each_form_stores_the_same_bytes_from_both_sides(site: Path) -> None:
    board = site / "bbs.dat"
    for name, message in FORMS:
        lines = []
        for script in ("bbs.cgi", "bbs.py"):
            before = board.read_bytes() if board.exists() else b""
            post(site, script, name, message)
            after = board.read_bytes()
            new_line, rest = after.split(b"\n", 1)
            assert rest == before, f"{script} changed earlier lines"
            lines.append(new_line)
        perl_line, python_line = lines
        assert fields(python_line)[1:3] == fields(perl_line)[1:3], (name, message)
        assert int(fields(python_line)[0]) == int(fields(perl_line)[0]) + 1
        # and what both stored is jcode's conversion of the form value
        expected = [perl_escape(jcode.convert(v, "sjis")[0]) for v in (name, message)]
        assert fields(perl_line)[1:3] == expected
    # the kana example from issue 16: jcode guesses EUC and stores 89 51 8A 53 B5
    assert b"<>kana<>\x89Q\x8aS\xb5<>" in board.read_bytes()


def test_both_sides_posting_at_once_keep_every_line(site: Path) -> None:
    board = site / "bbs.dat"
    post(site, "bbs.cgi", b"first", "最初の記事".encode("cp932"))
    first = board.read_bytes()
    calls = [(("bbs.cgi", "bbs.py")[i % 2], *FORMS[i % len(FORMS)]) for i in range(24)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda call: post(site, *call), calls))
    data = board.read_bytes()
    assert data.endswith(first)  # the first post is untouched
    lines = data.split(b"\n")[:-1]
    assert [int(fields(line)[0]) for line in lines] == list(range(25, 0, -1))
    stored = sorted(tuple(fields(line)[1:3]) for line in lines[:-1])
    wanted = sorted(
        (perl_escape(jcode.sjis(name)), perl_escape(jcode.sjis(message)))
        for _, name, message in calls
    )
    assert stored == wanted
