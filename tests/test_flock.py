"""``flock``: Perl's numbers, flush before locking, and every failure path."""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from perlutil import Child, flock_holders, run_perl

from perlcompat import (
    LOCK_EX,
    LOCK_NB,
    LOCK_SH,
    LOCK_UN,
    OS_ERROR,
    PerlFile,
    close,
    flock,
    open_,
    print_,
)
from perlcompat.perl.errno import set_errno

HOLDER = """
import sys
from perlcompat import close, flock, open_
fh = open_("+<", sys.argv[1]) or sys.exit(3)
print("locked" if flock(fh, int(sys.argv[2])) else "failed", flush=True)
sys.stdin.readline()
close(fh)
print("released", flush=True)
"""


@pytest.fixture(autouse=True)
def _clear_errno() -> None:
    set_errno(0)


@pytest.fixture()
def path(tmp_path: Path) -> Path:
    target = tmp_path / "counter.txt"
    target.write_bytes(b"0\n")
    return target


@pytest.fixture()
def held(path: Path) -> Iterator[Child]:
    """Another process holding LOCK_EX on *path* until the test ends."""
    child = Child.python(HOLDER, str(path), str(LOCK_EX))
    child.expect("locked")
    yield child
    child.send("go")
    child.expect("released")
    child.wait()


def _open(mode: str, path: Path) -> PerlFile:
    fh = open_(mode, path)
    assert fh is not None, OS_ERROR
    return fh


# -- invalid operations --------------------------------------------------------------
@pytest.mark.parametrize(
    "operation",
    [LOCK_SH | LOCK_EX, LOCK_SH | LOCK_EX | LOCK_NB, 0, LOCK_NB, 16, 32, -1, -2, 9, 10, 2**40],
)
def test_invalid_operations_fail_with_einval(path: Path, operation: int) -> None:
    fh = _open("+<", path)
    assert flock(fh, operation) == 0
    assert OS_ERROR == errno.EINVAL
    assert flock_holders(path) == []  # nothing was locked
    close(fh)


@pytest.mark.parametrize("operation", ["2", 2.0, True, False, None, [2], LOCK_EX * 1.0])
def test_non_integer_operations_fail_with_einval(path: Path, operation: object) -> None:
    fh = _open("+<", path)
    assert flock(fh, operation) == 0  # type: ignore[arg-type]
    assert OS_ERROR == errno.EINVAL
    assert flock_holders(path) == []
    close(fh)


def test_operation_validity_agrees_with_perl(path: Path) -> None:
    """For each number 0..16, perl's flock and ours agree on success and ``$!``."""
    numbers = list(range(17))
    code = (
        'open(FH, "+<", shift @ARGV) or die; for my $op (@ARGV) {'
        ' $! = 0; my $r = flock(FH, $op); print(($r ? 1 : 0), " ", $! + 0, "\\n");'
        " flock(FH, 8) }"
    )
    perl = run_perl(code, str(path), *map(str, numbers))
    assert perl.returncode == 0, perl.stderr
    fh = _open("+<", path)
    ours = []
    for number in numbers:
        set_errno(0)
        result = flock(fh, number)
        ours.append(f"{result} {int(OS_ERROR)}")
        flock(fh, LOCK_UN)
    close(fh)
    assert ours == perl.stdout.decode().splitlines()
    assert ours.count("1 0") == 6  # SH, EX, UN, each with or without NB


def test_lock_mand_numbers_are_refused_where_linux_ignores_them(path: Path) -> None:
    """Linux returns success *without locking* for numbers with the old LOCK_MAND bit
    (32), negative ones included, and so does perl; perlcompat refuses them."""
    numbers = [-2, -1, 32, 34, 38]
    code = (
        'open(FH, "+<", shift @ARGV) or die; for my $op (@ARGV) {'
        ' my $r = flock(FH, $op); print(($r ? 1 : 0), "\n") }'
    )
    perl = run_perl(code, str(path), *map(str, numbers))
    assert perl.stdout.decode().split() == ["1"] * len(numbers)  # a silent no-op in perl
    fh = _open("+<", path)
    for number in numbers:
        set_errno(0)
        assert flock(fh, number) == 0
        assert OS_ERROR == errno.EINVAL
    close(fh)


