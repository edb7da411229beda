"""Perl's ``time``, ``localtime`` and ``gmtime``, in list form and scalar form.

``localtime(t)`` returns Perl's nine-element list ``($sec, $min, $hour, $mday,
$mon, $year, $wday, $yday, $isdst)``: *mon* 0-11, *year* minus 1900, *wday*
0 = Sunday, *yday* 0-365.  The list's ``str()`` is Perl's scalar form
(``scalar localtime``: ``"Mon Nov 23 12:00:00 2026"``, day of month padded with
a space), which :func:`scalar_localtime` and :func:`scalar_gmtime` also return.
A time that cannot be represented gives an empty list (``str()`` is ``""``)
with ``$!`` = EOVERFLOW, where Perl warns and returns undef.
"""

from __future__ import annotations

import errno
import math
import time as _time_module

from .errno import set_errno

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class TimeList(tuple):  # type: ignore[type-arg]
    """Perl's localtime/gmtime list; ``str()`` gives the scalar form."""

    __slots__ = ()

    def __str__(self) -> str:
        if not self:
            return ""
        sec, minute, hour, mday, mon, year, wday = self[:7]
        day = _DAYS[(wday - 1) % 7]
        return f"{day} {_MONTHS[mon]} {mday:2d} {hour:02d}:{minute:02d}:{sec:02d} {year + 1900}"

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        """Index like a Perl list: out of range (or empty) reads as None."""
        if isinstance(index, slice):
            return tuple.__getitem__(self, index)
        try:
            return tuple.__getitem__(self, index)
        except IndexError:
            return None


def time() -> int:
    """Return Perl's ``time``: whole seconds since the epoch."""
    return int(_time_module.time())


def _convert(t: float | str | bytes | None, local: bool) -> TimeList:
    if t is None:
        t = _time_module.time()
    elif isinstance(t, (str, bytes)):  # a time read from a file: Perl numifies it
        from .text import num

        t = num(t)
    try:
        if isinstance(t, float) and not math.isfinite(t):
            raise OverflowError
        seconds = math.floor(t)
        parts = (_time_module.localtime if local else _time_module.gmtime)(seconds)
    except (OverflowError, OSError, ValueError):
        set_errno(errno.EOVERFLOW)
        return TimeList()
    wday = (parts.tm_wday + 1) % 7  # Python: Monday = 0; Perl: Sunday = 0
    isdst = max(parts.tm_isdst, 0) if local else 0
    return TimeList(
        (
            parts.tm_sec,
            parts.tm_min,
            parts.tm_hour,
            parts.tm_mday,
            parts.tm_mon - 1,
            parts.tm_year - 1900,
            wday,
            parts.tm_yday - 1,
            isdst,
        )
    )


def localtime(t: float | str | bytes | None = None) -> TimeList:
    """Perl's ``localtime(t)`` (default now) as a nine-element list."""
    return _convert(t, True)


def gmtime(t: float | str | bytes | None = None) -> TimeList:
    """Perl's ``gmtime(t)`` (default now) as a nine-element list."""
    return _convert(t, False)


def scalar_localtime(t: float | str | bytes | None = None) -> str:
    """Perl's ``scalar localtime(t)``: ``"Mon Nov 23 12:00:00 2026"``."""
    return str(_convert(t, True))


def scalar_gmtime(t: float | str | bytes | None = None) -> str:
    """Perl's ``scalar gmtime(t)``."""
    return str(_convert(t, False))
