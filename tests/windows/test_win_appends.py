"""TOP?LOCK contenders append to one lock file at once: no line may overwrite another.

A handle opened for appending only appends atomically on Windows, but not under
wine: three processes x 1,500 plain appends there kept 4,324 of 4,500 lines, and
two TOP?LOCK contenders each read their own line first (two holders; the hammer's
``lock:toplock`` job, about 1 run in 5 beside two CPU hogs).  ``append_and_read``
takes a byte lock around the append and its read there.  Run under Windows by
scripts/test-windows.sh, and natively on Linux (O_APPEND: no byte lock).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 3
LINES = 1000

APPENDER = """
import os, sys
sys.path.insert(0, sys.argv[1])
from perlcompat.locks.methods.toplock import _APPEND, append_and_read
from perlcompat.locks.osapi import open_file
path, tag, lines = sys.argv[2], sys.argv[3], int(sys.argv[4])
for i in range(lines):
    fd = open_file(path, _APPEND, 0o666)
    try:
        append_and_read(fd, f"{tag}-{i:06d}<>1795840000<>\\n".encode())
    finally:
        os.close(fd)
"""


def test_appends_of_three_processes_keep_every_line(tmp_path: Path) -> None:
    path = tmp_path / "list.lock"
    children = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(ROOT), str(path), tag, str(LINES)])
        for tag in "abc"[:PROCESSES]
    ]
    for child in children:
        assert child.wait(timeout=300) == 0
    lines = path.read_bytes().split(b"\n")
    assert lines.pop() == b""
    assert len(lines) == PROCESSES * LINES
    assert sorted(lines) == sorted(
        f"{tag}-{i:06d}<>1795840000<>".encode() for tag in "abc"[:PROCESSES] for i in range(LINES)
    )
