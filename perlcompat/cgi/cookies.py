"""CGI::Cookie: :class:`Cookie` (a ``Set-Cookie`` value) and the parser of ``HTTP_COOKIE``."""

from __future__ import annotations

import re

from ..perl.text import num, truth
from . import util

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


class Cookie:
    """CGI::Cookie: ``str(c)`` is its ``Set-Cookie`` value (``name=value; path=/``)."""

    def __init__(
        self,
        name: str,
        value: str | Iterable[str] | dict[str, str],
        *,
        path: str | None = None,
        domain: str | None = None,
        secure: object = None,
        expires: object = None,
        max_age: object = None,
        httponly: object = None,
        samesite: str | None = None,
    ) -> None:
        import time

        self.name = name
        if isinstance(value, dict):
            self.value = [str(x) for kv in value.items() for x in kv]
        elif isinstance(value, str):
            self.value = [value]
        else:
            self.value = [str(v) for v in value]
        self.path = path or "/"
        self.domain = domain.lower() if domain is not None else None
        self.secure = secure
        self.expires = util.expires(expires, "cookie") if expires is not None else None
        self.max_age: object = None
        if max_age is not None:
            now = int(
                time.time()
            )  # (one clock reading: CGI::Cookie reads two, a second apart at worst)
            self.max_age = util.perl_number(float(num(util.expire_calc(max_age, now))) - now)
        self.httponly = httponly
        self.samesite: str | None = None
        if samesite:
            normal = samesite.lower().capitalize()
            if normal in ("Strict", "Lax", "None"):
                self.samesite = normal

    def as_string(self) -> str:
        """The ``Set-Cookie`` value, as CGI::Cookie's ``as_string``."""
        if not truth(self.name):
            return ""
        parts = [util.escape(self.name) + "=" + "&".join(util.escape(v) for v in self.value)]
        if truth(self.domain):
            parts.append(f"domain={self.domain}")
        if truth(self.path):
            parts.append(f"path={self.path}")
        if truth(self.expires):
            parts.append(f"expires={self.expires}")
        if truth(self.max_age):
            parts.append(f"max-age={self.max_age}")
        if truth(self.secure):
            parts.append("secure")
        if truth(self.httponly):
            parts.append("HttpOnly")
        if truth(self.samesite):
            parts.append(f"SameSite={self.samesite}")
        return "; ".join(parts)

    __str__ = as_string

    def __repr__(self) -> str:
        return f"Cookie({self.as_string()!r})"


def parse_cookies(raw: str) -> dict[str, Cookie]:
    """CGI::Cookie's ``parse``: the first of two cookies with one name wins."""
    found: dict[str, Cookie] = {}
    if not truth(raw):
        return found
    pairs = re.split(r"[;,] ?", raw)
    while pairs and not pairs[-1]:
        pairs.pop()
    for pair in pairs:
        pair = pair.strip(" \t\n\r\f\v")
        name, eq, value = pair.partition("=")
        if not eq:
            continue
        values = [util.unescape(v) for v in re.split(r"[&;]", value)] if value else []
        key = util.unescape(name)
        if key not in found:
            found[key] = Cookie(key, values)
    return found
