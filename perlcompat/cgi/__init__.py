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
  content: a temporary file past 1 MiB), ``.content`` (bytes) and ``.headers``
  (``uploadInfo``).
* ``url()`` (``relative``, ``absolute``, ``full``, ``path_info``, ``query``: CGI.pm's
  ``-relative`` ...), ``self_url()``, ``remote_host()``, ``start_html()``, ``end_html()``;
  the settings ``POST_MAX``, ``DISABLE_UPLOADS`` and ``XHTML`` of this module are
  CGI.pm's ``$CGI::POST_MAX`` ... (``cgi.POST_MAX = 1024``).
* ``header()`` is CGI.pm's: ``Content-Type: text/html; charset=ISO-8859-1`` and
  CR LF line ends by default, ``status``, ``cookie``, ``expires`` (``"+1d"``),
  ``charset``, ``attachment``, ``nph``, any other keyword as a header.
* On Windows, importing this module turns ``:crlf`` off on STDIN, STDOUT and
  STDERR, as ``use CGI`` does (CGI.pm's ``_set_binmode``).

Without ``REQUEST_METHOD`` (run from a shell) the command-line ``name=value``
arguments are the query, as in CGI.pm's debug mode.

The query object and the ``:standard`` functions are here; beside them:

- ``util``: CGI::Util: ``unescape``, ``escape``, ``escapeHTML``, ``expires``, and the
  bytes <-> text conversion every part uses.
- ``body``: the request body on STDIN: ``CONTENT_LENGTH``, :class:`Upload`, and a
  line-for-line port of CGI.pm's ``MultipartBuffer`` (~100 lines).
- ``headers``: ``header()`` and ``redirect``'s header; ``cookies``: CGI::Cookie (named
  apart from the functions ``header`` and ``cookie``, which a submodule's import would hide).
- ``request``: ``url()``, ``self_url()``, ``remote_host()`` and CGI.pm's other views of the
  environment (a part of the query object); ``page``: ``start_html()``.
- ``cgilib``: cgi-lib.pl's ``ReadParse`` and its multipart loop.

``import perlcompat.cgi`` loads nothing beyond ``os``, ``re``, perlcompat's own
handles, ``util``, ``body`` and ``request`` (a CGI process per request pays for it);
``headers`` and ``cookies`` load at the first ``header()`` or cookie, ``page`` at the
first ``start_html()``, ``cgilib`` at the first ``ReadParse``.  The multipart parser is
CGI.pm's own, not the ``multipart`` package, which parses differently from CGI.pm and
imported ~4x slower (``python -X importtime``, after ``re``: ``perlcompat.cgi`` with its handles
3.2 ms, ``multipart`` 2.0.1 12.1 ms).
"""

from __future__ import annotations

import os
import re

from ..perl.text import num, truth
from .body import (
    FILENAME,
    NO_LIMIT,
    MultipartBuffer,
    Upload,
    binmode_std,
    content_length,
    mp_value_parse,
    read_stdin,
    spool,
)
from .request import Request
from .util import escapeHTML, to_bytes, to_text, unescape, unescape_bytes, unescape_html

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Union

    from .cgilib import ReadParse as ReadParse
    from .cookies import Cookie as Cookie

    Value = Union[str, Upload]

__all__ = [
    "CGI",
    "Cookie",
    "ReadParse",
    "Upload",
    "Vars",
    "cookie",
    "delete",
    "end_html",
    "escapeHTML",
    "header",
    "multi_param",
    "param",
    "redirect",
    "remote_host",
    "self_url",
    "start_html",
    "unescape",
    "upload",
    "url",
]

# -- module settings (CGI.pm's globals) --------------------------------------------
#: ``$CGI::POST_MAX``: a request whose CONTENT_LENGTH is over this many bytes is not
#: read; ``cgi_error()`` is then "413 Request entity too large" (-1: no limit)
POST_MAX = -1
#: ``$CGI::DISABLE_UPLOADS``: true, a file sent in a form is read and dropped (its
#: field has no value)
DISABLE_UPLOADS = 0
#: ``$CGI::XHTML``: ``start_html()`` writes XHTML 1.0; an HTML 2.0/3.2/4.01 ``dtd`` turns
#: it off for the rest of the process, as in CGI.pm (``use CGI qw(-no_xhtml)``: 0)
XHTML = 1


# -- the query object -------------------------------------------------------------
#: the first request parsed in this process: a second CGI() starts from it, as CGI.pm's does
_saved: tuple[list[str], dict[str, list[Value]], list[str]] | None = None


class CGI(Request):
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
        self._fieldnames: list[str] = []  # (.cgifields: query_string() names them)
        self._path_info: str | None = None
        self._script_name: str | None = None
        if initializer is None and _saved is not None and _saved[0]:
            names, params, self._fieldnames = _saved
            self._names = list(names)
            self._params = {name: list(values) for name, values in params.items()}
            for values in self._params.values():
                for value in values:
                    if isinstance(value, Upload):
                        value.file.seek(0)
            return
        self._init(initializer)
        if initializer is None:
            _saved = (
                list(self._names),
                {k: list(v) for k, v in self._params.items()},
                list(self._fieldnames),
            )

    # -- reading the request (CGI.pm's init) --
    def _init(self, initializer: str | bytes | dict[str, object] | None) -> None:
        env = os.environ
        method = env.get("REQUEST_METHOD", "")
        length = content_length()
        ctype = env.get("CONTENT_TYPE")
        query: bytes | None = b""
        if num(POST_MAX) > 0 and num(env.get("CONTENT_LENGTH", 0)) > num(POST_MAX):
            self._error = "413 Request entity too large"  # (the body is left unread)
            query = None
            if (
                method in ("POST", "PUT", "PATCH")
                and ctype is not None
                and not ctype.startswith("application/x-www-form-urlencoded")
                and not ctype.startswith("multipart/form-data")
            ):
                self._add(method + "DATA", "")  # (CGI.pm's XML handler still runs)
        elif isinstance(initializer, dict):
            for name in sorted(initializer):
                value = initializer[name]
                values = value if isinstance(value, (list, tuple)) else [value]
                self.param(name, *values)
            query = None
        elif initializer is not None:
            query = initializer if isinstance(initializer, bytes) else to_bytes(initializer)
        elif method == "POST" and ctype is not None and ctype.startswith("multipart/form-data"):
            match = re.search(r'boundary="?([^";,]+)"?', ctype)
            boundary = to_bytes(match[1]) if match else None
            given = truth(env.get("CONTENT_LENGTH", 0))
            self._read_multipart(boundary, content_length(nan=NO_LIMIT), given)
            query = None
        elif method == "POST" and ctype == "application/xml":  # CGI.pm's XForms POST
            model = to_text(read_stdin(length))
            self._add("XForms:Model", model)
            self._add("POSTDATA", model)
            query = to_bytes(self._query_string_from_env())  # (the URL's parameters as well)
        elif method in ("GET", "HEAD", "DELETE"):
            query = to_bytes(self._query_string_from_env())
        elif method in ("POST", "PUT", "PATCH"):
            if length > 0:
                query = read_stdin(length)
            if (
                ctype is not None
                and not ctype.startswith("application/x-www-form-urlencoded")
                and not ctype.startswith("multipart/form-data")
            ):
                self._add(method + "DATA", to_text(query or b""))
                query = None
        elif not method:  # run from the command line: name=value arguments (CGI.pm's -debug)
            query = self._query_from_argv()
        if query:
            if re.search(rb"[&=;]", query):
                self._parse_params(query)
            else:
                words = re.split(rb"\s+", unescape_bytes(query).replace(b"+", b" "))
                while words and not words[-1]:  # (split(/\s+/): a leading empty word stays)
                    words.pop()
                self._names.append("keywords")
                self._params["keywords"] = [to_text(w) for w in words]
        if truth(self.param(".defaults")):
            self.delete_all()
        self._fieldnames = [str(v) for v in self._params.get(".cgifields", ())]
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

    def _query_from_argv(self) -> bytes:
        import sys

        words = [w.replace("\\=", "%3D").replace("\\&", "%26") for w in sys.argv[1:]]
        query = "&".join(words) if "=" in " ".join(words) else "+".join(words)
        match = re.match(r"(.*?)\?(.*)\Z", query, re.S)
        if match is None:
            return to_bytes(query)
        self.path_info(match[1])  # `script.cgi /extra/path?a=1`: the path after the script
        return to_bytes(match[2])

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
            self._add(to_text(unescape_bytes(name)), to_text(unescape_bytes(value)))

    def _read_multipart(self, boundary: bytes | None, length: int, given: bool) -> None:
        buffer = MultipartBuffer(boundary, length, given)
        while not buffer.eof():
            header = buffer.read_header()
            if not header:
                self._error = "400 Bad request (malformed multipart POST)"
                return
            disposition = header.get(b"Content-Disposition", b"")
            if not truth(to_text(disposition)):
                disposition = b""
            name = to_text(mp_value_parse(disposition, b"name") or b"")
            match = re.search(FILENAME, disposition, re.I)
            filename = match[1] if match else b""
            if not truth(to_text(filename)):
                filename = b""
            quoted = re.fullmatch(rb'"([^"]*)"\n?', filename)
            if quoted:
                filename = quoted[1]
            ctype = header.get(b"Content-Type")
            mixed = ctype is not None and b"multipart/mixed" in ctype
            if not self._params.get(name):  # (CGI.pm lists a name again while it has no value)
                self._names.append(name)
                self._params[name] = []
            if not filename and not mixed:
                self._params[name].append(to_text(buffer.read_body()))
                continue
            if DISABLE_UPLOADS:  # read and dropped: the field has no value
                buffer.skip_body()
                continue
            if not filename:
                filename = b"multipart/mixed"
            head = b""
            if mixed:  # CGI.pm keeps the part's headers in front of the body
                head = b"".join(k + b": " + header[k] + b"\r\n" for k in sorted(header)) + b"\r\n"
            info = {to_text(k): to_text(v) for k, v in header.items()}
            # a file named "0" reads ""
            shown = to_text(filename) if truth(to_text(filename)) else ""
            upload = Upload(shown, spool(buffer, head), info)
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
                if not self._params.get(name):
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
                self._names = [n for n in self._names if n != name]

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
        from .headers import header

        return header(self, args, options)

    def redirect(self, url: str, status: str = "302 Found", **options: object) -> str:
        """CGI.pm's ``redirect``: a ``Status``/``Location`` header with no Content-Type."""
        from .headers import header

        return header(
            self,
            (),
            {
                "type": "",
                "status": unescape_html(status),
                "location": unescape_html(url),
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
        from .cookies import Cookie

        return Cookie(name, value, **options)  # type: ignore[arg-type]

    def multi_cookie(self, name: str) -> list[str]:
        """Every value of cookie *name* (CGI.pm's ``cookie`` in list context)."""
        found = self._fetch_cookies().get(name)
        return list(found.value) if found is not None else []

    def start_html(self, *args: object, **options: object) -> str:
        """CGI.pm's ``start_html``: ``start_html(title="T", bgcolor="#ffffff")`` (see ``page``)."""
        global XHTML
        from .page import start_html

        text, xhtml = start_html(self, args, options, truth(XHTML))
        if not xhtml:
            XHTML = 0
        return text

    @staticmethod
    def end_html() -> str:
        """``"\\n</body>\\n</html>"``."""
        return "\n</body>\n</html>"

    def _fetch_cookies(self) -> dict[str, Cookie]:
        if self._cookies is None:
            from .cookies import parse_cookies

            self._cookies = parse_cookies(
                os.environ.get("HTTP_COOKIE") or os.environ.get("COOKIE") or ""
            )
        return self._cookies


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


def url(**options: object) -> str:
    """``url(...)`` on the default query object (see :meth:`CGI.url`)."""
    return _q().url(**options)


def self_url(**options: object) -> str:
    """``self_url()`` on the default query object."""
    return _q().self_url(**options)


def remote_host() -> str:
    """``REMOTE_HOST``, else ``REMOTE_ADDR``, else ``"localhost"``."""
    return _q().remote_host()


def start_html(*args: object, **options: object) -> str:
    """``start_html(...)`` on the default query object (see :meth:`CGI.start_html`)."""
    return _q().start_html(*args, **options)


def end_html() -> str:
    """``"\\n</body>\\n</html>"``."""
    return CGI.end_html()


if os.name == "nt":  # `use CGI` on Windows binmodes the three handles (CGI.pm's _set_binmode)
    binmode_std()


#: loaded on first use: cgi-lib.pl's interface, and CGI::Cookie (``header()`` loads it too)
_LAZY = {"ReadParse": "cgilib", "Cookie": "cookies"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{module}", None, None, [name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
