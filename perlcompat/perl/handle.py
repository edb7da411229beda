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

import codecs
import errno
import io
import os
import sys
import warnings
from _weakref import ref as _weakref

from .consts import SEEK_CUR, SEEK_END, SEEK_SET
from .errno import errno_state, fail, fail_from, reraise_foreign
from .lists import PerlList as PerlList  # (its home was here)


def _perlqq(exc: UnicodeError) -> tuple[bytes, int]:
    """Encode error handler: escaped bytes back as they were, other characters as ``\\x{HEX}``."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape decoding kept
            out.append(code - 0xDC00)
        else:
            out += b"\\x{%x}" % code
    return bytes(out), exc.end


#: the error handler text handles write with (Perl's PerlIO ``FB_PERLQQ`` fallback)
PERLQQ = "perlcompat.perlqq"
codecs.register_error(PERLQQ, _perlqq)

# the hot path's system calls, bound once (a module attribute lookup per call adds up)
_open, _read, _write, _lseek = os.open, os.read, os.write, os.lseek
_ftruncate, _close = os.ftruncate, os.close

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from types import CodeType, TracebackType
    from typing import NoReturn, Union

    Data = Union[str, bytes]

_BUFSIZE = 8192
#: the positions an off_t holds: beyond them seek and truncate fail with EINVAL, as in Perl
_MIN_OFF, _MAX_OFF = -(2**63), 2**63 - 1
_CREATE = 0o666
_EXTRA_FLAGS = (
    getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOINHERIT", 0)
)
_DEFAULT_CRLF = sys.platform == "win32"

#: Perl mode -> (os.open flags, readable, writable, append)
_MODES = {
    "<": (os.O_RDONLY, True, False, False),
    ">": (os.O_WRONLY | os.O_CREAT | os.O_TRUNC, False, True, False),
    ">>": (os.O_WRONLY | os.O_CREAT | os.O_APPEND, False, True, True),
    "+<": (os.O_RDWR, True, True, False),
    "+>": (os.O_RDWR | os.O_CREAT | os.O_TRUNC, True, True, False),
    "+>>": (os.O_RDWR | os.O_CREAT | os.O_APPEND, True, True, True),
}
_MODE_PREFIXES = ("+>>", "+<", "+>", ">>", "<", ">")


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


def _warn_lost_lock(fh: PerlFile) -> None:
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
        _stderr(f"LostLockWarning: {message}\n")


def _stderr(text: str) -> None:
    """Write *text* to stderr at exit or in ``__del__``, where nothing may raise."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


#: every open PerlFile by descriptor, oldest first (weak: a handle still closes when dropped)
_OPEN: dict[int, Callable[[], PerlFile | None]] = {}


def _open_handles() -> list[PerlFile]:
    """The PerlFiles open now, in the order they were opened."""
    handles = []
    for weak in list(_OPEN.values()):
        fh = weak()
        if fh is not None and not fh._closed:
            handles.append(fh)
    return handles


def flush_all() -> None:
    """Write out every open PerlFile's pending output (Perl flushes them all before a fork)."""
    for fh in _open_handles():
        if fh._wbuf:
            fh._flush_remembered()


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
    handles = _open_handles()
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
        try:
            failed = close(fh) == 0
        except BaseException as exc:
            pending = pending or exc
            failed = True
        if failed:
            from .errno import get_errno, strerror

            message = strerror(get_errno() or errno.EIO)
            _stderr(
                f"Warning: unable to close filehandle properly: {message}"
                " during global destruction.\n"
            )
    _OPEN.clear()
    if pending is not None:
        raise pending


# (close_all runs at exit from the package's exit hook, perlcompat._at_exit: after the
# script's own atexit handlers, as Perl's END blocks run before global destruction)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=flush_all)


