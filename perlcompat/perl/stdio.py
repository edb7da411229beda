"""``STDIN``, ``STDOUT``, ``STDERR`` as Perl handles, and Perl's ``read(FH, $buf, LEN)``.

``print_(STDOUT, line)`` writes the bytes Perl writes: a str decoded from a file
with UTF-8 + ``surrogateescape`` (how every perlcompat text handle reads)
goes out as the bytes it came from, so a Shift_JIS line or a stray byte in a
UTF-8 log comes out unchanged instead of raising ``UnicodeEncodeError``.
``binmode(STDOUT)``, ``binmode(STDOUT, ":crlf")`` and ``:encoding(NAME)`` work as on
any handle; on Windows, as in Perl, the three start in ``:crlf``.

``STDOUT`` and ``STDERR`` write into ``sys.stdout.buffer`` / ``sys.stderr.buffer``
(looked up at each write); the first write sets the text stream to
``write_through``, so ``print()`` and ``print_(STDOUT, ...)`` share one buffer and
come out in the order they were called.  ``STDOUT`` is buffered as Perl's is
(written out when the buffer fills and at exit); ``STDERR`` is unbuffered;
``STDOUT.autoflush(1)`` is Perl's ``$| = 1``.
``STDIN`` reads file descriptor 0 with its own buffer (do not mix
it with ``sys.stdin``).  The three are made at first use, not at import: a
process that forks and gives a child new descriptors 0/1/2 (a FastCGI server)
can import perlcompat before the fork; ``os.fork`` first flushes STDOUT and STDERR (and
what ``print()`` buffered), as Perl's ``fork`` does, so a child never repeats the parent's
output, and a child's STDIN drops what the parent read ahead.

``read(FH, buf, length, offset=0)`` is Perl's ``read``: ``buf`` is a
:class:`Scalar` it fills, the return value is the count of bytes read (0 at end
of file, None on error with ``OS_ERROR`` set), so the hand-rolled form reader
keeps its shape::

    buffer = Scalar()
    read(STDIN, buffer, int(os.environ["CONTENT_LENGTH"]))
    pairs = split("&", buffer.value)
"""

from __future__ import annotations

import errno
import os
import sys

from .errno import fail, reraise_foreign
from .openfiles import _warn_closed, broken_pipe
from .perlio import PerlFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Union

    Data = Union[str, bytes]


class Scalar:
    """A Perl scalar a function fills in place (``read``'s ``$buffer``); ``.value`` holds it.

    ``str(buf)`` is the value as text; ``len(buf)`` its length.  A fresh
    ``Scalar()`` is undef (``value`` None), as a fresh ``my $buffer`` is.
    """

    __slots__ = ("value",)

    def __init__(self, value: Data | None = None) -> None:
        self.value = value

    def __str__(self) -> str:
        value = self.value
        if value is None:
            return ""
        if isinstance(value, bytes):
            return value.decode("utf-8", "surrogateescape")
        return value

    def __len__(self) -> int:
        return 0 if self.value is None else len(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Scalar):
            return self.value == other.value
        return self.value == other

    # mutable: not hashable
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Scalar({self.value!r})"