# -- bad handles ----------------------------------------------------------------------------
def test_closed_and_non_file_handles_fail_with_ebadf(path: Path) -> None:
    closed = _open("+<", path)
    close(closed)
    with open(path) as python_file:
        pass
    read_end, write_end = os.pipe()
    os.close(read_end)
    os.close(write_end)
    import io

    for target in (closed, python_file, None, "counter.txt", object(), io.BytesIO(), -1, read_end):
        set_errno(0)
        assert flock(target, LOCK_EX) == 0, target
        assert OS_ERROR == errno.EBADF, target


# -- what can be locked ---------------------------------------------------------------------
def test_locks_perl_files_python_files_and_fds_with_bare_numbers(path: Path) -> None:
    fh = _open("+<", path)
    assert flock(fh, 2) == 1  # flock(OUT, 2)
    assert flock_holders(path) == [(os.getpid(), "WRITE", False)]  # a real flock(2) lock
    assert flock(fh, 8) == 1
    assert flock_holders(path) == []
    assert flock(fh, 5) == 1  # LOCK_SH | LOCK_NB
    assert flock_holders(path) == [(os.getpid(), "READ", False)]
    assert flock(fh, 6) == 1  # upgrade: LOCK_EX | LOCK_NB
    assert flock_holders(path) == [(os.getpid(), "WRITE", False)]
    close(fh)
    assert flock_holders(path) == []  # close releases
    with open(path, "r+") as python_file:
        assert flock(python_file, LOCK_EX) == 1
        assert flock(python_file.fileno(), LOCK_UN) == 1


def test_lock_ex_on_a_read_only_handle_works_on_linux(path: Path) -> None:
    fh = _open("<", path)
    assert flock(fh, LOCK_EX | LOCK_NB) == 1
    close(fh)


def test_success_clears_errno(path: Path) -> None:
    set_errno(errno.ENOENT)
    fh = _open("+<", path)
    assert flock(fh, LOCK_EX) == 1
    assert int(OS_ERROR) == 0
    close(fh)


# -- contention (holder in another process) --------------------------------------------------
def test_busy_lock_nb_gives_ewouldblock(path: Path, held: Child) -> None:
    fh = _open("+<", path)
    for operation in (LOCK_EX | LOCK_NB, LOCK_SH | LOCK_NB, 6, 5):
        set_errno(0)
        assert flock(fh, operation) == 0
        assert OS_ERROR == errno.EWOULDBLOCK
        assert str(OS_ERROR) == "Resource temporarily unavailable"
    close(fh)


def test_lock_nb_succeeds_once_the_holder_closes(path: Path) -> None:
    child = Child.python(HOLDER, str(path), str(LOCK_EX))
    child.expect("locked")
    fh = _open("+<", path)
    assert flock(fh, LOCK_EX | LOCK_NB) == 0
    child.send("go")
    child.expect("released")
    assert flock(fh, LOCK_EX | LOCK_NB) == 1
    close(fh)
    child.wait()


def test_unlock_lets_a_waiting_process_in(path: Path) -> None:
    fh = _open("+<", path)
    assert flock(fh, LOCK_EX) == 1
    child = Child.python(HOLDER, str(path), str(LOCK_EX | LOCK_NB))
    assert child.readline() == "failed"
    child.send("go")
    child.expect("released")
    child.wait()
    assert flock(fh, LOCK_UN) == 1
    child = Child.python(HOLDER, str(path), str(LOCK_EX | LOCK_NB))
    child.expect("locked")
    child.send("go")
    child.expect("released")
    child.wait()
    close(fh)


