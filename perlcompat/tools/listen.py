"""A listening socket for ``perlcompat serve --fastcgi``: TCP, or a unix socket made safely.

A unix socket is created with mode 0660 (no window with wider permissions); one
left by a dead server is replaced, anything else at the path is refused.  TCP,
loopback included, is open to every local user.  :class:`Doorman` decides who gets
a connection (caps, idle time-out, EMFILE); :func:`peer_of` names who is at the other
end (the user on a unix socket, the address on TCP).
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import stat
import struct
import sys
import time
from collections import Counter

from .request import Connection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

assert sys.platform != "win32"  # AF_UNIX and fork: the serve command says so on Windows

#: seconds accepting waits after running out of descriptors with no idle connection to close.
ACCEPT_PAUSE = 0.5
#: seconds a connection must have been idle before it is closed to make room for another
#: (one just accepted has not had the time to send its request).
EVICT_AGE = 1.0


def listen(address: str) -> socket.socket:
    """A listening socket for ``HOST:PORT``, ``PORT`` (127.0.0.1) or ``unix:PATH`` (mode 0660)."""
    if address.startswith("unix:"):
        path = address[5:]
        if not path:
            raise ValueError("unix: needs a path, as in unix:/run/perlcompat.sock")
        _remove_stale_socket(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o117)  # created as 0660: no window with wider permissions
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, 0o660)
    else:
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{address!r} is not HOST:PORT, PORT or unix:PATH")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port)))
    sock.listen(128)
    return sock


def _remove_stale_socket(path: str) -> None:
    """Remove a unix socket left by a dead server; refuse anything else at *path*."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise ValueError(f"{path} exists and is not a socket; not replacing it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        os.unlink(path)  # nobody listens: a dead server's socket
        return
    finally:
        probe.close()
    raise ValueError(f"{path}: another server is listening there")


def peer_of(sock: socket.socket) -> str:
    """``uid:N`` of the process at the other end of a unix socket; the address for TCP.

    Over TCP every local user has the same loopback address: the cap per peer then
    tells no local user from another (one more reason for a unix socket).
    """
    if sock.family == socket.AF_UNIX:
        so_peercred = getattr(socket, "SO_PEERCRED", None)
        if so_peercred is not None:
            try:
                creds = sock.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i"))
                return f"uid:{struct.unpack('3i', creds)[2]}"
            except OSError:
                pass
        return "unix"
    try:
        return str(sock.getpeername()[0])
    except OSError:
        return "?"


class Doorman:
    """Who gets a connection: the accepting side of the server.

    At most *max_connections*, one peer (:func:`peer_of`) at most half of them.  A
    connection with no complete request (idle between requests, or one coming in too
    slowly) is closed after *idle_timeout* seconds.  When full, or out of descriptors
    (EMFILE), the connection idle longest is closed for the new one; with none idle,
    the listener is not watched for :data:`ACCEPT_PAUSE` seconds (EMFILE) or until a
    connection ends, so a listener that stays readable never makes the loop spin.
    Only a connection idle for :data:`EVICT_AGE` seconds is closed to make room.
    """

    def __init__(
        self,
        listener: socket.socket,
        selector: selectors.BaseSelector,
        limits: tuple[int, float],
        close: Callable[[Connection], None],
        log: Callable[[str], None],
    ) -> None:
        self.listener = listener
        self.selector = selector
        self.max_connections, self.idle_timeout = limits
        self.close = close  # the server's: stops the connection's requests too
        self.log = log
        self.conns: set[Connection] = set()
        self.peers: Counter[str] = Counter()
        self.watching = False
        self.stopped = False
        self.accept_at = 0.0  # when to try again after EMFILE

    @property
    def max_per_peer(self) -> int:
        """Connections one peer may hold."""
        return max(1, self.max_connections // 2)

    def watch(self, callback: Callable[[object, int], None]) -> None:
        """Start accepting: *callback* runs when the listener is readable."""
        self.callback = callback
        self._watch(True)

    def stop(self) -> None:
        """Accept no more (the server is stopping)."""
        self.stopped = True
        self._watch(False)

    def _watch(self, on: bool) -> None:
        if on != self.watching:
            self.watching = on
            if on:
                self.selector.register(self.listener, selectors.EVENT_READ, self.callback)
            else:
                self.selector.unregister(self.listener)

    def accept(self) -> list[Connection]:
        """The new connections (up to 16), counted; making room or pausing as needed."""
        new: list[Connection] = []
        for _ in range(16):
            if len(self.conns) >= self.max_connections and not self._evict(None):
                self._watch(False)  # every connection has a request: wait for one to end
                break
            try:
                sock, _addr = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue
                if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    raise
                if self._evict(None):
                    continue  # an idle connection's descriptor for the new one
                self.log(f"accept: {exc.strerror}; not accepting for {ACCEPT_PAUSE:g} s")
                self._watch(False)
                self.accept_at = time.monotonic() + ACCEPT_PAUSE
                break
            peer = peer_of(sock)
            if self.peers[peer] >= self.max_per_peer and not self._evict(peer):
                sock.close()  # this peer holds its share, each with a request
                continue
            sock.setblocking(False)
            conn = Connection(sock, peer)
            self.conns.add(conn)
            self.peers[peer] += 1
            new.append(conn)
        return new

    def pause(self, seconds: float) -> None:
        """Accept nothing for *seconds*: a descriptor freed meanwhile goes to a spare child."""
        if not self.stopped:
            self._watch(False)
            self.accept_at = max(self.accept_at, time.monotonic() + seconds)

    def forget(self, conn: Connection) -> None:
        """*conn* is closed: it counts no more."""
        self.conns.discard(conn)
        self.peers[conn.peer] -= 1
        if self.peers[conn.peer] <= 0:
            del self.peers[conn.peer]

    def sweep(self) -> None:
        """Close connections idle past the time-out; watch the listener again if there is room."""
        now = time.monotonic()
        idle = [c for c in self.conns if not c.busy and now - c.idle_since >= self.idle_timeout]
        for conn in idle:
            self.close(conn)
        if idle:
            self.log(f"closed {len(idle)} connection(s) idle past --idle-timeout")
        if self.watching or self.stopped or now < self.accept_at:
            return
        if len(self.conns) < self.max_connections or self._idlest(None):
            self._watch(True)

    def times(self, now: float) -> list[float]:
        """When :meth:`sweep` may have work: an idle connection's time-out; while not
        watching the listener, the end of a pause and when a connection may make room."""
        paused = not self.watching and not self.stopped
        wait = min(self.idle_timeout, EVICT_AGE) if paused else self.idle_timeout
        found = [c.idle_since + wait for c in self.conns if not c.busy]
        if paused:
            found.append(self.accept_at)
        return [t for t in found if t > now]

    def _idlest(self, peer: str | None) -> Connection | None:
        """The connection (of *peer*, or of anyone) with no complete request, idle longest."""
        old = time.monotonic() - min(EVICT_AGE, self.idle_timeout)
        idle = [
            c
            for c in self.conns
            if not c.busy and c.idle_since <= old and (peer is None or c.peer == peer)
        ]
        return min(idle, key=lambda c: c.idle_since) if idle else None

    def _evict(self, peer: str | None) -> bool:
        """Close the connection :meth:`_idlest` finds, to make room; False if there is none."""
        conn = self._idlest(peer)
        if conn is not None:
            self.close(conn)
        return conn is not None