class PerlFile:
    """An open Perl file handle (what ``open_`` returns).

    Invariants: read-ahead (``_rbuf`` from ``_rpos``) and pending output
    (``_wbuf``) are never both present.  ``_pos`` is the OS offset of the end
    of the read-ahead (or of the start of pending output) as PerlIO counts it
    (-1: ask the OS), so ``tell`` needs no system call.  Like PerlIO's count it
    includes an O_APPEND write at its logical position, not at the end of the
    file, until the next seek or ``tell`` after a write.
    """

    __slots__ = (
        "__weakref__",
        "_append",
        "_closed",
        "_crlf",
        "_encoding",
        "_eof",
        "_error",
        "_fd",
        "_flocked",
        "_pos",
        "_rbuf",
        "_readable",
        "_rpos",
        "_site",
        "_site_at",
        "_text",
        "_wbuf",
        "_writable",
        "mode",
        "name",
    )

    _site: CodeType | None  # the code and instruction that called open_ (lines: on demand)
    _site_at: int

    def __init__(
        self,
        fd: int,
        name: str,
        mode: str,
        *,
        text: bool = True,
        encoding: str = "utf-8",
        crlf: bool = _DEFAULT_CRLF,
    ) -> None:
        _flags, readable, writable, append = _MODES[mode]
        self._setup(fd, name, mode, readable, writable, append, text, encoding, crlf)
        self._pos = -1  # unknown until asked: the fd may not be at 0

    def _setup(
        self,
        fd: int,
        name: str,
        mode: str,
        readable: bool,
        writable: bool,
        append: bool,
        text: bool,
        encoding: str,
        crlf: bool,
    ) -> None:
        """Set every field of a new handle at offset 0 (``open_`` inlines this)."""
        self._fd = fd
        self.name = name
        self.mode = mode
        self._readable, self._writable, self._append = readable, writable, append
        self._closed = self._eof = False
        self._error = 0
        self._text = text
        self._encoding = encoding
        self._crlf = crlf
        self._rbuf = b""
        self._rpos = 0
        self._wbuf: list[bytes] = []
        self._pos = 0
        self._flocked = 0  # LOCK_SH or LOCK_EX while flock() holds one through this handle
        if fd >= 0:
            _OPEN[fd] = _weakref(self)

    #: STDIN, STDOUT, STDERR (``perl.stdio``): flushed at exit, never closed by it
    standard = False
    #: the codec error handler: any bytes survive a text round trip
    _errors = "surrogateescape"
    #: writing: escaped bytes go back as they were; a character the encoding lacks is
    #: written as ``\x{HEX}``, as PerlIO's ``:encoding`` does (``FB_PERLQQ``)
    _encode_errors = PERLQQ

    # -- plumbing --------------------------------------------------------
    def _check(self) -> None:
        if self._closed:
            raise ValueError("I/O operation on closed file")

    def _unreadable(self) -> NoReturn:
        """Fail a read on a write-only handle; as in Perl, the handle's error flag is set."""
        self._error = errno.EBADF
        raise io.UnsupportedOperation("not readable")

    def _flush_write(self) -> None:
        """Write out pending output (the caller checked there is some)."""
        data = b"".join(self._wbuf)  # (one piece: joined without a copy)
        self._wbuf = []
        pos = self._pos
        self._pos = -1  # unknown if the write fails half-way
        size = len(data)
        try:
            written = _write(self._fd, data)
            if written < size:  # a short write: go on with the rest
                view = memoryview(data)[written:]
                while view:
                    view = view[_write(self._fd, view) :]
        except OSError as exc:  # as PerlIO: the data is dropped, the handle's error flag set
            self._error = exc.errno or errno.EIO
            raise
        if pos >= 0:  # after an O_APPEND write this is PerlIO's belief, not the OS offset
            self._pos = pos + size

    def _drop_read(self) -> None:
        """Forget read-ahead, moving the OS position back to the logical one."""
        unread = len(self._rbuf) - self._rpos
        self._rbuf = b""
        self._rpos = 0
        if unread:  # PerlIO seeks to where it believes the reader is
            pos = self._pos
            self._pos = -1
            if pos >= 0:
                self._pos = _lseek(self._fd, pos - unread, SEEK_SET)
            else:
                self._pos = _lseek(self._fd, -unread, SEEK_CUR)
            self._eof = False

    def _fill(self) -> bool:
        """Read more bytes into the buffer; False at end of file.

        As in PerlIO, end of file is sticky: once a read returned nothing, later
        reads return nothing without asking the OS until a seek clears it.
        """
        if self._wbuf:
            self._flush_write()
        if self._eof:
            return False
        chunk = _read(self._fd, _BUFSIZE)
        if not chunk:
            self._eof = True
            return False
        if self._pos >= 0:
            self._pos += len(chunk)
        if self._rpos:
            self._rbuf = self._rbuf[self._rpos :] + chunk
            self._rpos = 0
        elif self._rbuf:
            self._rbuf += chunk
        else:
            self._rbuf = chunk
        return True

    def _tell(self) -> int:
        if self._wbuf:
            self._flush_write()
            if self._append:  # PerlIO asks the OS where an appending write went
                self._pos = -1
        pos = self._pos
        if pos < 0:
            pos = self._pos = _lseek(self._fd, 0, SEEK_CUR)
        return pos - (len(self._rbuf) - self._rpos)

    def _decode(self, data: bytes) -> str:
        if self._crlf:
            data = data.replace(b"\r\n", b"\n")
        return data.decode(self._encoding, self._errors)

    def _encode(self, data: object) -> bytes:
        if type(data) is str:
            raw = data.encode(self._encoding, self._encode_errors)
        elif isinstance(data, (bytes, bytearray, memoryview)):
            raw = bytes(data)
        else:
            raise TypeError(f"write() argument must be str or bytes, not {type(data).__name__}")
        if self._crlf and self._text:
            raw = raw.replace(b"\n", b"\r\n")  # as Perl's :crlf, even after a "\r"
        return raw

    # -- reading ---------------------------------------------------------
    def _readline_bytes(self) -> bytes:
        """Read one line when the buffer holds no newline: read until one comes."""
        if self._wbuf:
            self._flush_write()
        line = self._rbuf[self._rpos :]
        self._rbuf = b""
        self._rpos = 0
        parts = [line]  # joined once: a long line must not be copied at every read
        try:
            while not self._eof:
                chunk = _read(self._fd, _BUFSIZE)
                if not chunk:
                    self._eof = True
                    break
                if self._pos >= 0:
                    self._pos += len(chunk)
                end = chunk.find(b"\n")
                if end >= 0:
                    self._rbuf = chunk
                    self._rpos = end + 1
                    parts.append(chunk[: end + 1])
                    return b"".join(parts) if len(parts) > 2 else parts[0] + parts[1]
                parts.append(chunk)
        except BaseException:
            self._rbuf = b"".join(parts)  # keep what was read for the next try
            raise
        return b"".join(parts) if len(parts) > 1 else line

    def readline(self, size: int = -1) -> Data | None:
        """Read one line, newline included ('' or b'' at end of file).

        None when closed, and, as Perl's ``<FH>``, when the read fails (a
        directory opened with ``<``: EISDIR): ``$!`` and the handle's error flag
        (``close`` returns 0) are set.
        """
        if self._closed:
            _warn_closed(self, "readline", 2)
            return None
        if not self._readable:
            self._unreadable()
        rbuf = self._rbuf
        end = rbuf.find(b"\n", self._rpos) if rbuf else -1
        if end >= 0:  # a whole line is buffered
            line = rbuf[self._rpos : end + 1]
            self._rpos = end + 1
        else:  # no whole line buffered: this path makes a read(2) call anyway
            try:
                line = self._readline_bytes()
            except OSError as exc:
                reraise_foreign(exc)  # an ALRM handler's error propagates
                self._error = errno_state.errno = exc.errno or errno.EIO
                return None
        if size is not None and 0 <= size < len(line):
            # keep the rest of the line buffered for the next read
            self._rbuf = line[size:] + self._rbuf[self._rpos :]
            self._rpos = 0
            line = line[:size]
        if self._text:
            if self._crlf:
                line = line.replace(b"\r\n", b"\n")
            return line.decode(self._encoding, "surrogateescape")
        return line

    def _read_all_bytes(self) -> bytes:
        if self._wbuf:
            self._flush_write()
        parts = [self._rbuf[self._rpos :]]
        self._rbuf = b""
        self._rpos = 0
        while not self._eof:
            chunk = _read(self._fd, 65536)
            if not chunk:
                self._eof = True
                break
            if self._pos >= 0:
                self._pos += len(chunk)
            parts.append(chunk)
        return b"".join(parts)

    def read(self, size: int = -1) -> Data | None:
        """Read *size* characters (bytes for ``:raw``), or everything when *size* < 0.

        None with ``OS_ERROR`` = EBADF on a closed handle, as Perl's ``read``.
        """
        if self._closed:
            _warn_closed(self, "read", 2)
            errno_state.errno = errno.EBADF
            return None
        if not self._readable:
            self._unreadable()
        if size is None or size < 0:
            data = self._read_all_bytes()
            return self._decode(data) if self._text else data
        want = size if not self._text else size * 4 + 4
        while len(self._rbuf) - self._rpos < want and self._fill():
            pass
        avail = self._rbuf[self._rpos :]
        if not self._text:
            data = avail[:size]
            self._rpos += len(data)
            return data
        text = self._decode(avail)[:size]
        used = len(self._encode_plain(text))
        if self._crlf:  # count the \r bytes that decoding removed
            used = self._crlf_byte_length(avail, text)
        self._rpos += used
        if self._rpos < len(self._rbuf):
            self._eof = False  # the look-ahead saw the end, the reader has not
        return text

    def _encode_plain(self, text: str) -> bytes:
        return text.encode(self._encoding, self._encode_errors)

    def _crlf_byte_length(self, raw: bytes, text: str) -> int:
        consumed = 0
        chars = 0
        while chars < len(text):
            line_end = text.find("\n", chars)
            if line_end < 0:
                return consumed + len(self._encode_plain(text[chars:]))
            piece = self._encode_plain(text[chars:line_end])
            consumed += len(piece)
            consumed += 2 if raw[consumed : consumed + 2] == b"\r\n" else 1
            chars = line_end + 1
        return consumed

    def readlines(self, hint: int = -1) -> list[Data]:
        """Read the remaining lines into a :class:`PerlList` (empty when closed)."""
        lines: list[Data] = PerlList()
        if self._closed:
            _warn_closed(self, "readline", 2)
            return lines
        total = 0
        while True:
            line = self.readline()
            if not line:
                return lines
            lines.append(line)
            total += len(line)
            if 0 < hint <= total:
                return lines

    def __iter__(self) -> Iterator[Data]:
        return self

    def __next__(self) -> Data:
        if self._closed:
            _warn_closed(self, "readline", 2)
            raise StopIteration
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __bool__(self) -> bool:
        """False for the handle of a failed ``open_`` (``if not IN:``), else True."""
        return self._fd >= 0

    def at_eof(self) -> bool:
        """True when the next read would return end of file (Perl's ``eof``), or when closed."""
        if self._closed:
            return True
        if self._rpos < len(self._rbuf):
            return False
        if not self._readable:
            self._error = errno.EBADF  # Perl's eof tries a read, which fails
            return True
        return not self._fill()

    # -- writing ---------------------------------------------------------
    def write(self, data: Data) -> int:
        """Buffer *data* for writing; return its length."""
        self._check()
        if not self._writable:
            raise io.UnsupportedOperation("not writable")
        raw = self._encode(data)
        if self._rbuf:
            self._drop_read()
        self._wbuf.append(raw)
        if len(raw) > _BUFSIZE or len(self._wbuf) > 64:
            self._flush_write()
        return len(data)

    def writelines(self, lines: Iterable[Data]) -> None:
        """Write each string of *lines*."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Write out buffered data and drop read-ahead, as PerlIO's flush does."""
        self._check()
        self._flush()

    def _flush(self) -> None:
        """PerlIO's flush of an open handle (``seek`` inlines it, on the hot path)."""
        if self._wbuf:
            self._flush_write()
        if self._rbuf:
            self._drop_read()

    def _flush_remembered(self) -> OSError | None:
        """Flush an open handle as Perl's ``(void)PerlIO_flush``: a failure is returned, not raised.

        The handle's error flag remembers it (``close`` reports it); an ALRM
        handler's exception propagates.
        """
        try:
            self._flush()
        except OSError as exc:
            reraise_foreign(exc)
            self._error = exc.errno or errno.EIO
            return exc
        return None

    def flushed_fileno(self) -> int:
        """Flush as Perl's ``flock`` does, then return the descriptor; OSError(EBADF) if closed.

        The interface ``flock`` uses: a failed flush does not stop it (the error
        flag remembers the failure, ``close`` reports it).
        """
        if self._closed:
            raise OSError(errno.EBADF, "closed file handle")
        if self._wbuf or self._rbuf:
            self._flush_remembered()
        return self._fd

    # -- positioning -----------------------------------------------------
    def seek(self, offset: int, whence: int = SEEK_SET) -> int:
        """Move to *offset* (bytes) from *whence*; return the new position."""
        self._check()
        if whence not in (0, 1, 2):
            raise OSError(errno.EINVAL, "Invalid argument")
        self._flush()
        position = self._pos = _lseek(self._fd, offset, whence)
        self._eof = False
        return position

    def tell(self) -> int:
        """Return the current position in bytes."""
        if self._closed:
            raise ValueError("I/O operation on closed file")
        return self._tell()

    def truncate(self, size: int | None = None) -> int:
        """Cut the file to *size* bytes (default: the current position); return *size*."""
        self._check()
        if size is None:
            size = self._tell()
        self.flush()
        _ftruncate(self._fd, size)
        return size

    # -- state -----------------------------------------------------------
    def fileno(self) -> int:
        """Return the OS file descriptor (move it only through this handle)."""
        self._check()
        return self._fd

    def close(self) -> None:
        """Flush and close (which releases any ``flock`` held through it)."""
        if self._closed:
            return
        self._closed = True
        self._flocked = 0
        try:
            if self._wbuf:
                self._flush_write()
        finally:
            self._rbuf = b""
            _OPEN.pop(self._fd, None)
            _close(self._fd)

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._closed

    @property
    def encoding(self) -> str | None:
        """The text encoding, or None for ``:raw`` handles."""
        return self._encoding if self._text else None

    @property
    def errors(self) -> str:
        """The codec error handler (``surrogateescape``)."""
        return self._errors

    def set_layer(self, layer: str) -> None:
        """Switch layers (``:raw``, ``:crlf``, ``:encoding(NAME)``) as ``binmode`` does."""
        self._check()
        self._text, self._encoding, self._crlf = _apply_layers(
            layer, self._text, self._encoding, self._crlf
        )

    def readable(self) -> bool:
        """True for modes that read."""
        return self._readable

    def writable(self) -> bool:
        """True for modes that write."""
        return self._writable

    def seekable(self) -> bool:
        """True (Perl's data files are regular files)."""
        return True

    def isatty(self) -> bool:
        """True if the descriptor is a terminal."""
        self._check()
        return os.isatty(self._fd)

    def __enter__(self) -> PerlFile:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # Perl flushes and closes a handle that goes out of scope; so do we.
        try:
            if self._closed:
                return
        except AttributeError:  # __init__ failed before setting it
            return
        if self._flocked:
            _warn_lost_lock(self)
        try:
            self.close()
        except OSError as exc:  # as Perl's implicit close of a handle leaving its scope
            from .errno import strerror

            _stderr(
                f"Warning: unable to close filehandle {self.name} properly:"
                f" {strerror(exc.errno or errno.EIO)}.\n"
            )

    def __repr__(self) -> str:
        state = "failed" if self._fd < 0 else "closed" if self._closed else f"fd={self._fd}"
        return f"<PerlFile {self.mode}{self.name!r} {state}>"


