"""CGI.pm's form input, ``header()`` and ``cookie()``, and cgi-lib.pl's ``ReadParse``.

Python 3.13 removed the ``cgi`` module; a port of a CGI.pm script keeps its lines::

    from perlcompat.cgi import CGI
    q = CGI()                         # my $q = CGI->new;
    name = q.param("name")            # $q->param('name')      (the first value)
    tags = q.multi_param("tag")       # $q->multi_param('tag') (all values)
    print_(STDOUT, q.header())        # print $q->header;

or, for ``use CGI qw(:standard)``, the functions ``param``, ``multi_param``,
``header``, ``cookie``, ``redirect``, ``escapeHTML``, ``upload`` on one object made at
first use, as CGI.pm's.  Checked against CGI.pm 4.x by tests/test_cgi.py:

* Input as CGI.pm without ``-utf8`` reads it: ``QUERY_STRING`` for GET/HEAD/DELETE
  (``&`` and ``;``, ``+`` as space, ``%XX`` and ``%uXXXX``, a bad escape such as
  ``%zz`` kept as written, ``a=b=c`` is ``a`` -> ``b=c``, a key without ``=`` has
  the value ``""``, a query without ``&=;`` is ``keywords``); a POST body read
  from ``STDIN`` (``CONTENT_LENGTH`` bytes): urlencoded, or
  ``multipart/form-data`` parsed by a port of CGI.pm's own ``MultipartBuffer``
  (4 KiB reads; quirks of malformed bodies included), or any other type as the
  ``POSTDATA`` value (``application/xml`` also as ``XForms:Model``, with the
  ``QUERY_STRING`` parameters, as CGI.pm's XForms POST).  Names stay in first-seen order.
* Values are CGI.pm's bytes, decoded with UTF-8 + ``surrogateescape`` like every
  perlcompat text: Shift_JIS or EUC-JP form data printed or written back comes
  out as the same bytes, and ``value.encode("utf-8", "surrogateescape")`` is
  exactly CGI.pm's string.
* A file upload's value is an :class:`Upload`: a str (the client's file name,
  as CGI.pm's handle stringifies) with ``.file`` (a binary file object over the
  content), ``.content`` (bytes) and ``.headers`` (``uploadInfo``).
* ``header()`` is CGI.pm's: ``Content-Type: text/html; charset=ISO-8859-1`` and
  CR LF line ends by default, ``status``, ``cookie``, ``expires`` (``"+1d"``),
  ``charset``, ``attachment``, ``nph``, any other keyword as a header.
* On Windows, importing this module turns ``:crlf`` off on STDIN, STDOUT and
  STDERR, as ``use CGI`` does (CGI.pm's ``_set_binmode``).

``import perlcompat.cgi`` loads nothing beyond ``os``, ``re`` and perlcompat's own
handles (a CGI process per request pays for it): the multipart parser is a
line-for-line port of CGI.pm's ``MultipartBuffer`` (~100 lines), not the
``multipart`` package, which parses differently from CGI.pm and imported ~4x
slower (``python -X importtime``, after ``re``: ``perlcompat.cgi`` with its
handles 3.2 ms, ``multipart`` 2.0.1 12.1 ms).  Without ``REQUEST_METHOD`` (run
from a shell) the command-line ``name=value`` arguments are the query, as in
CGI.pm's debug mode.
"""

from __future__ import annotations

import os
import re

from .perl.die import die
from .perl.stdio import _read_bytes, _read_line, std_handle
from .perl.text import num, truth

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import IO, NoReturn, Union

    Value = Union[str, "Upload"]

__all__ = [
    "CGI",
    "Cookie",
    "ReadParse",
    "Upload",
    "Vars",
    "cookie",
    "delete",
    "escapeHTML",
    "header",
    "multi_param",
    "param",
    "redirect",
    "unescape",
    "upload",
]

CRLF = "\r\n"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


# -- CGI::Util::unescape ---------------------------------------------------------
# (patterns are compiled on first use, through re's cache: not at import)
_PAIR_U = rb"%u([Dd][89a-bA-B][0-9a-fA-F]{2})%u([Dd][c-fC-F][0-9a-fA-F]{2})"
_ESCAPE = rb"%(?:([0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))"


def _utf8_chr(code: int) -> bytes:
    return chr(code).encode("utf-8", "surrogatepass")


