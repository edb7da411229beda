"""File::FcntlLock's shape: fcntl(2) POSIX record locks, the lock dpkg and Mail::Box take.

Perl code that locks with File::FcntlLock (CPAN; Debian ``libfile-fcntllock-perl``)::

    my $fs = File::FcntlLock->new(l_type => F_WRLCK, l_whence => SEEK_SET);
    $fs->lock($fh, F_SETLKW) or die "Locking failed: " . $fs->error;

ports as ``fs = FcntlLock(l_type=F_WRLCK, l_whence=SEEK_SET)`` and
``fs.lock(fh, F_SETLKW) or die(f"Locking failed: {fs.error()}")``.  On Linux
fcntl record locks and flock(2) do not exclude each other: a port that
``flock``\\ s a file the Perl side fcntl-locks loses updates.  So lock it the
same way, with this.

As the module: ``lock`` returns ``"0 but true"`` (true, numerically 0) on
success and None (undef) on failure, with ``$!`` set and :meth:`FcntlLock.error`
its text ("File or segment already locked by other process(es)" ...).  The
accessors are methods as in Perl (``fs.l_type(F_UNLCK)`` sets, ``fs.l_type()``
reads); ``F_GETLK`` fills them with the conflicting lock (``fs.l_pid()`` is its
holder) or sets ``l_type`` to ``F_UNLCK`` when nothing conflicts.  A bad
``l_type``/``l_whence`` raises ValueError (Perl carps and returns undef).

The locks are the process's, as in Perl: closing *any* descriptor of the file
in this process drops them, and they never exclude another thread of the same
process.  *fh* is a ``PerlFile``, a Python file object or a descriptor; an
exclusive (F_WRLCK) lock needs it open for writing, a shared one for reading.
Perl's own ``fcntl(FH, F_SETLKW, $flock_struct)`` (MailScanner's Lock.pm packs the
struct itself) is :func:`fcntl`, with :func:`pack_flock` packing this platform's
``struct flock``.  A blocking ``F_SETLKW`` waits in the kernel; an ``alarm()`` whose handler
raises interrupts it.  On Windows there are no fcntl locks: ``lock`` fails with
ENOSYS.  ``struct flock`` is packed for Linux (and the BSD/macOS layout there).
"""

from __future__ import annotations

import errno
import sys

from .consts import SEEK_CUR, SEEK_END, SEEK_SET
from .errno import reraise_foreign, set_errno

__all__ = [
    "F_GETLK",
    "F_RDLCK",
    "F_SETLK",
    "F_SETLKW",
    "F_UNLCK",
    "F_WRLCK",
    "FcntlLock",
    "fcntl",
    "pack_flock",
    "unpack_flock",
]

if sys.platform == "win32":
    F_GETLK, F_SETLK, F_SETLKW = 5, 6, 7  # Linux's numbers: there is no fcntl(2) here
    F_RDLCK, F_WRLCK, F_UNLCK = 0, 1, 2
else:
    from fcntl import F_GETLK, F_RDLCK, F_SETLK, F_SETLKW, F_UNLCK, F_WRLCK

#: File::FcntlLock::Errors' texts, by errno.
_TEXTS = {
    errno.EACCES: "File or segment already locked by other process(es) or file is "
    "mmap()ed to virtual memory",
    errno.EAGAIN: "File or segment already locked by other process(es)",
    errno.EBADF: "Not an open file or not opened for writing (with F_WRLCK) or reading "
    "(with F_RDLCK)",
    errno.EDEADLK: "Operation would cause a deadlock",
    errno.EFAULT: "Lock outside accessible address space or to many locked regions",
    errno.EINTR: "Operation interrupted by a signal",
    errno.ENOLCK: "Too many segment locks open, lock table full or remote locking "
    "protocol failure (e.g. NFS)",
    errno.EINVAL: "Illegal parameter or file does not support locking",
    errno.EOVERFLOW: "One of the parameters to be returned can not be represented correctly",
    errno.ENETUNREACH: "File is on remote machine that can not be reached anymore",
}
if hasattr(errno, "ENOLINK"):
    _TEXTS[errno.ENOLINK] = "File is on remote machine that can not be reached anymore"

