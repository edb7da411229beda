"""Perl's ``sysopen`` and Fcntl's ``O_*`` constants.

``sysopen(NUMBER, $f, O_RDWR|O_CREAT) or die`` ports as
``NUMBER = sysopen(f, O_RDWR | O_CREAT) or die(...)``: the file is opened with
exactly those flags (and *perms*, default 0666, less the umask, for a file it
creates), and the handle is a :class:`~perlcompat.perl.handle.PerlFile` like
``open_``'s, so ``flock``, ``print_``, ``seek``, ``truncate``, ``close`` work on it
(text by default, as Perl's default layers).  On failure it returns the false,
closed handle ``open_`` returns, with ``OS_ERROR`` set: ``O_CREAT|O_EXCL`` on an
existing file gives 0 and EEXIST.

The ``O_*`` numbers are this platform's (``os.O_*``), as Perl's Fcntl gives them;
one a platform lacks is 0.  Imports ``perl.perlio`` and ``perl.errno``.
"""

from __future__ import annotations

import errno
import os
import sys

from .errno import fail, fail_from, set_errno
from .perlio import _DEFAULT_CRLF, _EXTRA_FLAGS, PerlFile, Unopened

O_RDONLY: int = os.O_RDONLY
O_WRONLY: int = os.O_WRONLY
O_RDWR: int = os.O_RDWR
O_CREAT: int = os.O_CREAT
O_EXCL: int = os.O_EXCL
O_TRUNC: int = os.O_TRUNC
O_APPEND: int = os.O_APPEND
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_NOCTTY: int = getattr(os, "O_NOCTTY", 0)
O_SYNC: int = getattr(os, "O_SYNC", 0)
O_BINARY: int = getattr(os, "O_BINARY", 0)
O_TEXT: int = getattr(os, "O_TEXT", 0)

_ACCESS = os.O_RDONLY | os.O_WRONLY | os.O_RDWR


def sysopen(path: str | os.PathLike[str], flags: int, perms: int = 0o666) -> PerlFile:
    """Perl's ``sysopen``: open *path* with exactly *flags*; a :class:`PerlFile`, false on failure.

    *perms* (default 0666, less the umask) apply to a file it creates.
    """
    if type(flags) is not int:
        raise TypeError(f"sysopen flags must be an int (O_RDWR | O_CREAT ...), not {flags!r}")
    name = os.fspath(path)
    if not isinstance(name, str):
        name = os.fsdecode(name)
    access = flags & _ACCESS
    readable = access in (os.O_RDONLY, os.O_RDWR)
    writable = access in (os.O_WRONLY, os.O_RDWR)
    append = bool(flags & os.O_APPEND)
    if writable:
        mode = ("+>>" if readable else ">>") if append else ("+<" if readable else ">")
    else:
        mode = "<"
    fd = -1
    if not name:
        fail(errno.ENOENT)
    else:
        try:
            fd = os.open(name, flags | _EXTRA_FLAGS, perms)
        except OSError as exc:
            fail_from(exc)
        except ValueError:  # a NUL in the name: ENOENT, as Perl gives
            fail(errno.ENOENT)
    fh: PerlFile = object.__new__(PerlFile if fd >= 0 else Unopened)
    fh._setup(fd, name, mode, readable, writable, append, True, "utf-8", _DEFAULT_CRLF)
    fh._pos = -1
    caller = sys._getframe(1)  # where it was opened, for LostLockWarning
    fh._site = caller.f_code
    fh._site_at = caller.f_lasti
    if fd < 0:
        fh._closed = fh._eof = True
        return fh
    if append:  # PerlIO starts an appending handle at the end, as open_ does
        try:  # noqa: SIM105
            fh._pos = os.lseek(fd, 0, os.SEEK_END)
        except OSError:  # a pipe or terminal: no position
            pass
    set_errno(0)
    return fh
