"""PerlIO: the ``PerlFile`` object ``open_`` returns, its buffers and the Python file interface.

A light file object over ``os.read``, ``os.write`` and ``os.lseek`` with its own
buffers: it iterates, ``readline``\\ s, ``write``\\ s and works as a context
manager like any Python file (the io stack's object construction costs more than
a CGI lock cycle does).  Its methods raise as Python's file methods do; Perl's
functions (``perl.handle``: ``seek(FH, ...)``, ``print_``, ``close`` ...) call the
same private operations (``_seek``, ``_tell``, ``_put``, ``_shut`` ...) and turn
failures into 0 and ``$!``.  The semantics of both are PerlIO's (see ``perl.handle``).
"""

from __future__ import annotations

import errno
import io
import os
import sys
from _weakref import proxy as _weakproxy

from .consts import SEEK_CUR, SEEK_SET
from .errno import fail, fail_from, reraise_foreign
from .layers import PERLQQ, apply_layers
from .lists import PerlList
from .openfiles import OPEN, _warn_closed, broken_pipe, to_stderr, warn_lost_lock

# the hot path's system calls, bound once (a module attribute lookup per call adds up)
_read, _write, _lseek = os.read, os.write, os.lseek
_ftruncate, _close = os.ftruncate, os.close

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from types import CodeType, TracebackType
    from typing import NoReturn, Union

    Data = Union[str, bytes]