#: what ``lock`` returns on success: Perl's "0 but true".
ZERO_BUT_TRUE = "0 but true"


def _layout() -> str:
    """``struct flock`` as a ``struct`` format: Linux's order, or the BSDs' and macOS's."""
    if sys.platform.startswith(("linux", "cygwin")) or sys.platform == "win32":
        return "@hhqqi4x"  # l_type, l_whence, l_start, l_len, l_pid; C's tail padding
    return "@qqihh"  # l_start, l_len, l_pid, l_type, l_whence


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


class FcntlLock:
    """``File::FcntlLock->new(l_type => ..., l_whence => ..., l_start => ..., l_len => ...)``."""

    __slots__ = ("_errno", "_error", "_l_len", "_l_pid", "_l_start", "_l_type", "_l_whence")

    def __init__(
        self, *, l_type: int = F_RDLCK, l_whence: int = SEEK_SET, l_start: int = 0, l_len: int = 0
    ) -> None:
        self._l_type = F_RDLCK
        self._l_whence = SEEK_SET
        self._l_start = 0
        self._l_len = 0
        self._l_pid = 0
        self._errno: int | None = None
        self._error: str | None = None
        self.l_type(l_type)
        self.l_whence(l_whence)
        self.l_start(l_start)
        self.l_len(l_len)

    def __repr__(self) -> str:
        return (
            f"FcntlLock(l_type={self._l_type}, l_whence={self._l_whence}, "
            f"l_start={self._l_start}, l_len={self._l_len}, l_pid={self._l_pid})"
        )

    # -- the accessors: set with an argument, read without ---------------
    def l_type(self, value: int | _Unset = _UNSET) -> int:
        """The lock type: F_RDLCK, F_WRLCK or F_UNLCK (ValueError for anything else)."""
        if not isinstance(value, _Unset):
            if _integer(value) not in (F_RDLCK, F_WRLCK, F_UNLCK):
                raise ValueError(f"l_type must be F_RDLCK, F_WRLCK or F_UNLCK, not {value!r}")
            self._l_type = int(value)
        return self._l_type

    def l_whence(self, value: int | _Unset = _UNSET) -> int:
        """Where ``l_start`` counts from: SEEK_SET, SEEK_CUR or SEEK_END."""
        if not isinstance(value, _Unset):
            if _integer(value) not in (SEEK_SET, SEEK_CUR, SEEK_END):
                raise ValueError(f"l_whence must be SEEK_SET, SEEK_CUR or SEEK_END, not {value!r}")
            self._l_whence = int(value)
        return self._l_whence

    def l_start(self, value: int | _Unset = _UNSET) -> int:
        """The first byte of the locked range (relative to ``l_whence``)."""
        if not isinstance(value, _Unset):
            self._l_start = _offset("l_start", value)
        return self._l_start

    def l_len(self, value: int | _Unset = _UNSET) -> int:
        """The length of the locked range; 0: up to the end of the file, however it grows."""
        if not isinstance(value, _Unset):
            self._l_len = _offset("l_len", value)
        return self._l_len

    def l_pid(self) -> int:
        """After ``F_GETLK``: the pid of the process holding the conflicting lock."""
        return self._l_pid

    # -- errors, as File::FcntlLock::Errors -------------------------------
    def lock_errno(self) -> int | None:
        """The errno of the last failed ``lock``, None after a success."""
        return self._errno

    def error(self) -> str | None:
        """File::FcntlLock's text for the last failure, None after a success."""
        return self._error

    def system_error(self) -> str | None:
        """The system's message for the last failure (``$!`` as a string), None after a success."""
        if not self._errno:
            return None
        from .errno import strerror

        return strerror(self._errno)

    # -- the call --------------------------------------------------------
    def lock(self, fh: object, function: int) -> str | None:
        """``$fs->lock($fh, F_SETLK / F_SETLKW / F_GETLK)``: "0 but true", or None with ``$!``."""
        try:
            fd = _descriptor(fh)
            if sys.platform == "win32":
                raise OSError(errno.ENOSYS, "fcntl record locks do not exist on Windows")
            if _integer(function) not in (F_GETLK, F_SETLK, F_SETLKW):
                raise OSError(errno.EINVAL, f"not a lock function: {function!r}")
            import fcntl
            import struct

            layout = _layout()
            fields = (self._l_type, self._l_whence, self._l_start, self._l_len, 0)
            if not layout.startswith("@hh"):
                fields = fields[2:] + fields[:2]
            packed = struct.pack(layout, *fields)
            result = fcntl.fcntl(fd, int(function), packed)
            if function == F_GETLK:
                values = struct.unpack(layout, result)
                if not layout.startswith("@hh"):
                    values = values[3:] + values[:3]
                self._l_type, self._l_whence, self._l_start, self._l_len, self._l_pid = values
                if self._l_type == F_UNLCK:
                    self._l_pid = 0
        except OSError as exc:
            reraise_foreign(exc)
            number = exc.errno or errno.EIO
            self._errno = number
            self._error = _TEXTS.get(number) or f"Unexpected error: {_message(number)}"
            set_errno(number)
            return None
        self._errno = self._error = None
        return ZERO_BUT_TRUE


