"""Exact Japanese codecs: ``sjis-exact`` and ``euc-jp-exact`` give back any bytes they read.

CPython's ``cp932`` is not a byte round trip: NEC and IBM rows hold duplicates
(``87 90`` and ``81 E0`` are both U+2252), so a line read and printed back
through it can change (``87 90 87 9A FA 5C`` -> ``81 E0 81 E6 ED 40``).  These
codecs fix the text model instead:

* Decoding splits the bytes into characters (Shift_JIS: lead 81-9F/E0-FC with
  trail 40-7E/80-FC; EUC-JP: 8F+2, 8E+1, A1-FE pairs; anything else one byte).
  A character becomes the Unicode character it stands for only if encoding that
  character gives back the same bytes; otherwise (the second form of a
  duplicate, an unassigned or broken sequence, a stray byte) each byte 80-FF
  becomes its ``surrogateescape`` code point U+DC80+byte and an ASCII byte
  stays itself.  So ``encode(decode(b)) == b`` for every ``b``.
* Encoding writes surrogate escapes back as their bytes and every other
  character in the file's encoding: ``sjis-exact`` as ``cp932`` (then
  ``shift_jis`` for U+301C and the few other characters only it maps);
  ``euc-jp-exact`` as ``euc_jp``, then as CP51932 does for the NEC row 13 and
  NEC-selected IBM characters (``cp932`` bytes through jcode.pl's arithmetic).
  Literals such as ``"無題"`` therefore come out as the file's own bytes.

Text that decodes strictly and re-encodes to the same bytes (the usual line)
takes one C-level decode and one encode; only other lines go character by
character.  ``register()`` adds the codecs on first use (an ``:encoding(...)``
layer naming them, or ``import perlcompat.jcode``).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable

_NAMES = {
    "sjis_exact": "sjis-exact",
    "shift_jis_exact": "sjis-exact",
    "shiftjis_exact": "sjis-exact",
    "cp932_exact": "sjis-exact",
    "euc_jp_exact": "euc-jp-exact",
    "eucjp_exact": "euc-jp-exact",
    "euc_exact": "euc-jp-exact",
}

_SJIS_TOKEN = re.compile(rb"[\x81-\x9f\xe0-\xfc][\x40-\x7e\x80-\xfc]|[\x00-\xff]")
_EUC_TOKEN = re.compile(
    rb"\x8f[\xa1-\xfe][\xa1-\xfe]|\x8e[\xa1-\xdf]|[\xa1-\xfe][\xa1-\xfe]|[\x00-\xff]"
)
_SJIS_LEAD = re.compile(rb"[\x81-\x9f\xe0-\xfc]")
_EUC_PARTIAL = re.compile(rb"[\x8e\xa1-\xfe]|\x8f[\xa1-\xfe]?")


def _escape(token: bytes) -> str:
    """*token*'s bytes as surrogate escapes (80-FF) and ASCII characters."""
    return "".join(chr(0xDC00 + b) if b >= 0x80 else chr(b) for b in token)


class _Exact:
    """One exact codec: a token pattern, a strict decoder and a per-character encoder."""

    def __init__(
        self,
        name: str,
        token: re.Pattern[bytes],
        partial: re.Pattern[bytes],
        base: str,
        decode_char: Callable[[bytes], str | None],
        encode_char: Callable[[str], bytes | None],
    ) -> None:
        self.name = name
        self.token = token
        self.partial = partial
        self.base = base
        self.decode_char = decode_char
        self.encode_char = encode_char
        self.chars: dict[bytes, str] = {}
        self.bytes_of: dict[str, bytes | None] = {}

    # -- decoding ------------------------------------------------------------
    def _char(self, token: bytes) -> str:
        text = self.chars.get(token)
        if text is None:
            text = self.decode_char(token)
            if text is None or self._encode_one(text) != token:
                text = _escape(token)
            self.chars[token] = text
        return text

    def decode(self, data: bytes, errors: str = "strict") -> tuple[str, int]:
        data = bytes(data)
        try:
            text = data.decode(self.base)
            if self._encode_fast(text) == data:
                return text, len(data)
        except UnicodeError:
            pass
        char = self._char
        return "".join([char(t) for t in self.token.findall(data)]), len(data)

    # -- encoding ------------------------------------------------------------
    def _encode_one(self, char: str) -> bytes | None:
        if char in self.bytes_of:
            return self.bytes_of[char]
        raw: bytes | None
        if len(char) == 1 and 0xDC80 <= ord(char) <= 0xDCFF:
            raw = bytes((ord(char) - 0xDC00,))
        else:
            raw = self.encode_char(char)
        self.bytes_of[char] = raw
        return raw

    def _encode_fast(self, text: str) -> bytes | None:
        try:
            return text.encode(self.base)
        except UnicodeError:
            return None

    def encode(self, text: str, errors: str = "strict") -> tuple[bytes, int]:
        raw = self._encode_fast(text)
        if raw is not None:
            return raw, len(text)
        out = []
        pos = 0
        one = self._encode_one
        while pos < len(text):
            piece = one(text[pos])
            if piece is not None:
                out.append(piece)
                pos += 1
                continue
            end = pos + 1
            while end < len(text) and one(text[end]) is None:
                end += 1
            exc = UnicodeEncodeError(
                self.name, text, pos, end, "character not in the file's encoding"
            )
            replacement, pos = codecs.lookup_error(errors)(exc)
            if isinstance(replacement, str):
                replacement = self.encode(replacement, "strict")[0]
            out.append(replacement)
        return b"".join(out), len(text)

    # -- incremental ---------------------------------------------------------
    def decode_partial(self, data: bytes, errors: str, final: bool) -> tuple[str, int]:
        """Decode all but an incomplete character at the end (unless *final*)."""
        keep = 0
        if not final and data:
            tokens = self.token.findall(data)
            tail = b""
            for token in tokens[-2:][::-1]:
                if len(token) != 1:
                    break
                tail = token + tail
                if self.partial.fullmatch(tail):
                    keep = len(tail)
        text, _ = self.decode(data[: len(data) - keep], errors)
        return text, len(data) - keep

    def codec_info(self) -> codecs.CodecInfo:
        codec = self

        class IncrementalEncoder(codecs.IncrementalEncoder):
            def encode(self, input: str, final: bool = False) -> bytes:
                return codec.encode(input, self.errors)[0]

        class IncrementalDecoder(codecs.BufferedIncrementalDecoder):
            def _buffer_decode(  # type: ignore[override]
                self, input: bytes, errors: str, final: bool
            ) -> tuple[str, int]:
                return codec.decode_partial(input, errors, final)

        class StreamWriter(codecs.StreamWriter):
            def encode(self, input: str, errors: str = "strict") -> tuple[bytes, int]:
                return codec.encode(input, errors)

        class StreamReader(codecs.StreamReader):
            def decode(self, input: bytes, errors: str = "strict") -> tuple[str, int]:
                return codec.decode_partial(input, errors, False)

        return codecs.CodecInfo(
            name=self.name,
            encode=self.encode,
            decode=self.decode,  # type: ignore[arg-type]
            incrementalencoder=IncrementalEncoder,
            incrementaldecoder=IncrementalDecoder,
            streamwriter=StreamWriter,
            streamreader=StreamReader,
        )


