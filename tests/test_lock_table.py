"""docs/locks.md's table "the Perl lock code you have -> the perlcompat call" runs as written.

Each row's call is taken from the table (its first code span in the second
column) and run in a fresh directory holding what the Perl script would have
there (the data file, a free rename marker, the script's lock directory): it
must take the lock (a true value), and a ``lock(...)`` row must then release it
with ``unlock(name)``.  The ```python blocks of the sections the table links to
(link() locks, fcntl record locks) run too.  That the calls interoperate with
the Perl code on their row is tested per idiom (test_lock_link, test_fcntllock,
test_lock_formats, test_lock_rename_data, test_lock_perl).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import perlcompat

DOC = Path(__file__).resolve().parent.parent / "docs" / "locks.md"
TITLE = "## The Perl lock code you have → the perlcompat call"


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start : end if end >= 0 else len(text)]


def _rows() -> list[str]:
    calls = []
    for line in _section(TITLE).splitlines():
        if not line.startswith("| ") or line.startswith("| the Perl lock code"):
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        found = re.search(r"`([^`]+)`", cells[1])
        assert found is not None, f"no call in row {line!r}"
        calls.append(found.group(1))
    return calls


def test_the_table_covers_the_idioms_of_issue_22() -> None:
    table = _section(TITLE)
    for idiom in (
        "lockrun",
        "print LOCK $$",
        "SpamAssassin",
        "File::NFSLock",
        "Apache::Session::File",
        "LockFile::Simple",
        "Proc::PID::File",
        "scalar localtime",
        "SUSE SMT",
        "mkdir + pid file inside",
        "daycount.cgi",
        'symlink("/$$"',
        "the data file renamed as the lock",
        "lock plugin",
        "File::FcntlLock",
        "flock(LOCK, 2)",
        "the mkdir lock sub",
        "symlink($$",
        "set -C",
        "TOP?LOCK",
    ):
        assert idiom in table, idiom
    assert len(_rows()) >= 20


@pytest.mark.parametrize("call", _rows())
def test_each_rows_call_runs_as_written(
    call: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lock").mkdir()  # daycount.cgi's lock directory (./lock/daycount.lock)
    (tmp_path / "data.txt").write_text("0\n")
    module = ast.parse(call)
    last = module.body[-1]
    assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call), call
    tree = last.value
    name = tree.args[0].value if tree.args and isinstance(tree.args[0], ast.Constant) else None
    keywords = {k.arg: k.value for k in tree.keywords}
    method = keywords.get("method")
    if isinstance(method, ast.Constant) and method.value == "rename" and "data" not in keywords:
        if name == "lock":  # the lock plugin renames an existing "lock" marker
            os.rmdir(tmp_path / "lock")
        (tmp_path / str(name)).write_text("")  # the free marker the Perl script keeps
    given = [*perlcompat.__all__, "fcntl"]  # (fcntl is left out of *: a standard module)
    namespace = {key: getattr(perlcompat, key) for key in given}
    setup = ast.Module(body=module.body[:-1], type_ignores=[])
    exec(compile(setup, "<docs/locks.md>", "exec"), namespace)
    result = eval(compile(ast.Expression(tree), "<docs/locks.md>", "eval"), namespace)
    assert result, f"{call} -> {result!r}, $! = {perlcompat.OS_ERROR}"
    if isinstance(tree.func, ast.Name) and tree.func.id == "lock":
        assert perlcompat.unlock(name) == 1, f"unlock after {call}: {perlcompat.OS_ERROR}"
    for value in [v for k, v in namespace.items() if k not in given]:
        if isinstance(value, perlcompat.PerlFile):  # (the row's own, never STDOUT/STDERR)
            assert perlcompat.close(value) == 1  # the row's handle kept its lock until here


@pytest.mark.parametrize("title", ["## link() locks", "## fcntl record locks"])
def test_the_linked_sections_python_blocks_run(title: str, tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(title)
    section = text[start : text.index("\n## ", start + 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