def _message(number: int) -> str:
    from .errno import strerror

    return strerror(number)


def _integer(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _offset(name: str, value: object) -> int:
    number = _integer(value)
    if number is None or not -(2**63) <= number < 2**63:
        raise ValueError(f"{name} must be a whole number of bytes, not {value!r}")
    return number


def _descriptor(fh: object) -> int:
    """The descriptor of *fh* (a PerlFile flushed as PerlIO does, a file object, or an fd)."""
    flushed = getattr(fh, "flushed_fileno", None)
    if flushed is not None:
        fd: int = flushed()
        return fd
    from .flock import _fileno

    return _fileno(fh)


def pack_flock(
    l_type: int, l_whence: int = SEEK_SET, l_start: int = 0, l_len: int = 0, l_pid: int = 0
) -> bytes:
    """This platform's ``struct flock``, the bytes a Perl script packs for ``fcntl``."""
    import struct

    layout = _layout()
    fields = (l_type, l_whence, l_start, l_len, l_pid)
    if not layout.startswith("@hh"):
        fields = fields[2:] + fields[:2]
    return struct.pack(layout, *fields)


def unpack_flock(data: bytes | bytearray) -> tuple[int, int, int, int, int]:
    """(l_type, l_whence, l_start, l_len, l_pid) of a packed ``struct flock``."""
    import struct

    layout = _layout()
    values = struct.unpack(layout, bytes(data[: struct.calcsize(layout)]))
    if not layout.startswith("@hh"):
        values = values[3:] + values[:3]
    l_type, l_whence, l_start, l_len, l_pid = values
    return l_type, l_whence, l_start, l_len, l_pid


def fcntl(fh: object, function: int, scalar: int | bytes | bytearray) -> int | str | None:
    """Perl's ``fcntl(FH, FUNCTION, SCALAR)``: "0 but true" for 0, the number, or None and ``$!``.

    A bytearray *scalar* is updated in place, as Perl writes into the scalar
    (``F_GETLK`` fills the ``struct flock``); bytes are read only.
    """
    try:
        fd = _descriptor(fh)
        if sys.platform == "win32":
            raise OSError(errno.ENOSYS, "fcntl does not exist on Windows")
        number = _integer(function)
        if number is None:
            raise OSError(errno.EINVAL, f"not an fcntl function: {function!r}")
        import fcntl as _fcntl

        if isinstance(scalar, (bytes, bytearray)):
            result = _fcntl.fcntl(fd, number, bytes(scalar))
            if isinstance(scalar, bytearray):
                scalar[: len(result)] = result
            value = 0  # the buffer form: the call returned 0 (else it raised)
        else:
            value = _fcntl.fcntl(fd, number, int(scalar))
    except OSError as exc:
        reraise_foreign(exc)
        set_errno(exc.errno or errno.EIO)
        return None
    set_errno(0)
    return ZERO_BUT_TRUE if value == 0 else value
