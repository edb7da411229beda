"""Perl's byte answers on text: ``length``, ``substr``, ``tr``, and regexes run on bytes.

A Perl script without ``use utf8`` sees the bytes of what it reads: ``length("café")``
is 5 (UTF-8: ``é`` is two bytes), ``substr`` cuts bytes, ``tr/\\200-\\377//d`` and
``s/[^\\w]/_/g`` see each byte.  Text read from a ``PerlFile`` (and from CGI input)
is UTF-8 decoded with ``surrogateescape``, so Python's ``len`` counts characters;
these functions work on the encoded bytes (:func:`as_bytes`) and give Perl's
answers, returning text that prints back as the same bytes (:func:`from_bytes`).
Each also takes ``bytes`` (and then returns ``bytes``).

For a regex, run a bytes pattern on :func:`as_bytes`: in Python, ``\\w``, ``\\d``,
``\\s`` of a bytes pattern are ASCII only, as Perl's are on a byte string::

    name = from_bytes(re.sub(rb"[^\\w]", b"_", as_bytes(name)))   # s/[^\\w]/_/g

Text read through an ``:encoding(...)`` layer is characters in Perl too: use
Python's ``len`` and slicing there.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar, Union, overload

    Text = TypeVar("Text", str, bytes)
    Data = Union[str, bytes]

__all__ = ["as_bytes", "from_bytes", "length", "substr", "tr"]


def as_bytes(text: str | bytes) -> bytes:
    """The bytes Perl sees for *text* (UTF-8, escaped bytes restored); bytes unchanged."""
    if isinstance(text, str):
        return text.encode("utf-8", "surrogateescape")
    return bytes(text)


def from_bytes(data: bytes) -> str:
    """Text for *data*, as a handle decodes it (UTF-8, ``surrogateescape``): prints as *data*."""
    return bytes(data).decode("utf-8", "surrogateescape")


def _back(data: bytes, like: object) -> Data:
    return data if isinstance(like, (bytes, bytearray)) else from_bytes(data)


def length(value: object) -> int | None:
    """Perl's ``length`` without ``use utf8``: bytes (``length("café")`` is 5); None for None."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, bytearray)):
        return len(as_bytes(value)) if isinstance(value, str) else len(value)
    from .handle import _perl_str

    text = _perl_str(value)
    return len(as_bytes(text))


def _span(size: int, offset: int, count: int | None) -> tuple[int, int] | None:
    """Perl's substr offsets (pp.c translate_substr_offsets) -> (start, end), None: outside."""
    start = offset + size if offset < 0 and size else offset
    if start > size:
        return None
    if count is None:
        end = size
    elif count < 0:
        end = size + count
    else:
        end = start + count
    if end < 0:
        if start < 0:
            return None
        end = 0
    elif start < 0:
        start = 0
    end = min(max(end, start), size)
    return start, end


if TYPE_CHECKING:

    @overload
    def substr(value: Text, offset: int, count: int | None = None) -> Text | None: ...
    @overload
    def substr(
        value: Text, offset: int, count: int | None, replacement: str | bytes
    ) -> tuple[Text, Text]: ...


def substr(
    value: Data,
    offset: int,
    count: int | None = None,
    replacement: str | bytes | None = None,
) -> Data | tuple[Data, Data] | None:
    """Perl's ``substr(EXPR, OFFSET, LENGTH, REPLACEMENT)`` counted in bytes.

    Without *replacement*: the part (None, Perl's undef, when *offset* is outside
    the string).  With it (Perl's 4-argument form, or ``substr(...) = ...``): the
    pair ``(new_string, part_replaced)``; outside the string that dies as Perl
    does ("substr outside of string").  Negative offsets and lengths count from the end.
    """
    data = as_bytes(value)
    span = _span(len(data), int(offset), None if count is None else int(count))
    if replacement is None:
        return None if span is None else _back(data[span[0] : span[1]], value)
    if span is None:
        from .die import _where, die

        die("substr outside of string" + _where(1))
    start, end = span
    new = data[:start] + as_bytes(replacement) + data[end:]
    return _back(new, value), _back(data[start:end], value)


# -- tr ------------------------------------------------------------------------------

_SIMPLE = {"n": 10, "t": 9, "r": 13, "f": 12, "e": 27, "a": 7, "b": 8}


