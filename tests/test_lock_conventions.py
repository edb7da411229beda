"""What filelock / flufl.lock users expect of ``Lock`` (issue 25's "conventions" part).

``with lk.acquire(timeout=1):`` takes the lock once and releases it on exit;
the same object nested in one thread counts holds (filelock's re-entrancy),
while a second object or a nested ``lock()`` of the same name is still refused
(EDEADLK); ``acquire(blocking=False)`` and ``poll_interval=``;
``LockTimeout.lock_file``; DEBUG records per acquire and release, without
importing ``logging`` where the program did not; a missing lock directory is
refused, never created.
"""

from __future__ import annotations

import copy
import errno
import logging
import pickle
import time
from pathlib import Path

import pytest
from perlutil import Child, run_python

from perlcompat import OS_ERROR, Lock, LockTimeout, lock, unlock

#: a Perl holder of the mkdir lock sub's directory: "locked", then waits for a line.
PERL_HOLDER = r"""
my $dir = shift;
mkdir($dir, 0755) or die "mkdir: $!";
print "locked\n";
<STDIN>;
rmdir($dir) or die "rmdir: $!";
print "released\n";
"""


def test_with_acquire_timeout_releases_on_exit(tmp_path: Path) -> None:
    """filelock's idiom: the value of ``acquire()`` is a context manager that releases."""
    path = tmp_path / "lk"
    lk = Lock(str(path))
    with lk.acquire(timeout=1) as inside:
        assert inside is lk
        assert lk.is_locked and path.is_dir()
        assert lk.lock_counter == 1
    assert not lk.is_locked and not path.exists()
    held = lk.acquire()  # the old way still works: the returned value forwards to the lock
    assert held.is_locked and held.path == str(path)
    held.release()
    assert not path.exists()


def test_the_value_of_acquire_still_passes_for_the_lock(tmp_path: Path) -> None:
    """``acquire()`` returned the ``Lock`` itself before: code that checked or compared it,
    or copied it, keeps working with the context-manager proxy."""
    lk = Lock(str(tmp_path / "lk"))
    held = lk.acquire()
    try:
        assert isinstance(held, Lock)
        assert held == lk and lk == held and hash(held) == hash(lk)
        assert {lk: 1}[held] == 1
        twin = copy.copy(held)  # not a RecursionError
        assert twin == lk and twin.lock is lk
    finally:
        held.release()
    assert not lk.is_locked


def test_nested_with_counts_on_one_object(tmp_path: Path) -> None:
    """Nested ``with lk:`` in one thread counts; the lock goes at the outer exit."""
    path = tmp_path / "lk"
    lk = Lock(str(path))
    with lk:
        with lk:
            assert lk.lock_counter == 2
        assert lk.is_locked and path.is_dir()  # the inner exit kept it
    assert not lk.is_locked and not path.exists()
    lk.acquire()
    lk.acquire()
    lk.release(force=True)
    assert not lk.is_locked and not path.exists()


def test_a_second_object_waits_and_the_lock_sub_still_refuses_nesting(tmp_path: Path) -> None:
    """A second ``Lock`` of the same path waits for it as for anyone's (filelock, portalocker:
    issue 34); a nested ``lock()`` is EDEADLK at once."""
    path = str(tmp_path / "lk")
    with Lock(path), pytest.raises(LockTimeout):
        Lock(path, timeout=0.2).acquire()
    assert lock(path) == 1
    started = time.monotonic()
    assert lock(path) == 0
    assert int(OS_ERROR) == errno.EDEADLK
    assert time.monotonic() - started < 1  # refused, not waited out (4 s)
    assert unlock(path) == 1


def test_blocking_false_and_lock_file(tmp_path: Path) -> None:
    """``blocking=False`` makes one try; the ``LockTimeout`` names the lock as ``lock_file``."""
    path = tmp_path / "lk"
    perl = Child.perl(PERL_HOLDER, str(path))
    try:
        perl.expect("locked")
        lk = Lock(str(path), timeout=30)
        started = time.monotonic()
        with pytest.raises(LockTimeout) as caught:
            lk.acquire(blocking=False)
        assert time.monotonic() - started < 1
        assert caught.value.lock_file == str(path)
        assert pickle.loads(pickle.dumps(caught.value)).lock_file == str(path)
        with pytest.raises(LockTimeout) as caught:
            lk.acquire(timeout=0.05)
        assert caught.value.lock_file == str(path)
        perl.send("go")
        perl.expect("released")
        with lk.acquire(blocking=False):
            assert path.is_dir()
    finally:
        perl.kill()


def test_poll_interval_sets_the_pause(tmp_path: Path) -> None:
    """``poll_interval=0.1`` tries about every 0.1 s; the default backoff tries far more often."""
    path = tmp_path / "lk"
    perl = Child.perl(PERL_HOLDER, str(path))
    try:
        perl.expect("locked")
        counts = {}
        for poll in (0.1, None):
            lk = Lock(str(path))
            calls = []
            real = lk.backend.try_acquire

            def counted(real=real, calls=calls) -> bool:  # type: ignore[no-untyped-def]
                calls.append(1)
                return real()

            lk.backend.try_acquire = counted  # type: ignore[method-assign]
            with pytest.raises(LockTimeout):
                lk.acquire(timeout=0.5, poll_interval=poll)
            counts[poll] = len(calls)
        assert 3 <= counts[0.1] <= 12  # jittered +-50% around 0.1 s, and a last try at 0.5 s
        assert counts[None] > 3 * counts[0.1]
        with pytest.raises(ValueError, match="poll_interval"):
            Lock(str(path)).acquire(timeout=0, poll_interval=0)
    finally:
        perl.kill()


def test_debug_records_on_acquire_and_release(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "lk")
    with caplog.at_level(logging.DEBUG, logger="perlcompat"), Lock(path):
        pass
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert messages[0] == f"acquired mkdir lock {path!r}"
    assert messages[1].startswith(f"released mkdir lock {path!r} (held ")


def test_a_lock_cycle_does_not_import_logging(tmp_path: Path) -> None:
    """The DEBUG records cost nothing where the program never imported ``logging``."""
    code = (
        "import sys\nfrom perlcompat import lock, unlock, Lock\n"
        "assert lock(sys.argv[1]) == 1 and unlock(sys.argv[1]) == 1\n"
        "with Lock(sys.argv[1]):\n    pass\n"
        "print('logging' in sys.modules)\n"
    )
    done = run_python(code, str(tmp_path / "lk"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "False"


@pytest.mark.parametrize("method", ["mkdir", "symlink", "rename", "excl", "flock", "toplock"])
def test_missing_directory_is_refused_not_created(method: str, tmp_path: Path) -> None:
    """As a Perl lock sub's ``mkdir``/``open`` fails there, so do we; nothing is created."""
    path = tmp_path / "no" / "such" / "lk"
    with pytest.raises(FileNotFoundError) as caught:
        Lock(str(path), method=method, timeout=1).acquire()
    assert f"does not exist: {str(tmp_path / 'no' / 'such')!r}" in str(caught.value)
    assert caught.value.errno == errno.ENOENT
    started = time.monotonic()
    assert lock(str(path), method=method) == 0
    assert int(OS_ERROR) == errno.ENOENT
    assert time.monotonic() - started < 1  # at once, not after the sub's four seconds
    assert not (tmp_path / "no").exists()
