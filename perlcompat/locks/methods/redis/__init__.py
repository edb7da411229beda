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

The package, cut on these seams:

* ``backend``: :class:`RedisBackend`, the contract's operations on one lock;
* ``scripts``: the keys, the acquire step's replies and the Lua scripts (the protocol);
* ``connection``: one server per URL and process, each request with its own timeout;
* ``url``: URL parsing, the max lease option, secrets hidden, errors given an errno;
* ``holdoff``: the first-use hold-off, read, explained and lifted (``perlcompat redis-lift``).

Its public names (``ACQUIRE``, ``MaxLeaseError``, ``hold_off`` ...) are importable from here.
"""

from __future__ import annotations

try:
    import redis  # noqa: F401 - the extra's check, before any module of the package needs it
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ModuleNotFoundError(
        "Redis locks need redis-py: pip install 'perlcompat-locks[redis]'"
    ) from exc

from .backend import CLEANUP_TIMEOUT, MaxLeaseError, RedisBackend
from .connection import DEFAULT_TIMEOUT, MIN_TIMEOUT, max_lease_of, server_for
from .holdoff import hold_off
from .scripts import (
    ACQUIRE,
    BUSY,
    DESCRIBE,
    EPOCH_KEY,
    EXTEND,
    FENCE_PREFIX,
    GRANTED,
    HELD_OFF,
    KEY_PREFIX,
    LIFT,
    MAX_LEASE_CONFLICT,
    NO_EPOCH,
    RELEASE,
    RESTARTED,
    START_EPOCH,
    WAITING_PREFIX,
    WAKE_PREFIX,
)
from .url import MAX_LEASE, MAX_LEASE_ENV, check_url, redact, scrub

__all__ = [
    "ACQUIRE",
    "BUSY",
    "CLEANUP_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "DESCRIBE",
    "EPOCH_KEY",
    "EXTEND",
    "FENCE_PREFIX",
    "GRANTED",
    "HELD_OFF",
    "KEY_PREFIX",
    "LIFT",
    "MAX_LEASE",
    "MAX_LEASE_CONFLICT",
    "MAX_LEASE_ENV",
    "MIN_TIMEOUT",
    "NO_EPOCH",
    "RELEASE",
    "RESTARTED",
    "START_EPOCH",
    "WAITING_PREFIX",
    "WAKE_PREFIX",
    "MaxLeaseError",
    "RedisBackend",
    "check_url",
    "hold_off",
    "max_lease_of",
    "redact",
    "scrub",
    "server_for",
]