_BUFSIZE = 8192
#: the positions an off_t holds: beyond them seek and truncate fail with EINVAL, as in Perl
_MIN_OFF, _MAX_OFF = -(2**63), 2**63 - 1
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
            OPEN[fd] = _weakproxy(self)

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
            if exc.errno == errno.EPIPE:  # as Perl: killed by SIGPIPE unless SIG["PIPE"] is set
                broken_pipe()
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
        """PerlIO's tell of an open handle (``tell()`` and Perl's ``tell``).

        Pending output is counted, not written (a write that will fail on a full
        disk fails later, in ``seek``/``truncate``/``close``), except on an
        appending handle, which is flushed to learn where the data went; if that
        write fails, ``$!`` says why, the error flag remembers it and the OS
        position is returned.
        """
        wbuf = self._wbuf  # (no read-ahead then: the two never coexist)
        if wbuf and self._append:  # PerlIO asks the OS where an appending write went
            try:
                self._flush_write()
            except OSError as exc:  # the handle's error flag is set; close reports it
                fail_from(exc)
            self._pos = -1
            wbuf = self._wbuf  # (empty now: a failed write's data is dropped)
        pos = self._pos
        if pos < 0:
            pos = self._pos = _lseek(self._fd, 0, SEEK_CUR)
        if wbuf:
            return pos + (len(wbuf[0]) if len(wbuf) == 1 else sum(map(len, wbuf)))
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
        parts = None  # the rest, joined once: a long line is not copied at every read
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
                    chunk = chunk[: end + 1]
                    if parts is not None:
                        parts.append(chunk)
                        return line + b"".join(parts)
                    return line + chunk if line else chunk
                if not line:  # (the common case: a line, or the file, in one read)
                    line = chunk
                elif parts is None:
                    parts = [chunk]
                else:
                    parts.append(chunk)
        except BaseException:
            if parts is not None:  # keep what was read for the next try
                line += b"".join(parts)
            self._rbuf = line
            raise
        return line if parts is None else line + b"".join(parts)

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
                self._error = exc.errno or errno.EIO
                fail(self._error)
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
            fail(errno.EBADF)
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
        self._put(self._encode(data))
        return len(data)

    def _put(self, raw: bytes) -> None:
        """Buffer encoded output (``write()`` and Perl's ``print``); written out when it grows."""
        if self._rbuf:
            self._drop_read()
        wbuf = self._wbuf
        wbuf.append(raw)
        if len(raw) > _BUFSIZE or len(wbuf) > 64:
            self._flush_write()

    def writelines(self, lines: Iterable[Data]) -> None:
        """Write each string of *lines*."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Write out buffered data and drop read-ahead, as PerlIO's flush does."""
        self._check()
        self._flush()

    def _flush(self) -> None:
        """PerlIO's flush of an open handle; a failure raises."""
        if self._wbuf:
            self._flush_write()
        if self._rbuf:
            self._drop_read()

    def _flush_remembered(self, cut: int | None = None) -> OSError | None:
        """Flush an open handle as Perl's ``(void)PerlIO_flush``: a failure is returned, not raised.

        The handle's error flag remembers it (``close`` reports it); an ALRM
        handler's exception propagates.  Then, for ``truncate()`` and Perl's
        ``truncate``, cut the file at *cut* bytes (unless None), as Perl does
        after a failed flush too (ftruncate(2)'s error raises).
        (Also ``flock``, exit and fork.)
        """
        failed = None
        if self._wbuf or self._rbuf:
            try:
                if self._wbuf:
                    self._flush_write()
                if self._rbuf:
                    self._drop_read()
            except OSError as exc:
                reraise_foreign(exc)
                self._error = exc.errno or errno.EIO
                failed = exc
        if cut is not None:
            _ftruncate(self._fd, cut)
        return failed

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
        return self._seek(offset, whence)

    def _seek(self, offset: int, whence: int) -> int:
        """PerlIO's seek of an open handle (``seek()``, Perl's ``seek``): flush, move, clear eof."""
        if self._wbuf:
            self._flush_write()
        if self._rbuf:
            self._drop_read()
        position = self._pos = _lseek(self._fd, offset, whence)  # unchanged if it fails
        self._eof = False
        return position

    def tell(self) -> int:
        """Return the current position in bytes (pending output counted, as PerlIO does)."""
        if self._closed:
            raise ValueError("I/O operation on closed file")
        return self._tell()

    def truncate(self, size: int | None = None) -> int:
        """Cut the file to *size* bytes (default: the current position); return *size*.

        As Perl's ``truncate``, a failed flush does not stop the cut: it sets
        ``$!`` and the error flag (``close`` reports it).
        """
        self._check()
        if size is None:
            size = self._tell()
        failed = self._flush_remembered(size)
        if failed is not None:  # as Perl: cut anyway; $! says why, close reports it too
            fail_from(failed)
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
        failed = self._shut()
        if failed is not None:
            raise failed

    def _shut(self) -> OSError | None:
        """Close an open handle (``close()``, Perl's ``close``): flush, release the descriptor.

        A failed flush is returned (the error flag remembers it: Perl's close
        gives 0); the descriptor, and so a ``flock``, goes anyway, also when a
        signal handler's exception interrupts the flush.  close(2)'s error raises.
        """
        self._closed = True
        self._flocked = 0
        self._rbuf = b""
        fd = self._fd
        failed = None
        try:
            if self._wbuf:
                self._flush_write()
        except OSError as exc:  # (_flush_write set the error flag)
            failed = exc
        except BaseException:
            OPEN.pop(fd, None)
            try:  # noqa: SIM105
                _close(fd)
            except OSError:
                pass
            raise
        OPEN.pop(fd, None)
        _close(fd)
        return failed

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
        self._text, self._encoding, self._crlf = apply_layers(
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
            warn_lost_lock(self)
        try:
            self.close()
        except OSError as exc:  # as Perl's implicit close of a handle leaving its scope
            from .errno import strerror

            to_stderr(
                f"Warning: unable to close filehandle {self.name} properly:"
                f" {strerror(exc.errno or errno.EIO)}.\n"
            )

    def __repr__(self) -> str:
        state = "failed" if self._fd < 0 else "closed" if self._closed else f"fd={self._fd}"
        return f"<PerlFile {self.mode}{self.name!r} {state}>"


io.IOBase.register(PerlFile)


class Unopened(PerlFile):
    """The handle a failed ``open_`` or ``sysopen`` returns: closed, and false (``if not IN:``).

    (A class of its own, so an open handle's truth costs no ``__bool__`` call.)
    """

    __slots__ = ()

    def __bool__(self) -> bool:
        return False


_flock = sys.modules.get(__name__.rpartition(".")[0] + ".flock")
if _flock is not None:  # flock's fast path (see flock._PerlFile)
    _flock._PerlFile = PerlFile  # type: ignore[attr-defined]