io.IOBase.register(PerlFile)


# -- layers ------------------------------------------------------------------
def _apply_layers(spec: str, text: bool, encoding: str, crlf: bool) -> tuple[bool, str, bool]:
    """Apply a Perl layer string like ``:raw:encoding(UTF-8)`` to (text, encoding, crlf)."""
    rest = spec.strip()
    while rest:
        if not rest.startswith(":"):
            raise ValueError(f"bad I/O layer {spec!r}: layers start with ':'")
        rest = rest[1:]
        name_end = len(rest)
        for i, ch in enumerate(rest):
            if ch in ":( \t":
                name_end = i
                break
        name = rest[:name_end]
        rest = rest[name_end:]
        arg = None
        if rest.startswith("("):
            close_at = rest.find(")")
            if close_at < 0:
                raise ValueError(f"bad I/O layer {spec!r}: missing ')'")
            arg = rest[1:close_at].strip()
            rest = rest[close_at + 1 :]
        rest = rest.lstrip()
        if name in ("raw", "bytes", "unix", "perlio", "stdio"):
            if name == "raw":
                text, crlf = False, False
            elif name == "bytes":
                text, encoding = True, "utf-8"
        elif name == "crlf":
            text, crlf = True, True
        elif name in ("utf8", "encoding"):
            if name == "encoding":
                if not arg:
                    raise ValueError(f"bad I/O layer {spec!r}: :encoding needs a name")
                encoding = _codec_name(arg)
            else:
                encoding = "utf-8"
            text = True
        else:
            raise ValueError(f"unknown I/O layer {':' + name!r} in {spec!r}")
    return text, encoding, crlf


