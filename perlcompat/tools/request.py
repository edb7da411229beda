"""A FastCGI request of ``perlcompat serve`` and its connection; the request's CGI environment.

The parent keeps a :class:`Request` from BEGIN_REQUEST to END_REQUEST: its params and
body as they arrive (a body over :data:`SPOOL_AT` bytes in an unlinked temp file), then
its child's pipes; :func:`next_queued` picks the next to run.  :func:`check` turns the
params into the environment the script sees (only the variables
``cgienv.cgi_environment`` lets a request set), or into the HTTP status to answer
without running it.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
import types
from collections import Counter
from dataclasses import dataclass, field

from . import fastcgi as fcgi
from .cgienv import cgi_environment

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Callable, Iterable
    from typing import IO

    from .scripts import Scripts

#: a body up to this size is kept in memory; a larger one goes to an unlinked temp file.
SPOOL_AT = 64 * 1024


@dataclass(eq=False)
class Request:
    """One FastCGI request, from BEGIN_REQUEST to END_REQUEST."""

    conn: Connection
    rid: int
    keep: bool
    params: bytearray = field(default_factory=bytearray)
    body: bytearray = field(default_factory=bytearray)
    spool: IO[bytes] | None = None  # the body, once over SPOOL_AT
    body_size: int = 0
    params_done: bool = False
    refuse: int = 0  # an HTTP status to answer instead of running (400, 413, 503)
    ready: bool = False  # all of it came: queued, running or answered
    pid: int = 0
    out_fd: int = -1
    err_fd: int = -1
    ctl_fd: int = -1
    exit_status: int | None = None
    app_status: int | None = None
    deadline: float = 0.0
    kill_at: float = 0.0
    timed_out: bool = False
    orphan: bool = False  # its forker died: nobody will report how it ended
    adopted: bool = False  # its forker died and the parent adopted it: the parent reaps it
    finished: bool = False  # END_REQUEST sent
    header: bytearray = field(default_factory=bytearray)
    headers_sent: bool = False
    discard: bool = False
    gone: bool = False  # its client left (or aborted it): stdout closed, stderr to our log
    script: str = ""
    path: str = ""
    code: types.CodeType | None = None
    error: str = ""
    env: dict[str, str] = field(default_factory=dict)
    on_io: Callable[[object, int], None] | None = None

    @property
    def held(self) -> int:
        """Bytes of this request the parent holds in memory (params and body)."""
        return len(self.params) + len(self.body)

    def add_body(self, data: bytes, max_body: int) -> None:
        """Append *data* to the body: in memory up to :data:`SPOOL_AT`, then in a temp file.

        Over *max_body* the request becomes a 413 and what came is dropped.
        """
        self.body_size += len(data)
        if self.body_size > max_body:
            self.refuse = 413
            self.drop_body()
            return
        if self.spool is None and len(self.body) + len(data) > SPOOL_AT:
            spool = tempfile.TemporaryFile(prefix="perlcompat-body-")  # noqa: SIM115
            spool.write(self.body)
            self.spool = spool
            self.body = bytearray()
        if self.spool is not None:
            self.spool.write(data)
        else:
            self.body += data

    def take_body(self) -> bytes:
        """The whole body (read back from its temp file if spooled), no longer held here."""
        if self.spool is None:
            body = bytes(self.body)
        else:
            self.spool.seek(0)
            body = self.spool.read()
        self.drop_body()
        return body

    def drop_body(self) -> None:
        """Forget the body (and close its temp file)."""
        self.body = bytearray()
        if self.spool is not None:
            self.spool.close()
            self.spool = None


@dataclass(eq=False)
class Connection:
    """One FastCGI connection from the web server (or whoever connected)."""

    sock: socket.socket
    peer: str = ""  # uid:N for a unix socket, the address for TCP: the per-peer cap
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    requests: dict[int, Request] = field(default_factory=dict)
    closing: bool = False
    closed: bool = False
    paused: bool = False
    idle_since: float = field(default_factory=time.monotonic)

    @property
    def busy(self) -> bool:
        """A request of it is complete (queued or running): the idle time-out waits."""
        return any(request.ready for request in self.requests.values())


def check(request: Request, max_body: int, scripts: Scripts, log: Callable[[str], None]) -> int:
    """0 if the request may run (its script opened and compiled); else the HTTP status to answer."""
    if request.refuse:
        reasons = {400: "params too large", 413: f"body over --max-body {max_body}"}
        reason = reasons.get(request.refuse, "over what the server buffers")
        log(f"request {reason}: {request.refuse}")
        return request.refuse
    try:
        params = dict(fcgi.parse_pairs(bytes(request.params)))
    except fcgi.ProtocolError:
        log("request params malformed: 400")
        return 400
    length = params.get(b"CONTENT_LENGTH", b"0") or b"0"
    if not length.isdigit() or int(length) > max_body:
        log(f"request body over --max-body {max_body}: 413")
        return 413
    name = os.fsdecode(params.get(b"SCRIPT_FILENAME", b""))
    request.script = name
    loaded = scripts.load(name)
    if isinstance(loaded, int):
        return loaded
    request.path, compiled = loaded
    if isinstance(compiled, BaseException):
        import traceback

        request.error = "".join(traceback.format_exception_only(type(compiled), compiled))
    else:
        request.code = compiled
    request.params = bytearray()
    request.env = cgi_environment(params)
    return 0


def next_queued(
    queue: deque[Request], running: Iterable[Request], turns: dict[str, float]
) -> Request:
    """Take from *queue* the first request of the peer with the fewest *running*, then of
    the one served longest ago (*turns*): one peer's flood does not keep another's waiting."""
    if len(queue) > 1:
        counts = Counter(r.conn.peer for r in running)
        request = min(queue, key=lambda r: (counts[r.conn.peer], turns.get(r.conn.peer, 0.0)))
        queue.remove(request)
    else:
        request = queue.popleft()
    if len(turns) > 4096:
        turns.clear()
    turns[request.conn.peer] = time.monotonic()
    return request
