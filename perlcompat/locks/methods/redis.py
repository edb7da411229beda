"""Redis locks: the ``lock()``/``Lock`` contract on one Redis server, for sites on several hosts.

Chosen by ``url=`` (or the ``PERLCOMPAT_LOCK_URL`` environment variable):
``redis://[user:password@]host:port/db``, ``rediss://...`` (TLS) or
``unix:///path/to/redis.sock?db=N``.  redis-py is imported only then.  The lock
``NAME`` lives in the URL's database as ``perlcompat:lock:NAME``; its other keys
are ``perlcompat:fence:NAME``, ``perlcompat:waiting:NAME`` and
``perlcompat:wake:NAME``: one prefix per kind, so no lock name equals another
lock's internal key.

The algorithm, one Lua script per step so that each step is atomic on the server:

* **Acquire**: ``SET perlcompat:lock:NAME "nonce pid host grant_ms" NX PX ttl`` with
  ``ttl = stale``, then ``INCR perlcompat:fence:NAME`` for the holder's fencing
  token.  The value is unique to this acquisition; only its owner can release it.
* **Release**: compare and delete.  The key is deleted only if it still holds our
  value; a key that is gone or holds someone else's value is left alone and
  ``release()`` reports False (``Lock.release`` raises ``ExpiredLockError``).
* **Extend**: compare and ``PEXPIRE``: a long holder renews its lease, up to
  ``stale`` seconds from now; False once the lease was lost.
* **Expiry** is the server's TTL: a holder killed with SIGKILL frees the lock
  ``stale`` seconds after it took it, and not before.  ``break_stale`` has nothing
  to do and returns False.
* **Waiting**: a busy attempt marks ``perlcompat:waiting:NAME``; a release that
  sees the mark pushes one wake-up onto the list ``perlcompat:wake:NAME``, so a
  waiter blocked in ``BLPOP`` (``wait_for_release``) retries at once.  A waiter
  never blocks past the holder's TTL nor ``WAIT_CAP`` seconds, so a lost wake-up
  costs at most that.
* **Fencing**: tokens grow by one per grant.  A counter found missing, or not above
  the epoch's ``resume_ms`` (in microseconds: a counter restored from a snapshot),
  restarts at the server clock in microseconds, above every token handed out
  before, so tokens never go backwards, not even across a restart.
* **Restarts**: ``perlcompat:epoch`` (no TTL) holds ``"resume_ms max_lease_ms
  run_id"``: grants resume at ``resume_ms`` (server clock), no grant is longer than
  ``max_lease_ms``, and the record was made by the run of the server whose ``INFO``
  ``run_id`` it names.  The max lease is one setting for every client of a server
  (``?max_lease=`` in the URL, else ``PERLCOMPAT_REDIS_MAX_LEASE``, else
  ``MAX_LEASE``); a client whose ``stale`` exceeds it is refused (ValueError).
  If the epoch is missing, the server restarted empty, was flushed, or is new; if
  it names another ``run_id`` (the acquire script reads ``INFO server`` before a
  grant), the server restarted and restored an older snapshot.  Either way a holder
  from before may still be working, for up to one max lease.  The first client to
  notice checks that the server cannot evict a held key (``CONFIG GET
  maxmemory*``: a ``maxmemory`` with another policy than ``noeviction`` is refused,
  EOPNOTSUPP; a refused ``CONFIG`` is taken as fine) and runs ``START_EPOCH``,
  which records a resume time one *max lease* (the larger of its own and the
  recorded one, not its ``stale``) after the server started (the uptime is counted
  one second short, as ``INFO`` may round it up; at once on a server up longer than
  that).  A missing epoch on a server whose ``INFO commandstats`` counts a
  ``FLUSHALL``, ``FLUSHDB`` or ``SWAPDB`` since its start (or that refuses
  ``INFO``) holds off one max lease from now instead.  Until then every attempt is
  busy and a warning says why.  So the hold-off covers every lease any client could
  hold, whichever client comes back first.  Not detected: a flush before a ``CONFIG
  RESETSTAT``, keys deleted by hand, a restart when the clients' user may not run
  ``INFO``.  A record naming no server (``SET perlcompat:epoch 0``, an older
  release, a client without ``INFO``) is adopted as it is.  A client configured
  with a smaller max lease than the one recorded is refused (``MaxLeaseError``, an
  OSError with EINVAL and a ValueError; ``lock()`` returns 0): after the next
  restart it could hold off too briefly.  A larger one raises the record.  An
  operator who knows no lock is held may ``SET perlcompat:epoch 0``; the next
  client records its max lease there.
* **Timeouts**: every request (connect, TLS handshake, command) must answer within
  the caller's remaining patience (``Lock.acquire`` sets ``Backend.deadline``), but
  gets at least ``MIN_TIMEOUT`` and at most the URL's ``socket_timeout`` /
  ``socket_connect_timeout`` (5 s by default).  ``getaddrinfo()`` has no
  timeout, so a new connection to a host name (not an IP address) is opened in
  a helper thread: resolving, connecting and handshake get the connect plus the
  read timeout in all, then the thread is left to close what it opens.  Without
  a deadline (release, extend, inspection, ``retry=None``) those maxima apply;
  a release for cleanup at exit or on a signal gets ``CLEANUP_TIMEOUT``.  No answer in time is
  ETIMEDOUT, never "busy": a stopped server is not a held lock.  A pooled
  connection that fails at once (closed by a restart) is replaced by a fresh one,
  once; a timeout is not retried.  An acquire whose answer was lost may still
  be granted later (a stopped server that resumes runs what it had received):
  this process's next attempt at that lock reuses its owner value and so adopts
  that grant, renewed to a full lease; otherwise it lapses with its lease.
* **Errors**: anything but "busy" raises ``OSError`` with an errno
  (ECONNREFUSED, ENOENT, ECONNRESET, ETIMEDOUT, EACCES for bad credentials or
  ACLs, EAGAIN while the server loads, EROFS on a replica, ENOMEM, EINVAL for a
  host name that does not resolve, as Perl's IO::Socket, EINVAL for a max lease
  below the record, EOPNOTSUPP for a server that may evict keys, else EIO) and a
  message naming the lock, the URL (secrets hidden: :func:`redact`) and the cause.  Error
  replies are classified by their code and text, not only by redis-py's class
  (4.2 leaves WRONGPASS and OOM plain), and a missing password is EACCES
  whatever the server answers first: NOAUTH, a refused ``HELLO`` (redis-py 8
  speaks RESP3) or Redis 7's "Protocol error: unauthenticated multibulk length"
  for a command of more than 10 arguments.  ``lock()`` turns it into 0 and
  ``$!``.  A request retried on a fresh connection after a connection error
  repeats its arguments: a retried acquire recognises its own grant; a retried
  release whose first try did delete reports the lock lost (a false alarm,
  never a silent unlock).  redis-py is used for URLs, connections and the
  protocol; requests are sent and read here, each with its own timeout.

Guarantees: no two holders at once, provided holders finish (or ``extend``)
within ``stale``, every client of one server uses the same max lease, the
server's eviction policy stays as checked, and the clients may run ``INFO``
(else a restart that restores a snapshot goes unseen).  Restarts (empty or from
a snapshot) and flushes are covered as above.  Not covered: failover to an
asynchronous replica (its ``run_id`` differs, but the hold-off counts from its
own start), keys deleted by hand.  This is a single-server lock, not Redlock.
"""

