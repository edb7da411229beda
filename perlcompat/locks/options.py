"""The arguments of ``Lock``, ``lock()``/``unlock()`` and ``Semaphore``, checked once.

The patience (:func:`patience`): ``timeout=`` seconds (None or -1: without limit,
filelock's convention), or the mkdir lock sub's ``retry`` tries ``wait`` seconds apart
(:func:`retry_patience`: five tries with four one-second sleeps, 4 s; ``retry`` 0 or 1:
one try; None: without limit), never both; ``poll=`` seconds between tries (or
``PERLCOMPAT_LOCK_POLL``, :func:`poll_seconds`); the lock path (:func:`resolve_path`: ``root=`` or
``PERLCOMPAT_LOCK_ROOT``, never escaped), the method a name and ``url=`` select
(:func:`locate`) and the Perl side's lock format (:func:`perl_formats`:
``record=``/``target=``/``pidfile=``); a lock directory that is missing is a wrong path
(:func:`missing_directory`).  Bad input raises ``ValueError``/``TypeError``
naming what was wrong.
"""

from __future__ import annotations

import errno
import os

from ..perl.clock import check_seconds
from .contract import URL_METHOD

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _Unset:
    """The type of :data:`UNSET`: an argument that was not given."""

    def __repr__(self) -> str:
        return "<default>"


#: default of ``timeout=`` and ``retry=``: not given (-1 and None mean "wait for ever").
UNSET = _Unset()
#: the mkdir lock sub's tries: ``Lock``'s ``retry`` when neither it nor ``timeout`` is given.
DEFAULT_RETRY = 5


def check_timeout(value: object) -> float | None:
    """Return *value* as seconds, None for ever (None or -1); ValueError otherwise."""
    if value is None or (
        not isinstance(value, bool) and isinstance(value, (int, float)) and value == -1
    ):
        return None
    return check_seconds("timeout", value)


def check_retry(retry: object) -> int | None:
    """Return *retry* (a whole number of tries, or None); ValueError otherwise."""
    if retry is None:
        return None
    if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
        raise ValueError(f"retry must be a whole number >= 0 or None, not {retry!r}")
    if retry > 2**53:
        raise ValueError(f"retry must be a whole number <= 2**53 or None, not {retry!r}")
    return retry


def retry_patience(retry: int | None, wait: float) -> float | None:
    """Seconds of the mkdir lock sub: *retry* tries with ``retry - 1`` sleeps of *wait*."""
    if retry is None:
        return None
    return check_seconds("(retry - 1) * wait", max(retry - 1, 0) * wait)


#: ``patience()`` results by their arguments (types too): the same arguments, checked once.
_checked: dict[tuple[object, ...], tuple[float | None, int | None, float, float]] = {}


#: the longest ``stale`` (10 years): a longer one's ``expiration`` would overflow a datetime
MAX_STALE = 10 * 365.25 * 86400


def check_stale(value: object) -> float:
    """``stale`` as float seconds: ValueError unless finite, > 0 and at most :data:`MAX_STALE`."""
    seconds = check_seconds("stale", value, zero=False)
    if seconds > MAX_STALE:
        raise ValueError(f"stale must be at most {MAX_STALE:.0f} s (10 years), not {value!r}")
    return seconds


def patience(
    timeout: object, retry: object, wait: object, stale: object
) -> tuple[float | None, int | None, float, float]:
    """(timeout, retry, wait, stale) of ``Lock``, checked: the patience in seconds (None: for
    ever), the tries, the seconds between them, the stale age.

    *timeout* or *retry* not given is :data:`UNSET` (both given: ValueError); without
    *timeout*, the patience is the mkdir lock sub's (:func:`retry_patience`).  Arguments
    seen before (the same values of the same types) are not checked again.
    """
    key = (type(timeout), timeout, type(retry), retry, type(wait), wait, type(stale), stale)
    try:
        found = _checked.get(key)
    except TypeError:  # unhashable: refused below
        found = None
    if found is not None:
        return found
    if not isinstance(timeout, _Unset) and not isinstance(retry, _Unset):
        raise ValueError(
            "give the patience as timeout= (seconds) or as retry= (tries), not both"
            f" (timeout={timeout!r}, retry={retry!r})"
        )
    tries = check_retry(DEFAULT_RETRY if isinstance(retry, _Unset) else retry)
    between = check_seconds("wait", wait)
    age = check_stale(stale)
    if isinstance(timeout, _Unset):
        seconds = retry_patience(tries, between)
    else:
        seconds = check_timeout(timeout)
    result = (seconds, tries, between, age)
    if len(_checked) < 64:
        _checked[key] = result
    return result


