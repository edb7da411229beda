"""The one retry loop of the waits: tries within a patience, short jittered pauses between.

:func:`tries` yields once per attempt.  The caller tries, and stops iterating
when it succeeds; when the generator ends, the patience is spent (the caller
reports the time-out).  Between attempts it sleeps a short, jittered, growing
interval (``FIRST`` seconds, times 1.6 each pause, capped at *cap*), or *poll*
seconds jittered +-50% (a Perl sub's cadence), through ``perl.clock.pause``, so
a pending ``alarm()`` is honoured; never past the deadline, so the last attempt
comes right at it.  With *block*, the pause is instead a call
``block(seconds left or None)`` (redis: a wake-up wait).  Jitter comes from
``os.urandom``: no ``random`` import on the CGI path.  A patience of ``(retry -
1) * wait`` is the mkdir lock sub's: *retry* attempts with ``retry - 1`` sleeps.
(portalocker's single retry generator is the model.)
"""

from __future__ import annotations

import os
import time

from ..perl import clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

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


def tries(
    deadline: float | None,
    *,
    cap: float = MAX,
    poll: float | None = None,
    block: Callable[[float | None], None] | None = None,
) -> Iterator[None]:
    """Yield before each attempt until ``time.monotonic()`` passes *deadline* (None: never).

    The first attempt comes at once and the last one at the deadline; see the
    module docstring for the pauses between them.
    """
    pause = FIRST
    while True:
        yield
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return
        if block is not None:
            block(None if deadline is None else deadline - now)
            continue
        delay = (poll if poll is not None else pause) * jitter()
        if deadline is not None:
            delay = min(delay, max(deadline - now, 0.0))
        clock.pause(delay)
        pause = min(pause * GROWTH, cap)