def _unescape_bytes(raw: bytes) -> bytes:
    raw = raw.replace(b"+", b" ")
    if b"%" not in raw:
        return raw
    raw = re.sub(
        _PAIR_U,
        lambda m: _utf8_chr(0x10000 + (int(m[1], 16) - 0xD800) * 0x400 + (int(m[2], 16) - 0xDC00)),
        raw,
    )
    return re.sub(
        _ESCAPE,
        lambda m: bytes([int(m[1], 16)]) if m[1] is not None else _utf8_chr(int(m[2], 16)),
        raw,
    )


def unescape(text: str | bytes) -> str:
    """CGI::Util's ``unescape``: ``+`` to space, ``%XX`` and ``%uXXXX``; bad escapes stay."""
    raw = text if isinstance(text, bytes) else _raw(text)
    return _text(_unescape_bytes(raw))


def _escape(text: str) -> str:
    """CGI::Util's ``escape``: every byte but ``A-Za-z0-9_.~-`` as ``%XX``."""
    return re.sub(rb"[^a-zA-Z0-9_.~-]", lambda m: b"%%%02X" % m[0][0], _raw(text)).decode("ascii")


def escapeHTML(text: str | None) -> str | None:
    """CGI.pm's ``escapeHTML``: ``& < > " '`` as entities (None stays None)."""
    if text is None:
        return None
    return (
        str(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def _unescape_html(text: str) -> str:
    if "&" not in text:
        return text
    import html  # only when there is an entity to decode

    return html.unescape(text)


_NO_LIMIT = 1 << 62  # (a CONTENT_LENGTH of "inf": read to the end of the body)


def _content_length(nan: int = 0) -> int:
    """``CONTENT_LENGTH`` as Perl's number of it (``"3abc"`` is 3), never a Python error.

    A client sends it: ``"inf"`` or ``"1e400"`` reads to the end of the body as a
    count past it does; ``"nan"`` counts as *nan* (``read`` takes it as 0, CGI.pm's
    multipart buffer as no limit).
    """
    value = num(os.environ.get("CONTENT_LENGTH", 0))
    if isinstance(value, float):
        if value != value:
            return nan
        return int(max(-_NO_LIMIT, min(value, _NO_LIMIT)))
    return value


def _read_stdin(length: int) -> bytes:
    """Up to *length* bytes of the request body (Perl's ``read(STDIN, ...)``)."""
    if length <= 0:
        return b""
    return _read_bytes(std_handle("STDIN"), length)


def _binmode_std() -> None:
    """Perl's ``binmode`` of STDIN, STDOUT, STDERR as CGI scripts do it: no ``:crlf``.

    (A no-op on POSIX; on Windows CR LF is no longer translated.)  The handles
    stay text handles: Perl's ``binmode`` changes no types, only the bytes.
    """
    for name in ("STDIN", "STDOUT", "STDERR"):
        handle = std_handle(name)
        if not handle.closed:
            handle._crlf = False


# -- uploads -----------------------------------------------------------------
class Upload(str):
    """An uploaded file: the str is the client's file name, as CGI.pm's handle stringifies.

    ``.file`` is a binary file object at the start of the content (``upload()``
    gives it too), ``.content`` the bytes, ``.headers`` the part's headers
    (CGI.pm's ``uploadInfo``, e.g. ``headers["Content-Type"]``).
    """

    content: bytes
    headers: dict[str, str]
    _file: IO[bytes] | None

    def __new__(cls, filename: str, content: bytes, headers: dict[str, str]) -> Upload:
        self = super().__new__(cls, filename)
        self.content = content
        self.headers = headers
        self._file = None
        return self

    @property
    def file(self) -> IO[bytes]:
        """A binary file object over the content (one per upload, as CGI.pm's temp file)."""
        if self._file is None:
            import io

            self._file = io.BytesIO(self.content)
        return self._file


# -- CGI.pm's MultipartBuffer, line for line -------------------------------------------
_HEADER_FOLD = rb"\r\n\s+"
_HEADER_LINE = rb"([-\w!#$%&'*+.^_`|{}~]+):\s+([^\r\n]*)"
_CANON = rb"\b(\w)"
_SPIN_LOOP_MAX = 2000


class _MultipartBuffer:
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
        data = _read_stdin(want)
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


_FILENAME = rb' filename=(("[^"]*")|([a-z\d!#\'*+,.^_`{}|~]*))'


def _mp_value_parse(string: bytes, field: bytes) -> bytes | None:
    if re.search(rb"[\s;]" + field + rb'="', string):
        match = re.search(rb"[\s;]" + field + rb'="((?:\\"|[^"])*)"', string)
    else:
        match = re.search(rb"[\s;]" + field + rb'=([^()<>@,;:\\"/\[\]?={} \r\n\t]*)', string)
    return match[1] if match else None


# -- the query object -------------------------------------------------------------
#: the first request parsed in this process: a second CGI() starts from it, as CGI.pm's does
_saved: tuple[list[str], dict[str, list[Value]]] | None = None


class CGI:
    """CGI.pm's query object: ``CGI()`` is ``CGI->new`` (reads the request once).

    ``CGI("a=1&b=2")`` (a query string) or ``CGI({"a": "1"})`` starts from the
    given parameters instead, as ``CGI->new($string)`` and ``CGI->new(\\%h)`` do.
    """

    def __init__(self, initializer: str | bytes | dict[str, object] | None = None) -> None:
        global _saved
        self._names: list[str] = []
        self._params: dict[str, list[Value]] = {}
        self._error: str | None = None
        self._charset = "ISO-8859-1"
        self._cache = False
        self._cookies: dict[str, Cookie] | None = None
        if initializer is None and _saved is not None:
            names, params = _saved
            self._names = list(names)
            self._params = {name: list(values) for name, values in params.items()}
            for values in self._params.values():
                for value in values:
                    if isinstance(value, Upload):
                        value.file.seek(0)
            return
        self._init(initializer)
        if initializer is None:
            _saved = (list(self._names), {k: list(v) for k, v in self._params.items()})

    # -- reading the request (CGI.pm's init) --
    def _init(self, initializer: str | bytes | dict[str, object] | None) -> None:
        env = os.environ
        method = env.get("REQUEST_METHOD", "")
        length = _content_length()
        ctype = env.get("CONTENT_TYPE")
        query: bytes | None = b""
        if isinstance(initializer, dict):
            for name in sorted(initializer):
                value = initializer[name]
                values = value if isinstance(value, (list, tuple)) else [value]
                self.param(name, *values)
            query = None
        elif initializer is not None:
            query = initializer if isinstance(initializer, bytes) else _raw(initializer)
        elif method == "POST" and ctype is not None and ctype.startswith("multipart/form-data"):
            match = re.search(r'boundary="?([^";,]+)"?', ctype)
            boundary = _raw(match[1]) if match else None
            given = truth(env.get("CONTENT_LENGTH", 0))
            self._read_multipart(boundary, _content_length(nan=_NO_LIMIT), given)
            query = None
        elif method == "POST" and ctype == "application/xml":  # CGI.pm's XForms POST
            model = _text(_read_stdin(length))
            self._add("XForms:Model", model)
            self._add("POSTDATA", model)
            query = _raw(self._query_string_from_env())  # (the URL's parameters as well)
        elif method in ("GET", "HEAD", "DELETE"):
            query = _raw(self._query_string_from_env())
        elif method in ("POST", "PUT", "PATCH"):
            if length > 0:
                query = _read_stdin(length)
            if (
                ctype is not None
                and not ctype.startswith("application/x-www-form-urlencoded")
                and not ctype.startswith("multipart/form-data")
            ):
                self._add(method + "DATA", _text(query or b""))
                query = None
        elif not method:  # run from the command line: name=value arguments (CGI.pm's -debug)
            query = self._query_from_argv()
        if query:
            if re.search(rb"[&=;]", query):
                self._parse_params(query)
            else:
                words = re.split(rb"\s+", _unescape_bytes(query).replace(b"+", b" "))
                while words and not words[-1]:  # (split(/\s+/): a leading empty word stays)
                    words.pop()
                self._names.append("keywords")
                self._params["keywords"] = [_text(w) for w in words]
        if truth(self.param(".defaults")):
            self.delete_all()
        self.delete(".submit")
        self.delete(".cgifields")

    @staticmethod
    def _query_string_from_env() -> str:
        query = os.environ.get("QUERY_STRING") or ""
        if not truth(query):
            for depth in range(1, 6):
                found = os.environ.get("REDIRECT_" * depth + "QUERY_STRING")
                if found is not None:
                    query = query if truth(query) else found
                if truth(query):
                    break
        return query

    @staticmethod
    def _query_from_argv() -> bytes:
        import sys

        words = [w.replace("\\=", "%3D").replace("\\&", "%26") for w in sys.argv[1:]]
        query = "&".join(words) if "=" in " ".join(words) else "+".join(words)
        match = re.match(r"(.*?)\?(.*)\Z", query, re.S)
        return _raw(match[2] if match else query)

    def _add(self, name: str, value: Value) -> None:
        values = self._params.get(name)
        if values is None:
            self._names.append(name)
            self._params[name] = [value]
        else:
            values.append(value)

    def _parse_params(self, query: bytes) -> None:
        pairs = re.split(rb"[&;]", query)
        while pairs and not pairs[-1]:  # Perl's split drops trailing empty fields
            pairs.pop()
        for pair in pairs:
            if not pair:
                continue  # split('=', '') gives no $param: skipped
            name, _, value = pair.partition(b"=")
            self._add(_text(_unescape_bytes(name)), _text(_unescape_bytes(value)))

    def _read_multipart(self, boundary: bytes | None, length: int, given: bool) -> None:
        buffer = _MultipartBuffer(boundary, length, given)
        while not buffer.eof():
            header = buffer.read_header()
            if not header:
                self._error = "400 Bad request (malformed multipart POST)"
                return
            disposition = header.get(b"Content-Disposition", b"")
            if not truth(_text(disposition)):
                disposition = b""
            name = _text(_mp_value_parse(disposition, b"name") or b"")
            match = re.search(_FILENAME, disposition, re.I)
            filename = match[1] if match else b""
            if not truth(_text(filename)):
                filename = b""
            quoted = re.fullmatch(rb'"([^"]*)"\n?', filename)
            if quoted:
                filename = quoted[1]
            ctype = header.get(b"Content-Type")
            mixed = ctype is not None and b"multipart/mixed" in ctype
            if name not in self._params:
                self._names.append(name)
                self._params[name] = []
            if not filename and not mixed:
                self._params[name].append(_text(buffer.read_body()))
                continue
            if not filename:
                filename = b"multipart/mixed"
            head = b""
            if mixed:  # CGI.pm keeps the part's headers in front of the body
                head = b"".join(k + b": " + header[k] + b"\r\n" for k in sorted(header)) + b"\r\n"
            info = {_text(k): _text(v) for k, v in header.items()}
            shown = _text(filename) if truth(_text(filename)) else ""  # a file named "0" reads ""
            upload = Upload(shown, head + buffer.read_body(), info)
            self._params[name].append(upload)

    # -- CGI.pm's methods --
    escapeHTML = staticmethod(escapeHTML)

    def param(self, name: str | None = None, *values: object) -> Value | list[str] | None:
        """``param()``: the names in order; ``param(name)``: the first value or None.

        ``param(name, v1, v2)`` sets the values (None is left out) and returns the first.
        """
        if name is None:
            return list(self._names)
        if values:
            kept: list[Value] = [
                v if isinstance(v, str) else str(v) for v in values if v is not None
            ]
            if kept:
                if name not in self._params:
                    self._names.append(name)
                self._params[name] = kept
        found = self._params.get(name)
        return found[0] if found else None

    def multi_param(self, name: str) -> list[Value]:
        """CGI.pm's ``multi_param(name)``: every value of *name* ([] when absent)."""
        return list(self._params.get(name, ()))

    def Vars(self) -> dict[str, str]:
        """CGI.pm's ``Vars``: each name to its values joined with ``"\\0"``."""
        return {name: "\0".join(self._params[name]) for name in self._names}

    def keywords(self) -> list[str]:
        """The words of a query string without ``=`` (``?search+words``)."""
        return [str(v) for v in self._params.get("keywords", ())]

    def delete(self, *names: str) -> None:
        """Remove the named parameters."""
        for name in names:
            if self._params.pop(name, None) is not None:
                self._names.remove(name)

    def delete_all(self) -> None:
        """Remove every parameter (``Delete_all``)."""
        self._names.clear()
        self._params.clear()

    def upload(self, name: str) -> IO[bytes] | None:
        """The file object of *name*'s first upload, or None (not an upload, or absent)."""
        for value in self._params.get(name, ()):
            if isinstance(value, Upload):
                return value.file
        return None

    def uploadInfo(self, value: Upload) -> dict[str, str]:
        """The headers of an upload (``uploadInfo($fh)``)."""
        return value.headers

    def cgi_error(self) -> str | None:
        """Why the request could not be read (``"400 Bad request ..."``), or None."""
        return self._error

    def charset(self, charset: str | None = None) -> str:
        """Get, or set and get, the charset ``header()`` adds (default ISO-8859-1)."""
        if charset is not None:
            self._charset = charset
        return self._charset

    def cache(self, flag: object = None) -> bool:
        """``cache(1)`` makes ``header()`` add ``Pragma: no-cache``."""
        if truth(flag):
            self._cache = True
        return self._cache

    def header(self, *args: object, **options: object) -> str:
        """CGI.pm's ``header``; positional arguments are type, status, cookie, target, ..."""
        return _header(self, args, options)

    def redirect(self, url: str, status: str = "302 Found", **options: object) -> str:
        """CGI.pm's ``redirect``: a ``Status``/``Location`` header with no Content-Type."""
        return _header(
            self,
            (),
            {
                "type": "",
                "status": _unescape_html(status),
                "location": _unescape_html(url),
                **options,
            },
        )

    def cookie(
        self,
        name: str | None = None,
        value: str | list[str] | dict[str, str] | None = None,
        **options: object,
    ) -> Cookie | str | list[str] | None:
        """Read a cookie (``cookie(name)``: its first value; ``cookie()``: the names), or make one.

        With a *value* (``cookie("id", "42", expires="+1d", path="/cgi-bin")``) a
        :class:`Cookie` to pass to ``header(cookie=...)``.
        """
        if value is None:
            cookies = self._fetch_cookies()
            if not name:
                return list(cookies)
            found = cookies.get(name)
            return found.value[0] if found is not None and found.value else None
        if not name:
            return None
        return Cookie(name, value, **options)  # type: ignore[arg-type]

    def multi_cookie(self, name: str) -> list[str]:
        """Every value of cookie *name* (CGI.pm's ``cookie`` in list context)."""
        found = self._fetch_cookies().get(name)
        return list(found.value) if found is not None else []

    def _fetch_cookies(self) -> dict[str, Cookie]:
        if self._cookies is None:
            self._cookies = _parse_cookies(
                os.environ.get("HTTP_COOKIE") or os.environ.get("COOKIE") or ""
            )
        return self._cookies


# -- header() and cookies ----------------------------------------------------------
_ORDER = ("type", "status", "cookie", "target", "expires", "nph", "charset", "attachment", "p3p")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MULT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "M": 86400 * 30, "y": 86400 * 365}


def _perl_number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return format(value, ".15g")


def _expire_calc(when: object, now: int | None = None) -> str:
    """CGI::Util's ``expire_calc``: ``"+1d"``, ``"now"``, seconds, or a date kept as is."""
    import time

    text = "" if when is None else str(when)
    if not truth(text) or text.lower() == "now":
        offset: float = 0
    elif re.match(r"\d", text):
        return text
    else:
        match = re.match(r"([+-]?(?:\d+|\d*\.\d*))([smhdMy])", text)
        if not match:
            return text
        offset = _MULT[match[2]] * float(num(match[1]))
    return _perl_number((int(time.time()) if now is None else now) + offset)


def _expires(when: object, form: str = "http") -> str:
    """CGI::Util's ``expires``: an HTTP (or cookie) date."""
    import time

    text = _expire_calc(when)
    if not re.fullmatch(r"\d+\n?", text):
        return text
    sep = "-" if form == "cookie" else " "
    t = time.gmtime(int(text))
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d}{sep}{_MONTHS[t.tm_mon - 1]}{sep}{t.tm_year:04d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    )


