"""Perl's ``crypt(PLAINTEXT, SALT)``: the C library's crypt(3), byte for byte.

Boards store delete keys as ``crypt($key, $salt)`` hashes, and a port must
produce the same bytes for the same key, Shift_JIS or EUC-JP keys included.
Python's ``crypt`` module encodes text as strict UTF-8 (it refuses such keys)
and is gone in 3.13; the ``crypt-r`` package keeps that same interface.  This
calls the C library's ``crypt`` (libxcrypt on current Linux, the one Perl
itself calls) through ctypes, with bytes: a ``str`` goes in as the bytes it was
read from (UTF-8 with surrogateescape, perlcompat's text model), the hash
comes back as ``str``.  Calls are serialized (crypt(3) returns a static buffer).

Where the C library has no crypt(3) (Windows), :func:`crypt` raises
``OSError`` (ENOSYS) naming the platform: a Windows port verifies DES hashes
with a library such as passlib (``passlib.hash.des_crypt.verify``).
"""

from __future__ import annotations

import errno
import sys
from _thread import allocate_lock

from .errno import set_errno

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ctypes

_lock = allocate_lock()
_crypt_function: ctypes._CFuncPtr | None = None  # type: ignore[name-defined]
_LIBRARIES = ("libcrypt.so.1", "libcrypt.so.2", "libcrypt.so")


def _load() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    global _crypt_function
    if _crypt_function is None:
        import ctypes  # on first use: importing it costs a CGI request milliseconds

        function = None
        if sys.platform != "win32":
            for name in _LIBRARIES:
                try:
                    function = ctypes.CDLL(name, use_errno=True).crypt
                    break
                except (OSError, AttributeError):
                    continue
            if function is None:  # macOS and the BSDs: crypt(3) is in the C library
                try:
                    function = ctypes.CDLL(None, use_errno=True).crypt
                except (OSError, AttributeError):
                    function = None
        if function is None:
            raise OSError(
                errno.ENOSYS,
                f"crypt(3) is not available on {sys.platform}: verify DES/MD5 hashes with a "
                "library such as passlib instead",
            )
        function.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
        function.restype = ctypes.c_char_p
        _crypt_function = function
    return _crypt_function


def _bytes(value: str | bytes | int | float, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value).encode()
    raise TypeError(f"crypt {what} must be str or bytes, not {type(value).__name__}")


def crypt(plaintext: str | bytes | int | float, salt: str | bytes | int | float) -> str | None:
    """Return crypt(3) of *plaintext* with *salt*, or None with ``$!`` set (Perl's undef)."""
    key = _bytes(plaintext, "plaintext")
    setting = _bytes(salt, "salt")
    if b"\0" in key or b"\0" in setting:
        key = key.split(b"\0", 1)[0]  # the C string ends there, as in Perl
        setting = setting.split(b"\0", 1)[0]
    function = _load()
    import ctypes

    with _lock:
        ctypes.set_errno(0)
        result = function(key, setting)
        number = ctypes.get_errno()
    if result is None:
        set_errno(number or errno.EINVAL)
        return None
    hashed: bytes = result
    return hashed.decode("utf-8", "surrogateescape")