from __future__ import annotations

import errno
import os
import time

from ..contract import Backend, register

try:
    import redis
    import redis.exceptions as _rx
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ModuleNotFoundError(
        "Redis locks need redis-py: pip install 'perlcompat-locks[redis]'"
    ) from exc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

KEY_PREFIX = "perlcompat:lock:"
#: the other keys of lock NAME: each kind has its own prefix, so no lock name can
#: equal another lock's internal key (``perlcompat:lock:q:wake`` is only lock "q:wake").
FENCE_PREFIX = "perlcompat:fence:"
WAITING_PREFIX = "perlcompat:waiting:"
WAKE_PREFIX = "perlcompat:wake:"
EPOCH_KEY = "perlcompat:epoch"

#: seconds: the longest lease (``stale``) of any client of one server, and the
#: hold-off after the server lost its memory; ``?max_lease=`` or the environment
#: variable ``MAX_LEASE_ENV`` set another (the same for every client).
MAX_LEASE = 180.0
MAX_LEASE_ENV = "PERLCOMPAT_REDIS_MAX_LEASE"
#: seconds: connect and read timeouts when the URL sets none.
DEFAULT_TIMEOUT = 5.0
#: seconds: the least a request gets, even when the caller's patience is shorter.
MIN_TIMEOUT = 0.5
#: seconds: a release for cleanup at exit or on a signal gets this much.
CLEANUP_TIMEOUT = 1.0

