"""CGI.pm's view of the request's URL and server: ``url()``, ``self_url()``, ``remote_host()``.

:class:`Request` is a part of the query object (``CGI`` inherits it).  Every answer
is CGI.pm 4.x's for the same environment (tests/test_cgi_page.py runs both):
``url()`` is ``http://HOST:PORT/cgi-bin/script.cgi`` (the port left out when it is
the scheme's own), ``url(relative=1)`` ``script.cgi``, ``url(absolute=1)``
``/cgi-bin/script.cgi``, ``url(path_info=1, query=1)`` adds ``PATH_INFO`` and
``?a=1;b=x%20y`` (the parameters as they are now, ``;`` between them), and
``self_url()`` is ``url(full=1, path_info=1, query=1)``.  The host comes from
``HTTP_X_FORWARDED_HOST``, ``HTTP_HOST``, then ``SERVER_NAME``; the scheme is
``https`` for ``HTTPS=on`` or port 443, else ``SERVER_PROTOCOL``'s name.
"""

from __future__ import annotations

import os
import re

from ..perl.text import num, truth
from .util import escape, to_bytes, unescape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .body import Upload

#: url()'s keywords, as CGI.pm's -relative, -absolute, ... (``path`` and ``query_string``
#: are CGI.pm's other names of ``path_info`` and ``query``)
_URL_OPTIONS = {
    "relative": "relative",
    "absolute": "absolute",
    "full": "full",
    "path": "path_info",
    "path_info": "path_info",
    "query": "query",
    "query_string": "query",
    "base": "base",
    "rewrite": "rewrite",
}
#: Perl's ``$``: the end, or before a newline at the end
_END = r"(?=\n?\Z)"


def _env(name: str) -> str:
    """``$ENV{name}`` where Perl tests it with ``||``: "" for unset, "" and "0" alike."""
    value = os.environ.get(name, "")
    return value if truth(value) else ""


def _iis() -> bool:
    return re.search("IIS", os.environ.get("SERVER_SOFTWARE", "")) is not None


def _slashes(text: str) -> str:
    """quotemeta(*text*) with each run of ``/`` matching one or more (CGI.pm's pattern)."""
    return "/+".join(re.escape(piece) for piece in re.split("/+", text))


