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
    assert audit == {"version": 1, "findings": [], "errors": [], "skipped": []}
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


# -- paths and rules: --exclude, -, --only, --ignore, non-Perl files in a directory

BAD = "tests/audit_cases/fork_while_locked_bad.pl"
ALSO_BAD = "tests/audit_cases/append_no_seek_bad.pl"  # an info finding
UNCHECKED = "tests/audit_cases/unchecked_result_bad.pl"


def _rules(run: subprocess.CompletedProcess[str]) -> list[str]:
    return sorted({f["rule"] for f in json.loads(run.stdout)["findings"]})


def test_a_script_on_standard_input_is_audited_as_dash() -> None:
    source = (ROOT / BAD).read_text(encoding="latin-1")
    run = cli("audit", "--json", "-", input=source)
    assert run.returncode == 1, run.stderr
    doc = json.loads(run.stdout)
    assert {(f["file"], f["line"], f["rule"]) for f in doc["findings"]} == {
        ("-", 7, "fork-while-locked"),
    }


def test_a_fork_under_a_flock_is_not_flagged_the_port_keeps_it_alike() -> None:
    # flock belongs to the open file, which os.fork shares as Perl's fork does: the parent's
    # close leaves the lock with the child (test_exit_flush checks it against perl)
    source = (
        'open(OUT, "+< $f") or die "open: $!";\nflock(OUT, 2) or die "flock: $!";\n'
        "if (fork == 0) { exit 0 }\nclose(OUT);\n"
    )
    run = cli("audit", "--json", "--only", "fork-while-locked", "-", input=source)
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["findings"] == []


def test_only_and_ignore_select_rules_and_the_exit_status() -> None:
    both = cli("audit", "--json", BAD, UNCHECKED)
    assert {"fork-while-locked", "unchecked-result"} <= set(_rules(both))
    only = cli("audit", "--json", "--only", "fork-while-locked", BAD, UNCHECKED)
    assert _rules(only) == ["fork-while-locked"] and only.returncode == 1
    ignored = cli("audit", "--json", "--ignore", "fork-while-locked", BAD)
    assert _rules(ignored) == [] and ignored.returncode == 0  # nothing left to report
    listed = cli("audit", "--json", "--ignore", "unchecked-result,fork-while-locked", UNCHECKED)
    assert "unchecked-result" not in _rules(listed)
    info = cli("audit", "--only", "append-no-seek", "--only", "fork-while-locked", ALSO_BAD)
    assert info.returncode == 0 and "append-no-seek" in info.stdout


def test_an_unknown_rule_is_a_usage_error_naming_the_rules() -> None:
    run = cli("audit", "--only", "no-such-rule", BAD)
    assert run.returncode == 2
    assert "unknown rule no-such-rule" in run.stderr and "fork-while-locked" in run.stderr
    assert "Traceback" not in run.stderr


def test_exclude_leaves_out_files_and_directories(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "old").mkdir(parents=True)
    for name in ("board.cgi", "old/board.cgi", "jcode.pl"):
        (site / name).write_bytes((ROOT / BAD).read_bytes())
    every = json.loads(cli("audit", "--json", str(site)).stdout)
    assert len({f["file"] for f in every["findings"]}) == 3
    run = cli("audit", "--json", "--exclude", "*/old", "--exclude", "jcode.pl", str(site))
    assert {f["file"] for f in json.loads(run.stdout)["findings"]} == {str(site / "board.cgi")}


def test_a_non_perl_file_in_a_directory_is_skipped_with_a_note(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "board.cgi").write_bytes((ROOT / BAD).read_bytes())
    (site / "count.cgi").write_text("#!/usr/bin/env python3\nprint(f'{1}')\nx = {'a': 1\n")
    (site / "data.pl").write_bytes(b"\x00\x01binary{{{")
    run = cli("audit", "--json", str(site))
    assert run.returncode == 1, run.stderr  # the findings, not exit 2
    doc = json.loads(run.stdout)
    assert doc["errors"] == []
    assert doc["skipped"] == [
        {"file": str(site / "count.cgi"), "reason": "not Perl: #!/usr/bin/env python3"},
        {"file": str(site / "data.pl"), "reason": "binary data"},
    ]
    assert f"perlcompat audit: skipped {site / 'count.cgi'}: not Perl" in run.stderr
    text = cli("audit", str(site))
    assert "2 skipped" in text.stderr.splitlines()[-1]
    named = cli("audit", str(site / "count.cgi"))  # named on the command line: audited
    assert named.returncode == 2 and "cannot parse" in named.stderr