#: replies of the acquire script (first element)
GRANTED, BUSY, NO_EPOCH, HELD_OFF, MAX_LEASE_CONFLICT, RESTARTED = 1, 0, -1, -2, -3, -4

# The epoch: "resume_ms max_lease_ms run_id" (older records: "resume_ms max_lease_ms", "0").
# KEYS: lock, fence, epoch, waiting.  ARGV: owner, ttl ms, waiting-mark ms, max lease ms.
ACQUIRE = """
local epoch = redis.call('GET', KEYS[3])
if not epoch then return {-1, 0} end
local mine = tonumber(ARGV[4])
local resume, max, run = string.match(epoch, '^(%d+) (%d+) (%x+)$')
if not resume then resume, max = string.match(epoch, '^(%d+) (%d+)$') end
if resume then
  resume, max = tonumber(resume), tonumber(max)
else
  resume, max = tonumber(epoch), 0
  if not resume then
    return redis.error_reply('ERR ' .. KEYS[3] .. ' is not "resume_ms max_lease_ms run_id"')
  end
end
if tonumber(ARGV[2]) > mine then return {-3, mine} end
if mine < max then return {-3, max} end
if mine > max then
  redis.call('SET', KEYS[3], string.format('%.0f %.0f', resume, mine) .. (run and ' ' .. run or ''))
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = resume - now
local state = -2
if wait <= 0 then
  local value = redis.call('GET', KEYS[1])
  if not value then
    local info = redis.pcall('INFO', 'server')
    local id = type(info) == 'string' and string.match(info, 'run_id:(%x+)')
    if id and id ~= run then return {-4, run or ''} end
    redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. now, 'PX', ARGV[2])
    local fence = redis.call('INCR', KEYS[2])
    if fence == 1 or fence <= resume * 1000 then
      fence = t[1] .. string.format('%06d', tonumber(t[2]))
      redis.call('SET', KEYS[2], fence)
    end
    return {1, now, fence}
  end
  if string.sub(value, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
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

# KEYS: epoch.  ARGV: max lease ms.  Returns 0 nothing to do, 1 the record adopted (it named
# no server), 2 restarted (held off from the start), 3 missing (from the start), 4 flushed
# (from now).  Without INFO (an ACL), a missing record holds off from now.
START_EPOCH = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])
local info = redis.pcall('INFO', 'server')
local id, uptime = false, false
if type(info) == 'string' then
  id = string.match(info, 'run_id:(%x+)')
  uptime = tonumber(string.match(info, 'uptime_in_seconds:(%d+)'))
end
local started = now  -- the server's start; unknown: as if now
if uptime then  -- whole seconds between two truncated clock readings: may be 1 s too many
  started = now - math.max(uptime - 1, 0) * 1000
end
local epoch = redis.call('GET', KEYS[1])
local code, resume = 3, started + max
if epoch then
  local r, m, run = string.match(epoch, '^(%d+) (%d+) (%x+)$')
  if not r then r, m = string.match(epoch, '^(%d+) (%d+)$') end
  if not r then r, m = tonumber(epoch), 0 end
  if not r then
    return redis.error_reply('ERR ' .. KEYS[1] .. ' is not "resume_ms max_lease_ms run_id"')
  end
  r, m = tonumber(r), tonumber(m)
  if m > max then max = m end
  if not id or run == id then return 0 end
  code, resume = 1, r  -- a record naming no server (set by hand, or without INFO): ours now
  if run then code, resume = 2, math.max(r, started + max) end  -- another run of the server
elseif uptime then  -- missing: lost in a flush, or never set on this run of the server
  local stats = redis.pcall('INFO', 'commandstats')
  local flushed = type(stats) ~= 'string'
  if not flushed then
    for _, name in ipairs({'flushall', 'flushdb', 'swapdb'}) do
      local calls = string.match(stats, 'cmdstat_' .. name .. ':calls=(%d+)')
      if calls and tonumber(calls) > 0 then flushed = true end
    end
  end
  if flushed then code, resume = 4, now + max end
end
redis.call('SET', KEYS[1], string.format('%.0f %.0f', resume, max) .. (id and ' ' .. id or ''))
return code
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


_ACQUIRE = _Script(ACQUIRE)
_RELEASE = _Script(RELEASE)
_EXTEND = _Script(EXTEND)
_START_EPOCH = _Script(START_EPOCH)
_DESCRIBE = _Script(DESCRIBE)

_SCHEMES = ("redis", "rediss", "unix")
_URL_HELP = "use redis://host:6379/0, rediss://host:6380/0 or unix:///path/to/redis.sock?db=0"
_MAX_LEASE_HELP = f"set one for every client with ?max_lease=SECONDS or {MAX_LEASE_ENV}"


class _Server:
    """One Redis URL: how to connect, this process's idle connections, timeouts, max lease.

    redis-py's own pool and client are not used for requests: a request here
    sets its connection's timeouts to what the caller can still wait.
    Connections are used by one thread at a time and dropped after a fork.
    """

    def __init__(self, url: str) -> None:
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.shown_url = redact(url)
        redis_url, self.max_lease = _split_max_lease(url, self.shown_url)
        try:
            pool = redis.ConnectionPool.from_url(
                redis_url,
                retry=Retry(NoBackoff(), 0),  # a retry here is ours, within the patience
                socket_connect_timeout=DEFAULT_TIMEOUT,
                socket_timeout=DEFAULT_TIMEOUT,
            )
            self.make: Any = pool.connection_class
            self.kwargs: dict[str, Any] = dict(pool.connection_kwargs)
            try:
                self.make(**self.kwargs)  # validates the query options
            except TypeError:  # redis-py < 4.3: Unix sockets take no connect timeout
                if "socket_connect_timeout" in redis_url:
                    raise
                del self.kwargs["socket_connect_timeout"]
                self.make(**self.kwargs)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"lock url {self.shown_url!r} is not usable ({scrub(str(exc), url)}): {_URL_HELP},"
                " with redis-py connection options in the query, as in ?socket_timeout=5"
            ) from None
        self.read_cap = _positive(self.kwargs.get("socket_timeout"), DEFAULT_TIMEOUT)
        self.connect_cap = _positive(self.kwargs.get("socket_connect_timeout"), self.read_cap)
        self.idle: list[Any] = []
        self.pid = os.getpid()

    def request(self, command: tuple[object, ...], timeout: float, hold: float = 0.0) -> Any:
        """Send *command* and return its reply (a ResponseError is raised).

        Connecting (TLS included) and each read get *timeout* seconds, capped by
        the URL's timeouts; the read *hold* seconds more (a blocking command).
        """
        if self.pid != os.getpid():  # forked: the parent's sockets are not ours
            self.idle = []
            self.pid = os.getpid()
        connect_timeout = min(timeout, self.connect_cap)
        read_timeout = min(timeout, self.read_cap) + hold
        started = time.monotonic()
        for fresh in (False, True):
            try:  # pop() is atomic: another thread may take the last one
                conn = None if fresh else self.idle.pop()
            except IndexError:
                conn = None
            reused = conn is not None
            try:
                if conn is None:
                    conn = self.make(**self.kwargs)
                if getattr(conn, "_sock", None) is None:
                    reused = False
                    conn.socket_connect_timeout = connect_timeout
                    conn.socket_timeout = read_timeout
                    self._open(conn, connect_timeout + min(timeout, self.read_cap))
                sock = conn._sock
                if sock.gettimeout() != read_timeout:
                    sock.settimeout(read_timeout)
                conn.send_command(*command)
                reply = conn.read_response()
            except _rx.ResponseError as exc:
                if conn is not None and str(exc).startswith("Protocol error"):
                    conn.disconnect()  # the server closes the connection after it
                elif conn is not None:
                    self.idle.append(conn)  # an error reply: the connection is in step
                if _refusal(exc) == "auth" and not isinstance(exc, _rx.AuthenticationError):
                    raise _rx.AuthenticationError(str(exc)) from None  # not "INFO refused"
                raise
            except BaseException as exc:
                if conn is not None and not isinstance(exc, _Abandoned):
                    conn.disconnect()
                if isinstance(exc, OSError):  # from the socket itself, not redis-py
                    exc = _rx.ConnectionError(f"{type(exc).__name__}: {exc}")  # errno: context
                if (
                    reused
                    and isinstance(exc, _rx.ConnectionError)
                    and time.monotonic() - started < timeout
                ):
                    continue  # a connection closed meanwhile (a restart): once more, fresh
                if isinstance(exc, _rx.TimeoutError):
                    raise _rx.TimeoutError(
                        f"no answer within {time.monotonic() - started:.2g} s ({exc})"
                    ) from None
                raise exc
            self.idle.append(conn)
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def _open(self, conn: Any, limit: float) -> None:
        """``conn.connect()``, given up after *limit* seconds even while a host name resolves.

        ``getaddrinfo()`` has no timeout: for a host name (not an IP address) the
        connection is opened in a helper thread, and closed by it if we gave up.
        """
        host = self.kwargs.get("host")
        if not isinstance(host, str) or _is_ip(host):
            conn.connect()
            return
        import threading

        outcome: list[BaseException | None] = []
        guard = threading.Lock()

        def opening() -> None:
            error: BaseException | None = None
            try:
                conn.connect()
            except BaseException as exc:
                error = exc
            with guard:
                if outcome:  # abandoned
                    conn.disconnect()
                else:
                    outcome.append(error)

        thread = threading.Thread(target=opening, name="perlcompat-redis-connect", daemon=True)
        thread.start()
        try:
            thread.join(limit)  # a signal handler's exception (alarm) ends it too
        finally:
            with guard:
                finished = bool(outcome)
                if not finished:
                    outcome.append(None)  # abandoned: the thread closes what it opens
        if not finished:
            raise _Abandoned(
                f"Timeout connecting to {host}: resolving its name and connecting"
                f" took longer than {limit:.2g} s"
            )
        error = outcome[0]
        if error is not None:
            raise error

    def run(
        self, script: _Script, keys: tuple[str, ...], args: tuple[object, ...], timeout: float
    ) -> Any:
        """Run *script* by ``EVALSHA`` (``EVAL`` if the server lacks it); return the reply."""
        try:
            return self.request(("EVALSHA", script.sha, len(keys), *keys, *args), timeout)
        except _rx.NoScriptError:
            return self.request(("EVAL", script.text, len(keys), *keys, *args), timeout)


class MaxLeaseError(OSError, ValueError):
    """This client's max lease is below the one recorded on the server (errno EINVAL)."""


