"""PerlIO layers: ``:raw``, ``:bytes``, ``:utf8``, ``:crlf``, ``:encoding(NAME)``, and PERLQQ.

``apply_layers`` turns a layer string (``open_``'s three-argument mode after the
``:``, ``binmode``'s argument) into a handle's (text, encoding, crlf).
``PERLQQ`` is the codec error handler text handles write with: bytes that
``surrogateescape`` decoding kept go back as they were, a character the
encoding lacks is written as ``\\x{HEX}``, as PerlIO's ``:encoding`` does
(``FB_PERLQQ``).
"""

from __future__ import annotations

import codecs


def _perlqq(exc: UnicodeError) -> tuple[bytes, int]:
    """Encode error handler: escaped bytes back as they were, other characters as ``\\x{HEX}``."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape decoding kept
            out.append(code - 0xDC00)
        else:
            out += b"\\x{%x}" % code
    return bytes(out), exc.end


#: the error handler text handles write with (Perl's PerlIO ``FB_PERLQQ`` fallback)
PERLQQ = "perlcompat.perlqq"
codecs.register_error(PERLQQ, _perlqq)


def apply_layers(spec: str, text: bool, encoding: str, crlf: bool) -> tuple[bool, str, bool]:
    """Apply a Perl layer string like ``:raw:encoding(UTF-8)`` to (text, encoding, crlf)."""
    rest = spec.strip()
    while rest:
        if not rest.startswith(":"):
            raise ValueError(f"bad I/O layer {spec!r}: layers start with ':'")
        rest = rest[1:]
        name_end = len(rest)
        for i, ch in enumerate(rest):
            if ch in ":( \t":
                name_end = i
                break
        name = rest[:name_end]
        rest = rest[name_end:]
        arg = None
        if rest.startswith("("):
            close_at = rest.find(")")
            if close_at < 0:
                raise ValueError(f"bad I/O layer {spec!r}: missing ')'")
            arg = rest[1:close_at].strip()
            rest = rest[close_at + 1 :]
        rest = rest.lstrip()
        if name in ("raw", "bytes", "unix", "perlio", "stdio"):
            if name == "raw":
                text, crlf = False, False
            elif name == "bytes":
                text, encoding = True, "utf-8"
        elif name == "crlf":
            text, crlf = True, True
        elif name in ("utf8", "encoding"):
            if name == "encoding":
                if not arg:
                    raise ValueError(f"bad I/O layer {spec!r}: :encoding needs a name")
                encoding = _codec_name(arg)
            else:
                encoding = "utf-8"
            text = True
        else:
            raise ValueError(f"unknown I/O layer {':' + name!r} in {spec!r}")
    return text, encoding, crlf


def _codec_name(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        from .jexact import register  # sjis-exact, euc-jp-exact: registered on first use

        if not register(name):
            raise ValueError(f"cannot find encoding {name!r}") from None
        return codecs.lookup(name).name
