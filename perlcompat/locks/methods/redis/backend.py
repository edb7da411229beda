"""The redis lock method: :class:`RedisBackend`, a lease on ``perlcompat:lock:NAME``.

The algorithm is told in the package docstring; the scripts it runs are in
``scripts``, its requests go through ``connection``.
"""

from __future__ import annotations

import errno
import os
import time

import redis.exceptions as _rx

from ... import owner as _owner
from ...contract import Backend, register
from . import holdoff
from .connection import MIN_TIMEOUT, _text, max_lease_of, server_for
from .scripts import (
    _ACQUIRE,
    _DESCRIBE,
    _EXTEND,
    _RELEASE,
    _START_EPOCH,
    EPOCH_KEY,
    FENCE_PREFIX,
    GRANTED,
    HELD_OFF,
    KEY_PREFIX,
    MAX_LEASE_CONFLICT,
    NO_EPOCH,
    RESTARTED,
    WAITING_PREFIX,
    WAKE_PREFIX,
)
from .url import _MAX_LEASE_HELP, _errno_of, _refusal, scrub

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from ...contract import Description
    from .scripts import _Script

#: seconds: a release for cleanup at exit or on a signal gets this much.
CLEANUP_TIMEOUT = 1.0


class MaxLeaseError(OSError, ValueError):
    """This client's max lease is below the one recorded on the server (errno EINVAL)."""


# (url, key) -> owner of an acquire of this process whose answer was lost (a timeout, a
# dropped connection): the server may still grant it, e.g. when a stopped server resumes.
# The next attempt at that lock here takes the owner over, and so adopts such a grant.
_unanswered: dict[tuple[str, str], str] = {}
# (url, errno) of refusals (eviction, max lease) already reported by this process
_refused: set[tuple[str, int]] = set()


