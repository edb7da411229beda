"""Perl file handles: ``open_``, ``close``, ``print_``, ``seek``, ``tell``, ``truncate``.

``open_`` returns a :class:`PerlFile`, a light file object over ``os.read``,
``os.write`` and ``os.lseek`` with its own buffers (it iterates, ``readline``\\ s,
``write``\\ s and works as a context manager like any Python file; the io stack's
object construction costs more than a CGI lock cycle does).  The semantics are
Perl's (PerlIO's), checked against perl by tests/test_differential.py:

* Modes ``<``, ``>``, ``>>``, ``+<``, ``+>``, ``+>>``; the two-argument form
  ``open_("+< " + path)`` strips white space around the name as Perl does, the
  three-argument form ``open_("+<", path)`` takes the name literally and accepts
  layers ``:raw``, ``:bytes``, ``:utf8``, ``:crlf``, ``:encoding(NAME)``.  ``>``
  truncates at open, before any lock can be taken; rewrite under a lock with ``+<``.
* Pipes, as Perl: ``open_("|mailer -t")`` writes to a command's stdin,
  ``open_("cmd |")`` reads its stdout (also ``open_("|-", cmd)``, ``open_("-|", cmd)``
  and ``open_("-|", ["prog", "arg"])``, no shell); ``close`` waits for it and sets
  ``CHILD_ERROR`` (``$?``), see ``perl.process``.
* Text by default: lines are decoded as UTF-8 with ``surrogateescape``, so any
  bytes (Shift_JIS, EUC-JP, invalid UTF-8) read and written back are identical.
  ``:raw`` gives ``bytes``.  Newlines are untouched on POSIX; ``:crlf`` (the
  default on Windows, as in Perl) reads ``\\r\\n`` as ``\\n`` and writes every
  ``\\n`` as ``\\r\\n``.
* Positions are byte offsets.  ``seek``, ``truncate``, ``close`` and ``print_``
  return 1 or 0 (never the position), ``tell`` returns the position or -1, and
  every failure sets ``OS_ERROR`` as Perl sets ``$!``.  ``close`` flushes, then
  closes, which releases a ``flock``.
* As in PerlIO: end of file is sticky until a seek; ``flush`` (so ``flock``)
  also drops read-ahead; a read from a write-only handle or a failed write sets
  the handle's error flag, after which ``print_`` and ``close`` return 0.
* A failed ``open_`` still returns a handle, a closed and false one, as Perl's
  ``open(IN, ...)`` leaves ``IN`` a closed handle: ``open_(...) or die(...)`` and
  ``if not IN:`` work, and reads give what Perl's give on a closed handle (None
  for a line, [] for the lines, nothing to iterate), without touching ``$!``;
  ``print_``, ``seek``, ``tell``, ``flock``, ``truncate``, ``binmode``, ``close``
  give 0 (or -1) with ``$!`` = EBADF.  Perl's ``-w`` warnings for these
  ("readline() on closed filehandle") are :class:`PerlWarning`\\ s, ignored
  unless enabled (``python -W default::perlcompat.PerlWarning``).
* At exit, whatever ends the script (``die``, ``sys.exit``, an exception, a
  signal handler that dies), every open handle is flushed and closed, oldest
  first, as Perl's global destruction does; one that fails to close is reported
  as Perl reports it.  Before ``os.fork`` every handle is flushed, as Perl does.
* A handle garbage-collected while it holds a ``flock`` (a port's local where
  Perl had a global bareword handle) warns with :class:`LostLockWarning`,
  naming the handle and the line that opened it.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from _weakref import proxy as _weakproxy

from .consts import SEEK_END, SEEK_SET
from .errno import ERRNO_STATE, fail, fail_from, reraise_foreign, set_errno
from .layers import PERLQQ, apply_layers
from .lists import PerlList as PerlList  # (its home was here)
from .openfiles import (
    OPEN,
    LostLockWarning,
    PerlWarning,
    _warn_closed,
    flush_all,
    open_handles,
    to_stderr,
)
from .perlio import (
    _DEFAULT_CRLF,
    _EXTRA_FLAGS,
    _MAX_OFF,
    _MIN_OFF,
    _MODES,
    PerlFile,
    Unopened,
)

__all__ = [
    "LostLockWarning",
    "PerlFile",
    "PerlList",
    "PerlWarning",
    "binmode",
    "close",
    "close_all",
    "eof",
    "flush_all",
    "open_",
    "print_",
    "printf",
    "readline",
    "seek",
    "tell",
    "truncate",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Union

    Data = Union[str, bytes]

_open, _lseek, _ftruncate = os.open, os.lseek, os.ftruncate
_CREATE = 0o666
_MODE_PREFIXES = ("+>>", "+<", "+>", ">>", "<", ">")


# -- open_ -------------------------------------------------------------------
def _parse_two_arg(spec: str) -> tuple[str, str]:
    text = spec.lstrip()
    for prefix in _MODE_PREFIXES:
        if text.startswith(prefix):
            mode, rest = prefix, text[len(prefix) :]
            break
    else:
        mode, rest = "<", text
    if rest.lstrip().startswith("&"):
        raise ValueError(f"open_: duplicating handles ({spec!r}) is not supported")
    name = rest.strip()
    if name.startswith("|") or name.endswith("|"):
        raise ValueError(f"open_: {spec!r} mixes a file mode and a pipe; use '|cmd' or 'cmd |'")
    if name == "-":
        raise ValueError(f"open_: STDIN/STDOUT forms ({spec!r}) are not supported")
    return mode, name


def _parse_three_arg(spec: str) -> tuple[str, str]:
    text = spec.strip()
    for prefix in _MODE_PREFIXES:
        if text.startswith(prefix):
            return prefix, text[len(prefix) :].strip()
    raise ValueError(f"Unknown open() mode {spec!r}; use <, >, >>, +<, +> or +>>")


#: parsed open_ arguments -> (mode, name, name as bytes, os.open flags, text, encoding, crlf,
#: readable, writable, append); a CGI script opens the same few files the same way each request
_OPEN_CACHE: dict[object, tuple[str, str, bytes, int, bool, str, bool, bool, bool, bool]] = {}


def _parse_open(
    mode: object, path: object
) -> tuple[str, str, bytes, int, bool, str, bool, bool, bool, bool]:
    """Parse ``open_``'s arguments (cached)."""
    key = mode if path is None else (mode, path)
    try:
        return _OPEN_CACHE[key]
    except (KeyError, TypeError):  # TypeError: an unhashable path-like
        pass
    if not isinstance(mode, str):
        raise TypeError(f"open_ mode must be str, not {type(mode).__name__}")
    if path is None:
        mode_, name = _parse_two_arg(mode)
        layers = ""
    else:
        name = os.fspath(path)  # type: ignore[call-overload]
        if not isinstance(name, str):
            name = os.fsdecode(name)
        colon = mode.find(":")
        mode_, extra = _parse_three_arg(mode if colon < 0 else mode[:colon])
        if extra:
            raise ValueError(f"Unknown open() mode {mode!r}; use <, >, >>, +<, +> or +>>")
        layers = "" if colon < 0 else mode[colon:]
    text, encoding, crlf = True, "utf-8", _DEFAULT_CRLF
    if layers:
        text, encoding, crlf = apply_layers(layers, text, encoding, crlf)
    flags, readable, writable, append = _MODES[mode_]
    try:  # (os.open takes bytes as they are: a str is encoded at every call)
        target = os.fsencode(name)
    except UnicodeError:  # no file can have this name: ENOENT, as os.open's ValueError gave
        target = b"\0"
    parsed = (
        mode_,
        name,
        target,
        flags | _EXTRA_FLAGS,
        text,
        encoding,
        crlf,
        readable,
        writable,
        append,
    )
    if len(_OPEN_CACHE) >= 256:
        _OPEN_CACHE.clear()
    try:  # noqa: SIM105  (contextlib costs 4 ms of import time)
        _OPEN_CACHE[key] = parsed
    except TypeError:  # an unhashable path-like: not cached
        pass
    return parsed