class Cookie:
    """CGI::Cookie: ``str(c)`` is its ``Set-Cookie`` value (``name=value; path=/``)."""

    def __init__(
        self,
        name: str,
        value: str | Iterable[str] | dict[str, str],
        *,
        path: str | None = None,
        domain: str | None = None,
        secure: object = None,
        expires: object = None,
        max_age: object = None,
        httponly: object = None,
        samesite: str | None = None,
    ) -> None:
        import time

        self.name = name
        if isinstance(value, dict):
            self.value = [str(x) for kv in value.items() for x in kv]
        elif isinstance(value, str):
            self.value = [value]
        else:
            self.value = [str(v) for v in value]
        self.path = path or "/"
        self.domain = domain.lower() if domain is not None else None
        self.secure = secure
        self.expires = _expires(expires, "cookie") if expires is not None else None
        self.max_age: object = None
        if max_age is not None:
            now = int(
                time.time()
            )  # (one clock reading: CGI::Cookie reads two, a second apart at worst)
            self.max_age = _perl_number(float(num(_expire_calc(max_age, now))) - now)
        self.httponly = httponly
        self.samesite: str | None = None
        if samesite:
            normal = samesite.lower().capitalize()
            if normal in ("Strict", "Lax", "None"):
                self.samesite = normal

    def as_string(self) -> str:
        """The ``Set-Cookie`` value, as CGI::Cookie's ``as_string``."""
        if not truth(self.name):
            return ""
        parts = [_escape(self.name) + "=" + "&".join(_escape(v) for v in self.value)]
        if truth(self.domain):
            parts.append(f"domain={self.domain}")
        if truth(self.path):
            parts.append(f"path={self.path}")
        if truth(self.expires):
            parts.append(f"expires={self.expires}")
        if truth(self.max_age):
            parts.append(f"max-age={self.max_age}")
        if truth(self.secure):
            parts.append("secure")
        if truth(self.httponly):
            parts.append("HttpOnly")
        if truth(self.samesite):
            parts.append(f"SameSite={self.samesite}")
        return "; ".join(parts)

    __str__ = as_string

    def __repr__(self) -> str:
        return f"Cookie({self.as_string()!r})"


