"""cgi-lib.pl 2.x's ``&ReadParse``: ``%in`` from a query string, a form POST or multipart.

Loaded on first use of ``perlcompat.cgi.ReadParse``: a CGI.pm-style script never pays for it.
"""

from __future__ import annotations

import os
import re

from ..perl.die import die
from ..perl.stdio import std_handle
from .body import binmode_std, content_length, read_stdin
from .util import to_bytes, to_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

_CGILIB_ESCAPE = rb"%([A-Fa-f0-9]{2})"


def _cgilib_unescape(raw: bytes) -> bytes:
    return re.sub(_CGILIB_ESCAPE, lambda m: bytes([int(m[1], 16)]), raw)


def _cgi_die(*msg: str) -> NoReturn:
    """cgi-lib.pl's ``CgiDie``: an HTML error page on STDOUT, then ``die``."""
    from ..perl.handle import print_

    out = std_handle("STDOUT")
    print_(out, "Content-type: text/html\n\n")
    print_(out, f"<html>\n<head>\n<title>{msg[0]}</title>\n</head>\n<body>\n")
    print_(out, f"<h1>{msg[0]}</h1>\n")
    for para in msg[1:]:
        print_(out, f"<p>{para}</p>\n")
    die(*msg)


def ReadParse(
    incfn: dict[str, str] | None = None, inct: dict[str, str] | None = None
) -> dict[str, str]:
    """cgi-lib.pl's ``&ReadParse``: return ``%in``, several values joined with ``"\\0"``.

    As cgi-lib.pl 2.x: GET/HEAD read ``QUERY_STRING``, a urlencoded POST reads
    ``CONTENT_LENGTH`` bytes; pairs split on ``&`` and ``;``, ``+`` is a space, only
    ``%XX`` is unescaped (no ``%u``); without ``REQUEST_METHOD`` the command-line
    arguments are added.  multipart/form-data bodies give each part's body,
    uploads included; *incfn* and *inct* are filled with the client's file
    names and content types, as ``&ReadParse(*in, *incfn, *inct)``.
    """
    env = os.environ
    ctype = env.get("CONTENT_TYPE") or ""
    length = content_length()
    method = env.get("REQUEST_METHOD")
    binmode_std()  # cgi-lib.pl's binmode(STDIN); binmode(STDOUT); binmode(STDERR);
    found: dict[str, str] = {}
    if not method or method in ("GET", "HEAD") or ctype == "application/x-www-form-urlencoded":
        if not method or method in ("GET", "HEAD"):
            data = to_bytes(env.get("QUERY_STRING", ""))
        elif method == "POST":
            data = read_stdin(length)
        else:
            _cgi_die(f"cgi-lib.pl: Unknown request method: {method}\n")
        pairs = re.split(rb"[&;]", data) if data else []
        while pairs and not pairs[-1]:
            pairs.pop()
        if not method:
            import sys

            pairs += [to_bytes(arg) for arg in sys.argv[1:]]
        for pair in pairs:
            key, _, value = pair.replace(b"+", b" ").partition(b"=")
            key_text = to_text(_cgilib_unescape(key))
            text = to_text(_cgilib_unescape(value))
            found[key_text] = found[key_text] + "\0" + text if key_text in found else text
        return found
    if not ctype.startswith("multipart/form-data"):
        _cgi_die(f"cgi-lib.pl: Unknown Content-type: {ctype}\n")
    match = re.search(r'boundary="([^"]+)"', ctype) or re.search(r"boundary=(\S+)", ctype)
    if not match:
        _cgi_die("Boundary not provided: probably a bug in your server")
    if method != "POST":
        _cgi_die(f"Invalid request method for  multipart/form-data: {method}\n")
    boundary = b"--" + to_bytes(match[1])
    parts = _cgilib_multipart(boundary, length)
    for target, values in ((incfn, parts[1]), (inct, parts[2])):
        if target is not None:
            target.update((to_text(k), to_text(v)) for k, v in values.items())
    return {to_text(k): to_text(v) for k, v in parts[0].items()}


def _cgilib_multipart(
    boundary: bytes, length: int
) -> tuple[dict[bytes, bytes], dict[bytes, bytes], dict[bytes, bytes]]:
    """cgi-lib.pl's multipart loop, line for line: 8 KiB reads kept 100 bytes apart."""
    bufsize, maxbound, blen = 8192, 100, len(boundary)
    found: dict[bytes, bytearray] = {}  # (grown in place: Perl's .= is not a copy a read)
    names: dict[bytes, bytes] = {}
    types: dict[bytes, bytes] = {}
    buf, left = b"", length
    name: bytes | None = None

    def fill(amount: int) -> None:  # read(STDIN, $buf, $amt, length($buf)) == $amt or die
        nonlocal buf, left
        got = read_stdin(amount)
        buf += got
        if len(got) != amount:
            _cgi_die(f"Short Read: wanted {amount}, got {len(got)}\n")
        left -= amount

    while True:
        fill(min(left, bufsize + maxbound - len(buf)))
        key = name or b""  # ($in{undef} is $in{''})
        if key in found:
            found[key] += b"\0"
        while (bpos := buf.find(boundary)) == -1:
            if left == 0 and buf == b"":
                _cgi_die(
                    "cgi-lib.pl: reached end of input while seeking boundary of multipart. "
                    "Format of CGI input is wrong.\n"
                )
            if name not in (None, b"", b"0"):  # if ($name): the preamble has none
                found.setdefault(key, bytearray()).extend(buf[:bufsize])
            buf = buf[bufsize:]
            fill(min(left, bufsize))
        if name is not None:
            found.setdefault(key, bytearray()).extend(buf[: bpos - 2])  # (substr($buf, 0, $bpos-2))
        if buf[bpos + blen : bpos + blen + 2] == b"--":
            return {k: bytes(v) for k, v in found.items()}, names, types
        buf = buf[bpos + blen + 2 :]
        fill(min(left, bufsize + maxbound - len(buf)))
        head = bytearray()
        while (lpos := buf.find(b"\r\n\r\n")) == -1:
            if left == 0 and buf == b"":
                _cgi_die(
                    "cgi-lib.pl: reached end of input while seeking end of headers. "
                    "Format of CGI input is wrong.\n" + to_text(buf)
                )
            head += buf[:bufsize]
            buf = buf[bufsize:]
            fill(min(left, bufsize))
        head += buf[: lpos + 2]
        heads = bytes(head).split(b"\r\n")
        cd = next((h for h in heads if re.match(rb"\s*Content-Disposition:", h, re.I)), b"")
        ct = next((h for h in heads if re.match(rb"\s*Content-Type:", h, re.I)), b"")
        m = re.search(rb'\bname="([^"]+)"', cd, re.I) or re.search(rb"\bname=([^\s:;]+)", cd, re.I)
        name = m[1] if m else None
        key = name or b""
        sep = b"\0" if key in found else b""
        m = re.search(rb'\bfilename="([^"]*)"', cd, re.I) or re.search(
            rb"\bfilename=([^\s:;]+)", cd, re.I
        )
        names[key] = names.get(key, b"") + sep + (m[1] if m else b"")
        m = re.match(rb'\s*Content-type:\s*"([^"]+)"', ct, re.I) or re.match(
            rb"\s*Content-Type:\s*([^\s:;]+)", ct, re.I
        )
        types[key] = types.get(key, b"") + sep + (m[1] if m else b"")
        buf = buf[lpos + 4 :]