_new_handle = object.__new__
_getframe = sys._getframe


def open_(mode: str, path: str | os.PathLike[str] | None = None) -> PerlFile:
    """Open a file the Perl way; return a :class:`PerlFile`, false and closed on failure.

    ``open_("+< " + path)`` is Perl's two-argument form, ``open_("+<", path)`` and
    ``open_("<:encoding(cp932)", path)`` the three-argument form.  On failure
    ``OS_ERROR`` is set and the handle is false (``open_(...) or die(...)``) and
    closed: it reads as Perl's closed handle does (a NUL in the name fails with
    ENOENT, as in Perl).  An unknown mode or layer raises ``ValueError`` (Perl
    dies there too).
    """
    try:
        mode_, name, target, flags, text, encoding, crlf, readable, writable, append = _OPEN_CACHE[
            mode if path is None else (mode, path)
        ]
    except (KeyError, TypeError):
        pipe = _pipe_spec(mode, path)
        if pipe is not None:
            return _open_pipe(*pipe)
        mode_, name, target, flags, text, encoding, crlf, readable, writable, append = _parse_open(
            mode, path
        )
    fd = -1
    if not name:
        fail(errno.ENOENT)
    else:
        try:
            fd = _open(target, flags, _CREATE)
        except OSError as exc:
            fail_from(exc)
        except ValueError:  # a NUL in the name: Perl's open gives 0 with ENOENT
            fail(errno.ENOENT)
    # PerlFile._setup inlined (a call costs a tenth of the cycle): on every CGI request's path
    fh: PerlFile = _new_handle(PerlFile if fd >= 0 else Unopened)
    fh._fd = fd
    fh.name = name
    fh.mode = mode_
    fh._readable, fh._writable, fh._append = readable, writable, append
    fh._error = 0
    fh._text = text
    fh._encoding = encoding
    fh._crlf = crlf
    fh._rbuf = b""
    fh._rpos = 0
    fh._wbuf = []
    fh._flocked = 0
    if fd < 0:  # the open failed: a closed handle, false ($! is set)
        fh._closed = fh._eof = True
        fh._pos = -1
        fh._site = None
        return fh
    caller = _getframe(1)  # where it was opened: the line is worked out only if it is needed
    fh._site = caller.f_code
    fh._site_at = caller.f_lasti
    fh._closed = fh._eof = False
    fh._pos = 0
    OPEN[fd] = _weakproxy(fh)
    if append:
        fh._pos = -1
        try:  # noqa: SIM105
            fh._pos = _lseek(fd, 0, SEEK_END)  # Perl reports the end as the position
        except OSError:  # a pipe or terminal: no position
            pass
    if not ERRNO_STATE.zero:  # ($! = 0, in line)
        set_errno(0)
    return fh


