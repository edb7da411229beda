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


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of *pid* so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_ctrl_c_exits_130_with_one_line() -> None:
    # every Perl file the machine has: several seconds of auditing
    proc = subprocess.Popen(
        [sys.executable, "-m", "perlcompat", "audit", "/usr/share/perl5", "/usr/share/perl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=ENV,
    )
    # past start-up (a few ms of CPU) and into the audit: then Ctrl-C
    deadline = time.monotonic() + 60
    while _cpu_seconds(proc.pid) < 0.4:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
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


@pytest.mark.parametrize(
    "argv", [["--version"], ["locks", "."], ["audit", "tests/audit_cases/sjis_bad.pl"]]
)
def test_a_full_disk_on_stdout_is_one_line_and_exit_2(argv: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        run = subprocess.run(
            [sys.executable, "-m", "perlcompat", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            env=ENV,
            cwd=ROOT,
            check=False,
            timeout=120,
        )
    assert run.returncode == 2, run.stderr
    assert run.stderr.decode().splitlines()[-1] == (
        "perlcompat: cannot write the output: No space left on device"
    )
    assert b"Traceback" not in run.stderr


def test_a_fifo_given_by_name_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "board.cgi"
    os.mkfifo(fifo)
    run = cli("audit", str(fifo))
    assert run.returncode == 2
    assert "not a regular file" in run.stderr
