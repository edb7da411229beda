"""Perl's ``die`` and ``warn``, and the hooks ``$SIG{__DIE__}`` / ``$SIG{__WARN__}``.

``die(*msg)`` joins its arguments and raises :class:`Die`.  As in Perl, a message
that does not end in a newline gets `` at FILE line N.`` and a newline appended,
naming the caller's line (the main script as it was invoked, ``sys.argv[0]``, as
Perl names ``$0``); an empty message becomes ``Died``.  A ``Die`` that no ``try``
catches prints only its message to stderr and exits with Perl's status (perldoc -f
die): ``$!`` if it is set, else ``$? >> 8`` (``CHILD_ERROR``) if that is, else 255
(interpreter-exit handlers still run).

``SIG["__DIE__"] = handler`` (``perl.alarm``) is called with the message by every
``die``, also inside a ``try`` (as Perl calls it inside ``eval``), and by an uncaught
Python exception (``"Type: text at FILE line N.\n"``, before the traceback); if it
returns, the die goes on; if it raises, its exception replaces the die.
``SIG["__WARN__"] = handler`` is called with ``warn``'s message instead of printing
it.  Neither hook runs again while it is running (a ``warn`` inside the warn hook
prints), as in Perl.
"""

from __future__ import annotations

import sys

from .errno import get_errno

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import NoReturn

#: ``$SIG{__DIE__}`` and ``$SIG{__WARN__}`` (set through ``SIG``): a callable or None
HOOKS: dict[str, Callable[[str], object] | None] = {"__DIE__": None, "__WARN__": None}
_running: set[str] = set()  # the hooks running now: disabled inside themselves, as in Perl


class Die(Exception):
    """Raised by :func:`die`; ``str(e)`` is Perl's ``$@``."""

    def __init__(self, message: str, status: int = 255) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message


def _where(depth: int) -> str:
    frame = sys._getframe(depth + 1)
    return f" at {script_name(frame.f_code.co_filename)} line {frame.f_lineno}.\n"


def script_name(filename: str) -> str:
    """*filename* as Perl names it: the main script as invoked (``sys.argv[0]``, Perl's ``$0``).

    Python 3.9+ gives the main script's code an absolute file name; Perl's
    `` at FILE line N.`` keeps the name perl was given (``./count.pl``).
    """
    main = sys.modules.get("__main__")
    if filename == getattr(main, "__file__", None) and sys.argv and sys.argv[0]:
        return sys.argv[0]
    return filename


def _call_hook(name: str, text: str) -> bool:
    """Run the ``%SIG`` hook *name* with *text* if one is set and not running; True if it ran."""
    hook = HOOKS[name]
    if hook is None or name in _running:
        return False
    _running.add(name)
    try:
        hook(text)
    finally:
        _running.discard(name)
    return True


def exit_status() -> int:
    """What an uncaught ``die`` exits with: ``$!``, else ``$? >> 8``, else 255 (perldoc -f die)."""
    number = get_errno()
    if number & 255:
        return number & 255
    process = sys.modules.get(__name__.rpartition(".")[0] + ".process")
    child = (process.get_status() >> 8) & 255 if process is not None else 0
    return child or 255


def _text(msg: tuple[object, ...], default: str) -> str:
    text = "".join(str(m) for m in msg)
    return text if text else default


def die(*msg: object) -> NoReturn:
    """Raise :class:`Die`; a message without a final newline gets `` at FILE line N.``."""
    text = _text(msg, "Died")
    if not text.endswith("\n"):
        text += _where(1)
    _install_hook()
    if HOOKS["__DIE__"] is not None:
        _call_hook("__DIE__", text)  # (its exception, a die of its own, replaces this one)
    raise Die(text, exit_status())


def warn(*msg: object) -> int:
    """Print a warning to stderr as ``die`` words it (or give it to ``SIG["__WARN__"]``); 1."""
    text = _text(msg, "Warning: something's wrong")
    if not text.endswith("\n"):
        text += _where(1)
    if HOOKS["__WARN__"] is not None and _call_hook("__WARN__", text):
        return 1
    sys.stderr.write(text)
    sys.stderr.flush()
    return 1


_previous_hook = None


def _die_hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    if not isinstance(value, Die) and HOOKS["__DIE__"] is not None:
        try:  # a Python error is Perl's runtime die: the hook sees it first
            _call_hook("__DIE__", _runtime_message(value, tb))
        except Die as replaced:
            value = replaced
        except BaseException:  # (the original error is reported below)
            pass
    if isinstance(value, Die):
        import atexit
        import contextlib
        import os

        sys.stderr.write(value.message)
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(value.status & 0xFF or 255)  # (status: exit_status() when it was raised)
    assert _previous_hook is not None
    _previous_hook(kind, value, tb)


def _runtime_message(value: BaseException, tb: TracebackType | None) -> str:
    """An uncaught Python exception worded as Perl words a runtime error."""
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = ""
    if tb is not None:
        where = f" at {script_name(tb.tb_frame.f_code.co_filename)} line {tb.tb_lineno}."
    return f"{type(value).__name__}: {value}{where}\n"


def _install_hook() -> None:
    global _previous_hook
    if sys.excepthook is not _die_hook:
        _previous_hook = sys.excepthook
        sys.excepthook = _die_hook
