"""CGI.pm's ``header()`` (and ``redirect``'s): the response header a script prints first.

``Content-Type: text/html; charset=ISO-8859-1`` and CR LF line ends by default;
``status``, ``cookie``, ``expires`` (``"+1d"``), ``charset``, ``attachment``, ``nph``,
any other keyword as a header.  A value with a newline not followed by white space
dies, as CGI.pm's (a header injection).
"""

from __future__ import annotations

import os
import re

from ..perl.die import die
from ..perl.text import truth
from .cookies import Cookie
from .util import CRLF, expires as http_date

TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import CGI

_ORDER = ("type", "status", "cookie", "target", "expires", "nph", "charset", "attachment", "p3p")


def check_newlines(value: str) -> str:
    """*value* with folded lines joined; die on a bare CR or LF (CGI.pm's check)."""
    value = re.sub(r"\r\n(\s)", r"\1", value)
    if re.search(r"[\r\n]", value):
        shown = value[:72] + "..." if len(value) > 72 else value
        die(f"Invalid header value contains a newline not followed by whitespace: {shown}")
    return value


def header(q: CGI, args: tuple[object, ...], options: dict[str, object]) -> str:
    """``q->header(@args, %options)``: the header lines, each ending in CR LF, and a blank line."""
    known: dict[str, object] = dict(zip(_ORDER, args))
    if len(args) > len(_ORDER):
        raise TypeError(f"header() takes at most {len(_ORDER)} positional arguments")
    other: list[str] = []
    for key, value in options.items():
        canon = key.lower().replace("_", "-")
        if canon in ("content-type",):
            canon = "type"
        elif canon in ("cookies", "set-cookie"):
            canon = "cookie"
        if canon in _ORDER:
            known[canon] = value
        else:
            other.append(canon if value is None else f"{canon}={value}")
    other.sort()
    cookie = known.get("cookie")
    cookies = []
    for item in cookie if isinstance(cookie, (list, tuple)) else [cookie]:
        text = item.as_string() if isinstance(item, Cookie) else item
        if text is not None and text != "":
            cookies.append(check_newlines(str(text)))
    p3p = known.get("p3p")
    if isinstance(p3p, (list, tuple)):
        p3p = " ".join(map(str, p3p))
    fields = {}
    for key in ("type", "status", "target", "expires", "nph", "charset", "attachment"):
        value = known.get(key)
        fields[key] = None if value is None else check_newlines(str(value))
    p3p = None if p3p is None else check_newlines(str(p3p))
    other = [check_newlines(o) for o in other]
    type_ = fields["type"]
    if type_ is None:
        type_ = "text/html"
    charset = q.charset(fields["charset"])
    if type_ != "" and not re.search(r"\bcharset\b", type_) and charset:
        type_ += f"; charset={charset}"
    status, nph, expires = fields["status"], truth(fields["nph"]), fields["expires"]
    lines = []
    if nph:
        protocol = os.environ.get("SERVER_PROTOCOL") or "HTTP/1.0"
        lines.append(f"{protocol} {status if truth(status) else '200 OK'}")
        lines.append("Server: " + (os.environ.get("SERVER_SOFTWARE") or "cmdline"))
    if truth(status):
        lines.append(f"Status: {status}")
    if truth(fields["target"]):
        lines.append(f"Window-Target: {fields['target']}")
    if truth(p3p):
        lines.append(f'P3P: policyref="/w3c/p3p.xml", CP="{p3p}"')
    lines.extend(f"Set-Cookie: {c}" for c in cookies)
    if truth(expires):
        lines.append("Expires: " + http_date(expires, "http"))
    cookie_given = isinstance(cookie, (list, tuple, Cookie)) or truth(cookie)
    if truth(expires) or cookie_given or nph:
        lines.append("Date: " + http_date(0, "http"))
    if q._cache:
        lines.append("Pragma: no-cache")
    if truth(fields["attachment"]):
        lines.append(f'Content-Disposition: attachment; filename="{fields["attachment"]}"')
    for item in other:
        match = re.fullmatch(r'([^ \r\n\t=]+)="?(.+?)"?', item, re.S)
        if match:
            name = match[1]
            item = name[:1].upper() + name[1:].lower() + ": " + match[2]  # (no entity decoding)
        lines.append(item[:1].upper() + item[1:])
    if type_ != "":
        lines.append(f"Content-Type: {type_}")
    return CRLF.join(lines) + CRLF + CRLF