def _parse_cookies(raw: str) -> dict[str, Cookie]:
    """CGI::Cookie's ``parse``: the first of two cookies with one name wins."""
    found: dict[str, Cookie] = {}
    if not truth(raw):
        return found
    pairs = re.split(r"[;,] ?", raw)
    while pairs and not pairs[-1]:
        pairs.pop()
    for pair in pairs:
        pair = pair.strip(" \t\n\r\f\v")
        name, eq, value = pair.partition("=")
        if not eq:
            continue
        values = [unescape(v) for v in re.split(r"[&;]", value)] if value else []
        key = unescape(name)
        if key not in found:
            found[key] = Cookie(key, values)
    return found


def _check_newlines(value: str) -> str:
    value = re.sub(r"\r\n(\s)", r"\1", value)
    if re.search(r"[\r\n]", value):
        shown = value[:72] + "..." if len(value) > 72 else value
        die(f"Invalid header value contains a newline not followed by whitespace: {shown}")
    return value


def _header(q: CGI, args: tuple[object, ...], options: dict[str, object]) -> str:
    known: dict[str, object] = dict(zip(_ORDER, args))
    if len(args) > len(_ORDER):
        raise TypeError(f"header() takes at most {len(_ORDER)} positional arguments")
    other: list[str] = []
    for key, value in options.items():
        canon = key.lower().replace("_", "-")
        if canon in ("content-type",):
            canon = "type"
        elif canon in ("cookies", "set-cookie"):
            canon = "cookie"
        if canon in _ORDER:
            known[canon] = value
        else:
            other.append(canon if value is None else f"{canon}={value}")
    other.sort()
    cookie = known.get("cookie")
    cookies = []
    for item in cookie if isinstance(cookie, (list, tuple)) else [cookie]:
        text = item.as_string() if isinstance(item, Cookie) else item
        if text is not None and text != "":
            cookies.append(_check_newlines(str(text)))
    p3p = known.get("p3p")
    if isinstance(p3p, (list, tuple)):
        p3p = " ".join(map(str, p3p))
    fields = {}
    for key in ("type", "status", "target", "expires", "nph", "charset", "attachment"):
        value = known.get(key)
        fields[key] = None if value is None else _check_newlines(str(value))
    p3p = None if p3p is None else _check_newlines(str(p3p))
    other = [_check_newlines(o) for o in other]
    type_ = fields["type"]
    if type_ is None:
        type_ = "text/html"
    charset = q.charset(fields["charset"])
    if type_ != "" and not re.search(r"\bcharset\b", type_) and charset:
        type_ += f"; charset={charset}"
    status, nph, expires = fields["status"], truth(fields["nph"]), fields["expires"]
    lines = []
    if nph:
        protocol = os.environ.get("SERVER_PROTOCOL") or "HTTP/1.0"
        lines.append(f"{protocol} {status if truth(status) else '200 OK'}")
        lines.append("Server: " + (os.environ.get("SERVER_SOFTWARE") or "cmdline"))
    if truth(status):
        lines.append(f"Status: {status}")
    if truth(fields["target"]):
        lines.append(f"Window-Target: {fields['target']}")
    if truth(p3p):
        lines.append(f'P3P: policyref="/w3c/p3p.xml", CP="{p3p}"')
    lines.extend(f"Set-Cookie: {c}" for c in cookies)
    if truth(expires):
        lines.append("Expires: " + _expires(expires, "http"))
    cookie_given = isinstance(cookie, (list, tuple, Cookie)) or truth(cookie)
    if truth(expires) or cookie_given or nph:
        lines.append("Date: " + _expires(0, "http"))
    if q._cache:
        lines.append("Pragma: no-cache")
    if truth(fields["attachment"]):
        lines.append(f'Content-Disposition: attachment; filename="{fields["attachment"]}"')
    for item in other:
        match = re.fullmatch(r'([^ \r\n\t=]+)="?(.+?)"?', item, re.S)
        if match:
            name = match[1]
            item = name[:1].upper() + name[1:].lower() + ": " + match[2]  # (no entity decoding)
        lines.append(item[:1].upper() + item[1:])
    if type_ != "":
        lines.append(f"Content-Type: {type_}")
    return CRLF.join(lines) + CRLF + CRLF


