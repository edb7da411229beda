"""A character the file's encoding lacks is written as Perl's PerlIO writes it: ``\\x{HEX}``."""

from __future__ import annotations

from pathlib import Path

import pytest
from perlutil import run_perl

from perlcompat import close, open_, print_

TEXT = ["a\U0001f600b\n", "next \u2603 ok\n"]


@pytest.mark.parametrize(
    ("ours", "perls"),
    [("cp932", "cp932"), ("sjis-exact", "cp932"), ("euc-jp-exact", "euc-jp"), ("euc-jp", "euc-jp")],
)
def test_unmappable_characters_are_written_as_perl_writes_them(
    tmp_path: Path, ours: str, perls: str
) -> None:
    theirs_path = tmp_path / "perl.txt"
    run = run_perl(
        f'open(F, ">:encoding({perls})", $ARGV[0]) or die; '
        'print F "a\\x{1f600}b\\n", "next \\x{2603} ok\\n"; close(F) or die;',
        str(theirs_path),
    )
    assert run.returncode == 0, run.stderr
    mine = tmp_path / "mine.txt"
    fh = open_(f">:encoding({ours})", str(mine))
    assert print_(fh, *TEXT) == 1  # nothing raised, nothing lost
    assert close(fh) == 1
    assert mine.read_bytes() == theirs_path.read_bytes()
    assert b"\\x{1f600}" in mine.read_bytes()


def test_escaped_bytes_still_go_back_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "sjis.txt"
    raw = b"\x87\x90\xfa\x5c\xff\n"
    path.write_bytes(raw)
    fh = open_("+<:encoding(sjis-exact)", str(path))
    line = fh.readline()
    fh.seek(0, 2)
    assert print_(fh, line, "\U0001f600\n") == 1
    assert close(fh) == 1
    assert path.read_bytes() == raw + raw + b"\\x{1f600}\n"
