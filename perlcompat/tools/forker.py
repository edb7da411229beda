"""The worker pool of ``perlcompat serve``: the forker and the spare children it forks.

The forker is forked once by the parent (``tools.serve``, before the server's own
modules load and any socket exists; again by ``tools.server`` if it dies) and holds
only its socket to the parent; it forks one spare child
(``tools.runner``) per request asked for, and reports each spare and each exit
status it reaps.  POSIX only (fork, SCM_RIGHTS).  Where the system has pidfds it forks
with the C library's ``fork()`` and watches each child through its pidfd (``os.fork``'s
at-fork handlers would copy some 100-200 pages per child); elsewhere with ``os.fork``
and a SIGCHLD handler.
"""

from __future__ import annotations

import _socket
import contextlib
import gc
import mmap
import os
import select
import signal
import socket
import struct
import sys

assert sys.platform != "win32"  # fork only: the serve command says so on Windows

from . import runner  # noqa: E402  (POSIX only, as this module)
from .runner import prepare_forker, serve_one  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn


class Spare:
    """A child forked ahead of demand, ready for one request (fork is off the request's path).

    (Not a dataclass: ``dataclasses`` and what it imports would make the forker larger.)
    """

    __slots__ = ("ctl", "err_fd", "out_fd", "pid")

    def __init__(self, pid: int, ctl: int, out_fd: int, err_fd: int) -> None:
        self.pid = pid
        self.ctl = ctl
        self.out_fd = out_fd
        self.err_fd = err_fd

    def send(self, message: bytes) -> None:
        """Write all of *message* (its request) to its request pipe."""
        view = memoryview(message)
        while view:
            view = view[os.write(self.ctl, view) :]

    def close(self) -> None:
        """Close the parent's ends of its pipes (an unused spare then exits)."""
        for fd in (self.ctl, self.out_fd, self.err_fd):
            os.close(fd)


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
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                close_in_child()
                parent_end.close()
                _forker_loop(child_end, parent)
            finally:
                os._exit(0)
        child_end.close()
        parent_end.setblocking(False)
        self.pid = pid
        self.sock = parent_end
        self.asked = 0  # spares asked for and not yet received
        runner._sent.clear()  # this forker has no code yet
        runner.share = self.share

    def share(self, number: int, blob: bytes) -> bool:
        """Give the forker a script's code (``runner.request_message`` numbers it).

        False if it did not go (too large for a datagram, the queue full): the
        children then unmarshal the copy each request brings.
        """
        try:
            self.sock.send(b"C" + number.to_bytes(8, "big") + blob)
        except OSError:
            return False
        return True

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


def _raw_fork() -> Callable[[], int] | None:
    """The C library's ``fork()``, called with the GIL held; None where ctypes cannot give it.

    ``os.fork`` runs the ``os.register_at_fork`` handlers in the child, ``threading``'s
    among them, and they write to some 200 pages of the forker's memory: each is
    copied for the child (measured: 0.3-0.5 ms of CPU per request).  The forker has
    one thread and no Python signal handler, and it already ran those handlers when
    the parent forked it, so its children need none of them but ``random``'s reseed
    (:func:`_spawn` reseeds the forker's before each fork).
    """
    try:
        import ctypes

        libc = ctypes.PyDLL(None, use_errno=True)
        fork = libc.fork
    except (ImportError, OSError, AttributeError):
        return None
    fork.restype = ctypes.c_int
    fork.argtypes = []

    def raw_fork() -> int:
        pid: int = fork()
        if pid < 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))
        return pid

    return raw_fork


def _pidfds() -> bool:
    """True if this system has pidfds: the forker then watches each child through one.

    Also False if the forker has more than one thread (an ``os.register_at_fork``
    handler of a ``--preload`` module may start one): the C library's ``fork()`` would
    then copy locks another thread may hold, which ``os.fork`` at least resets for
    Python's own.
    """
    open_pidfd = getattr(os, "pidfd_open", None)
    if open_pidfd is None:
        return False
    try:
        if len(os.listdir("/proc/self/task")) != 1:
            return False
    except OSError:
        return False
    try:
        os.close(open_pidfd(os.getpid()))
    except OSError:  # a kernel older than Linux 5.3
        return False
    return True


