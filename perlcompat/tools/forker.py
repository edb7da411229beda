"""The worker pool of ``perlcompat serve``: the forker and the spare children it forks.

The forker is forked once by the parent (``tools.server``) before any connection
exists and holds only its socket to the parent; it forks one spare child
(``tools.runner``) per request asked for, and reports each spare and each exit
status it reaps.  POSIX only (fork, SCM_RIGHTS).
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import socket
import sys
from dataclasses import dataclass

assert sys.platform != "win32"  # fork only: the serve command says so on Windows

from .runner import serve_one  # noqa: E402  (POSIX only, as this module)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn


@dataclass(eq=False)
class Spare:
    """A child forked ahead of demand, ready for one request (fork is off the request's path)."""

    pid: int
    ctl: int
    out_fd: int
    err_fd: int


class Forker:
    """A process forked once from the parent that forks the spare children on request.

    The parent then never forks again: a fork makes every page of the forking process
    copy-on-write, so each page the busy parent writes afterwards is copied (measured:
    about 360 page faults per request when the parent forked the children itself).
    The forker sleeps between forks and touches almost nothing.  It sends each spare
    (pid and the parent's ends of its pipes, by SCM_RIGHTS) and each exit status it
    reaps as one datagram: ``S`` + pid, or ``X`` + pid + wait status.
    """

    def __init__(self, close_in_child: Callable[[], None]) -> None:
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            try:
                close_in_child()
                parent_end.close()
                _forker_loop(child_end)
            finally:
                os._exit(0)
        child_end.close()
        parent_end.setblocking(False)
        self.pid = pid
        self.sock = parent_end
        self.asked = 0  # spares asked for and not yet received

    def ask(self) -> bool:
        """Ask for one more spare; False if the forker's queue is full (ask again later)."""
        try:
            self.sock.send(b"f")
        except (BlockingIOError, InterruptedError):
            return False
        self.asked += 1
        return True

    def messages(self) -> list[tuple[bytes, int, int, list[int]]]:
        """What the forker sent: (kind, pid, wait status, fds)."""
        found: list[tuple[bytes, int, int, list[int]]] = []
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self.sock, 16, 3)
            except (BlockingIOError, InterruptedError):
                return found
            if not data:
                continue
            pid = int.from_bytes(data[1:5], "big")
            status = int.from_bytes(data[5:9], "big") if len(data) >= 9 else 0
            found.append((data[:1], pid, status, list(fds)))

    def close(self) -> None:
        """End the forker and reap it (its children, running requests, run on)."""
        self.sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _forker_loop(sock: socket.socket) -> NoReturn:
    """The forker: fork a spare for each ``f``; report exits; end with its parent."""
    gc.disable()  # nothing to collect here, and a collection would touch every page
    signal.set_wakeup_fd(-1)
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)  # the parent decides when to stop
    parent = os.getppid()

    def reap(*_: object) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            message = b"X" + pid.to_bytes(4, "big") + (status & 0xFFFFFFFF).to_bytes(4, "big")
            with contextlib.suppress(OSError):  # the parent is gone: nobody to tell
                sock.send(message)

    signal.signal(signal.SIGCHLD, reap)
    while True:
        readable, _, _ = select.select([sock], [], [], 1.0)
        if os.getppid() != parent:  # a datagram socket has no end of file: look
            os._exit(0)
        if not readable or not sock.recv(16):
            continue
        ctl_a, ctl_b = socket.socketpair()
        ctl_r, ctl_w = ctl_a.detach(), ctl_b.detach()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                sock.close()
                for fd in (ctl_w, out_r, err_r):
                    os.close(fd)
                serve_one(ctl_r, out_w, err_w)
            finally:
                os._exit(127)  # only if the child could not get ready
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # before the parent hears of it: a kill reaches the group
        for fd in (ctl_r, out_w, err_w):
            os.close(fd)
        with contextlib.suppress(OSError):
            socket.send_fds(sock, [b"S" + pid.to_bytes(4, "big")], [ctl_w, out_r, err_r])
        for fd in (ctl_w, out_r, err_r):
            os.close(fd)  # if the parent never got them, the spare sees end of file and exits
