"""The request body on STDIN: ``CONTENT_LENGTH``, reads, uploads, CGI.pm's ``MultipartBuffer``.

``multipart/form-data`` is parsed by a line-for-line port of CGI.pm's own
``MultipartBuffer`` (4 KiB reads; quirks of malformed bodies included), not the
``multipart`` package, which parses differently from CGI.pm and imports slower.
"""

from __future__ import annotations

import os
import re

from ..perl.die import die
from ..perl.stdio import _read_bytes, _read_line, std_handle
from ..perl.text import num, truth

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

NO_LIMIT = 1 << 62  # (a CONTENT_LENGTH of "inf": read to the end of the body)


def content_length(nan: int = 0) -> int:
    """``CONTENT_LENGTH`` as Perl's number of it (``"3abc"`` is 3), never a Python error.

    A client sends it: ``"inf"`` or ``"1e400"`` reads to the end of the body as a
    count past it does; ``"nan"`` counts as *nan* (``read`` takes it as 0, CGI.pm's
    multipart buffer as no limit).
    """
    value = num(os.environ.get("CONTENT_LENGTH", 0))
    if isinstance(value, float):
        if value != value:
            return nan
        return int(max(-NO_LIMIT, min(value, NO_LIMIT)))
    return value


def read_stdin(length: int) -> bytes:
    """Up to *length* bytes of the request body (Perl's ``read(STDIN, ...)``)."""
    if length <= 0:
        return b""
    return _read_bytes(std_handle("STDIN"), length)


def binmode_std() -> None:
    """Perl's ``binmode`` of STDIN, STDOUT, STDERR as CGI scripts do it: no ``:crlf``.

    (A no-op on POSIX; on Windows CR LF is no longer translated.)  The handles
    stay text handles: Perl's ``binmode`` changes no types, only the bytes.
    """
    for name in ("STDIN", "STDOUT", "STDERR"):
        handle = std_handle(name)
        if not handle.closed:
            handle._crlf = False


# -- uploads -----------------------------------------------------------------
#: an upload longer than this (bytes) goes to a temporary file as it is read, as CGI.pm
#: writes every upload to one; a shorter one stays in memory
SPOOL_SIZE = 1 << 20


class Upload(str):
    """An uploaded file: the str is the client's file name, as CGI.pm's handle stringifies.

    ``.file`` is a binary file object at the start of the content (``upload()``
    gives it too): a temporary file, deleted when closed, for an upload over
    :data:`SPOOL_SIZE` bytes.  ``.content`` reads the whole content as bytes;
    ``.headers`` are the part's headers (CGI.pm's ``uploadInfo``, e.g.
    ``headers["Content-Type"]``).
    """

    headers: dict[str, str]
    file: IO[bytes]

    def __new__(cls, filename: str, file: IO[bytes] | bytes, headers: dict[str, str]) -> Upload:
        self = super().__new__(cls, filename)
        if isinstance(file, bytes):  # (the content itself, as before uploads were spooled)
            import io

            file = io.BytesIO(file)
        self.file = file
        self.headers = headers
        return self

    @property
    def content(self) -> bytes:
        """The whole content (the file's position is kept)."""
        at = self.file.tell()
        self.file.seek(0)
        data = self.file.read()
        self.file.seek(at)
        return data


def spool(buffer: MultipartBuffer, head: bytes = b"") -> IO[bytes]:
    """*head* and the part's body read from *buffer*, in a file object at its start.

    In memory up to :data:`SPOOL_SIZE` bytes; past it, in a ``tempfile.TemporaryFile``
    (unlinked at once on POSIX, on close on Windows), so a 50 MB upload never sits in
    memory whole.
    """
    import io

    memory = io.BytesIO()
    memory.write(head)
    out: IO[bytes] = memory
    size = len(head)
    while True:
        data = buffer.read()
        if data is None:
            break
        size += len(data)
        if out is memory and size > SPOOL_SIZE:
            import tempfile

            out = tempfile.TemporaryFile()  # noqa: SIM115 (the upload keeps it open)
            out.write(memory.getvalue())
            memory = io.BytesIO()  # (drop the copy)
        out.write(data)
    out.seek(0)
    return out


# -- CGI.pm's MultipartBuffer, line for line -------------------------------------------
_HEADER_FOLD = rb"\r\n\s+"
_HEADER_LINE = rb"([-\w!#$%&'*+.^_`|{}~]+):\s+([^\r\n]*)"
_CANON = rb"\b(\w)"
_SPIN_LOOP_MAX = 2000