def _reset_signals() -> None:
    """Every Python signal handler back to the default; SIGINT, SIGTERM, SIGHUP ignored.

    The parent decides when to stop (a terminal's Ctrl-C reaches the whole group);
    the children get the defaults back (``runner.prepare``) and inherit the rest.
    """
    for number in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            if callable(signal.getsignal(number)):
                signal.signal(number, signal.SIG_DFL)
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)


def _forker_loop(sock: socket.socket, parent: int) -> NoReturn:
    """The forker: fork a spare for each ``f``; report exits; end with its parent.

    Where the system has pidfds (Linux 5.3 and later) each child is watched through
    its pidfd and forked by :func:`_raw_fork`; elsewhere by ``os.fork``, with a
    SIGCHLD handler that reaps.  Each page the forker writes after a fork is copied
    (the child shares it), so the loop makes few objects and calls no Python helper
    it can do without (``contextlib.suppress``, ``socket.socketpair``, ``send_fds``).
    """
    if os.getppid() != parent:  # (gone before this process ran: see the loop below)
        os._exit(0)
    gc.disable()  # nothing to collect here, and a collection would touch every page
    signal.set_wakeup_fd(-1)
    _reset_signals()
    prepare_forker()
    if runner.REUSE > 1:  # (each child then runs many requests: its modules are loaded here)
        from . import reuse

        reuse.preload()
    gc.freeze()
    watching: dict[int, int] = {}  # pidfd -> pid
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    listening = sock.fileno()
    fork = (_raw_fork() if _pidfds() else None) or os.fork
    # a code the parent shares (a spare is asked for with "f"); mapped, not a bytearray:
    # pages never written are not the forker's, and a fork has none of them to copy
    buffer = mmap.mmap(-1, 1 << 18)
    reseed = _reseeder() if fork is not os.fork else None
    _trim()

    def report(pid: int, status: int) -> None:
        message = b"X" + pid.to_bytes(4, "big") + (status & 0xFFFFFFFF).to_bytes(4, "big")
        try:  # noqa: SIM105
            sock.send(message)
        except OSError:  # the parent is gone: nobody to tell
            pass

    def reap(*_: object) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            report(pid, status)

    if fork is os.fork:
        signal.signal(signal.SIGCHLD, reap)
    while True:
        events = poller.poll(1000)
        if os.getppid() != parent:  # a datagram socket has no end of file: look
            os._exit(0)
        for fd, _event in events:
            if fd != listening:  # a child's pidfd: it has ended
                poller.unregister(fd)
                os.close(fd)
                pid = watching.pop(fd)
                try:
                    status = os.waitpid(pid, 0)[1]
                except ChildProcessError:
                    continue
                report(pid, status)
            else:
                size = sock.recv_into(buffer)
                if size and buffer[0] == 0x66:  # b"f"
                    _spawn(sock, fork, reseed, watching, poller)
                elif size > 9 and buffer[0] == 0x43:  # b"C"
                    runner.take_code(int.from_bytes(buffer[1:9], "big"), bytes(buffer[9:size]))


_FDS = struct.Struct("3i")


def _trim() -> None:
    """Give the C heap's free pages back to the system (the C library's ``malloc_trim``).

    Each page the forker holds is mapped again at each fork and unmapped at each
    child's exit (measured: about 0.07 ms of CPU per request for each MiB); the heap
    the parent left has some 0.5-0.7 MiB free.  Nothing where there is no such call.
    """
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (ImportError, OSError, AttributeError):
        pass


