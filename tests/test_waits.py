"""The one wait primitive (``locks.retry``) and the one seconds check (``perl.clock``).

Nothing under ``perlcompat/locks/`` sleeps but ``locks.retry``; each wait there
decides whether a pending ``alarm()`` cuts it; every seconds parameter of
perlcompat's own follows one rule (finite, >= 0; None for ever).
"""

from __future__ import annotations

import ast
import functools
import math
import threading
import time
from pathlib import Path

import pytest

import perlcompat
from perlcompat import Lock, alarm, local_sig
from perlcompat.locks import retry
from perlcompat.locks.replace import replace_file
from perlcompat.perl.clock import check_seconds

LOCKS = Path(perlcompat.__file__).parent / "locks"
#: the one module of locks/ that may sleep
PRIMITIVE = LOCKS / "retry.py"


def sleeps(source: str) -> list[int]:
    """Lines of *source* that sleep directly: a call of ``*.sleep``/``sleep`` or an import of it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "sleep":
                found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "sleep" for a in node.names):
            found.append(node.lineno)
    return sorted(found)


def test_the_checker_sees_every_form_of_sleep() -> None:
    source = (
        "import time, asyncio\nfrom time import sleep\ntime.sleep(1)\n"
        "async def f():\n    await asyncio.sleep(1)\nsleep(2)\n"
        "def g():\n    '''time.sleep(3) in a docstring'''\n    return time.monotonic()\n"
    )
    assert sleeps(source) == [2, 3, 5, 6]


def test_nothing_in_locks_sleeps_but_the_one_wait() -> None:
    modules = sorted(LOCKS.rglob("*.py"))
    assert PRIMITIVE in modules and len(modules) > 20
    found = {
        str(path.relative_to(LOCKS)): lines
        for path in modules
        if path != PRIMITIVE and (lines := sleeps(path.read_text(encoding="utf-8")))
    }
    assert found == {}, f"sleep outside locks/retry.py (wait through retry.tries): {found}"
    assert sleeps(PRIMITIVE.read_text(encoding="utf-8"))  # the checker reads it


class Boom(Exception):
    pass


def raising_handler(*args: object) -> None:
    raise Boom("ALRM")


def wait_in_worker(honour: bool) -> tuple[str, float]:
    """Wait 0.4 s through ``retry.tries`` in a worker thread (a cooperative alarm) with
    an alarm due after 0.1 s; what happened and when."""
    box: list[tuple[str, float]] = []

    def run() -> None:
        start = time.monotonic()
        with local_sig("ALRM", raising_handler):
            alarm(0.1)
            try:
                for _ in retry.tries(retry.deadline_after(0.4), poll=0.02, alarm=honour):
                    pass
                box.append(("waited", time.monotonic() - start))
            except Boom:
                box.append(("alarm", time.monotonic() - start))
            finally:
                alarm(0)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(30)
    return box[0]


def test_a_wait_decides_whether_a_pending_alarm_cuts_it() -> None:
    what, took = wait_in_worker(honour=True)
    assert what == "alarm" and 0.09 <= took < 0.35
    what, took = wait_in_worker(honour=False)  # a release's wait: the handler waits
    assert what == "waited" and took >= 0.39


def test_tries_tries_at_once_and_last_at_the_deadline() -> None:
    start = time.monotonic()
    times = [time.monotonic() - start for _ in retry.tries(retry.deadline_after(0.2), poll=0.05)]
    assert times[0] < 0.05 and 0.2 <= times[-1] < 0.3
    assert 3 <= len(times) <= 12
    assert len(list(retry.tries(retry.deadline_after(0)))) == 1  # timeout 0: one try


# -- one seconds rule ----------------------------------------------------------------


def test_check_seconds_is_the_rule() -> None:
    assert check_seconds("wait", 0) == 0.0 and check_seconds("wait", 2) == 2.0
    for bad, says in [
        (math.inf, "finite"),
        (-math.inf, "finite"),
        (math.nan, "finite"),
        (-1, ">= 0"),
        ("1", "a number"),
        (True, "a number"),
    ]:
        with pytest.raises(ValueError, match=f"timeout must be .*{says}"):
            check_seconds("timeout", bad)
    with pytest.raises(ValueError, match="> 0"):
        check_seconds("stale", 0, zero=False)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, -0.5, "5"])
def test_every_timeout_follows_the_one_rule(bad: object, tmp_path: Path) -> None:
    """``flock(timeout=inf)`` was accepted where ``Lock(timeout=inf)`` raised: all refuse
    infinity now (None waits for ever; ``Lock`` also takes filelock's -1), naming it."""
    data = tmp_path / "data"
    data.write_text("x\n")
    calls = {
        "flock": lambda: perlcompat.flock(fh, perlcompat.LOCK_EX, bad),  # type: ignore[arg-type]
        "Lock": lambda: Lock(str(tmp_path / "d"), timeout=bad),  # type: ignore[arg-type]
        "acquire": lambda: Lock(str(tmp_path / "d")).acquire(timeout=bad),  # type: ignore[arg-type]
        "replace_file": functools.partial(replace_file, str(data), "y\n", timeout=bad),  # type: ignore[arg-type]
    }
    with open(data, "rb") as fh:
        for name, call in calls.items():
            with pytest.raises(ValueError, match="timeout must be"):
                call()
            assert not (tmp_path / "d").exists(), name
    assert data.read_text() == "x\n"


def test_none_waits_for_ever_everywhere(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.write_text("x\n")
    with open(data, "rb") as fh:
        assert perlcompat.flock(fh, perlcompat.LOCK_EX, None) == 1
    with Lock(str(tmp_path / "d"), timeout=None):
        assert (tmp_path / "d").is_dir()
    assert replace_file(str(data), "y\n", timeout=None) == 1
    assert data.read_text() == "y\n"