def _codec_name(name: str) -> str:
    import codecs

    try:
        return codecs.lookup(name).name
    except LookupError:
        from .jexact import register  # sjis-exact, euc-jp-exact: registered on first use

        if not register(name):
            raise ValueError(f"cannot find encoding {name!r}") from None
        return codecs.lookup(name).name


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
    if mode == "<" and (name.endswith("|") or name.startswith("|")):
        raise ValueError(f"open_: pipe opens ({spec!r}) are not supported; use subprocess")
    if name.startswith("|"):
        raise ValueError(f"open_: pipe opens ({spec!r}) are not supported; use subprocess")
    if name == "-":
        raise ValueError(f"open_: STDIN/STDOUT forms ({spec!r}) are not supported")
    return mode, name


def _parse_three_arg(spec: str) -> tuple[str, str]:
    text = spec.strip()
    for prefix in _MODE_PREFIXES:
        if text.startswith(prefix):
            return prefix, text[len(prefix) :].strip()
    if text.startswith("|") or text.endswith("|") or text.startswith("-|"):
        raise ValueError(f"open_: pipe opens ({spec!r}) are not supported; use subprocess")
    raise ValueError(f"Unknown open() mode {spec!r}; use <, >, >>, +<, +> or +>>")


#: parsed open_ arguments -> (mode, name, os.open flags, text, encoding, crlf, readable,
#: writable, append); a CGI script opens the same few files the same way on every request
_OPEN_CACHE: dict[object, tuple[str, str, int, bool, str, bool, bool, bool, bool]] = {}


