"""``require("./lib.py")``: a ported library shares the script's globals, as Perl's require.

The example examples/require_lib runs in Perl and Python at once on one counter.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, PERL

from perlcompat import Die, require
from perlcompat.perl import require as require_module

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "require_lib"


def test_require_runs_the_library_once_in_the_callers_globals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(require_module, "INC", {})
    (tmp_path / "lib.py").write_text(
        "loads = globals().get('loads', 0) + 1\nshared = setting * 2\n"
    )
    scope = {"setting": 21}
    exec(
        "from perlcompat import require\nr1 = require('./lib.py')\nr2 = require('./lib.py')", scope
    )
    assert scope["r1"] == scope["r2"] == 1
    assert scope["shared"] == 42 and scope["loads"] == 1  # the second require does nothing


def test_require_of_a_missing_library_dies_as_perl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    perl = subprocess.run(
        [PERL, "-e", 'require "./nolib.pl"'], capture_output=True, cwd=tmp_path, check=False
    )
    assert perl.stderr == b"Can't locate ./nolib.pl at -e line 1.\n"
    with pytest.raises(Die) as caught:
        require("./nolib.py")
    assert str(caught.value).startswith("Can't locate ./nolib.py at ")
    assert str(caught.value).endswith(f"line {sys._getframe().f_lineno - 2}.\n")


def test_a_library_that_fails_is_not_marked_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(require_module, "INC", {})
    (tmp_path / "bad.py").write_text("raise ValueError('broken')\n")
    for _ in range(2):
        with pytest.raises(ValueError, match="broken"):
            require("./bad.py")


def _run(script: str, cwd: Path, data: Path) -> subprocess.Popen[bytes]:
    argv = [PERL, script] if script.endswith(".cgi") else [sys.executable, script]
    env = dict(CHILD_ENV, PERLCOMPAT_DATA_DIR=str(data))
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE)


def test_the_example_counts_with_perl_and_python_at_once(tmp_path: Path) -> None:
    www = tmp_path / "www"
    shutil.copytree(EXAMPLE, www)
    data = tmp_path / "data"
    data.mkdir()
    # one of each first: the same page
    pages = []
    for script in ("count.cgi", "count.py"):
        proc = _run(script, www, data)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        pages.append(out)
    assert pages == [b"Content-Type: text/plain\n\n1\n", b"Content-Type: text/plain\n\n2\n"]
    # then 60 requests, half each, 12 at a time: every count once, none lost
    numbers = []
    scripts = ["count.cgi", "count.py"] * 30
    for start in range(0, len(scripts), 12):
        procs = [_run(s, www, data) for s in scripts[start : start + 12]]
        for proc in procs:
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0
            numbers.append(int(out.split(b"\n\n")[1]))
    assert sorted(numbers) == list(range(3, 63))
    assert (data / "libcount.dat").read_bytes() == b"62"
