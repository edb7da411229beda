"""The ``perlcompat serve`` event loop: FastCGI in, one forked child per request.

One parent process (single-threaded, ``selectors``) accepts FastCGI connections,
reads each request's params and body (multiplexed requests included), checks the
script, and hands the request to a spare child (``tools.runner``), which runs it with
the body as fd 0 and two pipes as fd 1 and 2.  The parent turns the child's stdout
into FCGI_STDOUT (headers checked as CGI servers check them: a 500 when the script
ends before a complete header, ``Status: 302`` added for an absolute ``Location:``)
and its stderr into FCGI_STDERR (the web server's error log, where mod_cgi puts it).

The spares come from a :class:`Forker`, a process forked once at start that forks one
child per request (the parent itself never forks again).  The forker is forked before
any socket exists and holds only its socket to the parent; a child closes that
too, so it holds neither the listening socket nor another request's connection.  The
parent opens no data file and takes no lock: it reads and compiles scripts (cached by
path, mtime, ctime, size and inode) and nothing else.  An aborted request or a client
that goes away closes the child's stdout, as mod_cgi does: its next write there fails
(EPIPE; stderr goes on to our log) and it is never signalled mid-update.  A time-out closes the
pipes too (a process the script left holding them does not hold the answer) and sends
SIGTERM to the child's process group (perlcompat's lock cleanup runs), then SIGKILL
after :data:`GRACE` seconds; a child whose exit is already known is never signalled.

Bounded: requests per connection (FCGI_MAX_REQS), params and bodies in memory (a body
over ``request.SPOOL_AT`` goes to a temp file), output for a client (over HIGH_WATER
the children's output and the connection are not read).  Beside this loop: ``request``,
``scripts``, ``response``, ``forker``, ``listen`` (``Doorman``: who gets a connection)."""

from __future__ import annotations

import contextlib
import gc
import os
import selectors
import signal
import socket
import sys
import time
from collections import deque
from dataclasses import dataclass

from . import fastcgi as fcgi
from .cgienv import clear_cgi_variables
from .request import Connection, Request, check, next_queued
from .response import error_response, header_end, parse_header
from .scripts import Scripts

assert sys.platform != "win32"  # fork only: the serve command says so on Windows

from .forker import Forker, Spare, is_child, kill_group, read_ctl  # noqa: E402  (POSIX only, as this module)
from .listen import ACCEPT_PAUSE, Doorman  # noqa: E402
from .reuse import adopt_orphans  # noqa: E402
from .runner import request_message  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: seconds between SIGTERM and SIGKILL for a child that must stop.
GRACE = 2.0
#: the most bytes of response header a script may print before its blank line.
MAX_HEADER = 64 * 1024
#: the most bytes of FastCGI params per request.
MAX_PARAMS = 256 * 1024
#: a connection's unsent output above which its children's stdout and stderr, and the
#: connection itself, are not read (back pressure).
HIGH_WATER = 1024 * 1024
#: the most params and body bytes held in memory, all requests together; more is a 503.
MAX_BUFFERED = 64 * 1024 * 1024
#: children kept ready while no request runs: one may still be getting ready when a
#: request comes, the other is ready (forking one takes ~1 ms on a busy machine).
SPARES = 2


@dataclass
class Options:
    """What ``perlcompat serve`` was asked for."""

    root: str
    timeout: float = 300.0
    max_children: int = 16
    max_body: int = 64 * 1024 * 1024
    extensions: tuple[str, ...] = (".py",)
    max_connections: int = 256
    idle_timeout: float = 60.0
    reuse: int = 1  # requests one child may run (``runner.REUSE``)