#: ``os.environ``'s own dict (keys and values as the platform stores them), if it has one.
_environ = os.environ
_environ_data: dict[Any, Any] | None = getattr(_environ, "_data", None)
_ENV_KEYS: dict[str, Any] = {}
if _environ_data is not None:
    for _name in ("PERLCOMPAT_LOCK_POLL", "PERLCOMPAT_LOCK_ROOT", "PERLCOMPAT_LOCK_URL"):
        _ENV_KEYS[_name] = _environ.encodekey(_name)


def getenv(name: str) -> str | None:
    """``os.environ.get(name)``, read afresh at each call, in one dict look-up.

    The lock path reads its three variables on every ``lock()``/``unlock()`` (a program,
    or a test, may set them at any time); ``os.environ.get`` costs three Python calls.
    """
    key = _ENV_KEYS.get(name)
    if key is None or os.environ is not _environ or _environ_data is None:
        return os.environ.get(name)
    raw = _environ_data.get(key)
    return None if raw is None else _environ.decodevalue(raw)


def poll_seconds(poll: float | None) -> float | None:
    """*poll* checked, or ``PERLCOMPAT_LOCK_POLL`` when *poll* is None (unset or empty: None)."""
    if poll is None:
        text = getenv("PERLCOMPAT_LOCK_POLL")
        if not text or not text.strip():
            return None
        text = text.strip()
        try:
            value = float(text)
        except ValueError:
            raise ValueError(
                f"PERLCOMPAT_LOCK_POLL must be a number of seconds > 0, not {text!r}"
            ) from None
        return check_seconds("PERLCOMPAT_LOCK_POLL", value, zero=False)
    return check_seconds("poll", poll, zero=False)


def resolve_path(
    name: str | os.PathLike[str], root: str | os.PathLike[str] | None, what: str = "lock name"
) -> str:
    """Return the absolute lock path for *name*, refusing empty names and escapes from *root*."""
    text = os.fspath(name)
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str or os.PathLike[str], not {type(text).__name__}")
    if not text or not text.strip():
        raise ValueError(f"{what} is empty")
    if "\0" in text:
        raise ValueError(f"{what} {text!r} contains a NUL byte")
    if root is None:
        root = getenv("PERLCOMPAT_LOCK_ROOT") or None
    if root is None:
        return _absolute(text)
    base = os.path.realpath(os.fspath(root))
    path = os.path.abspath(os.path.join(base, text))
    parent = os.path.realpath(os.path.dirname(path))
    if os.path.commonpath([base, parent]) != base or path == base:
        raise ValueError(f"{what} {text!r} escapes the lock root {base!r}")
    return os.path.join(parent, os.path.basename(path))


def resolve_held(held: str | os.PathLike[str], root: str | os.PathLike[str] | None) -> str:
    """The rename lock's ``held=``: a name (or a template) as given, taken beside the lock;
    a path resolved and confined to *root* exactly as a lock name is (:func:`resolve_path`)."""
    text = os.fspath(held)
    if isinstance(text, str) and text in (".", ".."):
        raise ValueError(f"held={text!r} is not a file name")
    if isinstance(text, str) and os.path.basename(text) == text:
        return text
    return resolve_path(text, root, "held name")


