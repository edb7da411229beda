"""CGI::Util's part of CGI.pm: ``unescape``, ``escape``, ``escapeHTML``, ``expires``.

Bytes and text convert as everywhere in perlcompat: UTF-8 with ``surrogateescape``,
so ``to_bytes(to_text(b))`` is ``b`` for any bytes (CGI.pm's strings are bytes).
"""

from __future__ import annotations

import re

from ..perl.text import num, truth

CRLF = "\r\n"


def to_text(raw: bytes) -> str:
    """*raw* bytes as perlcompat text (UTF-8, undecodable bytes kept as surrogates)."""
    return raw.decode("utf-8", "surrogateescape")


def to_bytes(text: str) -> bytes:
    """perlcompat text back to its bytes (the inverse of :func:`to_text`)."""
    return text.encode("utf-8", "surrogateescape")


# -- CGI::Util::unescape ---------------------------------------------------------
# (patterns are compiled on first use, through re's cache: not at import)
_PAIR_U = rb"%u([Dd][89a-bA-B][0-9a-fA-F]{2})%u([Dd][c-fC-F][0-9a-fA-F]{2})"
_ESCAPE = rb"%(?:([0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))"


def _utf8_chr(code: int) -> bytes:
    return chr(code).encode("utf-8", "surrogatepass")


def unescape_bytes(raw: bytes) -> bytes:
    """:func:`unescape` on bytes, to bytes."""
    raw = raw.replace(b"+", b" ")
    if b"%" not in raw:
        return raw
    raw = re.sub(
        _PAIR_U,
        lambda m: _utf8_chr(0x10000 + (int(m[1], 16) - 0xD800) * 0x400 + (int(m[2], 16) - 0xDC00)),
        raw,
    )
    return re.sub(
        _ESCAPE,
        lambda m: bytes([int(m[1], 16)]) if m[1] is not None else _utf8_chr(int(m[2], 16)),
        raw,
    )


def unescape(text: str | bytes) -> str:
    """CGI::Util's ``unescape``: ``+`` to space, ``%XX`` and ``%uXXXX``; bad escapes stay."""
    raw = text if isinstance(text, bytes) else to_bytes(text)
    return to_text(unescape_bytes(raw))


def escape(text: str) -> str:
    """CGI::Util's ``escape``: every byte but ``A-Za-z0-9_.~-`` as ``%XX``."""
    return re.sub(rb"[^a-zA-Z0-9_.~-]", lambda m: b"%%%02X" % m[0][0], to_bytes(text)).decode(
        "ascii"
    )


def escapeHTML(text: str | None) -> str | None:
    """CGI.pm's ``escapeHTML``: ``& < > " '`` as entities (None stays None)."""
    if text is None:
        return None
    return (
        str(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def unescape_html(text: str) -> str:
    """*text* with HTML entities decoded (``redirect`` decodes its URL and status)."""
    if "&" not in text:
        return text
    import html  # only when there is an entity to decode

    return html.unescape(text)


# -- CGI::Util::expires -------------------------------------------------------------
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MULT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "M": 86400 * 30, "y": 86400 * 365}


def perl_number(value: float) -> str:
    """*value* as Perl prints a number (``%.15g``; whole numbers without ``.0``)."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return format(value, ".15g")


def expire_calc(when: object, now: int | None = None) -> str:
    """CGI::Util's ``expire_calc``: ``"+1d"``, ``"now"``, seconds, or a date kept as is."""
    import time

    text = "" if when is None else str(when)
    if not truth(text) or text.lower() == "now":
        offset: float = 0
    elif re.match(r"\d", text):
        return text
    else:
        match = re.match(r"([+-]?(?:\d+|\d*\.\d*))([smhdMy])", text)
        if not match:
            return text
        offset = _MULT[match[2]] * float(num(match[1]))
    return perl_number((int(time.time()) if now is None else now) + offset)


def expires(when: object, form: str = "http") -> str:
    """CGI::Util's ``expires``: an HTTP (or cookie) date."""
    import time

    text = expire_calc(when)
    if not re.fullmatch(r"\d+\n?", text):
        return text
    sep = "-" if form == "cookie" else " "
    t = time.gmtime(int(text))
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d}{sep}{_MONTHS[t.tm_mon - 1]}{sep}{t.tm_year:04d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    )
