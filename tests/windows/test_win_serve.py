"""``perlcompat serve`` on Windows: no fork, so it says so and exits with status 2.

On Linux (where ``serve`` runs: tests/test_serve.py) the same command line with a
missing ``--root`` is a usage error, also status 2, without starting anything.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perlcompat.tools import cli


def test_serve_says_it_needs_fork_on_windows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing")
    assert cli.main(["serve", "--fastcgi", "9000", "--root", missing]) == 2
    err = capsys.readouterr().err
    if sys.platform == "win32":
        assert "needs fork" in err
        assert "plain CGI" in err
    else:
        assert "not a directory" in err
