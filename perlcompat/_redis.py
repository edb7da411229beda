"""Redis locks: the ``lock()``/``Lock`` contract on one Redis server, for sites on several hosts.

Chosen by ``url=`` (or the ``PERLCOMPAT_LOCK_URL`` environment variable):
``redis://[user:password@]host:port/db``, ``rediss://...`` (TLS) or
``unix:///path/to/redis.sock?db=N``.  redis-py is imported only then.  The lock
``NAME`` lives in the URL's database as ``perlcompat:lock:NAME``.

The algorithm, one Lua script per step so that each step is atomic on the server:

* **Acquire**: ``SET perlcompat:lock:NAME "nonce pid host grant_ms" NX PX ttl`` with
  ``ttl = stale``, then ``INCR perlcompat:lock:NAME:fence`` for the holder's fencing
  token.  The value is unique to this acquisition; only its owner can release it.
* **Release**: compare and delete.  The key is deleted only if it still holds our
  value; a key that is gone or holds someone else's value is left alone and
  ``release()`` reports False (``Lock.release`` raises ``ExpiredLockError``).
* **Extend**: compare and ``PEXPIRE``: a long holder renews its lease, up to
  ``stale`` seconds from now; False once the lease was lost.
* **Expiry** is the server's TTL: a holder killed with SIGKILL frees the lock
  ``stale`` seconds after it took it, and not before.  ``break_stale`` has nothing
  to do and returns False.
* **Waiting**: a busy attempt marks ``NAME:waiting``; a release that sees the mark
  pushes one wake-up onto the list ``NAME:wake``, so a waiter blocked in ``BLPOP``
  (``wait_for_release``) retries at once.  A waiter never blocks past the holder's
  TTL nor ``WAIT_CAP`` seconds, so a lost wake-up costs at most that.
* **Fencing**: tokens grow by one per grant.  A counter found missing restarts at
  the server clock in microseconds, above every token handed out before, so tokens
  never go backwards, not even across a restart that lost the counter.
* **Restarts**: ``perlcompat:epoch`` (no TTL) records that the server's memory
  covers every live lease.  If it is missing, the server restarted empty, was
  flushed, or is new: a holder from before may still be working.  The first
  client to notice reads the server's uptime and stores the time from which
  grants may resume, ``stale`` seconds after the server started (the uptime is
  counted one second short, as ``INFO`` may round it up; at once on a server up
  longer than that); until then every attempt is busy and a warning says why.
  An operator who knows no lock is held may ``SET perlcompat:epoch 0``.
* **Errors**: anything but "busy" raises ``OSError`` with an errno
  (ECONNREFUSED, ENOENT, ECONNRESET, ETIMEDOUT, EACCES for bad credentials or
  ACLs, EAGAIN while the server loads, EROFS on a replica, ENOMEM, else EIO) and a
  message naming the lock and the URL, password hidden.  ``lock()`` turns it
  into 0 and ``$!``.  redis-py retries a command once, on a new connection,
  after a connection error: a retried acquire recognises its own grant; a
  retried release whose first try did delete reports the lock lost (a false
  alarm, never a silent unlock).

Guarantees: no two holders at once, provided the server keeps its memory or
restarts empty, holders finish (or ``extend``) within ``stale``, every user of
one lock name uses the same ``stale``, and the server evicts no keys
(``maxmemory-policy noeviction``).  Not covered: failover to an asynchronous
replica, a restore from an older snapshot, ``FLUSHALL`` on a long-running server.
This is a single-server lock, not Redlock.
"""

from __future__ import annotations

import errno
import os

from . import _api

try:
    import redis
    import redis.exceptions as _rx
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ModuleNotFoundError(
        "Redis locks need redis-py: pip install 'perlcompat-locks[redis]'"
    ) from exc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar

KEY_PREFIX = "perlcompat:lock:"
EPOCH_KEY = "perlcompat:epoch"

#: replies of the acquire script (first element)
GRANTED, BUSY, NO_EPOCH, HELD_OFF = 1, 0, -1, -2

