"""``record=`` (excl) and ``pidfile=`` (mkdir) on Windows: what is written, what waits, what is
refused, and a release while another process reads the lock.

Run under Windows by scripts/test-windows.sh and natively on Linux.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from perlcompat import OS_ERROR, Lock, lock, unlock

#: the checkout, for the reader's import of perlcompat
REPO = str(Path(__file__).resolve().parents[2])

#: a reader that opens the lock's pid file over and over (a waiter looking at it): as Perl's
#: open does (no FILE_SHARE_DELETE on Windows), or as perlcompat's waiters do (with it: the
#: file unlinked under it stays "delete pending", and its directory cannot be removed yet)
READER = """
import os, sys, time
path, stop, kind, repo = sys.argv[1:5]
sys.path.insert(0, repo)
from perlcompat.locks.files import read_small
print("reading", flush=True)
while not os.path.exists(stop):
    if kind == "perlcompat":
        read_small(path)
        continue
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        continue
    os.read(fd, 64)
    os.close(fd)
"""


def test_excl_record_writes_it_waits_on_it_and_refuses_other_content(tmp_path: Path) -> None:
    path = tmp_path / "count.lock"
    assert lock(str(path), method="excl", record="{pid}\n") == 1
    assert path.read_bytes() == f"{os.getpid()}\n".encode()
    taken: list[int] = []
    thread = threading.Thread(
        target=lambda: taken.append(lock(str(path), method="excl", record="{pid}\n", retry=1))
    )
    thread.start()
    thread.join()
    assert taken == [0]
    assert unlock(str(path), method="excl", record="{pid}\n") == 1
    assert not path.exists()
    path.write_text("hello world\n")
    with pytest.raises(OSError, match="not the declared record"):
        Lock(str(path), method="excl", record="{pid}\n", retry=1).acquire()
    assert path.read_text() == "hello world\n"


@pytest.mark.parametrize("kind", ["plain", "perlcompat"])
def test_mkdir_pidfile_release_while_another_process_reads_the_pid_file(
    tmp_path: Path, kind: str
) -> None:
    """A waiter reading the pid file must not make the release fail (a sharing violation, or
    a directory that cannot be removed while the file is delete pending)."""
    path = tmp_path / "lockdir"
    stop = tmp_path / "stop"
    for _ in range(10):
        assert lock(str(path), pidfile="pid") == 1
        assert (path / "pid").read_text() == f"{os.getpid()}\n"
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(path / "pid"), str(stop), kind, REPO],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert reader.stdout is not None
            assert reader.stdout.readline() == "reading\n"
            got = unlock(str(path))
            assert (got, int(OS_ERROR)) == (1, 0), OS_ERROR
            assert not path.exists()
        finally:
            stop.write_text("")
            reader.wait(timeout=60)
            stop.unlink()
    assert lock(str(path), pidfile="pid", retry=1) == 1
    assert unlock(str(path)) == 1
