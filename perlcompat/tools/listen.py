"""A listening socket for ``perlcompat serve --fastcgi``: TCP, or a unix socket made safely.

A unix socket is created with mode 0660 (no window with wider permissions); one
left by a dead server is replaced, anything else at the path is refused.  TCP,
loopback included, is open to every local user.  :func:`peer_of` names who is at
the other end of a connection (the user on a unix socket, the address on TCP) for
the server's per-peer connection cap.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
import sys

assert sys.platform != "win32"  # AF_UNIX and fork: the serve command says so on Windows


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
