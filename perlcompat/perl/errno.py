"""Perl's ``$!`` (English.pm ``$OS_ERROR`` / ``$ERRNO``) as a per-thread dualvar.

``OS_ERROR`` is one live object: ``int(OS_ERROR)`` is the calling thread's last
errno, ``str(OS_ERROR)`` its plain message ("No such file or directory", without
Python's "[Errno 2]"), and ``OS_ERROR == errno.ENOENT`` compares the number, so
``die(f"Can't open: {OS_ERROR}")`` reads like ``die "Can't open: $!"``.
Every perlcompat function that fails the Perl way (returns 0, ``None`` or -1)
sets it, exactly where Perl would set ``$!``.

On Windows, Python's ``errno`` names some numbers after Winsock (EWOULDBLOCK is
10035, ETIMEDOUT 10060, ELOOP 10062) and the C library calls them "Unknown
error".  Perl's ``win32_strerror`` prints Windows' own message for these (for
EWOULDBLOCK: "A non-blocking socket operation could not be completed
immediately."); so does ``$!`` here, without the final period.
"""

from __future__ import annotations

import os
import sys
from _thread import _local, get_ident

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


class _State:
    """The main thread's ``$!``, and whether every thread's is 0."""

    __slots__ = ("errno", "others", "zero")
    errno: int  # the main thread's $! number
    others: bool  # another thread has set a non-zero $! (kept in THREAD_ERRNO)
    zero: bool  # every thread's $! is 0: setting it to 0 changes nothing


def _main_thread() -> int:
    threading = sys.modules.get("threading")  # (not imported here: a CGI script seldom has it)
    return threading.main_thread().ident or get_ident() if threading else get_ident()


#: ``$!``: the main thread's number in a plain slot (a ``_thread._local`` attribute costs
#: ten times more to set), other threads' in ``THREAD_ERRNO``.  Functions that succeed
#: clear it as Perl's do (``open``, ``flock``, ``truncate``); their hot paths clear it in
#: line only when some thread's is not 0: ``if not ERRNO_STATE.zero: set_errno(0)``.
ERRNO_STATE = _State()
ERRNO_STATE.errno = 0
ERRNO_STATE.others = False
ERRNO_STATE.zero = True
THREAD_ERRNO = _local()
MAIN_THREAD = _main_thread()


def get_errno() -> int:
    """Return the calling thread's ``$!`` number."""
    if get_ident() == MAIN_THREAD:
        return ERRNO_STATE.errno
    number: int = getattr(THREAD_ERRNO, "errno", 0)
    return number


def set_errno(number: int) -> None:
    """Set the calling thread's ``$!`` number."""
    number = int(number)
    state = ERRNO_STATE
    if get_ident() == MAIN_THREAD:
        state.errno = number
        state.zero = not number and not state.others
    else:
        THREAD_ERRNO.errno = number
        if number:
            state.others = True  # (before zero: a main thread clearing meanwhile reads it)
            state.zero = False


def fail(number: int) -> int:
    """Set ``$!`` to *number* and return Perl's false value 0."""
    set_errno(number)
    return 0


def fail_from(exc: OSError) -> int:
    """Set ``$!`` from an ``OSError`` and return 0."""
    set_errno(exc.errno or 0)
    return 0


def reraise_foreign(exc: OSError) -> None:
    """Re-raise *exc* unless it is a system call's error (a signal handler's is never swallowed).

    An ``OSError`` without errno never came from the kernel; one raised by an
    ALRM handler (``TimeoutError`` from ``lambda *a: die(...)``'s cousins) is
    marked by ``perl.alarm``.  Perl-style functions call this before turning an
    ``OSError`` into 0 and ``$!``, so the pythonizer trap (a timed-out flock
    reporting a plain failure, or success) cannot happen.
    """
    if exc.errno is None:
        raise exc
    from .clock import raised_by_alarm

    if raised_by_alarm(exc):
        raise exc


def strerror(number: int) -> str:
    """Return Perl's message for errno *number* ("" for 0)."""
    if not number:
        return ""
    message = os.strerror(number)
    if sys.platform == "win32" and message.startswith("Unknown error"):
        return _windows_message(number) or message
    return message


#: Windows' messages (FormatMessage, en-US) for the Winsock numbers Python's errno
#: uses on Windows that perlcompat sets or passes on; others are asked of Windows.
_WINSOCK_MESSAGES = {
    10035: "A non-blocking socket operation could not be completed immediately",
    10054: "An existing connection was forcibly closed by the remote host",
    10060: "A connection attempt failed because the connected party did not properly "
    "respond after a period of time, or established connection failed because "
    "connected host has failed to respond",
    10061: "No connection could be made because the target machine actively refused it",
    10062: "Cannot translate name",
}


def _windows_message(number: int) -> str | None:
    """Windows' own message for *number*, as Perl's win32_strerror prints it; None if none."""
    text = _WINSOCK_MESSAGES.get(number)
    if text is None and sys.platform == "win32":
        import ctypes

        try:
            text = ctypes.FormatError(number).rstrip(" .\r\n")
        except (OSError, ValueError):  # pragma: no cover - FormatMessage failed
            return None
        if not text or text.startswith("<no description>"):
            return None
    return text


def oserror(number: int, filename: object = None) -> OSError:
    """Build the ``OSError`` subclass Python uses for *number*, with a plain message."""
    if filename is None:
        return OSError(number, strerror(number))
    return OSError(number, strerror(number), filename)


def raise_errno(number: int, filename: object = None) -> NoReturn:
    """Raise the ``OSError`` subclass for *number* (ENOENT -> FileNotFoundError ...)."""
    raise oserror(number, filename)


class _OSErrorVar:
    """The dualvar behind ``OS_ERROR``: a number and a message, per thread."""

    __slots__ = ()

    @property
    def errno(self) -> int:
        """The errno number (Perl's ``$! + 0``)."""
        return get_errno()

    @property
    def message(self) -> str:
        """The message (Perl's ``"$!"``)."""
        return strerror(get_errno())

    def set(self, number: int) -> None:
        """Assign a number, like Perl's ``$! = N``."""
        set_errno(number)

    def __int__(self) -> int:
        return get_errno()

    def __index__(self) -> int:
        return get_errno()

    def __str__(self) -> str:
        return strerror(get_errno())

    def __format__(self, spec: str) -> str:
        if spec and spec[-1] in "dxXob":
            return format(get_errno(), spec)
        return format(strerror(get_errno()), spec)

    def __repr__(self) -> str:
        number = get_errno()
        return f"OS_ERROR({number}, {strerror(number)!r})"

    def __bool__(self) -> bool:
        return get_errno() != 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _OSErrorVar):
            return True
        if isinstance(other, int):
            return get_errno() == other
        if isinstance(other, str):
            return strerror(get_errno()) == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(get_errno())

    def __add__(self, other: int) -> int:
        return get_errno() + other

    __radd__ = __add__


OS_ERROR = _OSErrorVar()
ERRNO = OS_ERROR