class _StdOut(PerlFile):
    """``STDOUT``/``STDERR``: a PerlFile whose writes go into ``sys.<stream>.buffer``."""

    __slots__ = ("_autoflush", "_seen", "_stream", "_through")
    standard = True
    _autoflush: bool
    _seen: object
    _stream: str
    _through: bool

    def write(self, data: Data) -> int:
        """Write *data* (encoded by the handle's layers) after what ``print()`` wrote."""
        self._check()
        raw = self._encode(data)
        stream = getattr(sys, self._stream, None)
        target = getattr(stream, "buffer", None)
        try:
            if target is None or getattr(target, "closed", True):  # no usable sys stream: the fd
                view = memoryview(raw)
                while view:
                    view = view[os.write(self._fd, view) :]
                return len(data)
            self._write_stream(stream, target, raw)
        except BrokenPipeError:  # as Perl: killed by SIGPIPE unless SIG["PIPE"] is set
            broken_pipe()
            raise
        return len(data)

    def _write_stream(self, stream: Any, target: Any, raw: bytes) -> None:
        """Write *raw* into the sys stream's buffer, after what ``print()`` left there."""
        try:
            if stream is not self._seen:  # a sys stream not seen before: share its buffer
                self._seen = stream
                self._through = _write_through(stream)
            if not self._through:
                stream.flush()
            target.write(raw)
            if self._autoflush:
                target.flush()
        except ValueError:  # the sys stream was closed under us
            raise OSError(errno.EBADF, os.strerror(errno.EBADF)) from None

    def autoflush(self, flag: object = 1) -> int:
        """``STDOUT->autoflush(1)`` / Perl's ``$| = 1``: flush after every print; the old value."""
        old = 1 if self._autoflush else 0
        self._autoflush = bool(flag)
        if self._autoflush:
            self._flush()
        return old

    def _flush(self) -> None:
        stream = getattr(sys, self._stream, None)
        if stream is not None:
            try:  # noqa: SIM105
                stream.flush()
            except ValueError:  # closed
                pass

    def flush(self) -> None:
        """Write out what this handle and ``print()`` buffered."""
        self._check()
        self._flush()

    def _seek(self, offset: int, whence: int) -> int:
        self._flush()  # what print() buffered goes first
        return PerlFile._seek(self, offset, whence)

    def _flush_remembered(self, cut: int | None = None) -> OSError | None:
        self._flush()  # (truncate: what print() buffered goes first)
        return PerlFile._flush_remembered(self, cut)

    def flushed_fileno(self) -> int:
        """Flush, then return the descriptor (for ``flock``)."""
        self._check()
        self._flush()
        return self._fd

    def close(self) -> None:
        """Flush and close the descriptor, as Perl's ``close(STDOUT)`` ends the response."""
        if self._closed:
            return
        self._flush()
        self._closed = True
        os.close(self._fd)

    def __del__(self) -> None:
        # never close 1 or 2 because a name went away (interpreter shutdown)
        pass


class _StdIn(PerlFile):
    """``STDIN``: a PerlFile on descriptor 0 that going away never closes."""

    __slots__ = ()
    standard = True

    def __del__(self) -> None:
        pass


_NAMES = {"STDIN": (0, "<", "stdin"), "STDOUT": (1, ">", "stdout"), "STDERR": (2, ">", "stderr")}
_HANDLES: dict[str, PerlFile] = {}


def _write_through(stream: object) -> bool:
    """Make ``print()`` hand its text to the byte buffer at once (``write_through``).

    Then ``print()`` and ``print_(STDOUT, ...)`` share one buffer and keep their
    order without a flush per print; False where the stream cannot (then every
    write flushes the text layer first).
    """
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is None:
        return False
    try:
        reconfigure(write_through=True)
    except (ValueError, TypeError, OSError):
        return False
    return True


def _make(name: str) -> PerlFile:
    fd, mode, stream = _NAMES[name]
    handle: PerlFile
    if mode == "<":
        handle = _StdIn(fd, name, mode)
    else:
        out = _StdOut(fd, name, mode)
        out._stream = stream
        out._seen = None
        out._through = False
        out._autoflush = name == "STDERR"  # Perl's STDERR is unbuffered
        handle = out
    _HANDLES[name] = handle
    return handle


def std_handle(name: str) -> PerlFile:
    """The handle ``STDIN``, ``STDOUT`` or ``STDERR``, made at first use."""
    try:
        return _HANDLES[name]
    except KeyError:
        if name not in _NAMES:
            raise ValueError(f"no standard handle {name!r}; use STDIN, STDOUT or STDERR") from None
        return _make(name)


def _after_fork_in_child() -> None:
    """A forked child reads its own descriptor 0: forget what the parent read ahead."""
    handle = _HANDLES.get("STDIN")
    if handle is not None and not handle._closed:
        handle._rbuf = b""
        handle._rpos = 0
        handle._eof = False
        handle._pos = -1


