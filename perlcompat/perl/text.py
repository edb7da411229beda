"""Perl's string built-ins and scalar rules: ``split``, a string's number, a value's truth.

* :func:`split` follows perlfunc: the pattern is a regex (``"<>"`` for
  ``split(/<>/, $line)``), ``" "`` is awk mode (leading whitespace skipped, runs
  of whitespace split), ``"^"`` means ``/^/m``; a match of width zero never
  splits at the start of the string or right where the previous match ended
  (a match at the end of the string makes a trailing empty field);
  capture groups are returned between the fields (``undef`` where a group did
  not take part); a positive *limit* is the most fields returned, a negative one
  keeps everything, and 0 drops trailing empty fields.  ``fields=N`` is a list
  assignment from split, ``($k, $v) = split(/=/, $pair)``: Perl's implicit limit
  N + 1, then exactly N values, ``undef`` for the missing ones (an f-string
  prints them as "", as Perl prints undef).
* :func:`chomp` and :func:`chop`: Perl's ``chomp``/``chop`` of a string (the
  result is returned: ``line = chomp(line)``) or, in place, of a list.
* :func:`num` is the number Perl uses for a string in numeric context: leading
  whitespace, then the longest decimal number (sign, digits, fraction,
  exponent) or ``Inf``/``NaN``; anything else counts 0.  Integral values come
  back as ``int`` (Perl prints ``"1e3" + 0`` as ``1000``).
* :func:`inc` is Perl's ``++`` with its magic string increment (``"0099"`` -> ``"0100"``).
* :func:`truth` is Perl's boolean: ``None``, ``""``, ``"0"`` and numeric zero
  are false; every other string (``"0.0"``, ``"00"``, ``" "``) is true.

Perl's ``\\w``/``\\d``/``\\s`` in a byte-oriented script match ASCII only: pass
``re.ASCII`` (or write ``(?a)``) where a ported pattern meets Shift_JIS or
EUC-JP text decoded with surrogateescape.
"""

from __future__ import annotations

import math
import re

from .undef import undef

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Union

    Number = Union[int, float]
    from typing import TypeVar

    _Chompable = TypeVar("_Chompable")

_NUMBER = re.compile(
    r"[ \t\n\r\f\v]*([+-]?)"
    r"(?:([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|(inf(?:inity)?|nan))",
    re.IGNORECASE,
)
#: Perl keeps integers as IV/UV only in this range; beyond it a number is a double
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def num(value: object) -> Number:
    """Return Perl's numeric value of *value* (``"12abc"`` -> 12, ``"abc"`` -> 0)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    text = str(value)
    match = _NUMBER.match(text)
    if match is None:
        return 0
    sign, digits, exponent, special = match.groups()
    if special is not None:
        number = float("nan") if special.lower() == "nan" else float("inf")
        return -number if sign == "-" else number
    if exponent is None and "." not in digits:
        whole = -int(digits) if sign == "-" else int(digits)
        return whole if _INT_MIN <= whole <= _INT_MAX else float(whole)
    number = float(sign + digits + (exponent or ""))
    if math.isfinite(number) and number.is_integer() and abs(number) < 2**53:
        return int(number)
    return number


def truth(value: object) -> bool:
    """Return Perl's truth of *value*: False for None, "", "0" and numeric zero."""
    if value is None:
        return False
    if isinstance(value, (str, bytes)):
        return value not in ("", "0", b"", b"0")
    if isinstance(value, (int, float)):
        return value != 0
    return bool(value)


#: POSIX character classes as Perl reads them inside a bracket expression (ASCII)
_POSIX_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v",
    "blank": " \\t",
    "punct": "!-/:-@\\[-`{-~",
    "xdigit": "0-9A-Fa-f",
    "word": "a-zA-Z0-9_",
    "cntrl": "\\x00-\\x1f\\x7f",
    "print": " -~",
    "graph": "!-~",
}
_POSIX = re.compile(r"\[:(\^?)(" + "|".join(_POSIX_CLASSES) + r"):\]")


def _perl_pattern(pattern: str) -> str:
    """Translate Perl-only regex syntax Python would misread: ``[[:alpha:]]`` classes."""
    if "[:" not in pattern:
        return pattern

    def one(match: re.Match[str]) -> str:
        if match.group(1):  # [:^alpha:] has no Python spelling inside a bracket
            raise ValueError(f"split pattern {pattern!r}: negated POSIX classes are not supported")
        return _POSIX_CLASSES[match.group(2)]

    return _POSIX.sub(one, pattern)


