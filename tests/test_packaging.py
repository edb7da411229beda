"""The sdist and wheel a packager gets: complete, licensed, and able to run the test suite."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build the sdist and the wheel (no network: the test environment's setuptools)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "-o", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def _collected(cwd: Path) -> int:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    match = re.search(r"^(\d+) tests? collected", run.stdout, re.M)
    assert match, run.stdout[-2000:]
    return int(match.group(1))


def test_wheel_carries_license_typing_marker_and_one_version(dists: dict[str, Path]) -> None:
    import perlcompat

    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = wheel.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = wheel.read(metadata).decode()
    assert any(n.endswith(("dist-info/LICENSE", "dist-info/licenses/LICENSE")) for n in names)
    assert "perlcompat/py.typed" in names
    assert not [n for n in names if n.startswith(("tests/", "bench/", "examples/"))]
    assert f"\nVersion: {perlcompat.__version__}\n" in text
    assert "\nLicense: MIT\n" in text or "\nLicense-Expression: MIT\n" in text
    assert "Classifier: Typing :: Typed" in text
    assert "Requires-Python: >=3.9" in text


def test_long_description_has_no_relative_links(dists: dict[str, Path]) -> None:
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        text = wheel.read(metadata).decode()
    body = text.split("\n\n", 1)[1]
    assert "docs/locks.md" in body  # the README is there ...
    relative = re.findall(r"\]\((?![a-z][a-z0-9+.-]*:|#)[^)]*\)", body)
    assert relative == []  # ... without links that break on a package index page


def test_sdist_runs_its_own_test_collection(dists: dict[str, Path], tmp_path: Path) -> None:
    with tarfile.open(dists["sdist"]) as sdist:
        names = sdist.getnames()
        if hasattr(tarfile, "data_filter"):  # 3.12+ (and security backports): no warning
            sdist.extractall(tmp_path, filter="data")
        else:
            sdist.extractall(tmp_path)
    top = names[0].split("/")[0]
    for needed in (
        "LICENSE",
        "tests/perlutil.py",
        "tests/redis_server.py",
        "tests/webserver.py",
        "tests/audit_cases/sjis_bad.pl",
        "examples/counter/count.cgi",
        "docs/locks.md",
        "scripts/setup.sh",
    ):
        assert f"{top}/{needed}" in names, needed
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # `python -m pytest` from the unpacked sdist imports the sdist's own perlcompat
    assert _collected(tmp_path / top) == _collected(ROOT)


def _test_ids(*args: str) -> set[str]:
    """The test ids ``pytest --collect-only`` finds with *args*, from this checkout."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {line for line in proc.stdout.splitlines() if "::" in line}


def test_a_plain_user_build_can_deselect_every_root_or_fuse_test() -> None:
    # A distro build runs the suite as a plain user, without /dev/fuse or namespaces:
    # -m "not privileged" keeps no test that mounts sshfs, starts sshd or fills a tmpfs.
    needs = ["tests/test_shared_storage.py", "tests/test_full_disk.py"]
    kept = _test_ids("-m", "not privileged", *needs, "tests/test_lock_existing_paths.py")
    assert not [test for test in kept if test.startswith("tests/test_full_disk.py")]
    assert not [test for test in kept if "other_uid" in test or "another_user" in test]
    assert any(test.startswith("tests/test_lock_existing_paths.py") for test in kept)
    assert any(test.startswith("tests/test_shared_storage.py") for test in kept)  # pure ones
    proc = subprocess.run(
        [
            sys.executable,
            *("-m", "pytest", "--fixtures-per-test", "-p", "no:cacheprovider"),
            *("-m", "not privileged", *needs),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    used = re.findall(r"^(sshd_server|two_hosts|two_hosts_uncached) -- ", proc.stdout, re.M)
    assert not used, f"kept tests use {sorted(set(used))}"
    marked = _test_ids("-m", "privileged", *needs)
    assert len([t for t in marked if t.startswith("tests/test_shared_storage.py")]) >= 20
