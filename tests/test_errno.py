"""``OS_ERROR``: Perl's ``$!`` dualvar, per thread."""

from __future__ import annotations

import errno
import os
import threading

import pytest
from perlutil import run_perl

from perlcompat import ERRNO, OS_ERROR, open_
from perlcompat.perl.errno import fail, fail_from, get_errno, oserror, raise_errno, set_errno


@pytest.fixture(autouse=True)
def _clear_errno() -> None:
    set_errno(0)


def test_number_message_and_comparison_after_a_failed_open(tmp_path: object) -> None:
    assert not open_("<", os.path.join(str(tmp_path), "missing"))
    assert int(OS_ERROR) == errno.ENOENT
    assert OS_ERROR == errno.ENOENT
    assert errno.ENOENT == OS_ERROR
    assert OS_ERROR != errno.EACCES
    assert str(OS_ERROR) == "No such file or directory"
    assert OS_ERROR == "No such file or directory"
    assert f"Can't open: {OS_ERROR}" == "Can't open: No such file or directory"
    assert f"{OS_ERROR:d}" == str(errno.ENOENT)
    assert f"[{OS_ERROR:>30}]" == "[     No such file or directory]"
    assert OS_ERROR + 0 == errno.ENOENT
    assert 0 + OS_ERROR == errno.ENOENT
    assert OS_ERROR.errno == errno.ENOENT
    assert OS_ERROR.message == "No such file or directory"
    assert bool(OS_ERROR)
    assert repr(OS_ERROR) == f"OS_ERROR({errno.ENOENT}, 'No such file or directory')"
    assert list(range(100))[OS_ERROR] == errno.ENOENT  # __index__
    assert hash(OS_ERROR) == hash(errno.ENOENT)


def test_messages_are_the_ones_perl_prints() -> None:
    numbers = [errno.ENOENT, errno.EACCES, errno.EWOULDBLOCK, errno.EEXIST, errno.EINVAL]
    code = 'for (@ARGV) { $! = $_; print "$!\\n" }'
    proc = run_perl(code, *map(str, numbers))
    assert proc.returncode == 0
    perl_messages = proc.stdout.decode().splitlines()
    ours = []
    for number in numbers:
        set_errno(number)
        ours.append(str(OS_ERROR))
    assert ours == perl_messages
    assert all("[Errno" not in message for message in ours)


def test_zero_is_false_and_empty() -> None:
    assert int(OS_ERROR) == 0
    assert str(OS_ERROR) == ""
    assert not OS_ERROR
    assert OS_ERROR == 0


def test_set_assigns_like_perl() -> None:
    OS_ERROR.set(errno.EAGAIN)
    assert get_errno() == errno.EAGAIN
    assert ERRNO is OS_ERROR
    assert ERRNO == errno.EAGAIN


def test_fail_helpers_return_zero_and_set_the_number() -> None:
    assert fail(errno.EBADF) == 0
    assert OS_ERROR == errno.EBADF
    assert fail_from(FileNotFoundError(errno.ENOENT, "x")) == 0
    assert OS_ERROR == errno.ENOENT
    assert fail_from(OSError("no errno")) == 0
    assert int(OS_ERROR) == 0


def test_raise_errno_gives_the_matching_oserror_subclass() -> None:
    with pytest.raises(FileNotFoundError) as info:
        raise_errno(errno.ENOENT, "/x")
    assert info.value.errno == errno.ENOENT
    assert info.value.filename == "/x"
    assert info.value.strerror == "No such file or directory"
    assert isinstance(oserror(errno.EEXIST), FileExistsError)


def test_equality_with_other_types_is_not_implemented() -> None:
    set_errno(errno.ENOENT)
    assert (OS_ERROR == 2.5) is False
    assert OS_ERROR == OS_ERROR
    assert (OS_ERROR != [errno.ENOENT]) is True


def test_each_thread_has_its_own_value() -> None:
    set_errno(errno.EACCES)
    barrier = threading.Barrier(4)
    seen: dict[int, tuple[int, str]] = {}

    def worker(number: int) -> None:
        assert int(OS_ERROR) == 0  # a new thread starts clean
        set_errno(number)
        barrier.wait()  # all threads have set theirs before anyone reads
        seen[number] = (int(OS_ERROR), str(OS_ERROR))

    numbers = [errno.ENOENT, errno.EEXIST, errno.EWOULDBLOCK, errno.EINVAL]
    threads = [threading.Thread(target=worker, args=(n,)) for n in numbers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {n: (n, os.strerror(n)) for n in numbers}
    assert OS_ERROR == errno.EACCES  # untouched by the workers


def test_a_success_clears_only_the_calling_threads_value(tmp_path: object) -> None:
    # open_, flock and truncate clear $! as Perl's do; they skip the store while every
    # thread's $! is 0, so each thread's own value must still be cleared and kept apart
    path = os.path.join(str(tmp_path), "data")
    with open(path, "w") as fh:
        fh.write("1")
    in_main = threading.Event()
    in_thread = threading.Event()
    seen: list[int] = []

    def worker() -> None:
        assert not open_("<", path + ".missing")
        in_thread.set()  # its $! is ENOENT now
        in_main.wait()  # while the main thread's open_ succeeds
        seen.append(int(OS_ERROR))
        assert open_("<", path)
        seen.append(int(OS_ERROR))

    thread = threading.Thread(target=worker)
    thread.start()
    in_thread.wait()
    set_errno(errno.EACCES)
    assert open_("<", path)
    assert int(OS_ERROR) == 0  # the main thread's, cleared
    in_main.set()
    thread.join()
    assert seen == [errno.ENOENT, 0]  # the worker's kept, then cleared by its own success
    assert int(OS_ERROR) == 0