class _Abandoned(_rx.TimeoutError):
    """A connection still being opened (a host name resolving) when its time ran out."""


def _is_ip(host: str) -> bool:
    """True if *host* is an IPv4 or IPv6 address (nothing to resolve)."""
    import socket

    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return True
    return False


def _text(value: object) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _positive(value: object, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and value > 0 else default


def _seconds(text: str, what: str) -> float:
    """Parse a max lease given as text; ValueError naming *what* unless it is > 0 and finite."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError(f"{what} must be a number of seconds > 0, not {text!r}")
    return value


def _split_max_lease(url: str, shown: str) -> tuple[str, float | None]:
    """Return (*url* without ``max_lease=``, its value or None)."""
    base, mark, query = url.partition("?")
    if not mark:
        return url, None
    fragment = ""
    if "#" in query:
        query, _, fragment = query.partition("#")
        fragment = "#" + fragment
    kept = []
    found: float | None = None
    for item in query.split("&"):
        name, _, value = item.partition("=")
        if name == "max_lease":
            found = _seconds(value, f"max_lease in lock url {shown!r}")
        else:
            kept.append(item)
    rest = "&".join(kept)
    return base + ("?" + rest if rest else "") + fragment, found


# url -> its server; one per URL and process, shared by threads.
_servers: dict[str, _Server] = {}
# (url, key) -> owner of an acquire of this process whose answer was lost (a timeout, a
# dropped connection): the server may still grant it, e.g. when a stopped server resumes.
# The next attempt at that lock here takes the owner over, and so adopts such a grant.
_unanswered: dict[tuple[str, str], str] = {}
# urls whose restart hold-off was already reported by this process
_warned: set[str] = set()
# (url, errno) of refusals (eviction, max lease) already reported by this process
_refused: set[tuple[str, int]] = set()
_host: list[str] = []


def redact(url: str) -> str:
    """Return *url* with its secrets replaced by ``***``, failing closed.

    Hidden: everything between ``://`` and the last ``@`` (user and password,
    even one with an unencoded ``/``, ``#``, ``?`` or ``@``), and the value, up to
    the next ``&``, of every query key that names a secret once percent-decoded
    (``password``, ``ssl_password``, ``Pass%77ord``: any key containing pass,
    pwd, secret or token).  Where the two overlap both are hidden.
    """
    import re
    from urllib.parse import unquote_plus

    start = url.find("://")
    start = 0 if start < 0 else start + 3
    hidden = [False] * len(url)
    at = url.rfind("@")
    if at >= start:
        hidden[start:at] = [True] * (at - start)
    for found in re.finditer(r"[?&]([^=&]*)=([^&]*)", url[start:]):
        name = unquote_plus(found.group(1)).lower()
        if any(word in name for word in _SECRET_KEYS):
            hidden[start + found.start(2) : start + found.end(2)] = [True] * len(found.group(2))
    shown = []
    for i, char in enumerate(url):
        if not hidden[i]:
            shown.append(char)
        elif i == 0 or not hidden[i - 1]:
            shown.append("***")
    return "".join(shown)


#: what in a query key, percent-decoded and lower-cased, names a secret.
_SECRET_KEYS = ("pass", "pwd", "secret", "token")


def _secrets(url: str) -> list[str]:
    """The secret parts of *url* that :func:`redact` hides, raw and percent-decoded."""
    from urllib.parse import unquote, unquote_plus

    rest = url.partition("://")[2] or url
    found = []
    if "@" in rest:
        found.append(rest.rpartition("@")[0])
    for item in rest.rpartition("@")[2].partition("?")[2].split("&"):
        key, eq, value = item.partition("=")
        if eq and value and any(word in unquote_plus(key).lower() for word in _SECRET_KEYS):
            found.append(value)
    found += [unquote(text) for text in found] + [unquote_plus(text) for text in found]
    for text in list(found):  # and a password alone, as a client library may quote it
        _user, colon, password = text.partition(":")
        if colon and password:
            found.append(password)
    return sorted({text for text in found if text}, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """*text* (an error message about *url*) with every secret of *url* replaced by ``***``."""
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text


def check_url(url: object) -> str:
    """Return *url* if it is a Redis URL redis-py can use, else raise ValueError/TypeError."""
    if not isinstance(url, str):
        raise TypeError(f"lock url must be a str, not {type(url).__name__}")
    from urllib.parse import urlsplit

    shown = redact(url)
    rest = url.partition("://")[2]
    netloc = rest[: min([len(rest)] + [i for i in map(rest.find, "/?#") if i >= 0])]
    if url.rfind("@") > url.find("://") + 2 + len(netloc) or "#" in url:
        raise ValueError(  # urllib would cut a password there and show the rest as a host
            f"lock url {shown!r} is malformed: a / ? or # in the user name or password, a #"
            f" anywhere and an @ after the host must be percent-encoded (%2F %3F %23 %40):"
            f" {_URL_HELP}"
        )
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ValueError(f"lock url {shown!r} is not a Redis URL: {_URL_HELP}")
        if scheme == "unix":
            if not parts.path:
                raise ValueError(f"lock url {shown!r} names no socket path: {_URL_HELP}")
        else:
            try:
                parts.port  # noqa: B018 - raises ValueError for a bad port
            except ValueError:  # (urllib's message quotes the port: a piece of a password)
                raise ValueError(
                    f"lock url {shown!r} is malformed: the port is not a number from 0 to"
                    " 65535; a / ? # or @ in a password must be percent-encoded"
                    f" (%2F %3F %23 %40): {_URL_HELP}"
                ) from None
            db = parts.path.strip("/")
            if db and not db.isdigit():
                raise ValueError(
                    f"lock url {shown!r}: the path must be a database number: {_URL_HELP}"
                )
    except ValueError as exc:
        if str(exc).startswith("lock url"):
            raise
        why = scrub(str(exc), url)
        raise ValueError(f"lock url {shown!r} is malformed ({why}): {_URL_HELP}") from None
    return url


def server_for(url: object) -> _Server:
    """Return the (validated, unconnected) server for *url*."""
    known = _servers.get(url) if isinstance(url, str) else None
    if known is None:
        url = check_url(url)
        known = _servers[url] = _Server(url)
    return known


def max_lease_of(server: _Server) -> float:
    """The max lease for *server*: its URL's ``max_lease``, else the environment, else MAX_LEASE."""
    if server.max_lease is not None:
        return server.max_lease
    text = os.environ.get(MAX_LEASE_ENV)
    return MAX_LEASE if not text else _seconds(text, MAX_LEASE_ENV)


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
    """The errno of the first OSError behind *exc*; EINVAL for a host name that did not resolve."""
    import socket

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror):  # its errno is an EAI_* code, not an errno
            return errno.EINVAL  # as Perl's IO::Socket: "Invalid argument"
        if isinstance(seen, OSError) and seen.errno:
            return seen.errno
        seen = seen.__cause__ or seen.__context__
    return None


