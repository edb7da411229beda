"""Every open ``PerlFile``, oldest first; what ``perl -w`` and a lost lock warn about.

The registry ``OPEN`` (descriptor -> weak proxy) is what Perl's global
destruction walks: ``perl.handle.close_all`` flushes and closes every handle at
exit, ``flush_all`` writes every handle's output before ``os.fork`` as Perl does.
A handle garbage-collected while it holds a ``flock`` (a port's local where Perl
had a global bareword handle) warns with :class:`LostLockWarning`, naming the
handle and the line that opened it (worked out only then: ``open_`` keeps the
calling code object and instruction).  :class:`PerlWarning` is what ``perl -w`` says
about a closed handle (``readline() on closed filehandle``), ignored by default.
"""

from __future__ import annotations

import os
import sys
import warnings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType

    from .perlio import PerlFile


class PerlWarning(UserWarning):
    """What ``perl -w`` warns about (``readline() on closed filehandle``); ignored by default.

    Enable like ``-w``: ``python -W default::perlcompat.PerlWarning``, or
    ``warnings.simplefilter("default", perlcompat.PerlWarning)``.
    """


#: the default: ignored.  Appended, so -W options and filterwarnings() calls come first
#: and win; put back if a ``warnings.catch_warnings()`` block dropped it.
_IGNORE = ("ignore", None, PerlWarning, None, 0)
warnings.filterwarnings("ignore", category=PerlWarning, append=True)


def _warn_closed(fh: PerlFile, op: str, level: int) -> None:
    """Warn as ``perl -w`` does about *op* on the closed handle *fh* (*level*: the caller's)."""
    if _IGNORE not in warnings.filters:
        warnings.filterwarnings("ignore", category=PerlWarning, append=True)
    why = " (its open failed)" if fh._fd < 0 else ""
    warnings.warn(f"{op}() on closed filehandle {fh.name!r}{why}", PerlWarning, level + 1)


class LostLockWarning(UserWarning):
    """A ``PerlFile`` holding a ``flock`` was garbage-collected: the lock went with it.

    Always shown (once per place).  In Perl a bareword handle (``NUMBER``) is a
    global that keeps its lock until ``close`` or exit; a Python port's handle is a
    local that dies, closing the file and releasing the lock, when its function
    returns.  Keep such a handle in a global (or ``close`` it where Perl does).
    """


def _handle_variable(filename: str, lineno: int) -> str | None:
    """The name a handle was assigned to on *filename*:*lineno* (``NUMBER = open_(...)``)."""
    import linecache
    import re

    match = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]", linecache.getline(filename, lineno))
    return match.group(1) if match else None


def _opened_at(fh: PerlFile) -> tuple[str, int]:
    """The file and line where *fh* was opened (``("<unknown>", 0)`` if not by ``open_``)."""
    code: CodeType | None = getattr(fh, "_site", None)
    if code is None:
        return "<unknown>", 0
    offset = fh._site_at
    line = code.co_firstlineno
    if sys.version_info >= (3, 10):
        for start, end, number in code.co_lines():
            if start <= offset < end and number is not None:
                return code.co_filename, number
    else:  # pragma: no cover  (3.9)
        import dis

        for start, number in dis.findlinestarts(code):
            if start <= offset:
                line = number
    return code.co_filename, line


def warn_lost_lock(fh: PerlFile) -> None:
    """Warn that *fh*, still holding a flock, is being garbage-collected (``__del__``)."""
    filename, lineno = _opened_at(fh)
    variable = _handle_variable(filename, lineno) if lineno else None
    what = f"handle {variable} ({fh.mode} {fh.name})" if variable else f"handle {fh.mode} {fh.name}"
    kind = "an exclusive" if fh._flocked == 2 else "a shared"
    message = (
        f"{what}, opened at {filename} line {lineno}, was garbage-collected while holding"
        f" {kind} flock: the lock is released now, not at close() or exit as Perl's bareword"
        " handle would keep it; keep the handle in a global or close() it"
    )
    try:
        warnings.warn_explicit(message, LostLockWarning, filename, lineno)
    except Exception:  # an "error" filter: __del__ cannot raise; say it on stderr
        to_stderr(f"LostLockWarning: {message}\n")


def to_stderr(text: str) -> None:
    """Write *text* to stderr at exit or in ``__del__``, where nothing may raise."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


#: every open PerlFile by descriptor, oldest first: weak, so a dropped handle still
#: closes (its ``__del__`` takes it out); a ``_weakref.proxy``, which costs a third less
#: to make than a ``weakref.ref`` (once per ``open_``)
OPEN: dict[int, PerlFile] = {}


def open_handles() -> list[PerlFile]:
    """The PerlFiles open now, in the order they were opened."""
    handles = []
    for proxy in list(OPEN.values()):
        try:
            fh: PerlFile = proxy.fileno.__self__  # type: ignore[attr-defined]  # (itself)
        except ReferenceError:  # gone
            continue
        if not fh._closed:
            handles.append(fh)
    return handles


def flush_all() -> None:
    """Write out every open PerlFile's pending output (Perl flushes them all before a fork)."""
    for fh in open_handles():
        if fh._wbuf:
            fh._flush_remembered()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=flush_all)


#: True once ``SIG["PIPE"] = "IGNORE"`` (``perl.alarm``): a write to a broken pipe then
#: fails with EPIPE (Perl's ``print`` gives 0); Python's own ignoring of SIGPIPE does not count.
PIPE_IGNORED = False


def broken_pipe() -> None:
    """A write failed with EPIPE: end as Perl does, killed by SIGPIPE (a shell sees 141).

    Python ignores SIGPIPE from start-up; Perl does not.  Unless the port set
    ``SIG["PIPE"]`` (to ``"IGNORE"``: the write fails with EPIPE; to a handler:
    it runs, and the write fails), the process is killed by SIGPIPE here, as the
    kernel kills Perl: no exit handlers, no flushing.
    """
    if sys.platform == "win32" or PIPE_IGNORED:
        return
    import signal
    import threading

    if signal.getsignal(signal.SIGPIPE) != signal.SIG_IGN:
        return
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    os._exit(128 + signal.SIGPIPE)  # (a worker thread cannot reset the disposition)