def test_shared_locks_coexist_and_exclude_writers(path: Path) -> None:
    child = Child.python(HOLDER, str(path), str(LOCK_SH))
    child.expect("locked")
    fh = _open("<", path)
    assert flock(fh, LOCK_SH | LOCK_NB) == 1
    other = _open("+<", path)
    assert flock(other, LOCK_EX | LOCK_NB) == 0
    assert OS_ERROR == errno.EWOULDBLOCK
    child.send("go")
    child.expect("released")
    child.wait()
    assert flock(other, LOCK_EX | LOCK_NB) == 0  # we still hold LOCK_SH through fh
    close(fh)
    assert flock(other, LOCK_EX | LOCK_NB) == 1
    close(other)


def test_timeout_gives_up_with_ewouldblock(path: Path, held: Child) -> None:
    fh = _open("+<", path)
    start = time.monotonic()
    assert flock(fh, LOCK_EX, timeout=0.3) == 0
    elapsed = time.monotonic() - start
    assert OS_ERROR == errno.EWOULDBLOCK
    assert 0.3 <= elapsed < 10
    assert flock(fh, LOCK_SH, timeout=0) == 0
    close(fh)


def test_timeout_acquires_when_the_holder_lets_go(path: Path) -> None:
    child = Child.python(HOLDER, str(path), str(LOCK_EX))
    child.expect("locked")
    fh = _open("+<", path)
    assert flock(fh, LOCK_EX | LOCK_NB) == 0  # really busy now
    releaser = threading.Thread(target=child.send, args=("go",))
    releaser.start()
    assert flock(fh, LOCK_EX, timeout=30) == 1
    releaser.join()
    child.expect("released")
    child.wait()
    close(fh)


@pytest.mark.parametrize("timeout", [-1, "1", True, [1], float("nan")])
def test_bad_timeouts_raise(path: Path, timeout: object) -> None:
    fh = _open("+<", path)
    with pytest.raises(ValueError, match="timeout"):
        flock(fh, LOCK_EX, timeout=timeout)  # type: ignore[arg-type]
    close(fh)


# -- flushing --------------------------------------------------------------------------------
def test_flushes_before_unlocking(path: Path) -> None:
    fh = _open("+<", path)
    assert flock(fh, LOCK_EX) == 1
    print_(fh, "written under the lock\n")
    assert path.read_bytes() == b"0\n"  # still buffered
    assert flock(fh, LOCK_UN) == 1
    assert path.read_bytes() == b"written under the lock\n"  # visible before close
    close(fh)


def test_flushes_before_locking(path: Path) -> None:
    fh = _open(">>", path)
    print_(fh, "1\n")
    assert flock(fh, LOCK_EX) == 1
    assert path.read_bytes() == b"0\n1\n"
    close(fh)


def test_locking_drops_read_ahead_like_perl(path: Path) -> None:
    """Perl's flock flushes the handle, which discards read-ahead: data read after
    the lock is what the previous holder wrote, not a stale buffer."""
    path.write_bytes(b"header\nold value\n")
    code = (
        'open(FH, "<", $ARGV[0]) or die; my $h = <FH>;'
        ' open(W, "+<", $ARGV[0]) or die; seek(W, 7, 0); print W "NEW value\\n"; close W;'
        " flock(FH, 1); print scalar <FH>"
    )
    perl = run_perl(code, str(path))
    assert perl.stdout == b"NEW value\n"
    path.write_bytes(b"header\nold value\n")
    fh = _open("<", path)
    assert fh.readline() == "header\n"  # the whole file is in the read buffer now
    with open(path, "r+b") as writer:
        writer.seek(7)
        writer.write(b"NEW value\n")
    assert flock(fh, LOCK_SH) == 1
    assert fh.readline() == "NEW value\n"
    close(fh)


