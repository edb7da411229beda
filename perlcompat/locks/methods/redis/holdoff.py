"""The first-use hold-off: read it, and lift it when no lock is held (``perlcompat redis-lift``).

A server with no record of its locks (new, restarted or flushed) grants no lock
for one max lease (the package docstring, "Restarts"); these say so and offer
the ways out.
"""

from __future__ import annotations

import redis.exceptions as _rx

from .connection import _text, server_for
from .scripts import _LIFT, EPOCH_KEY, KEY_PREFIX
from .url import _errno_of

# urls whose restart hold-off was already reported by this process
_warned: set[str] = set()


def hold_off(url: str, *, lift: bool = False) -> tuple[float | None, list[str]]:
    """The hold-off of the redis server at *url*: (seconds left, names of locks held there).

    Seconds left is None when the server has no record yet (its first client
    holds off up to one max lease after the server's start).  With *lift*, and
    only if no perlcompat lock is held there (checked in the same atomic step),
    the record is set to "no lock from before" (``SET perlcompat:epoch 0``): the
    next client grants at once and records its max lease.  Call it only when no
    process can still hold a lock from before the server's start (a fresh
    install; every client stopped).  OSError (naming the url) if the server fails.
    """
    server = server_for(url)
    try:
        left_ms, keys = server.run(_LIFT, (EPOCH_KEY,), (KEY_PREFIX, "1" if lift else "0"), 10.0)
    except _rx.RedisError as exc:
        raise OSError(
            _errno_of(exc), f"cannot read the hold-off at {server.shown_url}: {exc}"
        ) from exc
    names = sorted(_text(key)[len(KEY_PREFIX) :] for key in keys)
    return (None if int(left_ms) < 0 else int(left_ms) / 1000), names


def held_off_text(shown_url: str, max_lease: float, seconds: float) -> str:
    """Say why the server at *shown_url* grants no lock for *seconds* more."""
    return (
        f"the redis server at {shown_url} has no record of its locks (it is new,"
        f" restarted or was flushed), so it grants no lock for {seconds:.3g} s more"
        f" (one max lease, {max_lease:g} s, after it started or was flushed), so"
        " that a holder from before cannot overlap"
    )


def ways_out(shown_url: str) -> str:
    """Say how to lift or shorten the hold-off of the server at *shown_url*."""
    return (
        "on a fresh install, or when no process can still hold a lock from before,"
        f" lift it now with: perlcompat redis-lift {shown_url}"
        f" (or SET {EPOCH_KEY} 0); to make every hold-off shorter, give every client"
        " ?max_lease=SECONDS (your longest stale) in its lock url before first use"
    )
