"""The CGI variables of ``perlcompat serve``: which a request may set, and clearing them.

Only the CGI meta-variables (:data:`CGI_NAMES`) and ``HTTP_*`` header variables come
from a request (:func:`cgi_environment`); :func:`clear_cgi_variables` removes those
names from the server's own environment at start, so a request adds variables and
never replaces one of the server's.  Apart from ``request`` so that the forker, forked
before the server's modules load, needs only this.
"""

from __future__ import annotations

import os
import re
import sys

#: the CGI meta-variables (RFC 3875 4.1) and the ones web servers add (nginx's
#: fastcgi_params, lighttpd, Apache's mod_proxy_fcgi); with ``HTTP_*``, all a request sets.
CGI_NAMES = frozenset(
    """AUTH_TYPE CONTENT_LENGTH CONTENT_TYPE GATEWAY_INTERFACE PATH_INFO PATH_TRANSLATED
    QUERY_STRING REMOTE_ADDR REMOTE_HOST REMOTE_IDENT REMOTE_USER REQUEST_METHOD SCRIPT_NAME
    SERVER_NAME SERVER_PORT SERVER_PROTOCOL SERVER_SOFTWARE
    SCRIPT_FILENAME SCRIPT_URI SCRIPT_URL DOCUMENT_ROOT DOCUMENT_URI REQUEST_URI
    REQUEST_SCHEME REMOTE_PORT SERVER_ADDR SERVER_ADMIN SERVER_SIGNATURE HTTPS
    REDIRECT_STATUS REDIRECT_URL REDIRECT_QUERY_STRING REDIRECT_REMOTE_USER
    CONTEXT_PREFIX CONTEXT_DOCUMENT_ROOT UNIQUE_ID""".split()  # noqa: SIM905
)
#: a header variable: what web servers make of a header name (upper case, ``-`` as ``_``),
#: and mod_ssl's TLS variables (``SSL_CLIENT_S_DN`` …; never ``SSL_CERT_FILE``/``_DIR``,
#: which would choose the trust store of the script's own TLS connections).
_HEADER_VARIABLE = re.compile(
    r"^(HTTP_[A-Z0-9_]+|SSL_(CLIENT|SERVER)_[A-Z0-9_]+|SSL_(PROTOCOL|CIPHER|CIPHER_EXPORT"
    r"|CIPHER_USEKEYSIZE|CIPHER_ALGKEYSIZE|SESSION_ID|SESSION_RESUMED|SECURE_RENEG"
    r"|VERSION_INTERFACE|VERSION_LIBRARY|TLS_SNI))$"
)
#: what :func:`clear_cgi_variables` also removes: the prefixes of CGI variables.
_CGI_VARIABLE = re.compile(
    r"^(HTTP_|CONTENT_|REQUEST_|SCRIPT_|SERVER_|REMOTE_|PATH_INFO$|PATH_TRANSLATED$"
    r"|QUERY_STRING$|GATEWAY_INTERFACE$|AUTH_TYPE$|DOCUMENT_|HTTPS$|REDIRECT_|CONTEXT_)"
)


def clear_cgi_variables() -> None:
    """Remove every CGI variable from ``os.environ`` (a request brings its own)."""
    for name in [n for n in os.environ if n in CGI_NAMES or _CGI_VARIABLE.match(n)]:
        del os.environ[name]


def cgi_environment(params: dict[bytes, bytes]) -> dict[str, str]:
    """The variables a request may set: CGI meta-variables, ``HTTP_*`` and mod_ssl's.

    ``LD_PRELOAD``, ``PATH``, ``PYTHONPATH``, ``PERLCOMPAT_*``, a lowercase
    ``http_proxy`` … from params are dropped: whoever can connect could otherwise choose
    what the script's interpreter and its subprocesses load.  ``HTTP_PROXY`` (a request's
    ``Proxy:`` header, httpoxy) and values holding a NUL byte are dropped too.
    """
    env = {}
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    for key, value in params.items():  # (decoded as os.fsdecode does, without its calls)
        if b"\0" in value:
            continue
        allowed = _ALLOWED.get(key)
        if allowed is None:
            name = key.decode(encoding, errors)
            allowed = name if name in CGI_NAMES or _HEADER_VARIABLE.match(name) else ""
            if len(key) <= 64 and len(_ALLOWED) < 4096:
                _ALLOWED[key] = allowed
        if allowed and allowed != "HTTP_PROXY":
            env[allowed] = value.decode(encoding, errors)
    return env


#: the names :func:`cgi_environment` has judged (each request sends the same few dozen):
#: raw name -> the variable's name, or "" if a request may not set it.
_ALLOWED: dict[bytes, str] = {}
