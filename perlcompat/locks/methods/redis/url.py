"""Lock URLs and errors: parsing, the max lease, secrets hidden, errors given an errno.

:func:`check_url` validates a ``redis://``, ``rediss://`` or ``unix://`` URL
with messages that never show its password; :func:`redact` and :func:`scrub`
hide its secrets in what is shown; :func:`_split_max_lease` takes out the
``max_lease=`` option, which is ours, not redis-py's; :func:`_errno_of` gives a
redis-py error the errno that ``lock()`` puts in ``$!``.
"""

from __future__ import annotations

import errno

import redis.exceptions as _rx

#: seconds: the longest lease (``stale``) of any client of one server, and the
#: hold-off after the server lost its memory; ``?max_lease=`` or the environment
#: variable ``MAX_LEASE_ENV`` set another (the same for every client).
MAX_LEASE = 180.0
MAX_LEASE_ENV = "PERLCOMPAT_REDIS_MAX_LEASE"

_SCHEMES = ("redis", "rediss", "unix")
_URL_HELP = "use redis://host:6379/0, rediss://host:6380/0 or unix:///path/to/redis.sock?db=0"
_MAX_LEASE_HELP = f"set one for every client with ?max_lease=SECONDS or {MAX_LEASE_ENV}"


def _seconds(text: str, what: str) -> float:
    """Parse a max lease given as text; ValueError naming *what* unless it is > 0 and finite."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError(f"{what} must be a number of seconds > 0, not {text!r}")
    return value


def _split_max_lease(url: str, shown: str) -> tuple[str, float | None]:
    """Return (*url* without ``max_lease=``, its value or None)."""
    base, mark, query = url.partition("?")
    if not mark:
        return url, None
    fragment = ""
    if "#" in query:
        query, _, fragment = query.partition("#")
        fragment = "#" + fragment
    kept = []
    found: float | None = None
    for item in query.split("&"):
        name, _, value = item.partition("=")
        if name == "max_lease":
            found = _seconds(value, f"max_lease in lock url {shown!r}")
        else:
            kept.append(item)
    rest = "&".join(kept)
    return base + ("?" + rest if rest else "") + fragment, found


def redact(url: str) -> str:
    """Return *url* with its secrets replaced by ``***``, failing closed.

    Hidden: everything between ``://`` and the last ``@`` (user and password,
    even one with an unencoded ``/``, ``#``, ``?`` or ``@``), and the value, up to
    the next ``&``, of every query key that names a secret once percent-decoded
    (``password``, ``ssl_password``, ``Pass%77ord``: any key containing pass,
    pwd, secret or token).  Where the two overlap both are hidden.
    """
    import re
    from urllib.parse import unquote_plus

    start = url.find("://")
    start = 0 if start < 0 else start + 3
    hidden = [False] * len(url)
    at = url.rfind("@")
    if at >= start:
        hidden[start:at] = [True] * (at - start)
    for found in re.finditer(r"[?&]([^=&]*)=([^&]*)", url[start:]):
        name = unquote_plus(found.group(1)).lower()
        if any(word in name for word in _SECRET_KEYS):
            hidden[start + found.start(2) : start + found.end(2)] = [True] * len(found.group(2))
    shown = []
    for i, char in enumerate(url):
        if not hidden[i]:
            shown.append(char)
        elif i == 0 or not hidden[i - 1]:
            shown.append("***")
    return "".join(shown)


#: what in a query key, percent-decoded and lower-cased, names a secret.
_SECRET_KEYS = ("pass", "pwd", "secret", "token")


def _secrets(url: str) -> list[str]:
    """The secret parts of *url* that :func:`redact` hides, raw and percent-decoded."""
    from urllib.parse import unquote, unquote_plus

    rest = url.partition("://")[2] or url
    found = []
    if "@" in rest:
        found.append(rest.rpartition("@")[0])
    for item in rest.rpartition("@")[2].partition("?")[2].split("&"):
        key, eq, value = item.partition("=")
        if eq and value and any(word in unquote_plus(key).lower() for word in _SECRET_KEYS):
            found.append(value)
    found += [unquote(text) for text in found] + [unquote_plus(text) for text in found]
    for text in list(found):  # and a password alone, as a client library may quote it
        _user, colon, password = text.partition(":")
        if colon and password:
            found.append(password)
    return sorted({text for text in found if text}, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """*text* (an error message about *url*) with every secret of *url* replaced by ``***``."""
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text


def check_url(url: object) -> str:
    """Return *url* if it is a Redis URL redis-py can use, else raise ValueError/TypeError."""
    if not isinstance(url, str):
        raise TypeError(f"lock url must be a str, not {type(url).__name__}")
    from urllib.parse import urlsplit

    shown = redact(url)
    rest = url.partition("://")[2]
    netloc = rest[: min([len(rest)] + [i for i in map(rest.find, "/?#") if i >= 0])]
    if url.rfind("@") > url.find("://") + 2 + len(netloc) or "#" in url:
        raise ValueError(  # urllib would cut a password there and show the rest as a host
            f"lock url {shown!r} is malformed: a / ? or # in the user name or password, a #"
            f" anywhere and an @ after the host must be percent-encoded (%2F %3F %23 %40):"
            f" {_URL_HELP}"
        )
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ValueError(f"lock url {shown!r} is not a Redis URL: {_URL_HELP}")
        if scheme == "unix":
            if not parts.path:
                raise ValueError(f"lock url {shown!r} names no socket path: {_URL_HELP}")
        else:
            try:
                parts.port  # noqa: B018 - raises ValueError for a bad port
            except ValueError:  # (urllib's message quotes the port: a piece of a password)
                raise ValueError(
                    f"lock url {shown!r} is malformed: the port is not a number from 0 to"
                    " 65535; a / ? # or @ in a password must be percent-encoded"
                    f" (%2F %3F %23 %40): {_URL_HELP}"
                ) from None
            db = parts.path.strip("/")
            if db and not db.isdigit():
                raise ValueError(
                    f"lock url {shown!r}: the path must be a database number: {_URL_HELP}"
                )
    except ValueError as exc:
        if str(exc).startswith("lock url"):
            raise
        why = scrub(str(exc), url)
        raise ValueError(f"lock url {shown!r} is malformed ({why}): {_URL_HELP}") from None
    return url


def _cause_errno(exc: BaseException) -> int | None:
    """The errno of the first OSError behind *exc*; EINVAL for a host name that did not resolve."""
    import socket

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror):  # its errno is an EAI_* code, not an errno
            return errno.EINVAL  # as Perl's IO::Socket: "Invalid argument"
        if isinstance(seen, OSError) and seen.errno:
            return seen.errno
        seen = seen.__cause__ or seen.__context__
    return None


# Error replies are classified by their code (first word) and text, not only by
# redis-py's class: older releases leave WRONGPASS, OOM ... as plain ResponseError.
_AUTH_CODES = ("WRONGPASS", "NOAUTH")
_AUTH_TEXTS = (
    "Protocol error: unauthenticated",  # Redis 7: a large command before AUTH
    "AUTH <password> called without any password configured",
    "Client sent AUTH, but no password is set",
    "invalid password",
    "invalid username-password pair",
    "Authentication required",
)
_ACL_TEXTS = ("NOPERM", "no permissions to", "can't run this command")
_CODE_ERRNOS = {"OOM": errno.ENOMEM, "LOADING": errno.EAGAIN, "READONLY": errno.EROFS}


def _refusal(exc: BaseException) -> str:
    """``"auth"`` for refused credentials, ``"acl"`` for an ACL refusal, else ``""``."""
    text = str(exc)
    if isinstance(exc, _rx.NoPermissionError) or any(t in text for t in _ACL_TEXTS):
        return "acl"
    if (
        isinstance(exc, (_rx.AuthenticationError, _rx.AuthenticationWrongNumberOfArgsError))
        or text.split(" ", 1)[0] in _AUTH_CODES
        or text.startswith(_AUTH_TEXTS)
    ):
        return "auth"
    return ""


def _errno_of(exc: Exception) -> int:
    """Return the errno that best describes the redis-py error *exc*."""
    if _refusal(exc):
        return errno.EACCES
    if isinstance(exc, _rx.BusyLoadingError):
        return errno.EAGAIN
    if isinstance(exc, _rx.TimeoutError):
        return errno.ETIMEDOUT
    if isinstance(exc, _rx.ConnectionError):
        return _cause_errno(exc) or errno.ECONNRESET
    if isinstance(exc, _rx.ReadOnlyError):
        return errno.EROFS
    # redis-py 4.2 lacks OutOfMemoryError (its OOM is a ResponseError): isinstance(x, ()) is False
    if isinstance(exc, getattr(_rx, "OutOfMemoryError", ())):
        return errno.ENOMEM
    if isinstance(exc, _rx.ResponseError):
        code = _CODE_ERRNOS.get(str(exc).split(" ", 1)[0])
        if code is not None:
            return code
    return _cause_errno(exc) or errno.EIO
