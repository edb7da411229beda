"""What ``perlcompat serve`` checks in a script's response, and the answers it makes itself.

A CGI script's stdout starts with a header block, checked as CGI servers check it
(RFC 3875 6): ``Name: value`` lines, a ``Status:`` of three digits and a reason, an
absolute ``Location:`` made a 302.  The server answers its own errors (a bad request,
a script it may not run, a time-out) with :func:`error_response`.  No I/O here.
"""

from __future__ import annotations

import re

_HEADER_NAME = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_STATUS = re.compile(rb"^([1-5][0-9][0-9])(?: (.*))?$")
_ABSOLUTE = re.compile(rb"^[A-Za-z][A-Za-z0-9+.-]*:")

REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    413: "Content Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def error_response(status: int) -> bytes:
    """A whole plain-text CGI response for *status*."""
    reason = REASONS[status]
    return (
        f"Status: {status} {reason}\r\nContent-Type: text/plain\r\n\r\n{status} {reason}\n"
    ).encode()


def parse_header(block: bytes) -> bytes | None:
    """The CGI response header *block* (without its blank line) as sent on, or None if malformed.

    Lines end in LF or CRLF; each is ``Name: value`` (a line starting with white space
    continues the previous one).  ``Status:`` must be three digits and a reason.  An
    absolute ``Location:`` without ``Status:`` gets ``Status: 302 Found`` (RFC 3875 6.2.3).
    """
    lines: list[list[bytes]] = []
    for raw in block.split(b"\n"):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if line[:1] in (b" ", b"\t") and lines:
            lines[-1][1] += b" " + line.strip()
            continue
        name, colon, value = line.partition(b":")
        if not colon or not _HEADER_NAME.match(name):
            return None
        lines.append([name, value.strip()])
    names = {name.lower(): value for name, value in lines}
    if b"status" in names and not _STATUS.match(names[b"status"]):
        return None
    if b"status" not in names and _ABSOLUTE.match(names.get(b"location", b"")):
        lines.insert(0, [b"Status", b"302 Found"])
    return b"".join(name + b": " + value + b"\r\n" for name, value in lines) + b"\r\n"


def header_end(buf: bytes | bytearray) -> tuple[int, int] | None:
    """(end of the header block, start of the body) in *buf*, or None if not complete."""
    found = re.search(rb"\r?\n\r?\n", buf)
    if found is None:
        return None
    if found.start() == 0 and buf[:1] in (b"\r", b"\n"):
        return (0, found.end())
    return found.start(), found.end()
