"""The lock methods' contract (``locks.contract``): registry, declared hooks, on-disk detection."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest
from perlutil import CHILD_ENV

from perlcompat import Lock, lock, unlock
from perlcompat.locks import api as _api, contract, files

FILE_METHODS = [m for m in contract.names() if m not in contract.OFF_DISK]
if sys.platform == "win32":
    FILE_METHODS.remove("symlink")
REQUIRED = ("try_acquire", "release", "break_stale", "describe")
#: (flag, the hook it promises)
CAPABILITIES = (("supports_extend", "extend"), ("waits_for_release", "wait_for_release"))


@pytest.mark.parametrize("name", contract.names())
def test_every_method_implements_the_contract(name: str) -> None:
    cls = contract.backend_class(name)
    assert issubclass(cls, contract.Backend)
    assert cls.method == name
    assert cls.__name__ == f"{name.capitalize()}Backend"  # a name of its own, not "Backend"
    assert not inspect.isabstract(cls), cls.__abstractmethods__
    for operation in REQUIRED:
        assert getattr(cls, operation) is not getattr(contract.Backend, operation), operation
    for flag, hook in CAPABILITIES:  # a declared capability is implemented, and only then
        overridden = getattr(cls, hook) is not getattr(contract.Backend, hook)
        assert getattr(cls, flag) is overridden, (flag, hook)
    assert set(cls.options) <= set(inspect.signature(cls.__init__).parameters)


def test_the_contract_cannot_be_instantiated_without_the_required_operations() -> None:
    class Half(contract.Backend):
        method = "half"

        def try_acquire(self) -> bool:
            return True

    with pytest.raises(TypeError, match="abstract"):
        Half("x", stale=1.0)  # type: ignore[abstract]


def test_unknown_method_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown lock method 'nfs'; choose one of mkdir, "):
        Lock(str(tmp_path / "x"), method="nfs")


class _Memory(contract.Backend):
    """A lock method kept in a dict: what a new method module registers."""

    method = "memory"
    taken: ClassVar[set[str]] = set()

    def try_acquire(self) -> bool:
        if self.path in self.taken:
            return False
        self.taken.add(self.path)
        return True

    def release(self) -> bool:
        self.taken.discard(self.path)
        return True

    def break_stale(self) -> bool:
        return False

    def describe(self) -> dict[str, object] | None:
        return None


def test_a_registered_method_works_without_touching_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(contract, "REGISTERED", dict(contract.REGISTERED))
    assert contract.register(_Memory) is _Memory
    assert "memory" in contract.names()
    path = str(tmp_path / "m")
    assert lock(path, method="memory", retry=1) == 1
    assert lock(path, method="memory", retry=1) == 0  # DuplicateLockError: this thread has it
    assert path in _Memory.taken
    assert unlock(path) == 1  # found without method=: unlock() asks every registered method
    assert path not in _Memory.taken
    with pytest.raises(ValueError, match="already"):

        class Other(_Memory):
            pass

        contract.register(Other)


def test_a_lock_call_imports_only_its_own_method(tmp_path: Path) -> None:
    code = (
        "import sys; from perlcompat import lock, unlock\n"
        "assert lock(sys.argv[1]) == 1 and unlock(sys.argv[1]) == 1\n"
        "print(sorted(m for m in sys.modules if m.startswith('perlcompat.locks.methods.')))\n"
    )
    env = {k: v for k, v in CHILD_ENV.items() if k != "PERLCOMPAT_LOCK_URL"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "lk")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert out.split() == ["['perlcompat.locks.methods.mkdir']"]


# -- detection ------------------------------------------------------------------------


def _hold_one_of_each(directory: Path) -> dict[str, Lock]:
    held = {}
    for method in FILE_METHODS:
        held[method] = Lock(str(directory / f"{method}.lk"), method=method, retry=1).acquire()
    return held


def test_each_method_detects_its_own_lock_and_no_other(tmp_path: Path) -> None:
    held = _hold_one_of_each(tmp_path)
    try:
        for method in FILE_METHODS:
            path = str(tmp_path / f"{method}.lk")
            assert contract.detect(path) == method
            st = files.lstat(path)
            for other in FILE_METHODS:
                cls = contract.backend_class(other)
                if cls.catch_all and other != method:
                    continue  # flock takes any plain file: asked only when nobody claims it
                assert cls.detect(path, st) is (other == method), (other, method)
        assert contract.find_locks(tmp_path) == sorted(
            (str(tmp_path / f"{m}.lk"), m) for m in FILE_METHODS
        )
        assert _api.find_locks is contract.find_locks  # the tools' old names still work
        assert _api.detect_method is contract.detect
    finally:
        for lk in held.values():
            lk.release()


def test_pieces_of_locks_are_not_locks(tmp_path: Path) -> None:
    rename = Lock(str(tmp_path / "r"), method="rename", retry=1).acquire()
    try:
        marker = str(tmp_path / "r.locked")
        assert contract.lock_of(marker) == str(tmp_path / "r")
        assert contract.detect(marker) is None
        assert marker in contract.parts(tmp_path / "r")
    finally:
        rename.release()
    assert contract.lock_of(marker) is None  # free again: the marker is back at "r"


def test_a_released_mkdir_locks_owner_file_is_not_listed_as_a_lock(tmp_path: Path) -> None:
    # bug: find_locks() listed the blank owner file left beside a released mkdir lock
    # as a flock lock file ([("…/lk.owner", "flock")]), so the tools looked at it as one
    path = tmp_path / "lk"
    assert lock(str(path)) == 1
    assert unlock(str(path)) == 1
    owner = tmp_path / "lk.owner"
    assert owner.read_bytes().strip() == b""  # blanked, left in place
    assert _api.find_locks(tmp_path) == []
    assert _api.detect_method(owner) is None
    assert lock(str(path)) == 1  # held again: the directory is listed, the owner file is not
    try:
        assert _api.find_locks(tmp_path) == [(str(path), "mkdir")]
    finally:
        unlock(str(path))


def test_an_empty_file_named_like_an_owner_file_stays_a_flock_lock(tmp_path: Path) -> None:
    path = tmp_path / "data.owner"  # Perl's open(LOCK, "> data.owner"): anybody's lock file
    path.write_bytes(b"")
    assert contract.detect(path) == "flock"
    path.write_bytes(b"counter 12\n")  # not an owner record: a data file, flockable
    assert contract.detect(path) == "flock"


def test_lock_and_unlock_refuse_a_url_for_another_method_alike(tmp_path: Path) -> None:
    # one reading of (name, method, url) for both: unlock() used to ignore method= when
    # url= was given and return 0 (ENOLCK) where Lock() refused the same arguments
    path, url = str(tmp_path / "x"), "redis://127.0.0.1:1/0"
    with pytest.raises(ValueError, match="url= is for the redis method, not 'mkdir'"):
        Lock(path, method="mkdir", url=url)
    with pytest.raises(ValueError, match="url= is for the redis method, not 'mkdir'"):
        unlock(path, method="mkdir", url=url)
