"""``perlcompat demo``: the JSON it prints, and that it shows real loss and real safety.

The demo is run as users run it (``python -m perlcompat demo``), in a
subprocess; its writers are real concurrent processes, Perl among them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perlcompat.tools import demo as _demo

ROOT = Path(__file__).resolve().parent.parent
KEYS = ["idiom", "safe", "writers", "expected", "got", "lost", "seconds"]


def run_demo(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "perlcompat", "demo", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture(scope="module")
def quick_json() -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    proc = run_demo("--quick", "--json")
    return proc, json.loads(proc.stdout)


def test_json_schema_is_exact(quick_json: tuple[object, list[dict[str, Any]]]) -> None:
    _proc, rows = quick_json
    assert isinstance(rows, list) and rows
    for row in rows:
        assert list(row) == KEYS
        assert isinstance(row["idiom"], str) and row["idiom"]
        assert type(row["safe"]) is bool
        for key in ("writers", "expected", "got", "lost"):
            assert type(row[key]) is int, (key, row)
        assert type(row["seconds"]) is float and row["seconds"] > 0
    assert len({row["idiom"] for row in rows}) == len(rows)


def test_every_row_runs_with_perl_installed(
    quick_json: tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]],
) -> None:
    proc, rows = quick_json
    assert proc.returncode == 0, proc.stderr
    assert [row["idiom"] for row in rows] == [row.idiom for row in _demo.ROWS]
    assert "skipping" not in proc.stderr
    assert f"[ 1/{len(rows)}]" not in proc.stderr  # progress only when stderr is a terminal


def test_counts_add_up(quick_json: tuple[object, list[dict[str, Any]]]) -> None:
    _proc, rows = quick_json
    for row in rows:
        assert row["writers"] == _demo.WRITERS
        assert row["expected"] == row["writers"] * _demo.QUICK_CYCLES
        assert 0 <= row["got"] <= row["expected"]
        assert row["lost"] == row["expected"] - row["got"]


def test_safe_rows_lose_nothing(quick_json: tuple[object, list[dict[str, Any]]]) -> None:
    _proc, rows = quick_json
    safe = [row for row in rows if row["safe"]]
    assert len(safe) == sum(1 for row in _demo.ROWS if row.safe)
    for row in safe:
        assert row["lost"] == 0 and row["got"] == row["expected"], row


def test_unsafe_rows_really_lose_updates(quick_json: tuple[object, list[dict[str, Any]]]) -> None:
    """Every unsafe original loses updates: measured 100% of runs here (pause in the window)."""
    _proc, rows = quick_json
    unsafe = {row["idiom"]: row for row in rows if not row["safe"]}
    assert sorted(unsafe) == sorted(
        [
            "counter: no lock",
            "counter: '>' before flock",
            "sjis board: lock only around write",
            "sub lock: open() lock file",
            "rename: flock on the replaced file",
        ]
    )
    for row in unsafe.values():
        assert row["lost"] > 0, row


def test_each_idiom_has_a_safe_perl_and_python_row() -> None:
    families = {row.idiom.split(":")[0] for row in _demo.ROWS}
    for family in families:
        rows = [row for row in _demo.ROWS if row.idiom.split(":")[0] == family]
        mixed = [r for r in rows if {lang for lang, _ in r.writers} == {"perl", "py"}]
        assert mixed and all(r.safe for r in mixed), family


def test_table_without_perl_skips_only_perl_rows(tmp_path: Path) -> None:
    proc = run_demo("--quick", path=str(tmp_path))  # an empty PATH: no perl
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["idiom", "safe", "writers", "expected", "got", "lost", "time"]
    assert set(lines[1]) <= {"-", " "}
    python_only = [r for r in _demo.ROWS if all(lang == "py" for lang, _ in r.writers)]
    assert len(lines) == 2 + len(python_only) + 2  # header, rule, rows, blank, summary
    assert lines[-1].endswith(
        "perlcompat ports lost 0 of "
        f"{sum(r.safe for r in python_only) * _demo.WRITERS * _demo.QUICK_CYCLES} updates."
    )
    assert lines[-1].startswith("unsafe idioms lost ") and lines[-2] == ""
    for row, line in zip(python_only, lines[2:]):
        assert line.startswith(row.idiom)
        if row.safe:
            expected = _demo.WRITERS * _demo.QUICK_CYCLES
            assert line.split()[-6:-2] == [str(_demo.WRITERS), str(expected), str(expected), "0"]
    assert proc.stderr.count("(perl is not installed)") == len(_demo.ROWS) - len(python_only)


def test_a_safe_row_that_loses_fails_the_demo(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The exit status is the verdict: an unlocked writer labelled safe makes it 1."""
    bogus = _demo.Row("counter: mislabelled", True, "count", _demo._py("counter_nolock"))
    monkeypatch.setattr(_demo, "ROWS", (bogus,))
    assert _demo.main(["--quick", "--json"]) == 1
    out, err = capsys.readouterr()
    [row] = json.loads(out)
    assert row["lost"] > 0
    assert "FAILED" in err and "counter: mislabelled" in err


