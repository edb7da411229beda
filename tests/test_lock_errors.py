"""The lock errors survive pickling: multiprocessing and process pools relay them that way."""

from __future__ import annotations

import concurrent.futures
import copy
import errno
import os
import pickle
from pathlib import Path

import pytest

from perlcompat import (
    DuplicateLockError,
    ExpiredLockError,
    HasNotLockError,
    Lock,
    LockError,
    LockTimeout,
    NotLockedError,
)

CLASSES = [
    LockError,
    LockTimeout,
    DuplicateLockError,
    NotLockedError,
    HasNotLockError,
    ExpiredLockError,
]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("number", [None, errno.ENOENT])
def test_pickle_and_copy_keep_errno_and_message(cls: type[LockError], number: int | None) -> None:
    error = cls("lock '/tmp/x' is busy", number)
    error.note = "kept"  # type: ignore[attr-defined]
    for other in (pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert type(other) is cls
        assert other.errno == error.errno == (cls.default_errno if number is None else number)
        assert other.strerror == "lock '/tmp/x' is busy"
        assert str(other) == str(error) and other.args == error.args
        assert other.note == "kept"  # type: ignore[attr-defined]


def _take(path: str) -> None:
    with Lock(path, timeout=0.2):
        pass


def test_a_timeout_in_a_pool_worker_arrives_as_itself(tmp_path: Path) -> None:
    path = os.path.join(tmp_path, "busy.lock")
    with Lock(path), concurrent.futures.ProcessPoolExecutor(1) as pool:
        error = pool.submit(_take, path).exception(timeout=60)
    assert type(error) is LockTimeout
    assert error.errno == errno.EWOULDBLOCK
    assert error.strerror is not None and "is busy" in error.strerror


def test_errors_are_named_and_pickled_by_their_public_module() -> None:
    import perlcompat

    for cls in (LockError, LockTimeout, DuplicateLockError, NotLockedError, ExpiredLockError):
        assert cls.__module__ == "perlcompat"
        assert getattr(perlcompat, cls.__name__) is cls
        assert b"perlcompat.locks" not in pickle.dumps(cls("x"), protocol=0)
