"""``LockedFile`` (portalocker's ``Lock``: the data file itself flocked and handed over) on
Windows: three processes increment one counter through it and lose nothing; "w" empties
the file only once the lock is held.  Run under Windows by scripts/test-windows.sh, and
natively on Linux.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 3
TIMES = 150

INCREMENTER = """
import sys
sys.path.insert(0, sys.argv[1])
from perlcompat import LockedFile
path, times = sys.argv[2], int(sys.argv[3])
for _ in range(times):
    with LockedFile(path, "r+", timeout=60) as fh:
        count = int(fh.read() or "0")
        fh.seek(0)
        fh.write(str(count + 1))
        fh.truncate()
"""


def test_three_processes_increment_one_counter_exactly(tmp_path: Path) -> None:
    path = tmp_path / "count.txt"
    path.write_text("0")
    children = [
        subprocess.Popen([sys.executable, "-c", INCREMENTER, str(ROOT), str(path), str(TIMES)])
        for _ in range(PROCESSES)
    ]
    for child in children:
        assert child.wait(timeout=300) == 0
    assert path.read_text() == str(PROCESSES * TIMES)


def test_w_empties_the_file_only_once_held(tmp_path: Path) -> None:
    from perlcompat import LockedFile, LockTimeout

    path = tmp_path / "data.txt"
    path.write_text("keep me")
    holder = LockedFile(path, "a", timeout=5)
    holder.acquire()
    try:
        try:
            LockedFile(path, "w", timeout=0).acquire()
        except LockTimeout:
            pass
        else:
            raise AssertionError("a second LockedFile took a held file")
        assert path.read_text() == "keep me"  # busy: not emptied
    finally:
        holder.release()
    with LockedFile(path, "w", timeout=5) as fh:
        fh.write("new")
    assert path.read_text() == "new"