# Error replies are classified by their code (first word) and text, not only by
# redis-py's class: older releases leave WRONGPASS, OOM ... as plain ResponseError.
_AUTH_CODES = ("WRONGPASS", "NOAUTH")
_AUTH_TEXTS = (
    "Protocol error: unauthenticated",  # Redis 7: a large command before AUTH
    "AUTH <password> called without any password configured",
    "Client sent AUTH, but no password is set",
    "invalid password",
    "invalid username-password pair",
    "Authentication required",
)
_ACL_TEXTS = ("NOPERM", "no permissions to", "can't run this command")
_CODE_ERRNOS = {"OOM": errno.ENOMEM, "LOADING": errno.EAGAIN, "READONLY": errno.EROFS}


def _refusal(exc: BaseException) -> str:
    """``"auth"`` for refused credentials, ``"acl"`` for an ACL refusal, else ``""``."""
    text = str(exc)
    if isinstance(exc, _rx.NoPermissionError) or any(t in text for t in _ACL_TEXTS):
        return "acl"
    if (
        isinstance(exc, (_rx.AuthenticationError, _rx.AuthenticationWrongNumberOfArgsError))
        or text.split(" ", 1)[0] in _AUTH_CODES
        or text.startswith(_AUTH_TEXTS)
    ):
        return "auth"
    return ""


