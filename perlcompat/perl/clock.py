"""The one place perlcompat's waits sleep: pauses and deadlines that honour ``alarm()``.

Every wait (``sleep``, ``flock``'s polling, ``lock()``'s pauses between tries,
``replace_file``'s retries; in ``locks/`` all through ``locks.retry``) sleeps
through :func:`pause` and reads a pending cooperative alarm through
:func:`alarm_deadline`.  ``perl.alarm`` hooks itself in here when it is
imported (:func:`install`); until then no alarm can be pending, so these are
plain ``time`` calls and a script that never calls ``alarm`` pays nothing for
it.  :func:`check_seconds` is the one check of the seconds perlcompat's own
parameters take (finite, >= 0; None means for ever); :func:`out_of_range` is
Perl's rule, which ``sleep`` and ``alarm`` share.  This module imports only
``time`` (and ``warnings`` when it refuses a number).
"""

from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class AlarmHooks(Protocol):
        """What ``perl.alarm`` provides to the waits (the module itself)."""

        def pending_deadline(self) -> float | None: ...
        def fire_if_due(self) -> None: ...
        def sleep_checked(self, seconds: float) -> None: ...
        def raised_by_handler(self, exc: BaseException) -> bool: ...


_alarm: AlarmHooks | None = None


def install(hooks: AlarmHooks) -> None:
    """Route the waits through *hooks* (called once, by ``perl.alarm`` on import)."""
    global _alarm
    _alarm = hooks


def alarm_installed() -> bool:
    """True once ``alarm`` is imported: a wait may then have to wake early."""
    return _alarm is not None


def pause(seconds: float, *, alarm: bool = True) -> None:
    """Sleep *seconds*; a due cooperative alarm runs its handler (which may raise).

    ``alarm=False`` is for a wait inside one step that a handler must not cut
    (a release's wait for a remover): a plain sleep, the alarm is left pending.
    """
    if _alarm is None or not alarm:
        time.sleep(max(seconds, 0.0))
    else:
        _alarm.sleep_checked(seconds)


def alarm_deadline() -> float | None:
    """``time.monotonic()`` deadline of this thread's cooperative alarm, or None."""
    return None if _alarm is None else _alarm.pending_deadline()


def fire_if_due() -> None:
    """Run this thread's ALRM handler if its cooperative alarm is due (it may raise)."""
    if _alarm is not None:
        _alarm.fire_if_due()


def raised_by_alarm(exc: BaseException) -> bool:
    """True if *exc* came from a handler run through ``%SIG``/``alarm``."""
    return _alarm is not None and _alarm.raised_by_handler(exc)


def check_seconds(name: str, value: object, *, zero: bool = True) -> float:
    """Return *value* as float seconds; ValueError naming *name* unless finite and >= 0.

    The one check of the seconds perlcompat's own parameters take (``timeout``,
    ``wait``, ``stale``, ``poll``; ``flock``'s and ``replace_file``'s ``timeout``).
    With ``zero=False`` it must be > 0.  NaN and infinity are refused: a NaN
    deadline compares false with every time and would wait for ever, and "for
    ever" is said with None.  (Perl's own ``sleep``/``alarm`` keep Perl's rule:
    :func:`out_of_range`.)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}")
    seconds = float(value)
    if seconds - seconds != 0:  # NaN or +-infinity
        raise ValueError(f"{name} must be a finite number of seconds, not {value!r}")
    if seconds < 0 or (not zero and seconds == 0):
        bound = ">= 0" if zero else "> 0"
        raise ValueError(f"{name} must be a number of seconds {bound}, not {value!r}")
    return seconds


#: Perl's sleep and alarm take a C int: from 2**31 seconds on they fail with EINVAL
MAX_SECONDS = 2**31


def out_of_range(name: str, seconds: float) -> bool:
    """Check *seconds* for ``sleep``/``alarm``: True (with a RuntimeWarning) if Perl refuses it.

    Negative, infinite or >= 2**31 seconds: Perl warns and fails with EINVAL,
    so the caller returns Perl's value with ``$!`` = EINVAL.  A non-number or NaN
    (which Perl would silently take as 0) raises ValueError.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds != seconds:
        raise ValueError(f"{name} needs a number of seconds, not {seconds!r}")
    if 0 <= seconds < MAX_SECONDS:
        return False
    import warnings

    what = "negative argument" if seconds < 0 else "argument too large"
    warnings.warn(f"{name}() with {what} ({seconds!r})", RuntimeWarning, stacklevel=3)
    return True