def test_measure_counts_entries_present_exactly_once(tmp_path: Path) -> None:
    (tmp_path / "list.dat").write_bytes(
        b"1<>w0-0<>\n2<>w0-1<>\n3<>w0-1<>\n4<>w1-0<>\n\xff<>w1-1<>\n"
    )
    expected = ["w0-0", "w0-1", "w1-0", "w1-1"]
    assert _demo._measure("list", str(tmp_path), expected) == 2  # w0-1 twice, w1-1 undecodable
    board = "1<>名無し<>w0-0 表示ソ能<>\n2<>名無し<>w0-1 (mojibake)<>\n".encode("cp932")
    (tmp_path / "bbs.dat").write_bytes(board)
    assert _demo._measure("sjis", str(tmp_path), ["w0-0", "w0-1"]) == 1
    (tmp_path / "count.dat").write_bytes(b"17\n")
    assert _demo._measure("count", str(tmp_path), []) == 17


def test_help_and_bad_arguments() -> None:
    assert run_demo("--help").returncode == 0
    bad = run_demo("--no-such-flag")
    assert bad.returncode == 2 and "usage: perlcompat demo" in bad.stderr


def test_writers_import_this_perlcompat_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The writers (``python -S``) find the package through the PYTHONPATH the demo sets.

    Run as an installed ``perlcompat demo`` is: from another directory, no PYTHONPATH.
    """
    [row] = [r for r in _demo.ROWS if r.idiom == "counter: perlcompat +< flock"]
    monkeypatch.setattr(_demo, "ROWS", (row,))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.chdir(tmp_path)
    status = _demo.main(["--quick", "--json"])
    out, err = capsys.readouterr()
    assert "writer" not in err, err
    [result] = json.loads(out)
    assert status == 0 and result["lost"] == 0 and result["got"] == result["expected"] > 0


def test_every_perl_writer_is_a_packaged_pl_file_that_perl_compiles(tmp_path: Path) -> None:
    """Each Perl variant the rows name loads from ``demo_perl/`` and compiles (``perl -c``)."""
    variants = sorted({v for row in _demo.ROWS for lang, v in row.writers if lang == "perl"})
    shipped = sorted(p.stem for p in (ROOT / "perlcompat/tools/demo_perl").glob("*.pl"))
    assert shipped == sorted([*variants, "prelude"])
    for variant in variants:
        program = _demo.perl_program(variant)
        assert program.startswith("# Shared by every Perl writer")
        check = subprocess.run(
            ["perl", "-c", "-e", program], capture_output=True, text=True, cwd=tmp_path
        )
        assert check.returncode == 0 and "syntax OK" in check.stderr, (variant, check.stderr)


def test_perl_writers_run_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mixed row reads its Perl program from the package, not from the current directory."""
    [row] = [r for r in _demo.ROWS if r.idiom == "counter: Perl +< and perlcompat"]
    monkeypatch.setattr(_demo, "ROWS", (row,))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.chdir(tmp_path)
    status = _demo.main(["--quick", "--json"])
    out, err = capsys.readouterr()
    assert "skipping" not in err and "writer" not in err, err
    [result] = json.loads(out)
    assert status == 0 and result["lost"] == 0 and result["got"] == result["expected"] > 0