def _pipe_spec(mode: object, path: object) -> tuple[str, object, str] | None:
    """``("|-" or "-|", command, layers)`` for a piped open, else None."""
    if not isinstance(mode, str):
        return None
    if path is None:
        text = mode.strip()
        if text.startswith("|"):
            kind, command = "|-", text[1:].strip()
        elif text.endswith("|") and not text.startswith(("<", ">", "+")):
            kind, command = "-|", text[:-1].strip()
        else:
            return None
        if command in ("", "-"):
            raise ValueError(f"open_: {mode!r} names no command (forking opens are not supported)")
        return kind, command, ""
    text = mode.strip()
    if not text.startswith(("|-", "-|")):
        return None
    if isinstance(path, (list, tuple)):
        return text[:2], [*path], text[2:].strip()
    command = os.fspath(path)  # type: ignore[call-overload]
    return text[:2], command if isinstance(command, str) else os.fsdecode(command), text[2:].strip()


def _open_pipe(kind: str, command: object, layers: str) -> PerlFile:
    """Start *command* with a pipe (``perl.process``, loaded only now)."""
    from .process import open_pipe

    text, encoding, crlf = True, "utf-8", _DEFAULT_CRLF
    if layers:
        text, encoding, crlf = apply_layers(layers, text, encoding, crlf)
    fh = open_pipe(kind, command, text, encoding, crlf)  # type: ignore[arg-type]
    if fh:
        caller = _getframe(2)
        fh._site = caller.f_code
        fh._site_at = caller.f_lasti
    return fh


# -- Perl's functions on handles ---------------------------------------------
def _perl_str(item: object) -> str | bytes:
    """Stringify one ``print`` argument as Perl does (undef -> '', 0.5 -> '0.5', 3.0 -> '3')."""
    kind = type(item)
    if kind is str or kind is bytes:
        return item  # type: ignore[return-value]
    if kind is int:
        return str(item)
    if item is None or item is False:
        return ""
    if item is True:
        return "1"
    if kind is float:
        value: float = item  # type: ignore[assignment]
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Inf" if value > 0 else "-Inf"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".15g")
    if isinstance(item, (bytearray, memoryview)):
        return bytes(item)
    return str(item)


def print_(fh: PerlFile, *items: object) -> int:
    """Perl's ``print FH LIST``: 1 on success, else 0 with ``OS_ERROR`` set."""
    if type(fh) is not PerlFile and getattr(type(fh), "perl_close", None) is None:
        return _print_other(fh, items)
    if fh._closed or not fh._writable:
        if fh._closed:
            _warn_closed(fh, "print", 2)
        return fail(errno.EBADF)
    encoding = fh._encoding
    try:
        for item in items:
            kind = type(item)
            if kind is str or kind is int:
                raw = str(item).encode(encoding, PERLQQ)
            else:
                data = _perl_str(item)
                raw = data.encode(encoding, PERLQQ) if isinstance(data, str) else data
            if fh._crlf and fh._text:
                raw = raw.replace(b"\n", b"\r\n")
            fh._put(raw)
    except OSError as exc:
        fh._error = exc.errno or errno.EIO
        return fail_from(exc)
    # Perl's print is false on a handle with its error flag set (the data is still written).
    return 0 if fh._error else 1