class Server:
    """The parent: listen, read requests, hand them to spares, relay (see the module docstring)."""

    def __init__(
        self, listener: socket.socket, options: Options, log: Callable[[str], None], forker: Forker
    ):
        self.listener = listener
        self.options = options
        self.log = log
        self.selector = selectors.DefaultSelector()
        self.running: dict[int, Request] = {}  # pid -> request
        self.queue: deque[Request] = deque()
        self.scripts = Scripts(options.root, options.extensions, log)
        self.stopping = False
        self.signals: list[int] = []  # SIGTERM, SIGINT, SIGHUP received, not yet handled
        limits = (options.max_connections, options.idle_timeout)
        self.doorman = Doorman(listener, self.selector, limits, self._close, log)
        self.conns = self.doorman.conns
        self.buffered = 0  # params and body bytes held in memory
        self.spare_at = 0.0  # no spare asked for before (a spare came without descriptors)
        self.reap_due = True  # a SIGCHLD came (the forker may have ended): wait4 then only
        self.adopts = False  # whether a dead forker's children become ours (serve())
        self.turns: dict[str, float] = {}  # peer -> when it last had a request started
        self.spares: deque[Spare] = deque()
        self.forker: Forker | None = forker  # forked by serve.py before this module loaded
        self.wake_r, self.wake_w = socket.socketpair()
        for sock in (self.wake_r, self.wake_w, listener):
            sock.setblocking(False)

    # -- the loop -------------------------------------------------------------------
    def serve(self) -> int:
        """Run until SIGTERM/SIGINT/SIGHUP and the requests in flight have finished."""
        clear_cgi_variables()  # a request's variables come from its params only
        signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: setattr(self, "reap_due", True))
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, lambda signum, _: self.signals.append(signum))
        self.selector.register(self.wake_r, selectors.EVENT_READ, self._on_wake)
        self.doorman.watch(self._on_accept)
        gc.freeze()  # what is loaded now is left out of collections (fewer objects to scan)
        self.adopts = adopt_orphans()  # a dead forker's children become ours: still stoppable
        self._start_forker(self.forker)
        while not (self.stopping and not self.running and not self.conns):
            self._ask_spares()
            for key, events in self.selector.select(self._next_timer()):
                callback = key.data
                callback(key.fileobj, events)
            while self.signals:  # handled here, not in the handler: it may run mid-loop
                self._on_stop(self.signals.pop(0))
            self._reap()
            self._timers()
            self.doorman.sweep()
        self._drop_spares()
        if self.forker is not None:
            self.forker.close()
        return 0

    def _start_forker(self, forker: Forker | None = None) -> None:
        self.forker = forker or Forker(self._close_all)
        self.selector.register(self.forker.sock, selectors.EVENT_READ, self._on_forker)

    def _ask_spares(self) -> None:
        """A spare for each queued request (within --max-children), and SPARES while idle.

        The idle ones are forked only when no request runs: a fork while a script runs
        takes CPU from the script (measured on 2 cores: the request 1.4x slower).
        """
        forker = self.forker
        if forker is None or self.stopping or time.monotonic() < self.spare_at:
            return
        room = self.options.max_children - len(self.running)
        want = min(max(room, 0), len(self.queue)) + (0 if self.running else SPARES)
        while len(self.spares) + forker.asked < want and forker.ask():
            pass

    def _on_forker(self, sock: object, events: int) -> None:
        assert self.forker is not None
        for kind, pid, status, fds in self.forker.messages():
            if kind == b"S":
                self.forker.asked = max(0, self.forker.asked - 1)
            if kind == b"S" and len(fds) == 3:
                self.spares.append(Spare(pid, *fds))
            elif kind == b"X":
                self._exited(pid, status)
            else:  # out of descriptors: ask later; till then freed fds go to spares first
                self.spare_at = time.monotonic() + ACCEPT_PAUSE
                for fd in fds:
                    os.close(fd)
                if self.queue:  # (an idle spare's failure never stops accepting)
                    self.doorman.pause(2 * ACCEPT_PAUSE)
        self._start_queued()

    def _on_stop(self, signum: int) -> None:
        if self.stopping:  # a second signal: stop now
            for request in list(self.running.values()):
                if _alive(request):
                    kill_group(request.pid, signal.SIGKILL)
            raise SystemExit(128 + signum)
        self.stopping = True
        self.doorman.stop()
        self._drop_spares()
        for conn in list(self.conns):
            if not conn.requests:
                self._close(conn)

    def _on_wake(self, sock: object, events: int) -> None:
        with contextlib.suppress(BlockingIOError):
            while self.wake_r.recv(4096):
                pass

    def _next_timer(self) -> float | None:
        times = [r.kill_at or r.deadline for r in self.running.values()]
        now = time.monotonic()
        times += [*self.doorman.times(now), *([self.spare_at] if self.spare_at > now else [])]
        return max(0.0, min(times) - now) if times else None

    def _timers(self) -> None:
        now = time.monotonic()
        due = [r for r in self.running.values() if now >= (r.kill_at or r.deadline)]
        if due and self.forker is not None:
            self._on_forker(None, 0)  # exits reaped already: those are not signalled
        for request in due:
            if request.pid not in self.running:
                continue
            if request.kill_at:
                if _alive(request):
                    kill_group(request.pid, signal.SIGKILL)
                request.kill_at = now + 3600  # once; it dies (uninterruptible waits aside)
            else:
                if not request.discard:
                    request.timed_out = True
                    what = "killed" if _alive(request) else "its output cut (it had ended)"
                    self.log(f"{request.script}: {what} after --timeout {self.options.timeout:g} s")
                self._stop(request)

    def _stop(self, request: Request) -> None:
        """At --timeout: close its pipes; SIGTERM its process group if it runs, SIGKILL after GRACE.

        A process the script left behind holding the pipes no longer holds the answer.
        """
        if _alive(request):
            kill_group(request.pid, signal.SIGTERM)
        request.kill_at = time.monotonic() + GRACE
        self._detach(request)

    def _detach(self, request: Request, gone: bool = False) -> None:
        """Close the parent's end of the child's stdout (and stderr): its next write fails.

        What mod_cgi does when the client is *gone*: the script is never signalled
        mid-update, its stdout fails, its stderr goes on to our log (mod_cgi's error
        log); one still running is stopped by --timeout, which closes both.
        """
        request.gone = request.gone or gone
        for name in ("out_fd",) if gone else ("out_fd", "err_fd"):
            fd = getattr(request, name)
            if fd >= 0:
                setattr(request, name, self._close_fd(fd))
        self._maybe_done(request)

    # -- connections ----------------------------------------------------------------
    def _on_accept(self, sock: object, events: int) -> None:
        for conn in self.doorman.accept():
            self.selector.register(conn.sock, selectors.EVENT_READ, self._on_conn_event(conn))

    def _on_conn_event(self, conn: Connection) -> Callable[[object, int], None]:
        def handle(sock: object, events: int) -> None:
            if events & selectors.EVENT_WRITE:
                self._flush(conn)
            if events & selectors.EVENT_READ and not conn.closed:
                self._read(conn)

        return handle

    def _read(self, conn: Connection) -> None:
        try:
            data = conn.sock.recv(262144)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the web server went away: its requests are over
            self._close(conn)
            return
        conn.inbuf += data
        try:
            while not conn.closed:
                rec = fcgi.take_record(conn.inbuf)
                if rec is None:
                    break
                self._record(conn, *rec)
        except fcgi.ProtocolError as exc:
            self.log(f"dropping a connection: {exc}")
            self._close(conn)

    def _record(self, conn: Connection, kind: int, rid: int, content: bytes) -> None:
        if rid == 0:
            if kind == fcgi.GET_VALUES:
                limits = (self.options.max_connections, self.options.max_children)
                self._send(conn, fcgi.values_result(content, *limits))
            else:
                self._send(conn, fcgi.record(fcgi.UNKNOWN_TYPE, 0, bytes([kind]) + bytes(7)))
            return
        if kind == fcgi.BEGIN_REQUEST:
            if rid in conn.requests or len(content) < fcgi.BEGIN_BODY.size:
                raise fcgi.ProtocolError(f"BEGIN_REQUEST {rid} repeated or short")
            role, flags = fcgi.BEGIN_BODY.unpack_from(content)
            if role != fcgi.RESPONDER:
                self._send(conn, fcgi.record(fcgi.END_REQUEST, rid, fcgi.END_BODY.pack(0, 3)))
                return
            if len(conn.requests) >= self.options.max_children:  # FCGI_MAX_REQS, enforced
                body = fcgi.END_BODY.pack(0, fcgi.OVERLOADED)
                self._send(conn, fcgi.record(fcgi.END_REQUEST, rid, body))
                return
            conn.requests[rid] = Request(conn, rid, bool(flags & fcgi.KEEP_CONN))
            return
        request = conn.requests.get(rid)
        if request is None:
            return  # a record for a request that is over (aborted, answered): ignored
        if kind == fcgi.ABORT_REQUEST:
            self._abort(request)
        elif kind == fcgi.PARAMS and not request.params_done:
            if not content:
                request.params_done = True
            elif request.refuse:
                pass
            elif len(request.params) + len(content) > MAX_PARAMS:
                self._refuse(request, 400)
            elif self.buffered + len(content) > MAX_BUFFERED:
                self._refuse(request, 503)
            else:
                request.params += content
                self.buffered += len(content)
        elif kind == fcgi.STDIN and request.params_done and not request.ready:
            if not content:
                self._ready(request)
            elif request.refuse:
                pass
            elif request.spool is None and self.buffered + len(content) > MAX_BUFFERED:
                self._refuse(request, 503)
            else:
                held = request.held
                try:
                    request.add_body(content, self.options.max_body)
                except OSError as exc:  # no temp file for the body (no space, no descriptor)
                    self.log(f"spooling a request body: {exc.strerror}: 503")
                    self._refuse(request, 503)
                self.buffered += request.held - held

    def _refuse(self, request: Request, status: int) -> None:
        """Answer *status* once the request is complete; drop what it holds now."""
        request.refuse = status
        self._release(request)

    def _release(self, request: Request) -> None:
        """Drop the params and body *request* holds (and their count in MAX_BUFFERED)."""
        self.buffered -= request.held
        request.params = bytearray()
        request.drop_body()

    def _send(self, conn: Connection, data: bytes) -> None:
        if conn.closed or not data:
            return
        conn.outbuf += data
        self._flush(conn)

    def _flush(self, conn: Connection) -> None:
        while conn.outbuf and not conn.closed:
            try:
                sent = conn.sock.send(conn.outbuf)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # the web server went away mid-answer
                self._close(conn)
                return
            del conn.outbuf[:sent]
        if conn.closed:
            return
        self._pause(conn, len(conn.outbuf) > HIGH_WATER)
        want = (0 if conn.paused else selectors.EVENT_READ) | (
            selectors.EVENT_WRITE if conn.outbuf else 0
        )
        key = self.selector.get_key(conn.sock)
        if key.events != want:
            self.selector.modify(conn.sock, want, key.data)
        if conn.closing and not conn.outbuf:
            self._close(conn)

    def _pause(self, conn: Connection, paused: bool) -> None:
        """Stop (or resume) reading *conn* and its children's stdout and stderr: back pressure."""
        if conn.paused == paused:
            return
        conn.paused = paused
        for request in conn.requests.values():
            for fd in (request.out_fd, request.err_fd):
                if fd < 0 or request.on_io is None:
                    continue
                if paused:
                    self.selector.unregister(fd)
                else:
                    self.selector.register(fd, selectors.EVENT_READ, request.on_io)

    def _close(self, conn: Connection) -> None:
        """Drop *conn*: its running requests lose their pipes (_detach), the others are dropped."""
        if conn.closed:
            return
        conn.closed = True
        if conn.paused:
            self._pause(conn, False)
        for request in list(conn.requests.values()):
            request.discard = True
            if request.pid:
                self._detach(request, gone=True)
            else:
                self._forget(request)
        self.selector.unregister(conn.sock)
        conn.sock.close()
        conn.inbuf = conn.outbuf = bytearray()
        self.doorman.forget(conn)

    def _forget(self, request: Request) -> None:
        self._release(request)
        request.conn.requests.pop(request.rid, None)
        request.conn.idle_since = time.monotonic()
        if request in self.queue:
            self.queue.remove(request)

    def _abort(self, request: Request) -> None:
        if request.pid:
            request.discard = True  # END_REQUEST goes out when the child is gone
            self._detach(request, gone=True)
        else:
            self._forget(request)
            self._send(request.conn, fcgi.end_request(request.rid, 0))
            self._done_with(request.conn, request.keep)

    # -- a request becomes a child --------------------------------------------------
    def _ready(self, request: Request) -> None:
        """The body is complete: answer an error at once, or queue the child."""
        request.ready = True
        held = request.held
        status = check(request, self.options.max_body, self.scripts, self.log)
        self.buffered -= held - request.held  # check() let go of the params
        if status:
            self._answer(request, status)
            return
        self.queue.append(request)
        self._start_queued()

    def _answer(self, request: Request, status: int) -> None:
        self._forget(request)
        self._send(request.conn, fcgi.stream(fcgi.STDOUT, request.rid, error_response(status)))
        self._send(request.conn, fcgi.end_request(request.rid, 0))
        self._done_with(request.conn, request.keep)

    def _done_with(self, conn: Connection, keep: bool) -> None:
        if (not keep or self.stopping) and not conn.requests:
            conn.closing = True
            self._flush(conn)

    def _start_queued(self) -> None:
        while self.queue and self.spares and len(self.running) < self.options.max_children:
            self._hand(next_queued(self.queue, self.running.values(), self.turns))

    def _drop_spares(self) -> None:
        """End the spare children (each exits when its request pipe closes unused)."""
        while self.spares:
            spare = self.spares.popleft()
            spare.close()

    def _hand(self, request: Request) -> None:
        """Give *request* to a spare child (there is one: see _start_queued)."""
        self.buffered -= request.held
        body = request.take_body()
        message = request_message(request.path, request.code, request.error, request.env, body)
        while True:
            spare = self.spares.popleft()
            try:
                spare.send(message)
                break
            except OSError:  # it died while waiting (its exit is reported and ignored)
                self.log("a spare child died before its request; using another")
                spare.close()
                if not self.spares:
                    request.body = bytearray(body)
                    self.buffered += len(body)
                    self.queue.appendleft(request)  # it waits for the next spare
                    return
        request.env = {}
        request.pid = spare.pid
        request.out_fd, request.err_fd, request.ctl_fd = spare.out_fd, spare.err_fd, spare.ctl
        request.deadline = time.monotonic() + self.options.timeout
        self.running[spare.pid] = request
        request.on_io = lambda fd, events: self._drain(request)
        for fd in (spare.out_fd, spare.err_fd, spare.ctl):
            os.set_blocking(fd, False)
            if fd == spare.ctl or not request.conn.paused:
                self.selector.register(fd, selectors.EVENT_READ, request.on_io)

    def _close_all(self) -> None:
        """In a new forker: close the listener, every connection, every child's pipe."""
        signal.set_wakeup_fd(-1)
        self.selector.close()
        self.listener.close()
        self.wake_r.close()
        self.wake_w.close()
        for conn in self.conns:
            conn.sock.close()
            for queued in conn.requests.values():
                queued.drop_body()
        for other in self.running.values():
            for fd in (other.out_fd, other.err_fd, other.ctl_fd):
                if fd >= 0:
                    os.close(fd)
        for spare in self.spares:
            spare.close()
        if self.forker is not None:
            self.forker.sock.close()

    # -- a child's output -----------------------------------------------------------
    def _drain(self, request: Request) -> None:
        """Read what the child has written (stdout, stderr, exit status); finish if it is over.

        All three are read on any one's event: when the child ends, its output's end
        and its status arrive together, and one pass answers the request.
        """
        for _ in range(4):  # bounded: other requests get their turn
            if request.out_fd < 0 or request.conn.paused or not self._read_out(request):
                break
        for _ in range(4):  # stderr of a request whose client is gone goes to our log
            paused = request.conn.paused and not request.gone
            if request.err_fd < 0 or paused or not self._read_err(request):
                break
        if request.ctl_fd >= 0:
            data, fds = read_ctl(request.ctl_fd, self.options.reuse > 1)
            if data is not None:
                if data:
                    request.app_status = data[0]
                if data[1:2] == b"R" and len(fds) == 2 and not request.orphan:
                    self._reused(request, fds)
                else:
                    for fd in fds:
                        os.close(fd)
                    request.ctl_fd = self._close_fd(request.ctl_fd)
        self._maybe_done(request)

    def _reused(self, request: Request, fds: list[int]) -> None:
        """*request*'s child ran it and waits for another (``--reuse``): a spare again,
        with the new pipes it sent (the request ends when its old pipes are read out)."""
        ctl, request.ctl_fd = request.ctl_fd, -1
        self.selector.unregister(ctl)
        os.set_blocking(ctl, True)
        del self.running[request.pid]
        spare = Spare(request.pid, ctl, *fds)
        if self.stopping or len(self.spares) > self.options.max_children:
            spare.close()  # it exits
        else:
            self.spares.appendleft(spare)  # the last used first: its pages are warm

    def _close_fd(self, fd: int) -> int:
        """Stop watching *fd* and close it; return -1."""
        if fd in self.selector.get_map():
            self.selector.unregister(fd)
        os.close(fd)
        return -1

    def _read_out(self, request: Request) -> bool:
        """Read the child's stdout once; False when nothing more is there now."""
        try:
            data = os.read(request.out_fd, 262144)
        except (BlockingIOError, InterruptedError):
            return False
        if not data:
            request.out_fd = self._close_fd(request.out_fd)
            return False
        if request.discard:
            return True
        if request.headers_sent:
            self._send(request.conn, fcgi.stream(fcgi.STDOUT, request.rid, data))
            return True
        request.header += data
        end = header_end(request.header)
        if end is None:
            if len(request.header) > MAX_HEADER:
                self.log(f"{request.script}: response header over {MAX_HEADER} bytes: 500")
                self._fail(request, 500)
            return True
        header = parse_header(bytes(request.header[: end[0]]))
        if header is None:
            self.log(f"{request.script}: malformed response header: 500")
            self._fail(request, 500)
            return True
        rest = bytes(request.header[end[1] :])
        request.header = bytearray()
        request.headers_sent = True
        self._send(request.conn, fcgi.stream(fcgi.STDOUT, request.rid, header + rest))
        return True

    def _fail(self, request: Request, status: int) -> None:
        """Answer *status* for a running request; the rest of its output is discarded."""
        request.headers_sent = True
        request.discard = True
        request.header = bytearray()
        self._send(request.conn, fcgi.stream(fcgi.STDOUT, request.rid, error_response(status)))

    def _read_err(self, request: Request) -> bool:
        """Pass the child's stderr on as FCGI_STDERR (or to our log if the client is gone)."""
        try:
            data = os.read(request.err_fd, 65536)
        except (BlockingIOError, InterruptedError):
            return False
        if not data:
            request.err_fd = self._close_fd(request.err_fd)
            return False
        if request.conn.closed or request.gone:
            self.log(data.decode("utf-8", "backslashreplace").rstrip("\n"))
        else:
            self._send(request.conn, fcgi.stream(fcgi.STDERR, request.rid, data))
        return True

    def _reap(self) -> None:
        """After a SIGCHLD, collect our own children: the forker (the spares are the forker's),
        and once it died, its children we adopted (``adopt_orphans``)."""
        if not self.reap_due:
            return
        self.reap_due = False  # (a SIGCHLD from now on: another pass)
        ended: list[tuple[int, int]] = []
        with contextlib.suppress(ChildProcessError):
            while (found := os.waitpid(-1, os.WNOHANG))[0]:
                ended.append(found)
        forker = self.forker
        if forker is not None and forker.pid in (pid for pid, _ in ended):  # killed: another
            self.log("the forker process ended; starting another")
            self._on_forker(None, 0)  # the exits it reported before it died
            self.selector.unregister(forker.sock)
            forker.sock.close()
            self.forker = None
            self._drop_spares()  # their exits would not be reported
            for request in list(self.running.values()):
                request.orphan, request.adopted = True, self.adopts and is_child(request.pid)
                self._maybe_done(request)
            if not self.stopping:
                self._start_forker()
        for pid, status in ended:
            adopted = self.running.get(pid)
            if adopted is not None and adopted.adopted:  # (the forker's death came first)
                self._exited(pid, status)

    def _exited(self, pid: int, status: int) -> None:
        """The forker reaped *pid*: a request's child, or a spare that died idle."""
        request = self.running.get(pid)
        if request is not None:
            request.exit_status = status
            self._maybe_done(request)
            return
        for spare in list(self.spares):
            if spare.pid == pid:
                self.spares.remove(spare)
                spare.close()

    def _maybe_done(self, request: Request) -> None:
        """Finish *request* once both pipes are at end of file and its exit status is known.

        The status comes from the child itself (:func:`runner._finish`) or, when it died
        without sending one (a signal, ``os._exit``), from reaping it.
        """
        if request.out_fd >= 0 or request.err_fd >= 0:
            return
        if request.app_status is not None:
            app_status = request.app_status
        elif request.orphan and not request.adopted and request.ctl_fd < 0:  # none will come
            app_status = 255
        elif request.exit_status is not None:
            status = os.waitstatus_to_exitcode(request.exit_status)
            app_status = status if status >= 0 else 128 - status
            if status < 0 and not request.kill_at:
                self.log(f"{request.script}: killed by signal {-status}")
        else:
            return
        if request.finished:
            return
        request.finished = True
        if self.running.get(request.pid) is request:
            del self.running[request.pid]
        if request.ctl_fd >= 0:
            request.ctl_fd = self._close_fd(request.ctl_fd)
        request.on_io = None  # the selector's callback referred to the request
        if not request.headers_sent and not request.discard:
            if not request.timed_out:
                self.log(f"{request.script}: ended (status {app_status}) before a header: 500")
            self._fail(request, 504 if request.timed_out else 500)
        conn = request.conn
        conn.requests.pop(request.rid, None)
        conn.idle_since = time.monotonic()
        if not conn.closed:
            self._send(conn, fcgi.end_request(request.rid, app_status))
            self._done_with(conn, request.keep)
        self._start_queued()


def _alive(request: Request) -> bool:
    """Whether *request*'s child may still run: not reaped, no exit status sent.

    A reaped pid may be another process's already; it is never signalled.
    """
    if (request.orphan and not request.adopted) or not request.pid:
        return False  # a dead forker's child that init reaps, unseen
    return request.exit_status is None and request.app_status is None
