"""The one wait of ``locks/``: tries within a patience, short jittered pauses between.

Every loop in ``locks/`` that waits goes through here; nothing else in
``locks/`` sleeps (a test greps for it).  :func:`tries` yields once per
attempt.  The caller tries, and stops iterating when it succeeds; when the
generator ends, the patience is spent (the caller reports the time-out).
Between attempts it sleeps a short, jittered, growing interval (*first*
seconds, ``FIRST`` by default, times *growth* each pause, capped at *cap*), or
*poll* seconds jittered +-50% (a Perl sub's cadence), through
``perl.clock.pause``; never past the deadline, so the last attempt comes right
at it.  With *block*, the pause is instead a call ``block(seconds left or
None)`` (redis: a wake-up wait), cut short for a pending ``alarm()``.

Each call decides whether its pauses honour ``alarm()``: by default they do
(a due ALRM handler runs, and may raise); ``alarm=False`` is for a wait inside
one step that a handler must not cut (a release waiting for a remover, a
Windows retry of one unlink).  :func:`tries_async` is the same loop for
asyncio (``asyncio.sleep``).  Jitter comes from ``os.urandom``: no ``random``
import on the CGI path.  A patience of ``(retry - 1) * wait`` is the mkdir lock
sub's: *retry* attempts with ``retry - 1`` sleeps.  (portalocker's single retry
generator is the model.)
"""

from __future__ import annotations

import os
import time

from ..perl import clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

#: first and largest pause between tries, in seconds (jittered +-50%).
FIRST = 0.0005
MAX = 0.01
#: each pause is this many times the last, up to the cap.
GROWTH = 1.6


def jitter() -> float:
    """A random factor in [0.5, 1.5), from ``os.urandom``."""
    return 0.5 + int.from_bytes(os.urandom(2), "little") / 65536


def pick(n: int) -> int:
    """A random whole number in [0, n), from ``os.urandom`` (n >= 1)."""
    return int.from_bytes(os.urandom(8), "little") % n if n > 1 else 0


def deadline_after(timeout: float | None) -> float | None:
    """The ``time.monotonic()`` deadline *timeout* seconds from now; None for ever."""
    return None if timeout is None else time.monotonic() + timeout


def cap_for(wait: float) -> float:
    """The largest backoff pause for a sub that sleeps *wait* between tries."""
    return min(MAX, wait) if wait > 0 else MAX


def delays(
    deadline: float | None,
    *,
    cap: float = MAX,
    poll: float | None = None,
    first: float = FIRST,
    growth: float = GROWTH,
) -> Iterator[float]:
    """The pause after each attempt (jittered, never past *deadline*), computed when asked
    for; ends once *deadline* has passed."""
    pause = first
    while True:
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return
        delay = (poll if poll is not None else pause) * jitter()
        yield delay if deadline is None else min(delay, deadline - now)
        pause = min(pause * growth, cap)


def tries(
    deadline: float | None,
    *,
    cap: float = MAX,
    poll: float | None = None,
    block: Callable[[float | None], None] | None = None,
    first: float = FIRST,
    growth: float = GROWTH,
    alarm: bool = True,
    at_once: bool = True,
) -> Iterator[None]:
    """Yield before each attempt until ``time.monotonic()`` passes *deadline* (None: never).

    The first attempt comes at once (``at_once=False``: the caller has just made it,
    the first yield comes after a pause) and the last one at the deadline; see the
    module docstring for the pauses between them (*first* seconds, times
    *growth*, capped at *cap*).  ``alarm=False``: the pauses are plain sleeps,
    for a wait inside a step that an ALRM handler must not cut (a release).
    """
    pauses = delays(deadline, cap=cap, poll=poll, first=first, growth=growth)
    while True:
        if at_once:
            yield
        at_once = True
        delay = next(pauses, None)  # measured after the attempt
        if delay is None:
            return
        if block is None:
            clock.pause(delay, alarm=alarm)
            continue
        now = time.monotonic()
        left = None if deadline is None else deadline - now
        due = clock.alarm_deadline() if alarm else None
        if due is not None:  # wake for a pending cooperative alarm
            left = due - now if left is None else min(left, due - now)
        block(None if left is None else max(left, 0.0))
        if alarm:
            clock.fire_if_due()


async def tries_async(
    deadline: float | None, *, cap: float = MAX, poll: float | None = None
) -> AsyncIterator[None]:
    """:func:`tries` for asyncio: the pauses are ``asyncio.sleep`` (no ``alarm()`` check:
    the event loop's thread runs no ALRM handler in the middle of a task)."""
    import asyncio

    pauses = delays(deadline, cap=cap, poll=poll)
    while True:
        yield
        delay = next(pauses, None)
        if delay is None:
            return
        await asyncio.sleep(delay)
