"""Perl's shape on Windows: flock's results and ``$!``, lock methods, alarm, text layers.

Run under Windows by scripts/test-windows.sh and natively on Linux; where the
platforms differ, each test states both answers (Perl on Windows vs Perl on
Linux).  What wine cannot show (mandatory LockFileEx locks refusing plain reads)
is not tested here; see docs/locks.md.
"""

from __future__ import annotations

import contextlib
import errno
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perlcompat import (
    LOCK_EX,
    LOCK_NB,
    LOCK_SH,
    LOCK_UN,
    OS_ERROR,
    SIG,
    Die,
    Lock,
    alarm,
    binmode,
    close,
    die,
    flock,
    lock,
    open_,
    print_,
    seek,
    sleep,
    tell,
    unlock,
)

WINDOWS = sys.platform == "win32"
#: Perl's "$!" for EWOULDBLOCK: Windows' message for WSAEWOULDBLOCK, which Perl's
#: win32_strerror prints for it; strerror(EAGAIN) on Linux.
WOULDBLOCK_MESSAGE = (
    "A non-blocking socket operation could not be completed immediately"
    if WINDOWS
    else "Resource temporarily unavailable"
)


@pytest.fixture(autouse=True)
def _no_alarm_left() -> object:
    yield
    alarm(0)
    SIG["ALRM"] = "DEFAULT"


# -- flock ------------------------------------------------------------------------


def test_busy_flock_gives_ewouldblock_with_a_real_message(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    holder = open_("> " + path)
    other = open_("< " + path)
    assert flock(holder, LOCK_EX) == 1
    assert flock(other, LOCK_SH | LOCK_NB) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    assert str(OS_ERROR) == WOULDBLOCK_MESSAGE
    assert f"Can't flock: {OS_ERROR}" == f"Can't flock: {WOULDBLOCK_MESSAGE}"
    assert flock(holder, LOCK_UN) == 1
    assert flock(other, LOCK_SH | LOCK_NB) == 1
    close(holder)
    close(other)


def test_relocking_a_handle_that_holds_lock_ex(tmp_path: Path) -> None:
    """Perl on Windows: LockFileEx again on the same range fails (0, EWOULDBLOCK).

    Linux flock(2) (and so Perl on Linux) converts the lock in place: 1.
    """
    fh = open_("> " + str(tmp_path / "data"))
    assert flock(fh, LOCK_EX) == 1
    if WINDOWS:
        assert flock(fh, LOCK_EX | LOCK_NB) == 0
        assert OS_ERROR == errno.EWOULDBLOCK
        assert str(OS_ERROR) == WOULDBLOCK_MESSAGE
    else:
        assert flock(fh, LOCK_EX | LOCK_NB) == 1
    assert flock(fh, LOCK_UN) == 1
    close(fh)


def test_unlocking_a_handle_that_holds_nothing(tmp_path: Path) -> None:
    """Perl on Windows: UnlockFileEx fails and win32_flock sets EINVAL; Linux: 1."""
    fh = open_("> " + str(tmp_path / "data"))
    if WINDOWS:
        assert flock(fh, LOCK_UN) == 0
        assert OS_ERROR == errno.EINVAL
        assert str(OS_ERROR) == "Invalid argument"
    else:
        assert flock(fh, LOCK_UN) == 1
    close(fh)


def test_flock_timeout_polls_and_gives_up(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    holder = open_("> " + path)
    other = open_("< " + path)
    assert flock(holder, LOCK_EX) == 1
    start = time.monotonic()
    assert flock(other, LOCK_EX, timeout=0.3) == 0
    assert time.monotonic() - start >= 0.3
    assert OS_ERROR == errno.EWOULDBLOCK
    close(holder)
    assert flock(other, LOCK_EX, timeout=5) == 1
    close(other)


# -- $! -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "ENOENT",
        "EACCES",
        "EEXIST",
        "EINVAL",
        "EBADF",
        "EWOULDBLOCK",
        "EDEADLK",
        "ENOLCK",
        "ETIMEDOUT",
        "ELOOP",
        "ENOTDIR",
        "ENOSYS",
    ],
)
def test_every_errno_perlcompat_sets_has_a_real_message(name: str) -> None:
    number = getattr(errno, name)
    OS_ERROR.set(number)
    try:
        assert int(OS_ERROR) == number
        message = str(OS_ERROR)
        assert message
        assert not message.lower().startswith("unknown error"), (name, number, message)
        assert "[Errno" not in message
    finally:
        OS_ERROR.set(0)