def _print_other(fh: object, items: tuple[object, ...]) -> int:
    if type(fh) is Unopened:
        _warn_closed(fh, "print", 3)
        return fail(errno.EBADF)
    write = getattr(fh, "write", None)
    if write is None:
        return fail(errno.EBADF)
    try:
        binary = isinstance(fh, (io.RawIOBase, io.BufferedIOBase))
        for item in items:
            text = _perl_str(item)
            if binary and isinstance(text, str):
                text = text.encode("utf-8", "surrogateescape")
            elif not binary and isinstance(text, bytes):
                text = text.decode("utf-8", "surrogateescape")
            write(text)
    except ValueError:
        return fail(errno.EBADF)
    except OSError as exc:
        return fail_from(exc)
    return 1


def printf(fh: PerlFile, fmt: str, *args: object) -> int:
    """Perl's ``printf FH FORMAT, LIST`` (Python ``%`` formatting): 1 or 0."""
    return print_(fh, fmt % args if args else fmt)


def seek(fh: PerlFile, position: int, whence: int = SEEK_SET) -> int:
    """Perl's ``seek``: 1 on success (even at position 0), else 0 with ``OS_ERROR`` set."""
    perl_file = type(fh) is PerlFile
    if fh._closed if perl_file else type(fh) is Unopened:
        _warn_closed(fh, "seek", 2)
        return fail(errno.EBADF)
    if type(position) is not int or whence not in (0, 1, 2) or not _MIN_OFF <= position <= _MAX_OFF:
        return fail(errno.EINVAL)  # (beyond off_t: Perl's lseek gets EINVAL too)
    try:
        if perl_file:
            fh._seek(position, whence)
        else:
            fh.seek(position, whence)
    except (ValueError, AttributeError):
        return fail(errno.EBADF)
    except OSError as exc:
        return fail_from(exc)
    return 1


def tell(fh: PerlFile) -> int:
    """Perl's ``tell``: the byte position, or -1 with ``OS_ERROR`` set.

    As PerlIO, pending output is counted, not written (a write that will fail on a
    full disk fails later, in ``seek``/``truncate``/``close``), except on an
    appending handle, which is flushed to learn where the data went; if that
    write fails, ``$!`` says why and the OS position is returned.
    """
    try:
        if type(fh) is PerlFile:
            if not fh._closed:
                return fh._tell()
            _warn_closed(fh, "tell", 2)
        elif type(fh) is Unopened:
            _warn_closed(fh, "tell", 2)
        return fh.tell()
    except (ValueError, AttributeError):
        fail(errno.EBADF)
    except OSError as exc:
        fail_from(exc)
    return -1


def truncate(fh: PerlFile | int | str | os.PathLike[str], length: int) -> int:
    """Perl's ``truncate`` on a handle, fd or path: 1 on success, else 0 with ``OS_ERROR`` set.

    A handle is flushed first (Perl does too); a read-only handle fails with the
    kernel's errno (EINVAL on Linux).
    """
    bad_length = type(length) is not int or not 0 <= length <= _MAX_OFF  # (off_t: as Perl)
    if type(fh) is PerlFile and not fh._closed:
        if not ERRNO_STATE.zero:  # as Perl's: $! is cleared (in line)
            set_errno(0)
        try:
            failed = fh._flush_remembered(None if bad_length else length)  # flush, then cut
            if failed is not None:  # as Perl: cut anyway; $! says why, close reports it too
                fail_from(failed)
        except OSError as exc:
            return fail_from(exc)
        return fail(errno.EINVAL) if bad_length else 1  # (beyond off_t: EINVAL, as Perl)
    if isinstance(fh, (str, bytes, os.PathLike)):
        if bad_length:
            return fail(errno.EINVAL)
        try:
            os.truncate(fh, length)
        except OSError as exc:
            return fail_from(exc)
        return 1
    else:
        try:
            if type(fh) is int:
                fd = fh
            else:
                fh.flush()  # type: ignore[union-attr]
                fd = fh.fileno()  # type: ignore[union-attr]
        except (ValueError, AttributeError):
            return fail(errno.EBADF)
        except OSError as exc:
            return fail_from(exc)
    if bad_length:
        return fail(errno.EINVAL)  # (beyond off_t: EINVAL, as Perl gives)
    try:
        _ftruncate(fd, length)
    except OSError as exc:
        return fail_from(exc)
    except OverflowError:  # (the length is checked: a descriptor no int can hold)
        return fail(errno.EBADF)
    return 1


