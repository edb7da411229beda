"""``async with Lock(...)`` and ``acquire_async``: waiting never blocks the event loop.

A ticking task runs beside the waiter and must keep ticking while the lock is
held by another process (a Perl script running the mkdir lock sub), and the
lock taken in the loop is owned consistently (released by ``__aexit__`` in the
same thread: the ``asyncio.to_thread(lk.acquire)`` workaround could not).
"""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from perlutil import Child
from redis_server import RedisServer

from perlcompat import OS_ERROR, Lock, LockTimeout, lock

PERL_HOLDER = r"""
my $dir = shift;
mkdir($dir, 0755) or die "mkdir: $!";
print "locked\n";
<STDIN>;
rmdir($dir) or die "rmdir: $!";
print "released\n";
"""

TICK = 0.01


async def ticker(ticks: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        ticks.append(time.monotonic())
        await asyncio.sleep(TICK)


def longest_gap(ticks: list[float]) -> float:
    return max(b - a for a, b in zip(ticks, ticks[1:]))


def test_async_with_waits_without_blocking_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    perl = Child.perl(PERL_HOLDER, str(path))
    perl.expect("locked")

    async def main() -> tuple[list[float], float, float]:
        ticks: list[float] = []
        stop = asyncio.Event()
        tick_task = asyncio.create_task(ticker(ticks, stop))
        lk = Lock(str(path), timeout=10)

        async def let_go() -> float:
            await asyncio.sleep(0.4)
            # the Perl holder releases when told; reading its answer would block: a thread
            await asyncio.to_thread(perl.send, "go")
            await asyncio.to_thread(perl.expect, "released")
            return time.monotonic()

        releaser = asyncio.create_task(let_go())
        started = time.monotonic()
        async with lk:
            got = time.monotonic()
            assert lk.is_locked and path.is_dir()
        assert not path.exists()
        released = await releaser
        stop.set()
        await tick_task
        return [t for t in ticks if started <= t <= got], got - started, got - released

    try:
        ticks, waited, after_release = asyncio.run(main())
    finally:
        perl.kill()
    assert waited >= 0.4  # it really waited for the Perl holder
    assert after_release < 0.5  # and took the lock soon after the release
    assert len(ticks) >= 0.4 / TICK / 3  # the loop kept ticking all along
    assert longest_gap(ticks) < 0.2


def test_acquire_async_timeout_and_lock_file(tmp_path: Path) -> None:
    path = tmp_path / "lk"
    perl = Child.perl(PERL_HOLDER, str(path))
    perl.expect("locked")

    async def main() -> tuple[LockTimeout, list[float], float]:
        ticks: list[float] = []
        stop = asyncio.Event()
        tick_task = asyncio.create_task(ticker(ticks, stop))
        started = time.monotonic()
        with pytest.raises(LockTimeout) as caught:
            await Lock(str(path)).acquire_async(timeout=0.3)
        waited = time.monotonic() - started
        stop.set()
        await tick_task
        return caught.value, ticks, waited

    try:
        error, ticks, waited = asyncio.run(main())
    finally:
        perl.kill()
    assert error.lock_file == str(path)
    assert 0.3 <= waited < 2
    assert len(ticks) >= 0.3 / TICK / 3 and longest_gap(ticks) < 0.2


def test_tasks_of_one_loop_take_turns(tmp_path: Path) -> None:
    """Two tasks sharing one ``Lock``: the second waits for the first's release (no re-entry)."""
    path = tmp_path / "lk"
    lk = Lock(str(path), timeout=5)
    inside: list[int] = []
    overlaps: list[int] = []

    async def worker(n: int) -> None:
        for _ in range(5):
            async with lk:
                if inside:
                    overlaps.append(n)
                inside.append(n)
                await asyncio.sleep(0.005)
                inside.remove(n)

    async def main() -> None:
        await asyncio.gather(worker(1), worker(2), worker(3))

    asyncio.run(main())
    assert overlaps == []
    assert not path.exists()


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    srv = RedisServer(str(tmp_path / "redis")).start()
    srv.declare_empty()
    yield srv.url
    srv.stop()


HOLDER = """
import sys
from perlcompat import Lock
lk = Lock("board", url=sys.argv[1], stale=30).acquire()
print("locked", flush=True)
sys.stdin.readline()
lk.release()
print("released", flush=True)
"""


def test_async_with_a_redis_lock_keeps_the_loop_ticking(redis_url: str) -> None:
    """A Redis attempt is a round trip: it runs in a worker thread, the loop's thread owns it."""
    holder = Child.python(HOLDER, redis_url)
    holder.expect("locked")

    async def main() -> tuple[list[float], float, bool]:
        ticks: list[float] = []
        stop = asyncio.Event()
        tick_task = asyncio.create_task(ticker(ticks, stop))

        async def let_go() -> None:
            await asyncio.sleep(0.4)
            await asyncio.to_thread(holder.send, "go")
            await asyncio.to_thread(holder.expect, "released")

        releaser = asyncio.create_task(let_go())
        started = time.monotonic()
        lk = Lock("board", url=redis_url, stale=30, timeout=10)
        async with lk:
            waited = time.monotonic() - started
            owned = lk._owner_thread == threading.get_ident()
            # the registry of held locks knows the loop's thread holds it (not the worker's)
            assert lock("board", url=redis_url, stale=30) == 0  # nested: refused at once
            assert int(OS_ERROR) == errno.EDEADLK
        await releaser
        stop.set()
        await tick_task
        return [t for t in ticks if started <= t <= started + waited], waited, owned

    try:
        ticks, waited, owned = asyncio.run(main())
    finally:
        holder.kill()
    assert waited >= 0.4 and owned
    assert len(ticks) >= 0.4 / TICK / 3 and longest_gap(ticks) < 0.2


def test_a_twice_cancelled_redis_waiter_leaves_no_lock(redis_url: str) -> None:
    """Cancelled again while it waits for its in-flight attempt, the waiter still gives back
    a grant that attempt got (it was held by nobody until the process exited)."""
    lk = Lock("board", url=redis_url, stale=30, timeout=5)
    entered, gate = threading.Event(), threading.Event()
    real = lk._take

    def slow_take(me: int) -> bool:  # the round trip, held up until both cancels are in
        entered.set()
        gate.wait(10)
        return real(me)

    lk._take = slow_take  # type: ignore[method-assign]

    async def main() -> None:
        waiter = asyncio.create_task(lk.acquire_async())
        while not entered.is_set():
            await asyncio.sleep(0.002)
        for _ in range(2):
            waiter.cancel()
            await asyncio.sleep(0.01)
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert not lk.is_locked  # given back before the cancellation reached the caller

    asyncio.run(main())
    assert not lk.is_locked
    other = Lock("board", url=redis_url, stale=30)
    other.acquire(blocking=False)  # free on the server too
    other.release()