def test_failed_open_sets_enoent_and_die_prints_it(tmp_path: Path) -> None:
    assert not open_("< " + str(tmp_path / "missing"))
    assert OS_ERROR == errno.ENOENT
    assert str(OS_ERROR) == "No such file or directory"
    with pytest.raises(Die, match=r"^Can't open: No such file or directory at "):
        die(f"Can't open: {OS_ERROR}")


# -- lock methods ------------------------------------------------------------------


def test_symlink_method(tmp_path: Path) -> None:
    """On Windows the symlink method refuses at lock() time; on POSIX it locks."""
    path = str(tmp_path / "lk")
    if WINDOWS:
        with pytest.raises(ValueError, match=r"symlink.*Windows.*mkdir"):
            lock(path, method="symlink")
        with pytest.raises(ValueError, match=r"symlink.*Windows"):
            Lock(path, method="symlink")
        assert not Path(path).exists()
    else:
        assert lock(path, method="symlink") == 1
        assert Path(path).is_symlink()
        assert unlock(path, method="symlink") == 1


@contextlib.contextmanager
def held_by_another_thread(path: str, method: str = "mkdir") -> Iterator[None]:
    """Hold the lock *path* in another thread (which waits like another process)."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with Lock(path, method=method):
            taken.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(30)
    try:
        yield
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize("method", ["mkdir", "flock", "excl", "rename", "toplock"])
def test_second_holder_waits_then_gets_the_lock(tmp_path: Path, method: str) -> None:
    path = str(tmp_path / "lk")
    # seed 003's patience: (retry - 1) * wait = 0.2 s
    second = Lock(path, method=method, retry=3, wait=0.1)
    with held_by_another_thread(path, method):
        start = time.monotonic()
        with pytest.raises(OSError) as busy:
            second.acquire()
        assert busy.value.errno == errno.EWOULDBLOCK
        assert time.monotonic() - start >= 0.2
        assert lock(path, method=method, retry=1, wait=0.05) == 0
        assert OS_ERROR == errno.EWOULDBLOCK
    second.acquire(timeout=5)
    second.release()


# -- alarm: the cooperative path on Windows, SIGALRM on POSIX --------------------


def _time_out(*_: object) -> None:
    die("time out")


def test_alarm_interrupts_a_blocking_flock(tmp_path: Path) -> None:
    path = str(tmp_path / "data")
    holder = open_("> " + path)
    other = open_("< " + path)
    assert flock(holder, LOCK_EX) == 1
    SIG["ALRM"] = _time_out
    alarm(0.3)
    start = time.monotonic()
    with pytest.raises(Die, match="time out"):
        flock(other, LOCK_EX)
    assert 0.25 <= time.monotonic() - start < 10
    alarm(0)
    close(holder)
    assert flock(other, LOCK_EX | LOCK_NB) == 1  # the timed-out flock took nothing
    close(other)


def test_alarm_interrupts_lock_and_sleep(tmp_path: Path) -> None:
    path = str(tmp_path / "lockdir")
    SIG["ALRM"] = _time_out
    with held_by_another_thread(path):
        alarm(0.3)
        with pytest.raises(Die, match="time out"):
            lock(path, retry=None)
    alarm(0.2)
    start = time.monotonic()
    with pytest.raises(Die, match="time out"):
        sleep(30)
    assert time.monotonic() - start < 10


def test_alarm_with_no_handler_ends_the_process() -> None:
    """No ALRM handler: the process ends.  Windows (cooperative alarm): "Alarm clock" and
    status 142 (128 + 14, what a shell reports for SIGALRM); POSIX: a real SIGALRM."""
    import signal
    import subprocess

    repo = str(Path(__file__).resolve().parents[2])
    code = (
        f"import sys; sys.path.insert(0, {repo!r})\n"
        "import perlcompat\n"
        "perlcompat.alarm(0.2)\n"
        "perlcompat.sleep(20)\n"
        "print('survived')\n"
    )
    start = time.monotonic()
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert time.monotonic() - start < 15
    assert child.stdout == b""
    if WINDOWS:
        assert (child.returncode, child.stderr) == (142, b"Alarm clock\n")
    else:
        assert child.returncode == -signal.SIGALRM


def test_alarm_returns_the_seconds_left() -> None:
    SIG["ALRM"] = _time_out
    assert alarm(10) == 0
    assert alarm(0) == 10


# -- text: :crlf by default on Windows, bytes kept --------------------------------

NL = b"\r\n" if WINDOWS else b"\n"


def test_default_layer_is_crlf_on_windows(tmp_path: Path) -> None:
    path = tmp_path / "board.txt"
    out = open_("> " + str(path))
    print_(out, "one\ntwo\n")
    close(out)
    assert path.read_bytes() == b"one" + NL + b"two" + NL
    fh = open_("< " + str(path))
    assert fh.readline() == "one\n"
    assert tell(fh) == 3 + len(NL)
    assert fh.readline() == "two\n"
    seek(fh, 0, 0)
    assert fh.readlines() == ["one\n", "two\n"]
    close(fh)


def test_raw_layer_and_binmode_keep_lf(tmp_path: Path) -> None:
    path = tmp_path / "raw.txt"
    out = open_(">:raw", str(path))
    print_(out, b"a\nb\n")
    close(out)
    assert path.read_bytes() == b"a\nb\n"
    out = open_(">> " + str(path))
    binmode(out)
    print_(out, b"c\n")
    close(out)
    assert path.read_bytes() == b"a\nb\nc\n"


def test_explicit_crlf_layer_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "crlf.txt"
    out = open_(">:crlf", str(path))
    print_(out, "x\n")
    close(out)
    assert path.read_bytes() == b"x\r\n"
    fh = open_("<:crlf", str(path))
    assert fh.readline() == "x\n"
    close(fh)


# Shift_JIS: 表示 (0x5C trail byte), ソフト (0x5C), 日本語, half-width kana, and
# NEC/IBM duplicates that CPython's cp932 codec would not give back byte for byte.
SJIS_LINES = [
    b"\x95\x5c\x8e\xa6",
    b"\x83\x5c\x83\x74\x83\x67",
    b"\x93\xfa\x96\x7b\x8c\xea<>\xb1\xb2\xb3",
    b"\x87\x90\x87\x9a\xfa\x5c",
]


def test_shift_jis_bytes_round_trip_through_default_handles(tmp_path: Path) -> None:
    path = tmp_path / "board.dat"
    original = NL.join(SJIS_LINES) + NL
    path.write_bytes(original)
    fh = open_("+< " + str(path))
    assert flock(fh, LOCK_EX) == 1
    lines = fh.readlines()
    assert len(lines) == len(SJIS_LINES)
    seek(fh, 0, 0)
    for line in lines:
        print_(fh, line)
    close(fh)
    assert path.read_bytes() == original


def test_shift_jis_decodes_with_encoding_cp932(tmp_path: Path) -> None:
    path = tmp_path / "sjis.txt"
    path.write_bytes(SJIS_LINES[0] + NL + SJIS_LINES[2] + NL)
    fh = open_("<:encoding(cp932)", str(path))
    assert fh.readline() == "表示\n"
    assert fh.readline() == "日本語<>ｱｲｳ\n"
    close(fh)
    out = open_(">:encoding(cp932)", str(tmp_path / "copy.txt"))
    print_(out, "表示\n日本語<>ｱｲｳ\n")
    close(out)
    assert (tmp_path / "copy.txt").read_bytes() == path.read_bytes()


# -- the Windows branches, also checked where this is not Windows -------------------


def test_symlink_method_refuses_on_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perlcompat.locks import osapi

    monkeypatch.setattr(osapi, "has_symlinks", lambda: False)
    with pytest.raises(ValueError, match=r"'symlink' does not work on Windows.*mkdir"):
        Lock(str(tmp_path / "lk"), method="symlink")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("number", "start"),
    [
        (10035, "A non-blocking socket operation could not be completed immediately"),
        (10060, "A connection attempt failed"),
        (10062, "Cannot translate name"),
    ],
)
def test_winsock_numbers_get_windows_messages(
    monkeypatch: pytest.MonkeyPatch, number: int, start: str
) -> None:
    import os

    from perlcompat.perl.errno import strerror

    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(os, "strerror", lambda n: "Unknown error")  # the C library's answer
    message = strerror(number)
    assert message.startswith(start)
    assert not message.endswith(".")


# -- replace_file: rename over a file others hold open -----------------------------


def test_replace_file_waits_for_a_reader_to_close(tmp_path: Path) -> None:
    """Windows refuses the rename while a reader has the file open: replace_file retries."""
    from perlcompat import replace_file

    path = tmp_path / "data.txt"
    path.write_bytes(b"old\n")
    opened, close_it = threading.Event(), threading.Event()

    def reader() -> None:
        with open(path, "rb") as stream:
            stream.read()
            opened.set()
            close_it.wait(30)

    thread = threading.Thread(target=reader)
    thread.start()
    assert opened.wait(30)
    timer = threading.Timer(0.3, close_it.set)
    timer.start()
    try:
        assert replace_file(str(path), "new\n") == 1
    finally:
        close_it.set()
        thread.join()
        timer.join()
    assert path.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt", "data.txt.lck"]


def test_replace_file_gives_up_on_a_reader_that_never_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from perlcompat import replace_file
    from perlcompat.locks import replace as _replace

    path = tmp_path / "data.txt"
    path.write_bytes(b"old\n")
    calls: list[str] = []

    def refuse(src: str, dst: str) -> None:
        calls.append(dst)
        raise PermissionError(13, "Access is denied", dst)

    monkeypatch.setattr(os, "replace", refuse)
    monkeypatch.setattr(_replace, "WINDOWS_RENAME_PATIENCE", 0.2)
    start = time.monotonic()
    with pytest.raises(PermissionError):
        replace_file(str(path), "new\n", fsync=False)
    if WINDOWS:
        assert time.monotonic() - start >= 0.2
        assert len(calls) > 3  # retried
    else:
        assert len(calls) == 1  # POSIX: a rename is never refused for a reader; not retried
    assert OS_ERROR == errno.EACCES
    assert path.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt", "data.txt.lck"]


@pytest.mark.parametrize("method", ["mkdir", "excl", "rename", "toplock", "flock"])
def test_refresh_makes_a_held_lock_young(tmp_path: Path, method: str) -> None:
    """``Lock.refresh()`` on Windows: the lock's mtime is now again, the lock still ours."""
    import os

    path = tmp_path / "lk"
    target = tmp_path / "lk.locked" if method == "rename" else path
    lk = Lock(str(path), method=method, stale=30)
    with lk:
        # (the lock's times are not set back by hand here: on Windows, without an inode
        # generation, the mkdir lock tells its own directory by its unchanged times)
        made = os.stat(target).st_mtime_ns
        time.sleep(0.05)
        lk.refresh()
        if method != "flock":  # a flock lock does not age: refresh touches nothing
            assert os.stat(target).st_mtime_ns > made
        assert lk.is_locked
    assert not lk.is_locked  # released without ExpiredLockError: still ours after the refresh
