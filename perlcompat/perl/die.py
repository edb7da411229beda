"""Perl's ``die`` and ``warn``.

``die(*msg)`` joins its arguments and raises :class:`Die`.  As in Perl, a message
that does not end in a newline gets `` at FILE line N.`` and a newline appended,
naming the caller's line; an empty message becomes ``Died``.  A ``Die`` that no
``try`` catches prints only its message to stderr and exits with Perl's status:
``$!`` if it was set, else 255 (interpreter-exit handlers still run).
"""

from __future__ import annotations

import sys

from .errno import get_errno

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import NoReturn


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
    return f" at {frame.f_code.co_filename} line {frame.f_lineno}.\n"


def _text(msg: tuple[object, ...], default: str) -> str:
    text = "".join(str(m) for m in msg)
    return text if text else default


def die(*msg: object) -> NoReturn:
    """Raise :class:`Die`; a message without a final newline gets `` at FILE line N.``."""
    text = _text(msg, "Died")
    if not text.endswith("\n"):
        text += _where(1)
    _install_hook()
    raise Die(text, get_errno() or 255)


def warn(*msg: object) -> int:
    """Print a warning to stderr as ``die`` words it, and return 1."""
    text = _text(msg, "Warning: something's wrong")
    if not text.endswith("\n"):
        text += _where(1)
    sys.stderr.write(text)
    sys.stderr.flush()
    return 1


_previous_hook = None


def _die_hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    if isinstance(value, Die):
        import atexit
        import contextlib
        import os

        sys.stderr.write(value.message)
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(value.status & 0xFF or 255)
    assert _previous_hook is not None
    _previous_hook(kind, value, tb)


def _install_hook() -> None:
    global _previous_hook
    if sys.excepthook is not _die_hook:
        _previous_hook = sys.excepthook
        sys.excepthook = _die_hook
