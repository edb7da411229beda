"""The connection layer: a :class:`_Server` per URL and process, a timeout per request.

redis-py parses the URL, opens connections and speaks the protocol; requests are
sent and read here, so that each gets what is left of the caller's patience
(the package docstring, "Timeouts").
"""

from __future__ import annotations

import os
import time

import redis
import redis.exceptions as _rx

from .url import (
    _URL_HELP,
    MAX_LEASE,
    MAX_LEASE_ENV,
    _refusal,
    _seconds,
    _split_max_lease,
    check_url,
    redact,
    scrub,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .scripts import _Script

#: seconds: connect and read timeouts when the URL sets none.
DEFAULT_TIMEOUT = 5.0
#: seconds: the least a request gets, even when the caller's patience is shorter.
MIN_TIMEOUT = 0.5


class _Server:
    """One Redis URL: how to connect, this process's idle connections, timeouts, max lease.

    redis-py's own pool and client are not used for requests: a request here
    waits for its reply only as long as the caller can still wait, by redis-py's
    public ``can_read(timeout)`` where that differs from the connection's own
    ``socket_timeout`` (set when it was opened, for the request that opened it).
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
            reused = conn is not None  # an idle connection is an open one
            sent = False
            try:
                if conn is None:
                    conn = self.make(**self.kwargs)
                    conn.socket_connect_timeout = connect_timeout
                    conn.socket_timeout = min(timeout, self.read_cap)  # also the handshake's
                    self._open(conn, connect_timeout + min(timeout, self.read_cap))
                conn.send_command(*command)
                sent = True
                if read_timeout != conn.socket_timeout and not conn.can_read(read_timeout):
                    raise _rx.TimeoutError("Timeout reading from the server")  # (no reply yet)
                reply = conn.read_response()
            except _rx.ResponseError as exc:
                if conn is not None and (not sent or str(exc).startswith("Protocol error")):
                    conn.disconnect()  # refused while connecting, or closed by the server
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


# url -> its server; one per URL and process, shared by threads.
_servers: dict[str, _Server] = {}


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