def test_a_failed_flush_does_not_stop_the_lock_and_close_reports_it() -> None:
    fh = open_(">", "/dev/full")
    assert fh is not None
    print_(fh, "lost")
    assert flock(fh, LOCK_EX) == 1  # as Perl: (void)PerlIO_flush(fp), then flock
    assert flock(fh, LOCK_UN) == 1
    assert close(fh) == 0
    assert OS_ERROR == errno.ENOSPC


# -- the handle interface: flushed_fileno() ----------------------------------------------------
def test_a_handle_gives_flock_its_descriptor_through_flushed_fileno(path: Path) -> None:
    """flock takes what ``flushed_fileno()`` returns; it needs no ``fileno`` and no PerlFile."""
    fd = os.open(path, os.O_RDWR)

    class Handle:
        calls = 0

        def flushed_fileno(self) -> int:
            self.calls += 1
            return fd

    handle = Handle()
    try:
        assert flock(handle, LOCK_EX | LOCK_NB) == 1
        assert handle.calls == 1
        assert flock_holders(path) == [(os.getpid(), "WRITE", False)]
        assert flock(handle, LOCK_UN) == 1
        assert handle.calls == 2
        assert flock_holders(path) == []
    finally:
        os.close(fd)


def test_an_alarm_handler_raising_in_flocks_flush_propagates() -> None:
    """A write that blocks in flock's flush is interrupted by ALRM; the handler's error escapes."""
    from perlcompat import alarm, local_sig

    def on_alarm(_name: str) -> None:
        raise TimeoutError("the ALRM handler's")  # an OSError without errno

    for as_python_file in (False, True):
        reader, writer = os.pipe()
        os.set_blocking(writer, True)
        if as_python_file:
            fh: object = os.fdopen(writer, "wb", buffering=1 << 20)
        else:
            fh = PerlFile(writer, "pipe", ">", text=False)
        for _ in range(40):  # 320 kB kept in the handle's buffer: more than a pipe holds
            fh.write(b"x" * 8000)  # type: ignore[attr-defined]
        try:
            with local_sig("ALRM", on_alarm), pytest.raises(TimeoutError, match="ALRM handler"):
                alarm(0.2)
                flock(fh, LOCK_EX)  # the flush blocks: the pipe is full, nobody reads
        finally:
            alarm(0)
            os.close(reader)
            try:  # noqa: SIM105
                fh.close()  # type: ignore[attr-defined]
            except OSError:  # EPIPE: the reader is gone
                pass


def test_lock_fd_raises_blocking_io_error_when_busy(path: Path, held: Child) -> None:
    from perlcompat.perl.flock import lock_fd

    fd = os.open(path, os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):
            lock_fd(fd, LOCK_EX | LOCK_NB)
        with pytest.raises(OSError) as info:
            lock_fd(fd, LOCK_EX | LOCK_SH)
        assert info.value.errno == errno.EINVAL
    finally:
        os.close(fd)
    assert lock_fd is fcntl.flock  # the kernel's flock(2), the lock Perl takes


# -- the storage check on the hot path ---------------------------------------------------------
def test_a_local_absolute_path_is_checked_for_shared_storage_once(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fstat behind SharedStorageWarning is made once per absolute path on local storage
    (it was a third of the raw +< cycle); a relative name is checked every time (chdir)."""
    from perlcompat.perl import flock as flock_module

    calls: list[int] = []
    real_fstat = os.fstat

    def counting_fstat(fd: int) -> os.stat_result:
        calls.append(fd)
        return real_fstat(fd)

    monkeypatch.setattr(os, "fstat", counting_fstat)
    flock_module._LOCAL_NAMES.discard(str(path))
    for _ in range(3):
        fh = open_("+<", str(path))
        assert flock(fh, LOCK_EX) == 1
        assert flock(fh, LOCK_UN) == 1  # an unlock is never checked
        assert close(fh) == 1
    assert len(calls) == 1
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        fh = open_("+<", path.name)
        assert flock(fh, LOCK_SH) == 1
        assert close(fh) == 1
    assert len(calls) == 3