# -- the function interface (use CGI qw(:standard)) -------------------------------------
_default_query: CGI | None = None


def _q() -> CGI:
    global _default_query
    if _default_query is None:
        _default_query = CGI()
    return _default_query


def param(name: str | None = None, *values: object) -> Value | list[str] | None:
    """``param()`` / ``param(name)`` on the default query object (see :meth:`CGI.param`)."""
    return _q().param(name, *values)


def multi_param(name: str) -> list[Value]:
    """``multi_param(name)`` on the default query object."""
    return _q().multi_param(name)


def Vars() -> dict[str, str]:
    """``Vars`` on the default query object."""
    return _q().Vars()


def delete(*names: str) -> None:
    """``delete(name)`` on the default query object."""
    _q().delete(*names)


def upload(name: str) -> IO[bytes] | None:
    """``upload(name)`` on the default query object."""
    return _q().upload(name)


def header(*args: object, **options: object) -> str:
    """``header(...)`` on the default query object (see :meth:`CGI.header`)."""
    return _q().header(*args, **options)


def redirect(url: str, status: str = "302 Found", **options: object) -> str:
    """``redirect(url)`` on the default query object."""
    return _q().redirect(url, status, **options)


def cookie(
    name: str | None = None,
    value: str | list[str] | dict[str, str] | None = None,
    **options: object,
) -> Cookie | str | list[str] | None:
    """``cookie(...)`` on the default query object (see :meth:`CGI.cookie`)."""
    return _q().cookie(name, value, **options)