def _parse_open(
    mode: object, path: object
) -> tuple[str, str, int, bool, str, bool, bool, bool, bool]:
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
        text, encoding, crlf = _apply_layers(layers, text, encoding, crlf)
    flags, readable, writable, append = _MODES[mode_]
    parsed = (mode_, name, flags | _EXTRA_FLAGS, text, encoding, crlf, readable, writable, append)
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
        mode_, name, flags, text, encoding, crlf, readable, writable, append = _OPEN_CACHE[
            mode if path is None else (mode, path)
        ]
    except (KeyError, TypeError):
        mode_, name, flags, text, encoding, crlf, readable, writable, append = _parse_open(
            mode, path
        )
    fd = -1
    if not name:
        fail(errno.ENOENT)
    else:
        try:
            fd = _open(name, flags, _CREATE)
        except OSError as exc:
            fail_from(exc)
        except ValueError:  # a NUL in the name: Perl's open gives 0 with ENOENT
            fail(errno.ENOENT)
    # PerlFile._setup inlined (a call costs a tenth of the cycle): on every CGI request's path
    fh: PerlFile = _new_handle(PerlFile)
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
    caller = _getframe(1)  # where it was opened: the line is worked out only if it is needed
    fh._site = caller.f_code
    fh._site_at = caller.f_lasti
    if fd < 0:  # the open failed: a closed handle, false ($! is set)
        fh._closed = fh._eof = True
        fh._pos = -1
        return fh
    fh._closed = fh._eof = False
    fh._pos = 0
    _OPEN[fd] = _weakref(fh)
    if append:
        fh._pos = -1
        try:  # noqa: SIM105
            fh._pos = _lseek(fd, 0, SEEK_END)  # Perl reports the end as the position
        except OSError:  # a pipe or terminal: no position
            pass
    errno_state.errno = 0
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
    if type(fh) is not PerlFile:
        return _print_other(fh, items)
    if fh._closed or not fh._writable:
        if fh._closed:
            _warn_closed(fh, "print", 2)
        return fail(errno.EBADF)
    encoding = fh._encoding
    try:
        if fh._rbuf:
            fh._drop_read()
        wbuf = fh._wbuf
        for item in items:
            kind = type(item)
            if kind is str or kind is int:
                raw = str(item).encode(encoding, PERLQQ)
            else:
                data = _perl_str(item)
                raw = data.encode(encoding, PERLQQ) if isinstance(data, str) else data
            if fh._crlf and fh._text:
                raw = raw.replace(b"\n", b"\r\n")
            wbuf.append(raw)
            if len(raw) > _BUFSIZE:
                fh._flush_write()
                wbuf = fh._wbuf
        if len(wbuf) > 64:
            fh._flush_write()
    except OSError as exc:
        fh._error = exc.errno or errno.EIO
        return fail_from(exc)
    # Perl's print is false on a handle with its error flag set (the data is still written).
    return 0 if fh._error else 1


