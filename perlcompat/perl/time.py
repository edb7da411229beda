"""Perl's ``time``, ``localtime`` and ``gmtime``, in list form and scalar form.

``localtime(t)`` returns Perl's nine-element list ``($sec, $min, $hour, $mday,
$mon, $year, $wday, $yday, $isdst)``: *mon* 0-11, *year* minus 1900, *wday*
0 = Sunday, *yday* 0-365.  The list's ``str()`` is Perl's scalar form
(``scalar localtime``: ``"Mon Nov 23 12:00:00 2026"``, day of month padded with
a space), which :func:`scalar_localtime` and :func:`scalar_gmtime` also return.
A time that cannot be represented gives an empty list (``str()`` is ``""``)
with ``$!`` = EOVERFLOW, where Perl warns and returns undef.  An index past the
list reads as ``undef``.

:func:`strftime` is POSIX's ``strftime(fmt, sec, min, hour, mday, mon, year,
wday = -1, yday = -1, isdst = -1)`` as Perl's POSIX module gives it: the fields
are normalized as Perl's ``mini_mktime`` does (``mday`` 32 is the next month's
first, a given ``wday`` and ``yday`` are ignored and recomputed, a leap second
60 is kept),
the time zone name and offset are the C library's for that local time, and the
C library formats it: ``strftime("%Y/%m/%d %H:%M", *localtime(t))``.
"""

from __future__ import annotations

import errno
import math
import time as _time_module

from .errno import set_errno
from .undef import undef

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
        """Index like a Perl list: out of range (or empty) reads as ``undef``."""
        if isinstance(index, slice):
            return tuple.__getitem__(self, index)
        try:
            return tuple.__getitem__(self, index)
        except IndexError:
            return undef


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


def _cdiv(a: int, b: int) -> int:
    """C's integer division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _cmod(a: int, b: int) -> int:
    """C's ``%`` (the sign of *a*)."""
    return a - b * _cdiv(a, b)


def _year_days(year: int) -> int:
    return 365 * year + _cdiv(year, 4) - _cdiv(year, 100) + _cdiv(year, 400)


def _mini_mktime(
    sec: int, minute: int, hour: int, mday: int, mon: int, year: int, yday: int
) -> tuple[int, int, int, int, int, int, int, int]:
    """Perl's ``mini_mktime`` (util.c), step by step: sec, min, hour, mday, mon, year, wday, yday.

    Its month arithmetic counts 30.6 days a month from March, so a month past the
    year's end lands where Perl's does, not where a calendar would put it.
    """
    year += 1900
    month = mon
    if yday >= 0 and mday <= 0 and month <= 0:  # a given yday with no month and day rules
        month, mday, jday = 0, 0, 1 + yday
    else:
        jday = 0
    if month >= 2:
        month += 2
    else:
        month += 14
        year -= 1
    yearday = _year_days(year) + _cdiv(month * 153, 5) + mday + jday
    if 0 <= sec <= 60:  # a plausible leap second is kept as it is
        secs = 0
    else:
        secs, sec = sec, 0
    secs += 60 * minute + 3600 * hour
    if secs < 0:
        if secs - _cdiv(secs, 86400) * 86400 < 0:
            yearday += _cdiv(secs, 86400) - 1
            secs -= 86400 * (_cdiv(secs, 86400) - 1)
        else:
            yearday += _cdiv(secs, 86400)
            secs -= 86400 * _cdiv(secs, 86400)
    elif secs >= 86400:
        yearday += secs // 86400
        secs %= 86400
    hour = secs // 3600
    secs %= 3600
    minute = secs // 60
    sec += secs % 60
    jday = yearday
    yearday -= 123  # YEAR_ADJUST
    year = _cdiv(yearday, 146097) * 400
    yearday = _cmod(yearday, 146097)
    odd_cent = _cdiv(yearday, 36524)
    year += odd_cent * 100
    yearday = _cmod(yearday, 36524)
    year += _cdiv(yearday, 1461) * 4
    yearday = _cmod(yearday, 1461)
    odd_year = _cdiv(yearday, 365)
    year += odd_year
    yearday = _cmod(yearday, 365)
    if not yearday and (odd_cent == 4 or odd_year == 4):  # Feb 29
        month, yearday = 1, 29
    else:
        yearday += 123
        month = _cdiv(yearday * 5, 153)
        yearday -= _cdiv(month * 153, 5)
        if month > 13:
            month -= 14
            year += 1
        else:
            month -= 2
    if yearday:
        mday, mon = yearday, month
    else:
        mday, mon = 31, month - 1
    wday = _cmod(jday + 6, 7)  # WEEKDAY_BIAS
    first = _year_days(year - 1) + _cdiv(14 * 153, 5) + 1
    return sec, minute, hour, mday, mon, year - 1900, wday, jday - first


def strftime(
    fmt: str,
    sec: object,
    minute: object,
    hour: object,
    mday: object,
    mon: object,
    year: object,
    wday: object = -1,
    yday: object = -1,
    isdst: object = -1,
) -> str:
    """POSIX's ``strftime(fmt, sec, min, hour, mday, mon, year, ...)`` as Perl's POSIX gives it.

    The fields are Perl's ``localtime`` list (``mon`` 0-11, ``year`` - 1900), so
    ``strftime("%Y-%m-%d", *localtime(t))`` ports ``strftime("%Y-%m-%d", localtime($t))``.
    Fields may be strings read from a file (Perl's number of them is used).
    """
    from .text import num

    fields = [int(num(v)) for v in (sec, minute, hour, mday, mon, year, isdst)]
    # (Perl's POSIX ignores the given wday and yday: they are recomputed)
    second, minute_, hour_, mday_, mon_, year_ = fields[:6]
    sec_, min_, hour_, mday_, mon_, year_, wday_, yday_ = _mini_mktime(
        second, minute_, hour_, mday_, mon_, year_, -1
    )
    dst = max(-1, min(1, fields[6]))
    zone, gmtoff = _zone(sec_, min_, hour_, mday_, mon_, year_, dst)
    tm = _time_module.struct_time(
        (
            year_ + 1900,
            mon_ + 1,
            mday_,
            hour_,
            min_,
            sec_,
            (wday_ + 6) % 7,  # Python: Monday = 0
            yday_ + 1,
            dst,
            zone,
            gmtoff,
        )
    )
    return _time_module.strftime(fmt, tm)


def _zone(
    sec: int, minute: int, hour: int, mday: int, mon: int, year: int, isdst: int
) -> tuple[str | None, int | None]:
    """The zone name and UTC offset mktime(3) gives this local time (as Perl's POSIX asks)."""
    try:
        when = _time_module.mktime(
            (year + 1900, mon + 1, mday, hour, minute, min(sec, 59), 0, 1, isdst)
        )
        local = _time_module.localtime(when)
    except (OverflowError, OSError, ValueError):
        local = _time_module.localtime()
    return local.tm_zone, local.tm_gmtoff