#: (working directory, name) -> ``os.path.abspath`` of the name there, for names seen before.
_absolutes: dict[tuple[str, str], str] = {}
#: name -> ``os.path.isabs`` of it (an absolute name needs no working directory)
_is_absolute: dict[str, bool] = {}


def _absolute(text: str) -> str:
    """``os.path.abspath(text)``: the working directory asked once, the rest remembered."""
    absolute = _is_absolute.get(text)
    if absolute is None:
        absolute = os.path.isabs(text)
        if len(_is_absolute) < 256:
            _is_absolute[text] = absolute
    key = ("" if absolute else os.getcwd(), text)
    found = _absolutes.get(key)
    if found is None:
        found = os.path.abspath(os.path.join(key[0], text))
        if len(_absolutes) < 256:
            _absolutes[key] = found
    return found


def locate(
    name: str | os.PathLike[str],
    method: str | None,
    url: str | None,
    root: str | os.PathLike[str] | None,
) -> tuple[str | None, str, str | None]:
    """(method, lock path or key, url) of *name*, as ``Lock`` and ``unlock()`` read them.

    ``url=`` (or ``PERLCOMPAT_LOCK_URL`` when neither ``method=`` nor ``url=``
    is given) selects the redis method, whose key is *name* as given; any other
    method locks the path :func:`resolve_path` makes of *name*.  The method
    stays None when not given (``Lock`` takes the default, ``unlock()`` any).
    """
    if url is None and method is None:
        url = getenv("PERLCOMPAT_LOCK_URL") or None
    if url is None and method != URL_METHOD:
        return method, resolve_path(name, root), None
    if method not in (None, URL_METHOD):
        raise ValueError(f"url= is for the {URL_METHOD} method, not {method!r}")
    key = os.fspath(name)
    if not key:
        raise ValueError("lock name is empty")
    return URL_METHOD, key, url


#: the keywords that declare the Perl side's lock artefact (``locks.record``).
PERL_FORMATS = ("record", "target", "pidfile")


def perl_formats(
    method: str | None,
    takes: tuple[str, ...] | None,
    record: str | None,
    target: str | None,
    pidfile: str | None,
) -> dict[str, str]:
    """The given ``record=``/``target=``/``pidfile=`` checked; ValueError naming the keyword.

    A template must compile (``locks.record``); a pid file is a plain file name; the
    method (whose backend *takes* these options) must be able to use each one.
    """
    given = {
        key: value
        for key, value in (("record", record), ("target", target), ("pidfile", pidfile))
        if value is not None
    }
    for key, value in given.items():
        if not isinstance(value, str):
            raise ValueError(f"{key}= must be a str, not {type(value).__name__}")
        if takes is not None and key not in takes:
            users = {"record": "excl, mkdir (with pidfile=), link, rename", "target": "symlink"}
            raise ValueError(
                f"lock method {method!r} cannot use {key}={value!r}"
                f" ({key}= is for {users.get(key, 'mkdir')})"
            )
        if key == "pidfile":
            if value in ("", ".", "..") or "/" in value or "\\" in value or "\0" in value:
                raise ValueError(
                    f"pidfile= must be a file name inside the lock directory, not {value!r}"
                )
        else:
            from . import record as _record

            try:
                _record.template(value)
            except ValueError as exc:
                raise ValueError(f"{key}={value!r}: {exc}") from None
    return given


def missing_directory(path: str, method: str, exc: FileNotFoundError) -> FileNotFoundError:
    """*exc*, or a clearer one naming the missing directory of the lock *path* (never made).

    filelock creates it; a Perl ``mkdir`` lock sub fails there, and so do we:
    a missing directory is a wrong path (another working directory under the web
    server, a typo), and a lock made elsewhere would exclude nobody.
    """
    directory = os.path.dirname(path)
    if method == URL_METHOD or os.path.isdir(directory):
        return exc
    return FileNotFoundError(
        errno.ENOENT,
        f"the directory of lock {path!r} does not exist: {directory!r}"
        " (perlcompat does not create it, as a Perl lock sub would not; create it"
        " once at install time, or fix the path)",
    )