def close(fh: PerlFile) -> int:
    """Perl's ``close``: flush, close (releasing its flock); 1 or 0 with ``OS_ERROR`` set.

    As in Perl, a handle on which a read or write failed closes but returns 0.
    """
    if type(fh) is PerlFile:
        if fh._closed:
            return fail(errno.EBADF)
        try:
            fh._shut()  # (a failed flush: the error flag, reported below)
        except OSError as exc:
            return fail_from(exc)
        error = fh._error
        return fail(error) if error else 1
    perl_close = getattr(fh, "perl_close", None)  # a pipe: perl.process.PipeFile
    if perl_close is not None:
        result: int = perl_close()
        return result
    if getattr(fh, "closed", True):
        return fail(errno.EBADF)
    try:
        fh.close()
    except OSError as exc:
        return fail_from(exc)
    error = getattr(fh, "_error", 0)  # a PerlFile subclass
    return fail(error) if error else 1


def binmode(fh: PerlFile, layer: str = ":raw") -> int:
    """Perl's ``binmode``: switch *fh* to *layer*; 1, or 0 with ``OS_ERROR`` set."""
    if getattr(fh, "closed", True):
        return fail(errno.EBADF)
    set_layer = getattr(fh, "set_layer", None)
    if set_layer is None:
        return fail(errno.EINVAL)
    set_layer(layer)
    return 1


def eof(fh: PerlFile) -> int:
    """Perl's ``eof``: 1 if the next read would hit end of file (or *fh* is closed), else 0.

    As in Perl, ``$!`` is left as it was; a failed read or write sets the handle's
    error flag, which ``close`` reports.
    """
    try:
        return 1 if fh.at_eof() else 0
    except (ValueError, AttributeError):
        return 1
    except OSError as exc:
        reraise_foreign(exc)  # an ALRM handler's error propagates
        return 1


def readline(fh: PerlFile) -> Data | None:
    """Perl's ``<FH>`` in scalar context: the next line, or None (undef) at end of file.

    None also on a closed handle, or one whose ``open_`` failed (``$!`` untouched,
    as in Perl), and on a write-only handle (``$!`` = EBADF).
    """
    kind = type(fh)
    if (kind is PerlFile or kind is Unopened) and fh._closed:
        _warn_closed(fh, "readline", 2)
        return None
    try:  # (a write-only handle: the method sets the error flag, raises UnsupportedOperation)
        line: Data | None = fh.readline()
    except (ValueError, AttributeError):  # closed or not a handle (UnsupportedOperation too)
        fail(errno.EBADF)
        return None
    return line or None


def close_all() -> None:
    """Flush every open PerlFile, then close them, oldest first, as Perl does at exit.

    As Perl's ``perl_destruct`` (``my_fflush_all`` before any handle is closed),
    every handle's output is written before the first close, so a ``flock`` held
    through an older handle (a lock file) is released after the data is out.  A
    handle that fails to close is reported as Perl reports it during global
    destruction (``Warning: unable to close filehandle properly: No space left
    on device during global destruction.``); the exit status is unchanged.  An
    exception raised meanwhile (a signal handler's) does not stop the rest: it is
    raised again once every handle is closed.
    """
    handles = open_handles()
    pending: BaseException | None = None
    for fh in handles:
        fh._flocked = 0  # a lock released by exit: not a lost one
        try:
            if fh.standard:  # STDIN/STDOUT/STDERR: flushed here, never closed (below)
                try:  # noqa: SIM105
                    fh.flush()
                except Exception:  # Perl reports on STDERR till the end
                    pass
            elif fh._wbuf and not fh._closed:
                fh._flush_remembered()  # a failure sets the error flag: close reports it
        except BaseException as exc:  # exit must reach every handle
            pending = pending or exc
    for fh in handles:
        if fh._closed or fh.standard:
            continue
        from .errno import get_errno, strerror

        try:  # (a pipe whose command exited non-zero: close gives 0 with $! 0, no warning)
            failed = close(fh) == 0 and get_errno() != 0
        except BaseException as exc:
            pending = pending or exc
            failed = True
        if failed:
            message = strerror(get_errno() or errno.EIO)
            to_stderr(
                f"Warning: unable to close filehandle properly: {message}"
                " during global destruction.\n"
            )
    OPEN.clear()
    if pending is not None:
        raise pending


# (close_all runs at exit from the package's exit hook, perlcompat._at_exit: after the
# script's own atexit handlers, as Perl's END blocks run before global destruction)