# KEYS: lock, fence, epoch, waiting.  ARGV: owner, ttl ms, waiting-mark ms.
ACQUIRE = """
local epoch = redis.call('GET', KEYS[3])
if not epoch then return {-1, 0} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = tonumber(epoch) - now
local state = -2
if wait <= 0 then
  if redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. now, 'NX', 'PX', ARGV[2]) then
    local fence = redis.call('INCR', KEYS[2])
    if fence == 1 then
      fence = t[1] .. string.format('%06d', tonumber(t[2]))
      redis.call('SET', KEYS[2], fence)
    end
    return {1, now, fence}
  end
  local value = redis.call('GET', KEYS[1])
  if value and string.sub(value, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
    return {1, string.sub(value, #ARGV[1] + 2), redis.call('GET', KEYS[2])}
  end
  wait = redis.call('PTTL', KEYS[1])
  state = 0
end
redis.call('SET', KEYS[4], '1', 'PX', ARGV[3])
return {state, wait}
"""

# KEYS: lock, waiting, wake.  ARGV: our value, wake-list ms.
RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('DEL', KEYS[3])
  redis.call('RPUSH', KEYS[3], '1')
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
end
return 1
"""

# KEYS: lock.  ARGV: our value, ttl ms.
EXTEND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""

# KEYS: epoch.  ARGV: hold-off ms.
START_EPOCH = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], string.format('%.0f', now + tonumber(ARGV[1])))
return 1
"""

# KEYS: lock, fence.
DESCRIBE = """
local value = redis.call('GET', KEYS[1])
if not value then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {value, redis.call('PTTL', KEYS[1]), now, redis.call('GET', KEYS[2]) or '0'}
"""


class _Script:
    """A Lua script run by ``EVALSHA``, loaded by ``EVAL`` when the server lacks it."""

    __slots__ = ("sha", "text")

    def __init__(self, text: str) -> None:
        import hashlib

        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()

    def run(self, client: redis.Redis, keys: tuple[str, ...], args: tuple[object, ...]) -> Any:
        """Run on *client* with *keys* and *args*; return the raw reply."""
        execute: Callable[..., Any] = client.execute_command
        try:
            return execute("EVALSHA", self.sha, len(keys), *keys, *args)
        except _rx.NoScriptError:
            return execute("EVAL", self.text, len(keys), *keys, *args)


_ACQUIRE = _Script(ACQUIRE)
_RELEASE = _Script(RELEASE)
_EXTEND = _Script(EXTEND)
_START_EPOCH = _Script(START_EPOCH)
_DESCRIBE = _Script(DESCRIBE)

_SCHEMES = ("redis", "rediss", "unix")
_URL_HELP = "use redis://host:6379/0, rediss://host:6380/0 or unix:///path/to/redis.sock?db=0"

# url -> (client, url with the password hidden); redis-py clients are thread-safe
# and reset their connection pool after fork.
_clients: dict[str, tuple[redis.Redis, str]] = {}
# urls whose restart hold-off was already reported by this process
_warned: set[str] = set()
_host: list[str] = []