def _errno_of(exc: Exception) -> int:
    """Return the errno that best describes the redis-py error *exc*."""
    if _refusal(exc):
        return errno.EACCES
    if isinstance(exc, _rx.BusyLoadingError):
        return errno.EAGAIN
    if isinstance(exc, _rx.TimeoutError):
        return errno.ETIMEDOUT
    if isinstance(exc, _rx.ConnectionError):
        return _cause_errno(exc) or errno.ECONNRESET
    if isinstance(exc, _rx.ReadOnlyError):
        return errno.EROFS
    # redis-py 4.2 lacks OutOfMemoryError (its OOM is a ResponseError): isinstance(x, ()) is False
    if isinstance(exc, getattr(_rx, "OutOfMemoryError", ())):
        return errno.ENOMEM
    if isinstance(exc, _rx.ResponseError):
        code = _CODE_ERRNOS.get(str(exc).split(" ", 1)[0])
        if code is not None:
            return code
    return _cause_errno(exc) or errno.EIO


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
        owner = owner or f"{os.urandom(8).hex()} {pid} {_hostname()}"
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
            _warned.discard(self.url)
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

    def describe(self) -> dict[str, Any] | None:
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
        if self.url in _warned:
            return
        _warned.add(self.url)
        from .. import log as _log

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

    # -- the hold-off explained (issue 25: a new user's first lock) --------
    def _held_off_text(self, seconds: float) -> str:
        return (
            f"the redis server at {self.shown_url} has no record of its locks (it is new,"
            f" restarted or was flushed), so it grants no lock for {seconds:.3g} s more"
            f" (one max lease, {self.max_lease:g} s, after it started or was flushed), so"
            " that a holder from before cannot overlap"
        )

    def _ways_out(self) -> str:
        return (
            "on a fresh install, or when no process can still hold a lock from before,"
            f" lift it now with: perlcompat redis-lift {self.shown_url}"
            f" (or SET {EPOCH_KEY} 0); to make every hold-off shorter, give every client"
            " ?max_lease=SECONDS (your longest stale) in its lock url before first use"
        )


# The hold-off lifted by hand (``perlcompat redis-lift``).  KEYS: epoch.  ARGV: the lock key
# prefix, "1" to lift.  Returns {ms of hold-off left (-1: no record yet, the first client
# holds off), the lock keys that exist}; lifts (SET epoch 0) only when there are none.
LIFT = """
local cursor, held = '0', {}
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1] .. '*', 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do held[#held + 1] = k end
until cursor == '0'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = redis.call('GET', KEYS[1])
local left = -1
if epoch then
  local resume = tonumber(string.match(epoch, '^(%d+)'))
  if resume then left = math.max(resume - now, 0) end
end
if ARGV[2] == '1' and #held == 0 then redis.call('SET', KEYS[1], '0') end
return {left, held}
"""
_LIFT = _Script(LIFT)


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