def _list_bytes(spec: str | bytes) -> bytes:
    if isinstance(spec, (bytes, bytearray)):
        return bytes(spec)
    for char in spec:
        if "\x80" <= char <= "\xff":
            raise ValueError(
                f"tr: {char!r} (U+{ord(char):04X}) in a str list is ambiguous: write Perl's"
                r" escapes in a raw string (r'\200-\377') or pass the bytes (b'\xc3\xa9' for é)"
            )
    return spec.encode("utf-8", "surrogateescape")


def _tr_list(spec: str | bytes) -> list[int]:
    """A ``tr`` list as Perl reads it: escapes (``\\200``, ``\\x80``, ``\\-`` ...) and ranges."""
    raw = _list_bytes(spec)
    items: list[tuple[int, bool]] = []  # (byte, is an unescaped "-")
    i = 0
    while i < len(raw):
        byte = raw[i]
        i += 1
        if byte != 0x5C or i >= len(raw):  # not a backslash (or a final one: itself)
            items.append((byte, byte == 0x2D))
            continue
        char = chr(raw[i])
        i += 1
        if char in "01234567":
            digits = char
            while len(digits) < 3 and i < len(raw) and chr(raw[i]) in "01234567":
                digits += chr(raw[i])
                i += 1
            value = int(digits, 8)
        elif char == "x":
            if raw[i : i + 1] == b"{":
                close = raw.index(b"}", i)
                value = int(raw[i + 1 : close] or b"0", 16)
                i = close + 1
            else:
                digits = ""
                while len(digits) < 2 and i < len(raw) and chr(raw[i]) in "0123456789abcdefABCDEF":
                    digits += chr(raw[i])
                    i += 1
                value = int(digits or "0", 16)
        elif char == "c" and i < len(raw):
            value = raw[i] ^ 64 if raw[i] < 0x61 else (raw[i] - 32) ^ 64
            i += 1
        else:
            value = _SIMPLE.get(char, ord(char))
        if value > 255:
            raise ValueError(f"tr: {value:#x} is not a byte (byte semantics: 0-255)")
        items.append((value, False))
    out: list[int] = []
    j = 0
    while j < len(items):
        byte, _dash = items[j]
        if j + 2 < len(items) and items[j + 1][1]:
            last = items[j + 2][0]
            if last < byte:
                raise ValueError(
                    f'Invalid range "{chr(byte)}-{chr(last)}" in transliteration operator'
                )
            out.extend(range(byte, last + 1))
            j += 3
        else:
            out.append(byte)
            j += 1
    return out


def tr(
    value: Text, searchlist: str | bytes, replacementlist: str | bytes, flags: str = ""
) -> tuple[Text, int]:
    """Perl's ``tr/SEARCH/REPLACE/cdsr`` on bytes: ``(new_string, count)``.

    ``count`` is what Perl's ``tr`` returns (bytes matched); ``new_string`` is what
    it leaves in the variable (with ``r``, what it returns).  The lists are Perl's
    source text: ranges (``a-z``), escapes (``\\200-\\377``, ``\\x80``, ``\\n``,
    ``\\-``; write them in a raw string, or pass ``bytes``).  A str list means its
    UTF-8 bytes (a Perl script saved as UTF-8); a character U+0080-U+00FF in a str
    list raises ValueError (``"\\200"`` written without ``r``).  Flags: ``c``
    complement, ``d`` delete found bytes without a replacement, ``s`` squeeze runs
    of one replacement, ``r`` (accepted: the new string always comes back).
    """
    unknown = set(flags) - set("cdsr")
    if unknown:
        raise ValueError(f"tr: unknown flags {''.join(sorted(unknown))!r} (use c, d, s, r)")
    search = _tr_list(searchlist)
    replace = _tr_list(replacementlist)
    delete = "d" in flags
    if "c" in flags:
        present = set(search)
        search = [byte for byte in range(256) if byte not in present]
    if not replace and not delete:
        replace = search
    table = [-1] * 256  # -1: not in the list; -2: delete
    for index, byte in enumerate(search):
        if table[byte] != -1:
            continue  # the first mention wins, as in Perl
        if index < len(replace):
            table[byte] = replace[index]
        else:
            table[byte] = -2 if delete else replace[-1]
    data = as_bytes(value)
    out = bytearray()
    count = 0
    squeeze = "s" in flags
    last = -1
    for byte in data:
        target = table[byte]
        if target == -1:
            out.append(byte)
            last = -1
            continue
        count += 1
        if target == -2:
            continue
        if squeeze and target == last:
            continue
        out.append(target)
        last = target
    return _back(bytes(out), value), count  # type: ignore[return-value]