def redact(url: str) -> str:
    """Return *url* with any password replaced by ``***``."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        if parts.password is None and "password=" not in parts.query.lower():
            return url
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            name = user.partition(":")[0]
            netloc = f"{name}:***@{host}"
        query = "&".join(
            "password=***" if item.lower().startswith("password=") else item
            for item in parts.query.split("&")
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<unparsable url>"


def check_url(url: object) -> str:
    """Return *url* if it is a Redis URL redis-py can use, else raise ValueError/TypeError."""
    if not isinstance(url, str):
        raise TypeError(f"lock url must be a str, not {type(url).__name__}")
    from urllib.parse import urlsplit

    shown = redact(url)
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ValueError(f"lock url {shown!r} is not a Redis URL: {_URL_HELP}")
        if scheme == "unix":
            if not parts.path:
                raise ValueError(f"lock url {shown!r} names no socket path: {_URL_HELP}")
        else:
            parts.port  # noqa: B018 - raises ValueError for a bad port
            db = parts.path.strip("/")
            if db and not db.isdigit():
                raise ValueError(
                    f"lock url {shown!r}: the path must be a database number: {_URL_HELP}"
                )
    except ValueError as exc:
        if str(exc).startswith("lock url"):
            raise
        raise ValueError(f"lock url {shown!r} is malformed ({exc}): {_URL_HELP}") from None
    return url


def client_for(url: object) -> tuple[redis.Redis, str]:
    """Return (validated, unconnected client for *url*, *url* with its password hidden)."""
    known = _clients.get(url) if isinstance(url, str) else None
    if known is not None:
        return known
    url = check_url(url)
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    try:
        client = redis.Redis.from_url(
            url, retry=Retry(NoBackoff(), 1), socket_connect_timeout=5, socket_timeout=5
        )
        pool = client.connection_pool
        pool.connection_class(**pool.connection_kwargs)  # validates the query options
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"lock url {redact(url)!r} is not usable ({exc}): {_URL_HELP},"
            " with redis-py connection options in the query, as in ?socket_timeout=5"
        ) from None
    known = _clients[url] = (client, redact(url))
    return known


def _hostname() -> str:
    if not _host:
        import socket

        _host.append(socket.gethostname().replace(" ", "_") or "localhost")
    return _host[0]


def _pid_alive(pid: int) -> bool | None:
    import sys

    if sys.platform == "win32":
        return None  # os.kill(pid, 0) would terminate the process on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return None
    return True


def _cause_errno(exc: BaseException) -> int | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno:
            return seen.errno
        seen = seen.__cause__ or seen.__context__
    return None


def _errno_of(exc: Exception) -> int:
    """Return the errno that best describes the redis-py error *exc*."""
    # some classes are missing from older redis-py releases: isinstance(x, ()) is False
    refused = (
        _rx.AuthenticationError,
        getattr(_rx, "AuthenticationWrongNumberOfArgsError", ()),
        getattr(_rx, "NoPermissionError", ()),
    )
    if isinstance(exc, refused):
        return errno.EACCES
    if isinstance(exc, _rx.BusyLoadingError):
        return errno.EAGAIN
    if isinstance(exc, _rx.TimeoutError):
        return errno.ETIMEDOUT
    if isinstance(exc, _rx.ConnectionError):
        return _cause_errno(exc) or errno.ECONNRESET
    if isinstance(exc, _rx.ReadOnlyError):
        return errno.EROFS
    if isinstance(exc, getattr(_rx, "OutOfMemoryError", ())):
        return errno.ENOMEM
    return _cause_errno(exc) or errno.EIO


class Backend(_api.Backend):
    """A lease on ``perlcompat:lock:NAME`` in one Redis server (see the module docstring)."""

    method: ClassVar[str] = "redis"
    #: longest single block in ``wait_for_release``, in seconds.
    WAIT_CAP: ClassVar[float] = 0.5

    def __init__(
        self,
        path: str,
        *,
        stale: float,
        shared: bool = False,
        url: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(path, stale=stale, shared=shared, **options)
        if url is None:
            raise TypeError("the redis lock method needs url='redis://host:6379/0'")
        self._client, self.shown_url = client_for(url)
        self.url: str = url
        key = KEY_PREFIX + path
        self.key = key
        self._fence_key = key + ":fence"
        self._waiting_key = key + ":waiting"
        self._wake_key = key + ":wake"
        self._ttl_ms = max(1, round(stale * 1000))
        self._value: str | None = None
        self._fence: int | None = None
        self._busy_ms: int | None = None
        self.held_off = False

    # -- the contract ----------------------------------------------------
    def try_acquire(self) -> bool:
        """Make one attempt (one round trip); True if the lock is now held by us."""
        owner = f"{os.urandom(8).hex()} {os.getpid()} {_hostname()}"
        keys = (self.key, self._fence_key, EPOCH_KEY, self._waiting_key)
        args = (owner, self._ttl_ms, self._mark_ms())
        reply = self._run(_ACQUIRE, keys, args, "acquire")
        if reply[0] == NO_EPOCH:
            self._start_epoch()
            reply = self._run(_ACQUIRE, keys, args, "acquire")
        if reply[0] == GRANTED:
            _warned.discard(self.url)
            self._value = f"{owner} {int(reply[1])}"
            self._fence = int(reply[2])
            self._busy_ms = None
            self.held_off = False
            return True
        self._busy_ms = int(reply[1])  # -1: a key without TTL, not one of ours
        self.held_off = reply[0] == HELD_OFF
        if self.held_off:
            self._warn_held_off(self._busy_ms)
        return False

    def release(self) -> bool:
        """Delete the key if it still holds our value; True if it did."""
        value = self._value
        if value is None:
            return False
        self._value = None
        self._fence = None
        keys = (self.key, self._waiting_key, self._wake_key)
        reply = self._run(_RELEASE, keys, (value, self._mark_ms()), "release")
        return bool(reply == 1)

    def break_stale(self) -> bool:
        """Nothing to do: the server's TTL expires a dead holder's lock; always False."""
        return False

    @property
    def fencing_token(self) -> int | None:
        """The fencing token of our current hold (grows with every grant), else None."""
        return self._fence if self._value is not None else None

    def _forget(self) -> None:
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
        reply = self._run(_EXTEND, (self.key,), (value, ttl_ms), "extend")
        return bool(reply == 1)

    def wait_for_release(self, timeout: float | None = None) -> None:
        """Block until a release wakes us, the holder's TTL runs out, or *timeout*/WAIT_CAP s."""
        limit = self.WAIT_CAP
        if timeout is not None:
            limit = min(limit, timeout)
        if self._busy_ms is not None and self._busy_ms >= 0:
            limit = min(limit, self._busy_ms / 1000 + 0.002)
        if limit < 0.001:
            return
        try:
            self._client.blpop([self._wake_key], timeout=round(limit, 3))
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
            return (
                f"the server at {self.shown_url} lost its lock records;"
                f" grants resume in {seconds:.3g} s"
            )
        return f"held by another owner for up to {seconds:.3g} s more"

    def describe(self) -> dict[str, Any] | None:
        """Return the current holder (method, path, pid, host, alive, age ...), None if free."""
        reply = self._run(_DESCRIBE, (self.key, self._fence_key), (), "inspect")
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
        alive = _pid_alive(pid) if pid is not None and host == _hostname() else None
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
    def _mark_ms(self) -> int:
        return round(self.WAIT_CAP * 2000) + 1000

    def _run(
        self, script: _Script, keys: tuple[str, ...], args: tuple[object, ...], doing: str
    ) -> Any:
        try:
            return script.run(self._client, keys, args)
        except _rx.RedisError as exc:
            raise self._oserror(exc, doing) from exc

    def _oserror(self, exc: Exception, doing: str) -> OSError:
        number = _errno_of(exc)
        detail = str(exc) or type(exc).__name__
        if number == errno.EACCES:
            detail = f"the server refused our credentials or permissions: {detail}"
        message = f"cannot {doing} redis lock {self.path!r} at {self.shown_url}: {detail}"
        return OSError(number, message)

    def _start_epoch(self) -> None:
        """Record the server's epoch: grants resume ``stale`` s after the server started."""
        try:
            info = self._client.info("server")
            # whole seconds between two truncated clock readings: may overstate by up to 1 s
            uptime_ms = max(int(info["uptime_in_seconds"]) - 1, 0) * 1000
        except (_rx.ResponseError, KeyError, ValueError):
            uptime_ms = 0  # INFO refused by an ACL or renamed: assume it just started
        except _rx.RedisError as exc:
            raise self._oserror(exc, "acquire") from exc
        holdoff_ms = max(self._ttl_ms - uptime_ms, 0)
        self._run(_START_EPOCH, (EPOCH_KEY,), (holdoff_ms,), "acquire")

    def _warn_held_off(self, wait_ms: int) -> None:
        if self.url in _warned:
            return
        _warned.add(self.url)
        import warnings

        warnings.warn(
            f"perlcompat: the redis server at {self.shown_url} has no record of its locks"
            " (it restarted without persistence, was flushed, or is new); no lock is granted"
            f" there for {wait_ms / 1000:.3g} s more, so that a holder from before cannot"
            f" overlap. If no lock is held, lift this with: SET {EPOCH_KEY} 0",
            RuntimeWarning,
            stacklevel=2,
        )