class MultipartBuffer:
    """CGI.pm's ``MultipartBuffer`` over STDIN: ``read_header``, ``read_body``, ``eof``."""

    def __init__(self, boundary: bytes | None, length: int, given: bool) -> None:
        self.fillunit = 4096
        self.zero_loops = 0
        boundary_read = False
        if boundary:
            boundary = b"--" + boundary
        else:  # CGI.pm reads the first CRLF-terminated line as the boundary
            line = _read_line(std_handle("STDIN"), b"\r\n")  # ($/ = $CRLF; <STDIN>)
            length -= len(line)
            boundary = line[:-2] if line.endswith(b"\r\n") else line
            boundary_read = True
        self.length = length
        # CGI.pm's !$length: the CONTENT_LENGTH string ("0x10" is true, and 0 bytes long)
        self.chunked = not length if boundary_read else not given
        self.boundary = boundary
        self.buffer = b""
        if len(boundary) > self.fillunit:
            self.fillunit = len(boundary)
        if not boundary_read:
            while truth(self.read(0)):
                pass
        if self.eof():
            die("Malformed multipart POST: data truncated\n")

    def read_header(self) -> dict[bytes, bytes]:
        end = -1
        while True:
            self.fill(self.fillunit)
            end = self.buffer.find(b"\r\n\r\n")
            ok = end >= 0 or self.buffer == b""
            if ok:
                break
            if self.length <= 0:
                return {}
        header = self.buffer[: end + 2]
        self.buffer = self.buffer[end + 4 :]
        header = re.sub(_HEADER_FOLD, b" ", header)
        found: dict[bytes, bytes] = {}
        for match in re.finditer(_HEADER_LINE, header, re.M):
            name = re.sub(_CANON, lambda m: m[1].upper(), match[1])
            found[name] = match[2]
        return found

    def read_body(self) -> bytes:
        parts: list[bytes] = []
        while True:
            data = self.read()
            if data is None:
                return b"".join(parts)
            parts.append(data)

    def skip_body(self) -> None:
        """Read the part's body and keep none of it (CGI.pm's ``$DISABLE_UPLOADS``)."""
        while self.read() is not None:
            pass

    def read(self, nbytes: int = 0) -> bytes | None:
        nbytes = nbytes or self.fillunit
        self.fill(nbytes)
        start = self.buffer.find(self.boundary)
        if not (self.chunked or start >= 0 or self.length > 0):
            die("Malformed multipart POST\n")
        if start == 0:
            if self.buffer.startswith(self.boundary + b"--"):
                self.buffer = b""
                self.length = 0
                return None
            self.buffer = self.buffer[len(self.boundary) :]
            if self.buffer.startswith(b"\n"):  # (CGI.pm's s/^\012\015?//)
                self.buffer = self.buffer[2:] if self.buffer[1:2] == b"\r" else self.buffer[1:]
            return None
        if start > 0:
            count = nbytes if start - 2 > nbytes else start
        else:  # leave enough in the buffer to see a boundary
            count = nbytes - (len(self.boundary) + 1)
        data = self.buffer[:count]
        self.buffer = self.buffer[count:]
        return data[:-2] if count == start else data

    def fill(self, nbytes: int) -> None:
        if not (self.chunked or self.length):
            return
        want = nbytes - len(self.buffer) + len(self.boundary) + 2
        if not self.chunked and self.length < want:
            want = self.length
        data = read_stdin(want)
        self.buffer += data
        if not data:
            if self.zero_loops >= _SPIN_LOOP_MAX:
                die("CGI.pm: Server closed socket during multipart read (client aborted?).\n")
            self.zero_loops += 1
        else:
            self.zero_loops = 0
        if not self.chunked and data:
            self.length -= len(data)

    def eof(self) -> bool:
        return not self.buffer and self.length <= 0


FILENAME = rb' filename=(("[^"]*")|([a-z\d!#\'*+,.^_`{}|~]*))'


def mp_value_parse(string: bytes, field: bytes) -> bytes | None:
    """CGI.pm's ``_mp_value_parse``: *field*'s value in a Content-Disposition header."""
    if re.search(rb"[\s;]" + field + rb'="', string):
        match = re.search(rb"[\s;]" + field + rb'="((?:\\"|[^"])*)"', string)
    else:
        match = re.search(rb"[\s;]" + field + rb'=([^()<>@,;:\\"/\[\]?={} \r\n\t]*)', string)
    return match[1] if match else None