def split(
    pattern: str | re.Pattern[str],
    string: str | None,
    limit: int = 0,
    *,
    fields: int | None = None,
) -> list[str]:
    """Split *string* as Perl's ``split(/PATTERN/, EXPR, LIMIT)`` does.

    ``fields=N`` ports ``($a, $b, ...) = split(...)`` into N variables: exactly N
    values, ``undef`` (``""`` in a string, false) where the line has fewer.
    """
    if fields is not None:
        if type(fields) is not int or fields < 1:
            raise ValueError(f"split fields must be an int >= 1, not {fields!r}")
        got = split(pattern, string, limit if limit else fields + 1)[:fields]
        return got + [undef] * (fields - len(got))
    if string is None:
        string = ""
    if isinstance(pattern, str):
        if pattern == " ":
            string = string.lstrip(" \t\n\r\f\v")
            regex = re.compile(r"[ \t\n\r\f\v]+")
        elif pattern == "^":
            regex = re.compile(r"(?<=\n)(?!\Z)")  # Perl's /^/m: not after a final newline
        else:
            regex = re.compile(_perl_pattern(pattern))
    else:
        regex = pattern
    if not isinstance(limit, int):
        raise TypeError(f"split limit must be an int, not {type(limit).__name__}")
    out: list[str] = []
    if string == "":
        return out
    start = 0  # where the current field begins
    last_end = -1  # where the previous separator ended
    fields = 0
    for match in regex.finditer(string):
        if limit > 0 and fields >= limit - 1:
            break
        begin, end = match.span()
        if begin == end and (begin == 0 or begin == last_end):
            continue  # a zero-width match never splits at the start or right after a match
        out.append(string[start:begin])
        out.extend(undef if group is None else group for group in match.groups())
        fields += 1
        start = end
        last_end = end
    out.append(string[start:])
    if limit == 0:
        while out and out[-1] == "":  # (undef too)
            out.pop()
    return out


def chomp(value: _Chompable) -> _Chompable:
    """Perl's ``chomp``: *value* without one trailing newline (``chomp("a\\n") == "a"``).

    A string (or bytes) is returned chomped: ``line = chomp(line)`` ports
    ``chomp($line)``.  A list is chomped in place, element by element, as
    ``chomp(@lines)`` does, and returned.  ``undef``/None stay as they are.
    Only ``"\\n"`` is removed (Perl's ``$/``): a ``"\\r"`` before it stays, as in
    Perl on POSIX (a ``:crlf`` handle has already read ``"\\r\\n"`` as ``"\\n"``).
    """
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = chomp(item)
        return value
    if isinstance(value, str):
        return value[:-1] if value.endswith("\n") else value  # type: ignore[return-value]
    if isinstance(value, bytes):
        return value[:-1] if value.endswith(b"\n") else value  # type: ignore[return-value]
    return value


def chop(value: _Chompable) -> _Chompable:
    """Perl's ``chop``: *value* without its last character, whatever it is.

    As :func:`chomp`: a string is returned (``line = chop(line)``), a list is
    chopped in place and returned.
    """
    if isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = chop(item)
        return value
    if isinstance(value, (str, bytes)) and value is not undef:
        return value[:-1]  # type: ignore[return-value]
    return value


_MAGIC = re.compile(r"[a-zA-Z]*[0-9]*\Z")


def inc(value: object) -> object:
    """Perl's ``++``: the magic string increment, else the number plus 1 (perlop).

    A non-empty string of letters then digits (``/^[a-zA-Z]*[0-9]*$/``) counts
    as a string, each place within its own range with carry: ``"0099"`` ->
    ``"0100"``, ``"Az"`` -> ``"Ba"``, ``"zz"`` -> ``"aaa"``, ``"a9"`` -> ``"b0"``,
    ``"Zz"`` -> ``"AAa"``.  Any other value is a number: ``None`` and ``""`` give 1,
    ``"1.5"`` gives 2.5, ``"12abc"`` 13 (``num(value) + 1``); numbers stay numbers.
    """
    if value is None:
        return 1
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, bytes):
        result = inc(value.decode("latin-1"))
        return result.encode("latin-1") if isinstance(result, str) else result
    text = str(value)
    if not text or not _MAGIC.match(text):
        return num(text) + 1
    chars = list(text)
    for i in range(len(chars) - 1, -1, -1):
        char = chars[i]
        if char not in "9zZ":
            chars[i] = chr(ord(char) + 1)
            return "".join(chars)
        chars[i] = "0" if char == "9" else "a" if char == "z" else "A"
    first = chars[0]
    return ("1" if first == "0" else first) + "".join(chars)  # the string grew