if os.name == "nt":  # `use CGI` on Windows binmodes the three handles (CGI.pm's _set_binmode)
    _binmode_std()


# -- cgi-lib.pl ------------------------------------------------------------------
_CGILIB_ESCAPE = rb"%([A-Fa-f0-9]{2})"


def _cgilib_unescape(raw: bytes) -> bytes:
    return re.sub(_CGILIB_ESCAPE, lambda m: bytes([int(m[1], 16)]), raw)


def _cgi_die(*msg: str) -> NoReturn:
    """cgi-lib.pl's ``CgiDie``: an HTML error page on STDOUT, then ``die``."""
    from .perl.handle import print_

    out = std_handle("STDOUT")
    print_(out, "Content-type: text/html\n\n")
    print_(out, f"<html>\n<head>\n<title>{msg[0]}</title>\n</head>\n<body>\n")
    print_(out, f"<h1>{msg[0]}</h1>\n")
    for para in msg[1:]:
        print_(out, f"<p>{para}</p>\n")
    die(*msg)


def ReadParse(
    incfn: dict[str, str] | None = None, inct: dict[str, str] | None = None
) -> dict[str, str]:
    """cgi-lib.pl's ``&ReadParse``: return ``%in``, several values joined with ``"\\0"``.

    As cgi-lib.pl 2.x: GET/HEAD read ``QUERY_STRING``, a urlencoded POST reads
    ``CONTENT_LENGTH`` bytes; pairs split on ``&`` and ``;``, ``+`` is a space, only
    ``%XX`` is unescaped (no ``%u``); without ``REQUEST_METHOD`` the command-line
    arguments are added.  multipart/form-data bodies give each part's body,
    uploads included; *incfn* and *inct* are filled with the client's file
    names and content types, as ``&ReadParse(*in, *incfn, *inct)``.
    """
    env = os.environ
    ctype = env.get("CONTENT_TYPE") or ""
    length = _content_length()
    method = env.get("REQUEST_METHOD")
    _binmode_std()  # cgi-lib.pl's binmode(STDIN); binmode(STDOUT); binmode(STDERR);
    found: dict[str, str] = {}
    if not method or method in ("GET", "HEAD") or ctype == "application/x-www-form-urlencoded":
        if not method or method in ("GET", "HEAD"):
            data = _raw(env.get("QUERY_STRING", ""))
        elif method == "POST":
            data = _read_stdin(length)
        else:
            _cgi_die(f"cgi-lib.pl: Unknown request method: {method}\n")
        pairs = re.split(rb"[&;]", data) if data else []
        while pairs and not pairs[-1]:
            pairs.pop()
        if not method:
            import sys

            pairs += [_raw(arg) for arg in sys.argv[1:]]
        for pair in pairs:
            key, _, value = pair.replace(b"+", b" ").partition(b"=")
            key_text = _text(_cgilib_unescape(key))
            text = _text(_cgilib_unescape(value))
            found[key_text] = found[key_text] + "\0" + text if key_text in found else text
        return found
    if not ctype.startswith("multipart/form-data"):
        _cgi_die(f"cgi-lib.pl: Unknown Content-type: {ctype}\n")
    match = re.search(r'boundary="([^"]+)"', ctype) or re.search(r"boundary=(\S+)", ctype)
    if not match:
        _cgi_die("Boundary not provided: probably a bug in your server")
    if method != "POST":
        _cgi_die(f"Invalid request method for  multipart/form-data: {method}\n")
    boundary = b"--" + _raw(match[1])
    parts = _cgilib_multipart(boundary, length)
    for target, values in ((incfn, parts[1]), (inct, parts[2])):
        if target is not None:
            target.update((_text(k), _text(v)) for k, v in values.items())
    return {_text(k): _text(v) for k, v in parts[0].items()}


