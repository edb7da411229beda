"""A FastCGI request of ``perlcompat serve`` and its connection; the request's CGI environment.

The parent keeps a :class:`Request` from BEGIN_REQUEST to END_REQUEST: its params and
body as they arrive, then its child's pipes.  :func:`check` turns the params into the
environment the script sees, or into the HTTP status to answer without running it;
:func:`clear_cgi_variables` makes sure no CGI variable comes from the server's own
environment.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field

from . import fastcgi as fcgi

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from .scripts import Scripts

#: variables of a CGI request (RFC 3875 4.1, and the usual extras): never from our environment.
_CGI_VARIABLE = re.compile(
    r"^(HTTP_|CONTENT_|REQUEST_|SCRIPT_|SERVER_|REMOTE_|PATH_INFO$|PATH_TRANSLATED$"
    r"|QUERY_STRING$|GATEWAY_INTERFACE$|AUTH_TYPE$|DOCUMENT_ROOT$|HTTPS$|REDIRECT_)"
)


def clear_cgi_variables() -> None:
    """Remove every CGI variable from ``os.environ`` (a request brings its own)."""
    for name in [name for name in os.environ if _CGI_VARIABLE.match(name)]:
        del os.environ[name]


@dataclass(eq=False)
class Request:
    """One FastCGI request, from BEGIN_REQUEST to END_REQUEST."""

    conn: Connection
    rid: int
    keep: bool
    params: bytearray = field(default_factory=bytearray)
    body: bytearray = field(default_factory=bytearray)
    params_done: bool = False
    too_large: bool = False
    bad: bool = False
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
    header: bytearray = field(default_factory=bytearray)
    headers_sent: bool = False
    discard: bool = False
    script: str = ""
    path: str = ""
    env: dict[str, str] = field(default_factory=dict)
    on_io: Callable[[object, int], None] | None = None


@dataclass(eq=False)
class Connection:
    """One FastCGI connection from the web server."""

    sock: socket.socket
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    requests: dict[int, Request] = field(default_factory=dict)
    closing: bool = False
    closed: bool = False
    paused: bool = False


def check(request: Request, max_body: int, scripts: Scripts, log: Callable[[str], None]) -> int:
    """0 if the request may run; else the HTTP status to answer without running."""
    if request.bad:
        log("request params too large or malformed: 400")
        return 400
    try:
        params = dict(fcgi.parse_pairs(bytes(request.params)))
    except fcgi.ProtocolError:
        log("request params malformed: 400")
        return 400
    length = params.get(b"CONTENT_LENGTH", b"0") or b"0"
    if request.too_large or not length.isdigit() or int(length) > max_body:
        log(f"request body over --max-body {max_body}: 413")
        return 413
    name = os.fsdecode(params.get(b"SCRIPT_FILENAME", b""))
    request.script = name
    real = scripts.resolve(name)
    if isinstance(real, int):
        return real
    request.path = real
    env = {os.fsdecode(key): os.fsdecode(value) for key, value in params.items()}
    env.pop("HTTP_PROXY", None)  # httpoxy: a request's Proxy header is not a proxy setting
    request.params = bytearray()
    request.env = env
    return 0
