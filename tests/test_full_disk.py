"""Writes that fail on a full disk: perlcompat against real perl, on a full tmpfs and /dev/full.

A full filesystem is a 64 KiB tmpfs mounted in a private mount namespace
(``unshare --mount``, or ``unshare --user --map-root-user --mount`` for a user
who is not root), so nothing stays mounted after the test.  The same programs
(print, tell, truncate, seek, eof, close on a handle whose buffered write fails
with ENOSPC) run under perl and under perlcompat; every return value and ``$!``
must be the same.  Perl's answers: ``tell`` counts the unwritten data (an
appending handle flushes and reports the OS position), ``truncate`` still cuts
with ``$!`` = ENOSPC, ``seek`` fails with ENOSPC, and ``close`` returns 0 with
the failed write's errno.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, PERL

from perlcompat import OS_ERROR, close, eof, open_, print_, seek, tell, truncate

#: a tmpfs mount in a private mount namespace: root, user namespaces or ``sudo -n``.
pytestmark = pytest.mark.privileged

#: the programs: (mode, operations); each ends with a close
PROGRAMS: list[tuple[str, list[list[object]]]] = [
    (mode, ops)
    for mode in (">", "+>", ">>", "+>>", "+<")
    for ops in (
        [["print", 10], ["tell"]],
        [["print", 10], ["truncate_tell"]],
        [["print", 10], ["seek", 0, 0]],
        [["print", 10], ["eof"]],
        [["print", 10]],
        [["print", 10], ["tell"], ["seek", 0, 1]],
        [
            ["print", 10],
            ["tell"],
            ["truncate_tell"],
            ["seek", 0, 0],
            ["print", 1],
            ["eof"],
            ["tell"],
        ],
        [["print", 9000], ["tell"], ["print", 1], ["truncate", 3]],
        [["print", 100000], ["tell"], ["seek", 0, 0]],
    )
]

PERL_OPS = {
    "print": '$! = 0; $r = print FH ("x" x {0}); res($r ? "1" : "0 E" . ($! + 0));',
    "tell": '$! = 0; $r = tell(FH); res("$r E" . ($! + 0));',
    "truncate_tell": '$! = 0; $r = truncate(FH, tell(FH)); res(($r ? 1 : 0) . " E" . ($! + 0));',
    "truncate": '$! = 0; $r = truncate(FH, {0}); res(($r ? 1 : 0) . " E" . ($! + 0));',
    "seek": '$! = 0; $r = seek(FH, {0}, {1}); res(($r ? 1 : 0) . " E" . ($! + 0));',
    "eof": '$! = 0; $r = eof(FH); res(($r ? 1 : 0) . " E" . ($! + 0));',
    "close": '$! = 0; $r = close(FH); res(($r ? 1 : 0) . " E" . ($! + 0));',
}


def perl_program(mode: str, ops: list[list[object]]) -> str:
    """The Perl script for one program: one result line per operation."""
    lines = [
        "no warnings; my ($f) = @ARGV; my $r;",
        'sub res { print join(" ", @_), "\\n" }',
        f"open(FH, '{mode}', $f) or die \"open: $!\";",
    ]
    for op in [*ops, ["close"]]:
        lines.append(PERL_OPS[str(op[0])].format(*op[1:]))
    return "\n".join(lines) + "\n"


def run_program(path: str, mode: str, ops: list[list[object]]) -> list[str]:
    """Run one program through perlcompat; the lines :func:`perl_program` prints."""
    fh = open_(mode, path)
    assert fh is not None, f"open {mode} {path}: {OS_ERROR}"
    out = []
    for op in [*ops, ["close"]]:
        kind = op[0]
        OS_ERROR.set(0)
        if kind == "print":
            r = print_(fh, "x" * int(op[1]))  # type: ignore[call-overload]
            out.append("1" if r else f"0 E{int(OS_ERROR)}")
            continue
        if kind == "tell":
            out.append(f"{tell(fh)} E{int(OS_ERROR)}")
            continue
        if kind == "truncate_tell":
            r = truncate(fh, tell(fh))
        elif kind == "truncate":
            r = truncate(fh, int(op[1]))  # type: ignore[call-overload]
        elif kind == "seek":
            r = seek(fh, int(op[1]), int(op[2]))  # type: ignore[call-overload]
        elif kind == "eof":
            r = eof(fh)
        else:
            r = close(fh)
        out.append(f"{1 if r else 0} E{int(OS_ERROR)}")
    return out


#: the child that runs every program through perlcompat: argv = JSON [(path, mode, ops)]
CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[2])
from test_full_disk import run_program
for path, mode, ops in json.loads(sys.argv[1]):
    print(json.dumps(run_program(path, mode, ops)))
    os.unlink(path)
"""