def _flush_before_fork() -> None:
    """Perl flushes output handles before ``fork``: a child never writes the parent's output.

    STDOUT and STDERR buffer in ``sys.stdout`` / ``sys.stderr`` (with ``print()``),
    which ``os.fork`` copies unflushed into the child; a FastCGI child with a new
    descriptor 1 would send the parent's pending lines in its response.
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is not None:
            try:  # noqa: SIM105 - a closed or broken stream must not stop the fork
                stream.flush()
            except (OSError, ValueError):
                pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_flush_before_fork, after_in_child=_after_fork_in_child)


def __getattr__(name: str) -> PerlFile:
    if name in _NAMES:
        return std_handle(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- read ----------------------------------------------------------------------
def _read_bytes(fh: PerlFile, length: int) -> bytes:
    """Up to *length* bytes from *fh*'s buffer and descriptor (fewer only at end of file).

    The read-ahead is taken a chunk at a time and joined once: growing it by each
    chunk would copy a body of n bytes n / 8 KiB times.
    """
    if fh._wbuf:
        fh._flush_write()
    start = fh._rpos
    if len(fh._rbuf) - start >= length:
        fh._rpos = start + length
        return fh._rbuf[start : start + length]
    parts = [fh._rbuf[start:]]
    got = len(parts[0])
    fh._rpos = len(fh._rbuf)  # (all taken; the bytes stay for a one-byte step back)
    while got < length and fh._fill():
        chunk = fh._rbuf  # (_fill dropped the taken bytes: the new chunk, from 0)
        take = min(len(chunk), length - got)
        parts.append(chunk if take == len(chunk) else chunk[:take])
        fh._rpos = take
        got += take
    return b"".join(parts)


def _read_line(fh: PerlFile, sep: bytes) -> bytes:
    """``<FH>`` with ``$/`` set to *sep*: the bytes through the first *sep*, or all that is left."""
    if fh._wbuf:
        fh._flush_write()
    parts = []
    while True:
        buf, start = fh._rbuf, fh._rpos
        at = buf.find(sep, start)
        if at >= 0:
            fh._rpos = at + len(sep)
            parts.append(buf[start : fh._rpos])
            return b"".join(parts)
        cut = max(start, len(buf) - len(sep) + 1)  # keep what may start a separator
        parts.append(buf[start:cut])
        fh._rbuf, fh._rpos = buf[cut:], 0
        if not fh._fill():
            parts.append(fh._rbuf)
            fh._rbuf = b""
            return b"".join(parts)


def _read_crlf(fh: PerlFile, length: int) -> bytes:
    """*length* bytes after ``:crlf`` turned each CR LF into LF."""
    out = b""
    while len(out) < length:
        chunk = _read_bytes(fh, length - len(out))
        if not chunk:
            break
        if chunk.endswith(b"\r"):  # a CR LF split across the read
            nxt = _read_bytes(fh, 1)
            chunk += nxt
            if nxt and nxt != b"\n":
                fh._rpos -= 1
                chunk = chunk[:-1]
        out += chunk.replace(b"\r\n", b"\n")
    return out


def read(fh: PerlFile, buf: Scalar, length: int, offset: int = 0) -> int | None:
    """Perl's ``read(FH, SCALAR, LENGTH, OFFSET)``: the bytes read (0 at end of file).

    Fills ``buf.value`` as Perl fills ``$buffer``: from *offset* on (counted in
    the value's characters; padded with NULs when past the end; a negative one
    counts from the end), the part before it kept, the rest replaced.  Text
    handles count bytes, as Perl does on a handle without a ``:utf8`` layer,
    and the value is a str decoded with UTF-8 + ``surrogateescape`` as a
    whole, so bytes split across reads join again; a
    ``:raw`` handle gives ``bytes``.  None with ``OS_ERROR`` set on error
    (closed handle: EBADF).
    """
    if not isinstance(buf, Scalar):
        raise TypeError(f"read() needs a Scalar to fill, not {type(buf).__name__}")
    if type(length) is not int or length < 0:
        raise ValueError(f"Negative length {length!r} in read")
    if type(fh) is not PerlFile and not isinstance(fh, PerlFile):
        raise TypeError(f"read() needs a perlcompat handle, not {type(fh).__name__}")
    if fh._closed:
        _warn_closed(fh, "read", 2)
        fail(errno.EBADF)
        return None
    if not fh._readable:
        fh._error = errno.EBADF
        fail(errno.EBADF)
        return None
    old = buf.value
    if old is None:
        old = ""
    if offset < 0:
        if -offset > len(old):
            raise ValueError("Offset outside string")
        offset += len(old)
    try:
        data = _read_crlf(fh, length) if fh._crlf and fh._text else _read_bytes(fh, length)
    except OSError as exc:
        reraise_foreign(exc)
        fh._error = exc.errno or errno.EIO
        fail(fh._error)
        return None
    # the part before *offset* (in the value's own units: characters of a str), NUL-padded
    if isinstance(old, str):
        head = old[:offset].ljust(offset, "\0").encode(fh._encoding, "surrogateescape")
    else:
        head = bytes(old[:offset]).ljust(offset, b"\0")
    raw = head + data
    buf.value = raw.decode(fh._encoding, "surrogateescape") if fh._text else raw
    return len(data)