def _reseeder() -> Callable[[], object] | None:
    """What reseeds ``random``'s global generator from the system, as ``os.fork`` does.

    The C method, called directly: the module's ``seed()`` runs Python code that
    writes some 20 pages more per fork.  ``gauss_next``, which that ``seed()`` also
    resets, is reset here once: nothing in the forker draws numbers.
    """
    random = sys.modules.get("random")
    generator = getattr(random, "_inst", None)
    if generator is None:  # not imported yet: a script that imports it seeds it anew
        return None
    import _random
    import functools

    generator.gauss_next = None
    return functools.partial(_random.Random.seed, generator)


def _spawn(
    sock: socket.socket,
    fork: Callable[[], int],
    reseed: Callable[[], object] | None,
    watching: dict[int, int],
    poller: select.poll,
) -> None:
    """Fork one spare child and send it (pid and the parent's ends of its pipes) to the parent.

    Out of descriptors or processes (EMFILE, EAGAIN), the parent is told "no spare" (an
    ``S`` without descriptors: it asks again later) and the forker goes on.
    """
    opened: list[int] = []
    try:
        ctl_a, ctl_b = _socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ctl_r, ctl_w = ctl_a.detach(), ctl_b.detach()
        opened += (ctl_r, ctl_w)
        out_r, out_w = os.pipe()
        opened += (out_r, out_w)
        err_r, err_w = os.pipe()
        opened += (err_r, err_w)
        if reseed is not None:
            reseed()  # os.fork's handler reseeds random in the child: here, no child runs it
        pid = fork()
    except OSError:
        _no_spare(sock, opened)
        return
    if pid == 0:
        try:
            for fd in (sock.fileno(), ctl_w, out_r, err_r, *watching):
                os.close(fd)
            serve_one(ctl_r, out_w, err_w)
        finally:
            os._exit(127)  # only if the child could not get ready
    try:  # noqa: SIM105
        os.setpgid(pid, pid)  # before the parent hears of it: a kill reaches the group
    except OSError:
        pass
    if fork is not os.fork:
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # not yet known to the parent: ours to stop and reap here
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            _no_spare(sock, opened)
            return
        watching[pidfd] = pid
        poller.register(pidfd, select.POLLIN)
    os.close(ctl_r)
    os.close(out_w)
    os.close(err_w)
    rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, _FDS.pack(ctl_w, out_r, err_r))
    try:  # noqa: SIM105
        sock.sendmsg((b"S" + pid.to_bytes(4, "big"),), (rights,))
    except OSError:
        pass
    os.close(ctl_w)  # if the parent never got them, the spare sees end of file and exits
    os.close(out_r)
    os.close(err_r)


def _no_spare(sock: socket.socket, opened: list[int]) -> None:
    """Close *opened* and tell the parent no spare came (it asks again later)."""
    for fd in opened:
        os.close(fd)
    try:  # noqa: SIM105
        sock.sendmsg((b"S" + bytes(4),))
    except OSError:
        pass


def read_ctl(fd: int, fds: bool) -> tuple[bytes | None, list[int]]:
    """What a child sent on its request pipe: (data, descriptors passed if *fds*).

    None: nothing yet; ``b""``: the pipe is closed.
    """
    try:
        if not fds:
            return os.read(fd, 16), []
        sock = socket.socket(fileno=fd)
        try:
            data, passed, _flags, _address = socket.recv_fds(sock, 16, 2)
        finally:
            sock.detach()
        return data, passed
    except (BlockingIOError, InterruptedError):
        return None, []
    except OSError:
        return b"", []


def kill_group(pid: int, signum: int) -> None:
    """Send *signum* to process group *pid* (the child's own), or to *pid* if it has none yet."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signum)
            return
        except ProcessLookupError:
            continue  # no such group yet (setpgid not done): the process itself
        except PermissionError:
            return


def is_child(pid: int) -> bool:
    """Whether *pid* is a child of this process (adopted, or exited and not yet reaped);
    False if the dead forker reaped it (its report lost: nothing will tell its end)."""
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True
