"""A new user's first Redis lock: the hold-off explained, and ``perlcompat redis-lift``.

A freshly started ``redis-server`` has no perlcompat record, so it grants no lock
for one max lease after its start (a holder from before a restart may still be
working).  The refusal must say so and name the two ways out; the command
lifts it, after a confirmation, only while no lock is held there.
"""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from perlutil import CHILD_ENV
from redis_server import RedisServer

from perlcompat import Lock, LockTimeout
from perlcompat.locks.methods import redis as redis_lock
from perlcompat.tools import redis_cli


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[RedisServer]:
    """A server just started, as a new user's: no ``declare_empty``."""
    srv = RedisServer(str(tmp_path / "redis")).start()
    yield srv
    srv.stop()


def test_the_refusal_names_why_and_the_ways_out(fresh: RedisServer) -> None:
    redis_lock.holdoff._warned.discard(fresh.url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(LockTimeout) as refused:
            Lock("board", url=fresh.url).acquire(timeout=0.3)
    message = str(refused.value)
    for says in (
        "has no record of its locks (it is new, restarted or was flushed)",
        "so that a holder from before cannot overlap",
        f"perlcompat redis-lift {fresh.url}",
        "?max_lease=SECONDS",
    ):
        assert says in message
        assert any(says in str(w.message) for w in caught), says
    assert refused.value.lock_file == "board"


@pytest.mark.filterwarnings("ignore:perlcompat. the redis server:RuntimeWarning")
def test_redis_lift_asks_then_lifts(fresh: RedisServer, capsys: pytest.CaptureFixture[str]) -> None:
    prompts: list[str] = []

    def no(prompt: str) -> str:
        prompts.append(prompt)
        return "n"

    assert redis_cli.main([fresh.url], ask=no) == 1
    assert "[y/N]" in prompts[0]
    assert "not lifted" in capsys.readouterr().out
    with pytest.raises(LockTimeout):  # still held off
        Lock("board", url=fresh.url).acquire(timeout=0.2)
    assert redis_cli.main([fresh.url], ask=lambda prompt: "y") == 0
    assert "lifted: locks are granted now" in capsys.readouterr().out
    started = time.monotonic()
    with Lock("board", url=fresh.url).acquire(timeout=5):
        assert time.monotonic() - started < 1
        # a lock is held: the command refuses, whatever the answer
        with fresh.client() as client:
            client.delete(redis_lock.EPOCH_KEY)  # as if the record were lost meanwhile
        assert redis_cli.main([fresh.url, "--yes"]) == 1
        assert "lock(s) held there (board)" in capsys.readouterr().out
        with fresh.client() as client:
            assert client.get(redis_lock.EPOCH_KEY) is None  # nothing was set


def test_redis_lift_command_line(fresh: RedisServer) -> None:
    """``perlcompat redis-lift URL --yes`` from the shell; no answer on stdin declines."""
    command = [sys.executable, "-m", "perlcompat", "redis-lift", fresh.url]
    declined = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=CHILD_ENV
    )
    assert declined.returncode == 1, declined.stderr
    assert "no record yet" in declined.stdout
    done = subprocess.run(
        [*command, "--yes"], capture_output=True, text=True, env=CHILD_ENV, check=False
    )
    assert done.returncode == 0, done.stderr
    assert redis_lock.hold_off(fresh.url) == (0.0, [])  # "no lock from before": none left
    Lock("board", url=fresh.url).acquire(timeout=1).release()
    unreachable = subprocess.run(
        [*command[:-1], "redis://127.0.0.1:1/0", "--yes"],
        capture_output=True,
        text=True,
        env=CHILD_ENV,
        check=False,
    )
    assert unreachable.returncode == 2
    assert "cannot read the hold-off at redis://127.0.0.1:1/0" in unreachable.stderr