def _unshare() -> list[str]:
    """A command prefix that runs its command in a private mount namespace, as root there.

    root: ``unshare --mount``; a user: a user namespace, or else ``sudo -n`` (where
    unprivileged user namespaces are disabled, as on Ubuntu >= 23.10).
    """
    tool = shutil.which("unshare")
    assert tool is not None, "unshare (util-linux) is missing"
    mount_ns = [tool, "--mount", "--propagation", "private"]
    if os.geteuid() == 0:
        return mount_ns
    tries = [
        [tool, "--user", "--map-root-user", "--mount", "--propagation", "private"],
        ["sudo", "-n", *mount_ns],
    ]
    for prefix in tries:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=60, check=False)
        if probe.returncode == 0:
            return prefix
    raise AssertionError("cannot make a mount namespace: no user namespaces and no sudo -n")


def _compare_in(tmp_path: Path, free_kib: int) -> None:
    """Mount a 64 KiB tmpfs with *free_kib* left, run every program in perl and perlcompat."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    scripts = []
    for i, (mode, ops) in enumerate(PROGRAMS):
        script = tmp_path / f"p{i}.pl"
        script.write_text(perl_program(mode, ops))
        scripts.append(str(script))
    jobs = [(str(mnt / f"py{i}"), mode, ops) for i, (mode, ops) in enumerate(PROGRAMS)]
    filler = (64 - free_kib) * 1024
    # every file exists (empty) before the disk is filled, for the "+<" programs
    shell = f"""
set -e
mount -t tmpfs -o size=64k perlcompat-full "$1"
cd "$1"
for i in $(seq 0 {len(PROGRAMS) - 1}); do : > perl$i; : > py$i; done
head -c {filler} /dev/zero > filler 2>/dev/null || true
i=0
for script in {" ".join(scripts)}; do
    perl "$script" "$1/perl$i" > "$2/perl$i.out" 2>&1
    rm -f "$1/perl$i"  # (each program starts with the same free space)
    i=$((i + 1))
done
"{sys.executable}" -c "$3" "$4" "$5" > "$2/py.out"
"""
    child_args = [json.dumps(jobs), str(Path(__file__).parent)]
    proc = subprocess.run(
        [*_unshare(), "sh", "-c", shell, "sh", str(mnt), str(tmp_path), CHILD, *child_args],
        capture_output=True,
        timeout=240,
        env=CHILD_ENV,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    py_results = [json.loads(line) for line in (tmp_path / "py.out").read_text().splitlines()]
    assert len(py_results) == len(PROGRAMS)
    failed = []
    for i, (mode, ops) in enumerate(PROGRAMS):
        perl_results = (tmp_path / f"perl{i}.out").read_text().splitlines()
        assert py_results[i] == perl_results, f"{mode} {ops}: perl={perl_results}"
        if perl_results[-1] == "0 E28":  # close said ENOSPC
            failed.append(i)
    # full: every program's write failed; 4 KiB free: those that write more than that
    big = [
        i
        for i, (_m, ops) in enumerate(PROGRAMS)
        if any(o == ["print", 9000] or o == ["print", 100000] for o in ops)
    ]
    assert failed == (list(range(len(PROGRAMS))) if free_kib == 0 else big)


def test_full_tmpfs_same_as_perl(tmp_path: Path) -> None:
    _compare_in(tmp_path, free_kib=0)


def test_nearly_full_tmpfs_same_as_perl(tmp_path: Path) -> None:
    """4 KiB free: a large print is written in part, then fails."""
    _compare_in(tmp_path, free_kib=4)


@pytest.mark.parametrize("mode", ["+>", ">>"])
def test_dev_full_same_as_perl(tmp_path: Path, mode: str) -> None:
    """/dev/full: every write fails with ENOSPC (and ftruncate with EINVAL).

    (Not ``>``: perl's ``tell`` on a write-only character device is always 0.)
    """
    for ops in [p for m, p in PROGRAMS if m == mode]:
        script = tmp_path / "p.pl"
        script.write_text(perl_program(mode, ops))
        perl = subprocess.run(
            [PERL, str(script), "/dev/full"], capture_output=True, timeout=60, check=True
        )
        assert run_program("/dev/full", mode, ops) == perl.stdout.decode().splitlines(), ops


def test_close_reports_the_failed_write(tmp_path: Path) -> None:
    """The issue's case: print buffered, tell, truncate(tell), close -> 0 with ENOSPC."""
    fh = open_(">", "/dev/full")
    assert fh is not None
    assert print_(fh, "counter=42\n") == 1  # buffered: nothing written yet
    assert tell(fh) == len("counter=42\n")  # not -1
    assert seek(fh, 0, 0) == 0  # the flush fails here
    assert OS_ERROR == 28 and str(OS_ERROR) == os.strerror(28)
    OS_ERROR.set(0)
    assert close(fh) == 0
    assert int(OS_ERROR) == 28