# -- Shift_JIS ---------------------------------------------------------------
def _sjis_decode(token: bytes) -> str | None:
    try:
        return token.decode("cp932")
    except UnicodeDecodeError:
        return None


def _sjis_encode(char: str) -> bytes | None:
    for base in ("cp932", "shift_jis"):
        try:
            return char.encode(base)
        except UnicodeEncodeError:
            pass
    return None


#: jcode.pl's $undef_sjis (geta), for X 0212 characters in Shift_JIS
GETA = b"\x81\xac"


# -- EUC-JP: jcode.pl's two-byte arithmetic (perlcompat.jcode uses it too) -----
def s2e(code: bytes) -> bytes:
    """One Shift_JIS character (or half-width kana byte) as EUC-JP, jcode.pl's arithmetic."""
    c1 = code[0]
    if 0xA1 <= c1 <= 0xDF:
        return bytes((0x8E, c1))
    c2 = code[1]
    if c2 >= 0x9F:
        c1 = c1 * 2 - (0xE0 if c1 >= 0xE0 else 0x60)
        c2 += 2
    else:
        c1 = c1 * 2 - (0xE1 if c1 >= 0xE0 else 0x61)
        c2 += 0x60 + (c2 < 0x7F)
    return bytes((c1 & 0xFF, c2 & 0xFF))


def e2s(code: bytes) -> bytes:
    """One EUC-JP character as Shift_JIS (X 0212 -> geta), jcode.pl's arithmetic."""
    c1 = code[0]
    if c1 == 0x8E:
        return code[1:2]
    if c1 == 0x8F:
        return GETA
    c2 = code[1]
    if c1 % 2:
        c1 = (c1 >> 1) + (0x31 if c1 < 0xDF else 0x71)
        c2 -= 0x60 + (c2 < 0xE0)
    else:
        c1 = (c1 >> 1) + (0x30 if c1 < 0xDF else 0x70)
        c2 -= 2
    return bytes((c1 & 0xFF, c2 & 0xFF))


def _euc_decode(token: bytes) -> str | None:
    try:
        text = token.decode("euc_jp")
        if _euc_encode(text) == token:
            return text
    except UnicodeDecodeError:
        pass
    if len(token) == 2 and token[0] >= 0xA1:  # CP51932: NEC row 13, NEC-selected IBM rows
        try:
            return e2s(token).decode("cp932")
        except UnicodeDecodeError:
            return None
    return None


def _euc_encode(char: str) -> bytes | None:
    try:
        return char.encode("euc_jp")
    except UnicodeEncodeError:
        pass
    try:
        sjis = char.encode("cp932")
    except UnicodeEncodeError:
        return None
    if len(sjis) == 2 and sjis[0] < 0xF0:
        return s2e(sjis)
    return None


_CODECS: dict[str, _Exact] = {}


def exact_codec(name: str) -> _Exact:
    """The ``_Exact`` object for ``sjis-exact`` or ``euc-jp-exact`` (made once)."""
    codec = _CODECS.get(name)
    if codec is None:
        if name == "sjis-exact":
            codec = _Exact(name, _SJIS_TOKEN, _SJIS_LEAD, "cp932", _sjis_decode, _sjis_encode)
        else:
            codec = _Exact(name, _EUC_TOKEN, _EUC_PARTIAL, "euc_jp", _euc_decode, _euc_encode)
        _CODECS[name] = codec
    return codec


def _search(name: str) -> codecs.CodecInfo | None:
    canonical = _NAMES.get(name.lower().replace("-", "_").replace(" ", "_"))
    if canonical is None:
        return None
    return exact_codec(canonical).codec_info()


_registered: list[bool] = []


def register(name: str | None = None) -> bool:
    """Register the exact codecs (once); True if *name* (when given) is one of them."""
    if not _registered:
        codecs.register(_search)
        _registered.append(True)
    if name is None:
        return True
    return name.lower().replace("-", "_").replace(" ", "_") in _NAMES
