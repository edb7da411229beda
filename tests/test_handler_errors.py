"""An ALRM handler's exception escapes flock()/lock()/sem_acquire(), even an OSError.

pythonizer's perllib swallowed it (FACTS.md): the timed-out call then reported a
plain failure.  A handler raising ``TimeoutError`` (an ``OSError``) is the trap's
sharpest form, so that is what these handlers raise, in the main thread (real
SIGALRM) and in a worker thread (cooperative alarm).
"""

from __future__ import annotations

import errno
from typing import Any

import pytest
from perlutil import Child, raised_in_thread

import perlcompat as p


def _raise_timeout(*_: object) -> None:
    raise TimeoutError("time out")


def _raise_oserror(*_: object) -> None:
    raise OSError(errno.EINTR, "handler says stop")


@pytest.fixture
def perl_holder(tmp_path: Any) -> Any:
    data = tmp_path / "data.txt"
    data.write_bytes(b"0\n")
    child = Child.perl(
        'open(F, "+<", $ARGV[0]) or die; flock(F, 2); print "locked\\n"; <STDIN>;', str(data)
    )
    child.expect("locked")
    yield str(data)
    child.kill()


@pytest.mark.parametrize("handler", [_raise_timeout, _raise_oserror])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_flock_lets_the_handlers_oserror_escape(perl_holder: str, handler: Any, where: str) -> None:
    def attempt() -> None:
        fh = p.open_("+< " + perl_holder)
        try:
            with p.local_sig("ALRM", handler):
                p.alarm(1)
                result = p.flock(fh, p.LOCK_EX)
                raise AssertionError(f"flock returned {result} instead of raising")
        finally:
            p.alarm(0)
            p.close(fh)

    if where == "main":
        with pytest.raises(OSError) as info:
            attempt()
        exc: BaseException | None = info.value
    else:
        exc = raised_in_thread(attempt)
    assert isinstance(exc, OSError) and not isinstance(exc, AssertionError)
    assert "time out" in str(exc) or "handler says stop" in str(exc)


@pytest.mark.parametrize("where", ["main", "thread"])
def test_lock_and_sem_acquire_let_the_handlers_error_escape(tmp_path: Any, where: str) -> None:
    import os

    os.mkdir(tmp_path / "lockdir")  # a fresh lock made the Perl way: lock() must wait
    sem_path = str(tmp_path / "sem")
    assert p.sem_acquire(sem_path, 1) == 1

    def attempt(call: Any) -> Any:
        def run() -> None:
            with p.local_sig("ALRM", _raise_timeout):
                p.alarm(1)
                try:
                    result = call()
                    raise AssertionError(f"returned {result} instead of raising")
                finally:
                    p.alarm(0)

        return run

    calls = [
        lambda: p.lock(str(tmp_path / "lockdir"), retry=30, wait=1),
    ]
    if where == "thread":  # the main thread already holds the semaphore slot itself
        calls.append(lambda: p.sem_acquire(sem_path, 1, retry=30, wait=1))
    try:
        for call in calls:
            if where == "main":
                with pytest.raises(TimeoutError):
                    attempt(call)()
            else:
                exc = raised_in_thread(attempt(call))
                assert isinstance(exc, TimeoutError), exc
    finally:
        os.rmdir(tmp_path / "lockdir")
        p.sem_release(sem_path)
