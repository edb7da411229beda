"""Open handles at exit, at fork and when garbage-collected holding a flock, against perl.

Perl flushes and closes every open handle at exit, whatever ends the script
(``die``, ``exit``, a ``$SIG{TERM}`` handler that dies), oldest first, and reports
a handle that fails to close as ``Warning: unable to close filehandle properly:
... during global destruction.``; it flushes every handle before ``fork``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, PERL

PRELUDE = "import os, sys\nfrom perlcompat import *\n\n"


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    (cwd / "script.py").write_text(PRELUDE + code)
    return subprocess.run(
        [sys.executable, "script.py"],
        cwd=cwd,
        capture_output=True,
        env=CHILD_ENV,
        timeout=60,
        check=False,
    )


def _perl(code: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([PERL, "-e", code], cwd=cwd, capture_output=True, timeout=60, check=False)


def _both(tmp_path: Path, perl: str, python: str) -> tuple[tuple[bytes, bytes], ...]:
    """Run *perl* and *python* in two fresh directories; return (file f, stderr) of each."""
    out = []
    for name, run, code in (("perl", _perl, perl), ("python", _python, python)):
        cwd = tmp_path / name
        cwd.mkdir()
        proc = run(code, cwd)
        data = (cwd / "f").read_bytes() if (cwd / "f").exists() else b"<none>"
        out.append((data, proc.stderr))
    return tuple(out)


# (ending in Perl, ending in Python): every one flushes
ENDINGS = {
    "die": ('die "oops\\n"', 'die("oops\\n")'),
    "exit": ("exit 3", "sys.exit(3)"),
    "exception": ('die "oops\\n"', 'raise ValueError("oops")'),
    "signal handler that dies": (
        '$SIG{TERM} = sub { die "term\\n" }; kill "TERM", $$; sleep 5',
        'SIG["TERM"] = lambda *a: die("term\\n"); os.kill(os.getpid(), 15); sleep(5)',
    ),
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_handles_in_a_function_are_flushed_oldest_first_at_exit(
    tmp_path: Path, ending: str
) -> None:
    perl_end, python_end = ENDINGS[ending]
    perl = (
        'sub run { open(A, "> f") or die; print A "aaaa"; open(B, "+< f") or die;'
        f' print B "bb"; {perl_end} }} run();'
    )
    python = (
        "def run():\n"
        '    A = open_("> f") or die()\n'
        '    print_(A, "aaaa")\n'
        '    B = open_("+< f") or die()\n'
        '    print_(B, "bb")\n'
        f"    {python_end}\n"
        "run()\n"
    )
    (perl_file, perl_err), (python_file, python_err) = _both(tmp_path, perl, python)
    assert perl_file == python_file == b"bbaa"  # A flushed first, then B over its start
    if ending in ("die", "signal handler that dies"):
        assert python_err == perl_err


def test_the_wwwboard_number_file_keeps_its_number_when_the_request_dies(
    tmp_path: Path,
) -> None:
    perl = (
        'open(N, "> f"); print N "8"; close(N);'
        'sub get_number { open(NUMBER, "+< f") or die; flock(NUMBER, 2); $n = <NUMBER>;'
        " seek(NUMBER, 0, 0); print NUMBER $n + 1; truncate(NUMBER, tell(NUMBER)); }"
        ' get_number(); die "Bad request\\n";'
    )
    python = (
        'N = open_("> f"); print_(N, "8"); close(N)\n'
        "def get_number():\n"
        "    global NUMBER\n"
        '    NUMBER = open_("+< f") or die()\n'
        "    flock(NUMBER, 2)\n"
        "    n = NUMBER.readline()\n"
        "    seek(NUMBER, 0, 0)\n"
        "    print_(NUMBER, num(n) + 1)\n"
        "    truncate(NUMBER, tell(NUMBER))\n"
        "get_number()\n"
        'die("Bad request\\n")\n'
    )
    (perl_file, perl_err), (python_file, python_err) = _both(tmp_path, perl, python)
    assert perl_file == python_file == b"9"
    assert perl_err == python_err == b"Bad request\n"


@pytest.mark.parametrize("ending", ["die", "exit"])
def test_a_handle_that_fails_to_close_at_exit_is_reported_as_perl_does(
    tmp_path: Path, ending: str
) -> None:
    perl_end, python_end = {
        "die": ('die "oops\\n"', 'die("oops\\n")'),
        "exit": ("exit 0", "sys.exit(0)"),
    }[ending]
    perl = f'open(A, "> /dev/full"); print A "x"; open(F, "> f"); print F "y"; {perl_end}'
    python = (
        'A = open_("> /dev/full"); print_(A, "x"); F = open_("> f"); print_(F, "y")\n' + python_end
    )
    perl_proc = _perl(perl, tmp_path)
    python_proc = _python(python, tmp_path)
    assert python_proc.stderr == perl_proc.stderr
    assert b"unable to close filehandle properly: No space left on device" in perl_proc.stderr
    if ending == "exit":  # the exit status is the script's, as in Perl
        assert python_proc.returncode == perl_proc.returncode == 0
    assert (tmp_path / "f").read_bytes() == b"y"


def test_buffered_output_is_flushed_before_fork_not_written_twice(tmp_path: Path) -> None:
    perl = 'open(A, "> f"); print A "x"; if (!fork) { exit 0 } wait; print A "y";'
    python = (
        'A = open_("> f"); print_(A, "x")\n'
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n"
        'print_(A, "y")\n'
    )
    (perl_file, _), (python_file, _) = _both(tmp_path, perl, python)
    assert perl_file == python_file == b"xy"


def test_handles_are_flushed_before_the_locks_are_released_at_exit(tmp_path: Path) -> None:
    # the lock cleanup's exit hook is registered after the handles' (lock() comes later),
    # so it runs first: it must write the data out before it releases
    python = (
        'OUT = open_(">> f")\n'
        'lock("d") or die("busy")\n'
        'print_(OUT, "data;")\n'
        "from perlcompat.locks import cleanup\n"
        "released = cleanup.release_all\n"
        "def release():\n"
        '    fd = os.open("f", os.O_WRONLY | os.O_APPEND)\n'
        '    os.write(fd, b"released;")\n'
        "    released()\n"
        "cleanup.release_all = release\n"
    )
    proc = _python(python, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "f").read_bytes() == b"data;released;"
    assert not (tmp_path / "d").exists()


LOST = (
    "def get_number():\n"
    '    NUMBER = open_("+> num") or die()\n'  # line 5 of the script
    "    flock(NUMBER, LOCK_EX)\n"
    "    print_(NUMBER, 1)\n"
    "get_number()\n"
)


def test_a_handle_dropped_while_holding_a_flock_warns_naming_it_and_where_it_was_opened(
    tmp_path: Path,
) -> None:
    proc = _python(LOST, tmp_path)
    assert proc.returncode == 0
    err = proc.stderr.decode()
    assert "LostLockWarning: handle NUMBER (+> num), opened at " in err
    assert "script.py line 5, was garbage-collected" in err
    assert "exclusive flock" in err
    assert (tmp_path / "num").read_bytes() == b"1"  # still flushed and closed


@pytest.mark.parametrize(
    "change",
    [
        ("    print_(NUMBER, 1)\n", "    print_(NUMBER, 1)\n    close(NUMBER)\n"),
        ("    print_(NUMBER, 1)\n", "    print_(NUMBER, 1)\n    flock(NUMBER, LOCK_UN)\n"),
        ("def get_number():\n", "def get_number():\n    global NUMBER\n"),  # held until exit
        ("    flock(NUMBER, LOCK_EX)\n", ""),
    ],
    ids=["closed", "unlocked", "global", "never-locked"],
)
def test_no_warning_when_the_lock_was_not_lost(tmp_path: Path, change: tuple[str, str]) -> None:
    proc = _python(LOST.replace(*change), tmp_path)
    assert proc.returncode == 0
    assert proc.stderr == b""
    assert (tmp_path / "num").read_bytes() == b"1"


def test_the_warning_can_be_made_an_error_without_breaking_the_close(tmp_path: Path) -> None:
    code = "import warnings\nwarnings.simplefilter('error')\n" + LOST
    proc = _python(code, tmp_path)
    assert b"LostLockWarning: handle NUMBER" in proc.stderr
    assert (tmp_path / "num").read_bytes() == b"1"
    assert os.path.getsize(tmp_path / "num") == 1


# Every write and close the handles make, in order, on standard error (the script's own
# system calls, through the names perlcompat.perl.perlio binds them to).
TRACE = (
    "from perlcompat.perl import perlio\n"
    "_write, _close = perlio._write, perlio._close\n"
    "def write(fd, data):\n"
    '    os.write(2, b"write %d %s\\n" % (fd, bytes(data)))\n'
    "    return _write(fd, data)\n"
    "def close_fd(fd):\n"
    '    os.write(2, b"close %d\\n" % fd)\n'
    "    return _close(fd)\n"
    "perlio._write, perlio._close = write, close_fd\n"
)


@pytest.mark.parametrize("ending", ["die", "exit", "end of script"])
def test_every_handle_is_flushed_before_any_is_closed_at_exit(tmp_path: Path, ending: str) -> None:
    # perl_destruct's my_fflush_all(): strace shows perl's write(4, "9\n") before close(3),
    # so a lock held through an older handle (a lock file) is released after the data is out
    python_end = {"die": 'die("oops\\n")', "exit": "sys.exit(0)", "end of script": "pass"}[ending]
    python = TRACE + (
        'LOCK = open_("> lock") or die()\n'
        "flock(LOCK, LOCK_EX) or die()\n"
        'OUT = open_("> data") or die()\n'
        'print_(OUT, "9")\n'
        'os.write(2, b"fds %d %d\\n" % (LOCK.fileno(), OUT.fileno()))\n'
        f"{python_end}\n"
    )
    proc = _python(python, tmp_path)
    lines = proc.stderr.decode().splitlines()
    lock_fd, out_fd = next(x for x in lines if x.startswith("fds")).split()[1:]
    events = [x for x in lines if x.startswith(("write", "close"))]
    assert events == [f"write {out_fd} 9", f"close {lock_fd}", f"close {out_fd}"]
    assert (tmp_path / "data").read_bytes() == b"9"


def test_the_lock_cleanup_flushes_every_handle_before_it_closes_one(tmp_path: Path) -> None:
    # an flock'ed lock file opened before the data file, and a lock() taken too
    python = TRACE + (
        'LOCK = open_("> lock") or die()\n'
        "flock(LOCK, LOCK_EX) or die()\n"
        'lock("d") or die("busy")\n'
        'OUT = open_("> data") or die()\n'
        'print_(OUT, "9")\n'
        'os.write(2, b"fds %d %d\\n" % (LOCK.fileno(), OUT.fileno()))\n'
        'die("oops\\n")\n'
    )
    proc = _python(python, tmp_path)
    lines = proc.stderr.decode().splitlines()
    lock_fd, out_fd = next(x for x in lines if x.startswith("fds")).split()[1:]
    events = [x for x in lines if x.startswith(("write", "close"))]
    assert events[:3] == [f"write {out_fd} 9", f"close {lock_fd}", f"close {out_fd}"]
    assert not (tmp_path / "d").exists()


def _full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is full: the next write to it blocks until it is read."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        while True:
            os.write(write_end, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(write_end, True)
    return read_end, write_end


def test_close_interrupted_by_a_signal_handler_still_closes_the_descriptor() -> None:
    # a blocked flush (a full pipe, a hung NFS server) that an ALRM handler interrupts:
    # the handle is closed, so its descriptor (and any flock) must not stay open for ever
    import signal

    from perlcompat import PerlFile, close, print_

    read_end, write_end = _full_pipe()

    class Timeout(Exception):
        pass

    def on_alarm(signum: int, frame: object) -> None:
        raise Timeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        fh = PerlFile(write_end, "pipe", ">")
        print_(fh, "y")
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Timeout):
            close(fh)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.close(read_end)
    assert fh.closed
    with pytest.raises(OSError) as info:
        os.fstat(write_end)
    assert info.value.errno == 9  # EBADF: closed, not leaked


def test_a_signal_handler_ending_the_script_during_the_exit_flush_leaves_no_handle_unflushed(
    tmp_path: Path,
) -> None:
    # the first handle's flush blocks (a full pipe); SIGALRM's handler calls sys.exit:
    # the handles after it are still flushed and closed, and the lock is still released
    python = (
        "import signal\n"
        "read_end, write_end = os.pipe()\n"
        "os.set_blocking(write_end, False)\n"
        "try:\n"
        "    while True: os.write(write_end, b'x' * 4096)\n"
        "except BlockingIOError: pass\n"
        "os.set_blocking(write_end, True)\n"
        'P = PerlFile(write_end, "pipe", ">")\n'
        'print_(P, "y")\n'
        'lock("d") or die("busy")\n'
        'OUT = open_("> f") or die()\n'
        'print_(OUT, "data")\n'
        "signal.signal(signal.SIGALRM, lambda *a: sys.exit(3))\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.2)\n"
    )
    proc = _python(python, tmp_path)
    assert (tmp_path / "f").read_bytes() == b"data"
    assert not (tmp_path / "d").exists()
    if sys.version_info >= (3, 10):  # (3.9 drops a SystemExit raised in an atexit hook silently)
        assert b"SystemExit: 3" in proc.stderr  # reported once every handle is closed


@pytest.mark.parametrize("ending", ["die", "exit", "end of script"])
def test_an_atexit_handler_registered_first_runs_before_handles_close_and_locks_go(
    tmp_path: Path, ending: str
) -> None:
    # Perl runs END blocks before global destruction: END { print LOG "bye\n"; unlock() }
    # still writes to the open LOG while the lock is held.  A port registers its END block
    # with atexit before perlcompat loads the handle and lock modules (lazily, on first use).
    perl_end, python_end = {
        "die": ('die "oops\\n"', 'perlcompat.die("oops\\n")'),
        "exit": ("exit 0", "sys.exit(0)"),
        "end of script": ("", "pass"),
    }[ending]
    perl = (
        'END { print LOG "bye ", (-d "d" ? "locked" : "unlocked"), "\\n"; rmdir("d") }'
        ' mkdir("d") or die; open(LOG, ">> f") or die; print LOG "hi\\n";' + perl_end
    )
    python = (
        "import atexit, os, sys\n"
        "import perlcompat\n"
        "def end():\n"
        '    state = "locked" if os.path.isdir("d") else "unlocked"\n'
        '    perlcompat.print_(LOG, "bye ", state, "\\n")\n'
        '    perlcompat.unlock("d")\n'
        "atexit.register(end)\n"
        'perlcompat.lock("d") or perlcompat.die("busy")\n'
        'LOG = perlcompat.open_(">> f") or perlcompat.die()\n'
        'perlcompat.print_(LOG, "hi\\n")\n'
        f"{python_end}\n"
    )
    (tmp_path / "script.py").write_text(python)
    proc = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, capture_output=True, env=CHILD_ENV, timeout=60
    )
    (tmp_path / "perl").mkdir()
    perl_proc = _perl(perl, tmp_path / "perl")
    assert (tmp_path / "f").read_bytes() == (tmp_path / "perl" / "f").read_bytes()
    assert (tmp_path / "f").read_bytes() == b"hi\nbye locked\n"
    assert proc.stderr == perl_proc.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("method", ["mkdir", "flock"])
def test_an_exception_leaving_a_with_lock_block_writes_the_data_before_the_release(
    tmp_path: Path, method: str
) -> None:
    # Perl's die keeps the lock until exit, where every handle is flushed first; a port's
    # `with Lock(...)` releases as the exception passes: what the block printed must be in
    # the file by then, or the next holder reads the old data and our late flush undoes its
    python = (
        'N = open_("> f"); print_(N, "8"); close(N)\n'
        "def get_number():\n"
        "    global NUMBER\n"
        f'    with Lock("num.lock", method="{method}"):\n'
        '        NUMBER = open_("+< f") or die()\n'
        "        n = NUMBER.readline()\n"
        "        seek(NUMBER, 0, 0)\n"
        "        print_(NUMBER, num(n) + 1)\n"
        '        raise ValueError("bad request")\n'
        "try:\n"
        "    get_number()\n"
        "except ValueError:\n"
        '    with open("f") as seen:\n'  # the lock is free now: another process may read
        '        print("after the release:", seen.read())\n'
    )
    proc = _python(python, tmp_path)
    assert proc.stdout == b"after the release: 9\n", proc.stderr
    assert (tmp_path / "f").read_bytes() == b"9"


def test_a_stopping_signal_during_the_exit_flush_waits_until_the_data_is_written(
    tmp_path: Path,
) -> None:
    # SIGTERM (default disposition: the lock cleanup releases, then dies by it) arrives
    # while the exit flush is blocked on a full pipe: the locks must not go before the
    # data file behind it is written
    import signal
    import time

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    python = (
        'lock("d") or die("busy")\n'
        'P = open_("> fifo") or die()\n'  # waits for the test's reader
        'print_(P, "x" * 4096)\n'
        "fd = P.fileno()\n"
        "os.set_blocking(fd, False)\n"
        "try:\n"
        '    while True: os.write(fd, b"x" * 4096)\n'  # fill the pipe
        "except BlockingIOError: pass\n"
        "os.set_blocking(fd, True)\n"
        'OUT = open_("> f") or die()\n'
        'print_(OUT, "data")\n'
    )
    (tmp_path / "script.py").write_text(PRELUDE + python)
    proc = subprocess.Popen([sys.executable, "script.py"], cwd=tmp_path, env=CHILD_ENV)
    reader = os.open(fifo, os.O_RDONLY)
    try:
        wchan = Path(f"/proc/{proc.pid}/wchan")
        deadline = time.monotonic() + 30
        # blocked in the exit flush of P (pipe_write, anon_pipe_write, pipe_wait_writable)
        while not ("pipe" in wchan.read_text() and "writ" in wchan.read_text()):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.01)
        assert (tmp_path / "d").is_dir()
        proc.send_signal(signal.SIGTERM)
        while os.read(reader, 65536):  # unblock the flush
            pass
    finally:
        os.close(reader)
        proc.wait(timeout=30)
    assert (tmp_path / "f").read_bytes() == b"data"
    assert not (tmp_path / "d").exists()
    assert proc.returncode == -signal.SIGTERM  # still a death by the signal


def test_a_forked_child_keeps_a_flock_after_the_parents_close_as_in_perl(tmp_path: Path) -> None:
    # flock belongs to the open file, which fork shares: the parent's close leaves the lock
    # with the child until it exits, in Perl and in the port alike
    perl = (
        'open(L, "> lock") or die; flock(L, 2) or die; pipe(R, W) or die;'
        " my $pid = fork; if (!$pid) { close(W); my $x = <R>; exit 0 }"
        ' close(R); close(L); open(M, "> lock") or die; print flock(M, 6) ? 1 : 0;'
        " close(W); waitpid($pid, 0); print flock(M, 6) ? 1 : 0;"
    )
    python = (
        'L = open_("> lock") or die()\n'
        "flock(L, LOCK_EX) or die()\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.close(w)\n"
        "    os.read(r, 1)\n"  # until the parent has looked
        "    sys.exit(0)\n"
        "os.close(r)\n"
        "close(L)\n"
        'M = open_("> lock") or die()\n'
        "print(flock(M, LOCK_EX | LOCK_NB), end='', flush=True)\n"
        "os.close(w)\n"
        "os.waitpid(pid, 0)\n"
        "print(flock(M, LOCK_EX | LOCK_NB), end='')\n"
    )
    perl_proc = _perl(perl, tmp_path)
    python_proc = _python(python, tmp_path)
    assert python_proc.stdout == perl_proc.stdout == b"01", python_proc.stderr
