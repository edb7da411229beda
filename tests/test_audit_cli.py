"""The ``perlcompat`` command's manners, for every subcommand (demo, audit, locks).

``--help`` everywhere, ``--version``, usage errors on stderr with exit 2, unknown options
refused, Ctrl-C as exit 130 with one line, progress only on a terminal, a ``version`` in
every ``--json`` document, nonsense ``--stale`` values refused; and ``import perlcompat``
imports neither the audit nor argparse.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def cli(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perlcompat", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENV,
        timeout=120,
        **kw,  # type: ignore[arg-type]
    )


def test_import_perlcompat_imports_neither_audit_nor_argparse() -> None:
    code = (
        "import sys, perlcompat; perlcompat.flock; perlcompat.lock; "
        "print(sorted(m for m in sys.modules if m == 'argparse' or 'audit' in m))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=ENV, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("command", ["", "demo", "audit", "locks"])
def test_help_everywhere(command: str) -> None:
    result = cli(*([command] if command else []), "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: perlcompat{' ' + command if command else ''}")
    assert result.stderr == ""


def test_version() -> None:
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("perlcompat ") and result.stdout.split()[1][0].isdigit()


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--bogus"],
        ["frob"],
        ["audit"],
        ["audit", "--bogus", "x.pl"],
        ["demo", "--bogus"],
        ["demo", "extra"],
        ["locks"],
        ["locks", "--bogus", "."],
    ],
    ids=lambda a: " ".join(a) or "(none)",
)
def test_usage_errors_go_to_stderr_with_status_2(args: list[str]) -> None:
    result = cli(*args)
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert "usage: perlcompat" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "abc", ""])
def test_locks_refuses_nonsense_stale(value: str, tmp_path: Path) -> None:
    result = cli("locks", "--stale", value, str(tmp_path))
    assert result.returncode == 2, result
    assert "--stale" in result.stderr and result.stdout == ""


def test_json_documents_carry_a_version(tmp_path: Path) -> None:
    audit = json.loads(cli("audit", "--json", "tests/audit_cases/seed003_ok.pl").stdout)
    assert audit == {"version": 1, "findings": [], "errors": []}
    locks = json.loads(cli("locks", "--json", str(tmp_path)).stdout)
    assert locks["version"] == 1 and locks["locks"] == []


def test_ctrl_c_exits_130_with_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "script.pl"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "perlcompat", "audit", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=ENV,
    )
    # The audit blocks reading the FIFO: opening its write end succeeds once it is there.
    deadline = time.monotonic() + 60
    while True:
        try:
            writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
    # The signal is pending before the FIFO reaches end of file: whether it interrupts the
    # blocked read or is noticed right after it returns, the audit cannot finish first.
    proc.send_signal(signal.SIGINT)
    os.close(writer)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == "perlcompat: interrupted\n"
    assert out == ""


def test_progress_only_when_stderr_is_a_terminal() -> None:
    cases = sorted(str(p) for p in (ROOT / "tests" / "audit_cases").glob("*.pl"))
    assert len(cases) >= 20
    piped = cli("audit", *cases)
    assert "audit: " not in piped.stderr  # only the summary line
    assert piped.stderr.count("\n") == 1
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "perlcompat", "audit", *cases],
            stdout=subprocess.PIPE,
            stderr=slave,
            cwd=ROOT,
            env=ENV,
            timeout=120,
        )
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert proc.returncode == 1
    assert f"audit: {4 * len(cases)}/{4 * len(cases)}".encode() in seen
    assert b"audit: " not in proc.stdout


def test_ctrl_c_in_demo_removes_its_temp_files(tmp_path: Path) -> None:
    # A terminal's Ctrl-C signals the whole process group: the demo and its writers.
    proc = subprocess.Popen(
        [sys.executable, "-m", "perlcompat", "demo", "--quick"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(ENV, TMPDIR=str(tmp_path)),
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("perlcompat-demo-*/row*/*")):  # writers are at work
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert err == "perlcompat: interrupted\n"
    assert list(tmp_path.iterdir()) == []