def _print_other(fh: object, items: tuple[object, ...]) -> int:
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
    if perl_file and fh._closed:
        _warn_closed(fh, "seek", 2)
        return fail(errno.EBADF)
    if type(position) is not int or whence not in (0, 1, 2) or not _MIN_OFF <= position <= _MAX_OFF:
        return fail(errno.EINVAL)  # (beyond off_t: Perl's lseek gets EINVAL too)
    if perl_file:
        try:
            if fh._wbuf:  # (PerlFile._flush, inlined)
                fh._flush_write()
            if fh._rbuf:
                fh._drop_read()
            fh._pos = _lseek(fh._fd, position, whence)  # unchanged if it fails
        except OSError as exc:
            return fail_from(exc)
        fh._eof = False
        return 1
    try:
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
        if type(fh) is PerlFile and not fh._closed:
            wbuf = fh._wbuf  # (no read-ahead then: the two never coexist)
            if wbuf and fh._append:  # PerlIO asks the OS where an appending write went
                try:
                    fh._flush_write()
                except OSError as exc:  # the handle's error flag is set; close reports it
                    fail_from(exc)
                fh._pos = -1
                wbuf = fh._wbuf  # (empty now: a failed write's data is dropped)
            pos = fh._pos
            if pos < 0:
                pos = fh._pos = _lseek(fh._fd, 0, SEEK_CUR)
            if wbuf:
                return pos + (len(wbuf[0]) if len(wbuf) == 1 else sum(map(len, wbuf)))
            return pos - (len(fh._rbuf) - fh._rpos)
        if type(fh) is PerlFile:
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
        fd = fh._fd
        errno_state.errno = 0  # as Perl's: $! is cleared, then says why a flush failed
        if fh._wbuf or fh._rbuf:  # (PerlFile._flush_remembered, inlined: the hot path)
            try:
                if fh._wbuf:
                    fh._flush_write()
                if fh._rbuf:
                    fh._drop_read()
            except OSError as exc:  # as Perl, cut anyway; $! says why, close reports it too
                reraise_foreign(exc)
                fh._error = exc.errno or errno.EIO
                fail_from(exc)
    elif isinstance(fh, (str, bytes, os.PathLike)):
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
        fh._closed = True
        fh._flocked = 0
        fh._rbuf = b""
        try:
            if fh._wbuf:
                fh._flush_write()
        except OSError as exc:
            fh._error = exc.errno or errno.EIO
        except BaseException:  # a signal handler's exception: the descriptor (and flock) go anyway
            _OPEN.pop(fh._fd, None)
            try:  # noqa: SIM105
                _close(fh._fd)
            except OSError:
                pass
            raise
        _OPEN.pop(fh._fd, None)
        try:
            _close(fh._fd)
        except OSError as exc:
            return fail_from(exc)
        return fail(fh._error) if fh._error else 1
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
    if type(fh) is PerlFile:
        if fh._closed:
            _warn_closed(fh, "readline", 2)
            return None
        if not fh._readable:
            fh._error = errno.EBADF
            errno_state.errno = errno.EBADF
            return None
    try:
        line: Data | None = fh.readline()
    except (ValueError, AttributeError):  # closed or not a handle (UnsupportedOperation too)
        errno_state.errno = errno.EBADF
        return None
    return line or None