def _cgilib_multipart(
    boundary: bytes, length: int
) -> tuple[dict[bytes, bytes], dict[bytes, bytes], dict[bytes, bytes]]:
    """cgi-lib.pl's multipart loop, line for line: 8 KiB reads kept 100 bytes apart."""
    bufsize, maxbound, blen = 8192, 100, len(boundary)
    found: dict[bytes, bytearray] = {}  # (grown in place: Perl's .= is not a copy a read)
    names: dict[bytes, bytes] = {}
    types: dict[bytes, bytes] = {}
    buf, left = b"", length
    name: bytes | None = None

    def fill(amount: int) -> None:  # read(STDIN, $buf, $amt, length($buf)) == $amt or die
        nonlocal buf, left
        got = _read_stdin(amount)
        buf += got
        if len(got) != amount:
            _cgi_die(f"Short Read: wanted {amount}, got {len(got)}\n")
        left -= amount

    while True:
        fill(min(left, bufsize + maxbound - len(buf)))
        key = name or b""  # ($in{undef} is $in{''})
        if key in found:
            found[key] += b"\0"
        while (bpos := buf.find(boundary)) == -1:
            if left == 0 and buf == b"":
                _cgi_die(
                    "cgi-lib.pl: reached end of input while seeking boundary of multipart. "
                    "Format of CGI input is wrong.\n"
                )
            if name not in (None, b"", b"0"):  # if ($name): the preamble has none
                found.setdefault(key, bytearray()).extend(buf[:bufsize])
            buf = buf[bufsize:]
            fill(min(left, bufsize))
        if name is not None:
            found.setdefault(key, bytearray()).extend(buf[: bpos - 2])  # (substr($buf, 0, $bpos-2))
        if buf[bpos + blen : bpos + blen + 2] == b"--":
            return {k: bytes(v) for k, v in found.items()}, names, types
        buf = buf[bpos + blen + 2 :]
        fill(min(left, bufsize + maxbound - len(buf)))
        head = bytearray()
        while (lpos := buf.find(b"\r\n\r\n")) == -1:
            if left == 0 and buf == b"":
                _cgi_die(
                    "cgi-lib.pl: reached end of input while seeking end of headers. "
                    "Format of CGI input is wrong.\n" + _text(buf)
                )
            head += buf[:bufsize]
            buf = buf[bufsize:]
            fill(min(left, bufsize))
        head += buf[: lpos + 2]
        heads = bytes(head).split(b"\r\n")
        cd = next((h for h in heads if re.match(rb"\s*Content-Disposition:", h, re.I)), b"")
        ct = next((h for h in heads if re.match(rb"\s*Content-Type:", h, re.I)), b"")
        m = re.search(rb'\bname="([^"]+)"', cd, re.I) or re.search(rb"\bname=([^\s:;]+)", cd, re.I)
        name = m[1] if m else None
        key = name or b""
        sep = b"\0" if key in found else b""
        m = re.search(rb'\bfilename="([^"]*)"', cd, re.I) or re.search(
            rb"\bfilename=([^\s:;]+)", cd, re.I
        )
        names[key] = names.get(key, b"") + sep + (m[1] if m else b"")
        m = re.match(rb'\s*Content-type:\s*"([^"]+)"', ct, re.I) or re.match(
            rb"\s*Content-Type:\s*([^\s:;]+)", ct, re.I
        )
        types[key] = types.get(key, b"") + sep + (m[1] if m else b"")
        buf = buf[lpos + 4 :]