@register
class RedisBackend(Backend):
    """A lease on ``perlcompat:lock:NAME`` in one Redis server (see the module docstring)."""

    method: ClassVar[str] = "redis"
    options: ClassVar[tuple[str, ...]] = ("url",)
    supports_extend: ClassVar[bool] = True
    waits_for_release: ClassVar[bool] = True
    #: longest single block in ``wait_for_release``, in seconds.
    WAIT_CAP: ClassVar[float] = 0.5

    def __init__(
        self,
        path: str,
        *,
        stale: float,
        shared: bool = False,
        url: str | None = None,
    ) -> None:
        super().__init__(path, stale=stale, shared=shared)
        if url is None:
            raise TypeError("the redis lock method needs url='redis://host:6379/0'")
        self._server = server_for(url)
        self.shown_url = self._server.shown_url
        self.url: str = url
        self.max_lease = max_lease_of(self._server)
        if stale > self.max_lease:
            raise ValueError(
                f"redis lock {path!r}: stale {stale:g} s is longer than the max lease"
                f" {self.max_lease:g} s of locks at {self.shown_url}; {_MAX_LEASE_HELP}"
            )
        self.key = KEY_PREFIX + path
        self._fence_key = FENCE_PREFIX + path
        self._waiting_key = WAITING_PREFIX + path
        self._wake_key = WAKE_PREFIX + path
        self._ttl_ms = max(1, round(stale * 1000))
        self._max_ms = max(self._ttl_ms, round(self.max_lease * 1000))
        self._value: str | None = None
        self._fence: int | None = None
        self._busy_ms: int | None = None
        self.held_off = False

    # -- the contract ----------------------------------------------------
    def try_acquire(self) -> bool:
        """Make one attempt (one round trip); True if the lock is now held by us."""
        pid = os.getpid()
        lost = _unanswered.pop((self.url, self.key), "")  # one taker: never two holders
        owner = lost if lost.split(" ")[1:2] == [str(pid)] else ""  # not a parent's
        owner = owner or f"{os.urandom(8).hex()} {pid} {_owner.hostname()}"
        keys = (self.key, self._fence_key, EPOCH_KEY, self._waiting_key)
        args = (owner, self._ttl_ms, self._mark_ms(), self._max_ms)
        try:
            reply = self._server.run(_ACQUIRE, keys, args, self._budget())
            if reply[0] in (NO_EPOCH, RESTARTED):
                self._start_epoch()
                reply = self._server.run(_ACQUIRE, keys, args, self._budget())
        except _rx.RedisError as exc:
            if not isinstance(exc, _rx.ResponseError):
                _unanswered[self.url, self.key] = owner  # it may be granted yet
            raise self._oserror(exc, "acquire") from exc
        if reply[0] == GRANTED:
            holdoff._warned.discard(self.url)
            self._value = f"{owner} {int(reply[1])}"
            self._fence = int(reply[2])
            self._busy_ms = None
            self.held_off = False
            return True
        if reply[0] == MAX_LEASE_CONFLICT:
            raise self._refuse(
                MaxLeaseError,
                errno.EINVAL,
                f"this client's max lease {self.max_lease:g} s is shorter than the"
                f" {int(reply[1]) / 1000:g} s recorded there by another client; after a restart"
                " it could let a lock be taken while an older lease still runs; "
                + _MAX_LEASE_HELP
                + f" (to lower the record once no longer lease can be held: SET {EPOCH_KEY} 0)",
            )
        if reply[0] in (NO_EPOCH, RESTARTED):  # changed again meanwhile: the next try sets it up
            self._busy_ms, self.held_off = 0, False
            return False
        self._busy_ms = int(reply[1])  # -1: a key without TTL, not one of ours
        self.held_off = reply[0] == HELD_OFF
        if self.held_off:
            self._warn_held_off(self._busy_ms)
        return False

    def release(self) -> bool:
        """Delete the key if it still holds our value; True if it did."""
        return self._release(float("inf"))

    def abandon(self) -> bool:
        """Release for cleanup at exit or on a signal: within ``CLEANUP_TIMEOUT`` seconds."""
        return self._release(CLEANUP_TIMEOUT)

    def break_stale(self) -> bool:
        """Nothing to do: the server's TTL expires a dead holder's lock; always False."""
        return False

    @property
    def fencing_token(self) -> int | None:
        """The fencing token of our current hold (grows with every grant), else None."""
        return self._fence if self._value is not None else None

    def forget(self) -> None:
        """In a forked child: the parent's hold is not ours; drop it without releasing."""
        self._value = None
        self._fence = None

    # -- beyond the contract ---------------------------------------------
    def extend(self, seconds: float | None = None) -> bool:
        """Renew our lease to *seconds* (default ``stale``) from now; False if it was lost."""
        ttl_ms = self._ttl_ms
        if seconds is not None:
            if not isinstance(seconds, (int, float)) or not 0 < seconds <= self.stale:
                raise ValueError(
                    f"extend takes 0 < seconds <= stale ({self.stale:g}), not {seconds!r}"
                )
            ttl_ms = max(1, round(seconds * 1000))
        value = self._value
        if value is None:
            return False
        reply = self._run(_EXTEND, (self.key,), (value, ttl_ms), "extend", float("inf"))
        return bool(reply == 1)

    def refresh(self) -> bool:
        """Renew our lease to ``stale`` from now (:meth:`extend`); False if it was lost."""
        return self.extend()

    def wait_for_release(self, timeout: float | None = None) -> None:
        """Block until a release wakes us, the holder's TTL runs out, or *timeout*/WAIT_CAP s."""
        limit = self.WAIT_CAP
        if timeout is not None:
            limit = min(limit, timeout)
        if self._busy_ms is not None and self._busy_ms >= 0:
            limit = min(limit, self._busy_ms / 1000 + 0.002)
        if limit < 0.001:
            return
        command = ("BLPOP", self._wake_key, f"{limit:.3f}")
        try:
            self._server.request(command, self._budget(limit), hold=limit)
        except _rx.RedisError as exc:
            raise self._oserror(exc, "wait") from exc

    def why_busy(self) -> str:
        """Say why the last attempt failed, for error messages."""
        if self._busy_ms is None:
            return ""
        seconds = self._busy_ms / 1000
        if seconds < 0:
            return f"{self.key!r} is set without an expiry (not a perlcompat lock?)"
        if self.held_off:
            return f"{self._held_off_text(seconds)}; {self._ways_out()}"
        return f"held by another owner for up to {seconds:.3g} s more"

    def describe(self) -> Description | None:
        """Return the current holder (method, path, pid, host, alive, age ...), None if free."""
        reply = self._run(_DESCRIBE, (self.key, self._fence_key), (), "inspect", float("inf"))
        if not reply:
            return None
        raw, pttl, now, fence = reply
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        fields = text.split(" ")
        pid: int | None = None
        host: str | None = None
        age: float | None = None
        if len(fields) >= 4 and fields[1].isdigit() and fields[-1].isdigit():
            pid = int(fields[1])
            host = " ".join(fields[2:-1])
            age = max(int(now) - int(fields[-1]), 0) / 1000
        alive = _owner.alive(pid, host)
        return {
            "method": self.method,
            "path": self.path,
            "pid": pid,
            "host": host,
            "alive": alive,
            "age": age,
            "expires_in": int(pttl) / 1000 if int(pttl) >= 0 else None,
            "fence": int(fence),
            "url": self.shown_url,
        }

    # -- helpers -----------------------------------------------------------
    def _budget(self, after: float = 0.0) -> float:
        """Seconds a request may take: what is left of the patience (*after* a wait), >= MIN."""
        deadline = self.deadline
        if deadline is None:
            return float("inf")
        return max(deadline - time.monotonic() - after, MIN_TIMEOUT)

    def _mark_ms(self) -> int:
        return round(self.WAIT_CAP * 2000) + 1000

    def _release(self, timeout: float) -> bool:
        value = self._value
        if value is None:
            return False
        self._value = None
        self._fence = None
        keys = (self.key, self._waiting_key, self._wake_key)
        reply = self._run(_RELEASE, keys, (value, self._mark_ms()), "release", timeout)
        return bool(reply == 1)

    def _run(
        self,
        script: _Script,
        keys: tuple[str, ...],
        args: tuple[object, ...],
        doing: str,
        timeout: float,
    ) -> Any:
        try:
            return self._server.run(script, keys, args, timeout)
        except _rx.RedisError as exc:
            raise self._oserror(exc, doing) from exc

    def _oserror(self, exc: Exception, doing: str) -> OSError:
        number = _errno_of(exc)
        detail = str(exc) or type(exc).__name__
        if scrub(detail, self.url) != detail:  # (the cause is chained: scrub it there too)
            detail = scrub(detail, self.url)
            exc.args = tuple(scrub(str(arg), self.url) for arg in exc.args)
        refusal = _refusal(exc)
        if refusal == "acl":
            detail = f"the server's ACL refuses the lock url's user a command or key: {detail}"
        elif refusal and self._server.kwargs.get("password") is None:
            detail = f"the server requires credentials and the lock url gives none: {detail}"
        elif refusal:
            detail = f"the server refused the credentials in the lock url: {detail}"
        message = f"cannot {doing} redis lock {self.path!r} at {self.shown_url}: {detail}"
        return OSError(number, message)

    def _start_epoch(self) -> None:
        """Check that the server keeps held keys, then (re)record the epoch (``START_EPOCH``)."""
        try:
            reply = self._server.request(("CONFIG", "GET", "maxmemory*"), self._budget())
        except _rx.ResponseError:
            reply = None  # CONFIG refused by an ACL or renamed (managed servers): assumed fine
        except _rx.RedisError as exc:
            raise self._oserror(exc, "acquire") from exc
        if reply is not None:
            pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
            config = {_text(name): _text(value) for name, value in pairs}
            policy = config.get("maxmemory-policy", "noeviction")
            limit = config.get("maxmemory", "0")
            if policy != "noeviction" and limit.isdigit() and int(limit) > 0:
                raise self._refuse(
                    OSError,
                    errno.EOPNOTSUPP,
                    f"the server may evict a held lock when its memory is full (maxmemory"
                    f" {limit}, maxmemory-policy {policy}); set maxmemory-policy noeviction"
                    " (CONFIG SET maxmemory-policy noeviction, and in redis.conf)",
                )
        self._run(_START_EPOCH, (EPOCH_KEY,), (self._max_ms,), "acquire", self._budget())

    def _refuse(self, kind: type[OSError], number: int, why: str) -> OSError:
        """An error of *kind* for a server set up unsafely; warned once per process and URL."""
        message = f"cannot acquire redis lock {self.path!r} at {self.shown_url}: {why}"
        if (self.url, number) not in _refused:  # lock() keeps only $!: say why once
            _refused.add((self.url, number))
            import warnings

            warnings.warn(f"perlcompat: {message}", RuntimeWarning, stacklevel=4)
        return kind(number, message)

    def _warn_held_off(self, wait_ms: int) -> None:
        if self.url in holdoff._warned:
            return
        holdoff._warned.add(self.url)
        from ... import log as _log

        _log.info(
            "redis lock %r held off: the server at %s has no record of its locks;"
            " no grant there for %.3g s more",
            self.path,
            self.shown_url,
            wait_ms / 1000,
        )
        import warnings

        warnings.warn(
            f"perlcompat: {self._held_off_text(wait_ms / 1000)}; {self._ways_out()}",
            RuntimeWarning,
            stacklevel=2,
        )

    def _held_off_text(self, seconds: float) -> str:
        return holdoff.held_off_text(self.shown_url, self.max_lease, seconds)

    def _ways_out(self) -> str:
        return holdoff.ways_out(self.shown_url)