class Request:
    """The URL and server methods of CGI.pm's query object."""

    _names: list[str]
    _params: dict[str, list[str | Upload]]
    _fieldnames: list[str]
    _path_info: str | None
    _script_name: str | None

    # -- the environment, as CGI.pm reads it --
    @staticmethod
    def http(name: str | None = None) -> str | list[str] | None:
        """``http('host')``: ``HTTP_HOST``; ``http()``: the names of the HTTP_ variables."""
        if name is None:
            return sorted(k for k in os.environ if re.match("HTTP(?:_|$)", k))
        name = name.translate(
            str.maketrans("-abcdefghijklmnopqrstuvwxyz", "_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        )
        return os.environ.get(name if re.match("HTTP(?:_|$)", name) else "HTTP_" + name)

    @staticmethod
    def https() -> str | None:
        """``HTTPS`` (``"on"`` behind TLS), or None."""
        return os.environ.get("HTTPS")

    @staticmethod
    def remote_host() -> str:
        """``REMOTE_HOST``, else ``REMOTE_ADDR``, else ``"localhost"``."""
        return _env("REMOTE_HOST") or _env("REMOTE_ADDR") or "localhost"

    @staticmethod
    def remote_addr() -> str:
        """``REMOTE_ADDR``, else ``"127.0.0.1"``."""
        return _env("REMOTE_ADDR") or "127.0.0.1"

    @staticmethod
    def server_name() -> str:
        """``SERVER_NAME``, else ``"localhost"``."""
        return _env("SERVER_NAME") or "localhost"

    @staticmethod
    def server_port() -> str:
        """``SERVER_PORT``, else ``"80"``."""
        return _env("SERVER_PORT") or "80"

    @staticmethod
    def request_uri() -> str | None:
        """``REQUEST_URI`` as the server gave it, or None."""
        return os.environ.get("REQUEST_URI")

    def protocol(self) -> str:
        """``"https"`` for ``HTTPS=on`` or port 443, else ``SERVER_PROTOCOL``'s name, lower case."""
        if (self.https() or "").upper() == "ON" or num(self.server_port()) == 443:
            return "https"
        return _lc((_env("SERVER_PROTOCOL") or "HTTP/1.0").split("/")[0])

    def virtual_host(self) -> str:
        """The host the client asked for (``X-Forwarded-Host``, ``Host``), without its port."""
        host = _truthy(self.http("x_forwarded_host")) or _truthy(self.http("host"))
        return re.sub(r":[0-9]+" + _END, "", host or self.server_name(), count=1)

    def virtual_port(self) -> str:
        """The port the client asked for (in ``Host``), else ``SERVER_PORT``."""
        host = _truthy(self.http("x_forwarded_host")) or _truthy(self.http("host"))
        if not host:
            return self.server_port()
        match = re.search(r":([0-9]+)" + _END, host)
        if match and truth(match[1]):
            return match[1]
        return "443" if self.protocol() == "https" else "80"

    def _name_and_path(self) -> tuple[str, str]:
        script_name = _env("SCRIPT_NAME")
        path_info = _env("PATH_INFO")
        uri = unescape(re.sub(r"\?.*", "", self.request_uri() or "", count=1, flags=re.S))
        if _iis():
            if path_info.startswith(script_name):  # (IIS puts SCRIPT_NAME in front)
                path_info = path_info[len(script_name) :]
        elif uri != script_name + path_info:
            match = re.match(f"({_slashes(script_name)})({_slashes(path_info)}){_END}", uri, re.S)
            if match:
                script_name, path_info = match[1], match[2]
        return script_name, path_info

    def path_info(self, info: str | None = None) -> str:
        """``PATH_INFO`` (``/extra/path`` after the script's URL), or set it: ``path_info("x")``."""
        if info is not None:
            self._path_info = "/" + info if info != "" and not info.startswith("/") else info
        elif self._path_info is None:
            self._path_info = self._name_and_path()[1]
        return self._path_info

    def script_name(self, name: str | None = None) -> str:
        """``SCRIPT_NAME`` (the script's URL path), or set it."""
        if name is not None:
            self._script_name = name
        elif self._script_name is None:
            self._script_name = self._name_and_path()[0]
        return self._script_name

    def query_string(self) -> str:
        """The parameters as they are now, escaped, ``;`` between them (CGI.pm's query_string)."""
        pairs = [
            f"{escape(name)}={escape(str(value))}"
            for name in self._names
            for value in self._params.get(name, ())
        ]
        pairs += [
            f".cgifields={escape(name)}" for name in sorted(set(self._fieldnames), key=to_bytes)
        ]
        return ";".join(pairs)

    # -- url() and self_url() --
    def url(self, **options: object) -> str:
        """CGI.pm's ``url``: ``url(relative=1)`` is ``url(-relative=>1)``.

        Keywords: ``full``, ``relative``, ``absolute``, ``path_info`` (or ``path``),
        ``query`` (or ``query_string``), ``base``, ``rewrite`` (default on: the path
        the client asked for, ``REQUEST_URI``, rather than ``SCRIPT_NAME``).
        """
        opt: dict[str, object] = {}
        for key, value in options.items():
            name = _URL_OPTIONS.get(key.lower().lstrip("-"))
            if name is None:
                raise TypeError(
                    f"url() got an unknown keyword {key!r}; it takes {', '.join(_URL_OPTIONS)}"
                )
            opt[name] = value
        relative, absolute = truth(opt.get("relative")), truth(opt.get("absolute"))
        base, query = truth(opt.get("base")), truth(opt.get("query"))
        full = truth(opt.get("full")) or base or not (relative or absolute)
        rewrite = truth(opt["rewrite"]) if "rewrite" in opt and opt["rewrite"] is not None else True
        path = self.path_info()
        script_name = re.sub(r"\?.*" + _END, "", self.script_name(), count=1, flags=re.S)
        request_uri = unescape(
            re.sub(r"\?.*" + _END, "", self.request_uri() or "", count=1, flags=re.S)
        )
        if not truth(self.request_uri()):
            request_uri = ""
        query_str = self.query_string() if query else ""
        uri = request_uri if rewrite and truth(request_uri) else script_name
        if "PATH_INFO" in os.environ:
            info = os.environ["PATH_INFO"]
            if "SCRIPT_NAME" not in os.environ or info != os.environ["SCRIPT_NAME"]:
                uri = re.sub(re.escape(info) + _END, "", uri, count=1)
            if not _iis():
                uri = re.sub(re.escape(info) + _END, "", uri, count=1)
        url = ""
        if full:
            protocol = self.protocol()
            url = protocol + "://"
            host = _truthy(self.http("x_forwarded_host")) or _truthy(self.http("host")) or ""
            host = re.sub(r"^.*,\s*", "", host, count=1, flags=re.A)
            host = re.sub(r":[0-9]+" + _END, "", host, count=1)
            url += host if truth(host) else self.server_name()
            port = self.virtual_port()
            if not (
                (_lc(protocol) == "http" and num(port) == 80)
                or (_lc(protocol) == "https" and num(port) == 443)
            ):
                url += ":" + port
            if base:
                return url  # (CGI.pm returns it here, before escaping)
            url += uri
        elif relative:
            match = re.search(r"([^/]+)" + _END, uri)
            url = match[1] if match else ""
        elif absolute:
            url = uri
        if truth(opt.get("path_info")):
            url += path
        if query and query_str != "":
            url += "?" + query_str
        return _escape_url(url)

    def self_url(self, **options: object) -> str:
        """``url(full=1, path_info=1, query=1)``: this script's URL with its parameters."""
        return self.url(**{"path_info": 1, "query": 1, "full": 1, **options})


def _lc(text: str) -> str:
    """Perl's ``lc`` of a byte string: ASCII letters only."""
    return re.sub("[A-Z]+", lambda m: m[0].lower(), text)


def _truthy(value: object) -> str:
    return value if isinstance(value, str) and truth(value) else ""


def _escape_url(url: str) -> str:
    """Every byte outside ``A-Za-z0-9_.%;&?/\\:+=~-`` as ``%XX`` (CGI.pm's last step of url)."""
    return re.sub(
        rb"[^a-zA-Z0-9_.%;&?/\\:+=~-]", lambda m: b"%%%02X" % m[0][0], to_bytes(url)
    ).decode("ascii")
