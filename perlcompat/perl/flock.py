"""Perl's ``flock``: the same lock a running Perl script takes.

On POSIX this is flock(2) through ``fcntl.flock`` (Perl 5 on Linux calls the
flock syscall, which conflicts with ``fcntl.flock`` and not with ``lockf``).  On
Windows it is ``LockFileEx`` over Perl's byte range 0..0xFFFF0000, through
portalocker (see ``perl.flock_windows``), imported only there.  Perl's numbers are
accepted as they are written in legacy scripts: ``flock(OUT, 2)``, ``5``, ``6``,
``8``.  The handle is flushed before locking and unlocking, as perlfunc says
(a failed flush does not stop the lock operation, as in Perl; ``close`` reports
it).  Invalid operations give 0 with EINVAL and lock nothing: ``LOCK_SH|LOCK_EX``,
0, ``LOCK_NB`` alone, non-integers, and numbers with the old LOCK_MAND bit (32,
negative ones included), which Linux, and so Perl, would accept as a silent
no-op.  Closed handles and objects without a descriptor give 0 with EBADF.

*fh* is a ``PerlFile`` (or any handle with a ``flushed_fileno()`` method, which
flushes as PerlIO does and returns the descriptor or raises OSError(EBADF)), a
Python file object (``flush()`` then ``fileno()``) or a descriptor.  This module
does not import ``perl.handle``: ``from perlcompat import flock`` stays cheap.

A blocking request waits in the kernel; a pending ``alarm()`` whose handler
raises interrupts it (PEP 475 retries only when the handler returns).  With
``timeout=`` or a cooperative alarm (worker threads, Windows) it polls with
LOCK_NB instead, so the deadline is honoured without signals.

On shared storage where flock(2) excludes only this host's processes (sshfs
and other FUSE, SMB/CIFS, NFS without lock forwarding), the first lock taken on
each file system warns with ``SharedStorageWarning`` (``perl.fsinfo``).  A handle
opened by an absolute path found on local storage is not asked again.
"""

from __future__ import annotations

import errno
import os
import sys

from . import clock
from .consts import LOCK_EX, LOCK_NB, LOCK_SH, LOCK_UN
from .errno import ERRNO_STATE, fail, fail_from, reraise_foreign, set_errno
from .fsinfo import check_flock, is_network

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: every operation flock(2) accepts: SH, EX or UN, optionally with NB.
VALID_OPERATIONS = frozenset(
    {LOCK_SH, LOCK_EX, LOCK_UN, LOCK_SH | LOCK_NB, LOCK_EX | LOCK_NB, LOCK_UN | LOCK_NB}
)

lock_fd: Callable[[int, int], None]
if sys.platform == "win32":
    from .flock_windows import lock_fd
else:
    from fcntl import flock as lock_fd  # Perl's numbers are the kernel's


class _NotLoaded:
    pass


#: ``perl.perlio.PerlFile`` for the fast path; this module does not import it (``from
#: perlcompat import flock`` stays cheap): whichever of the two is imported second fills it in.
_PerlFile: type = _NotLoaded
_perlio = sys.modules.get(__name__.rpartition(".")[0] + ".perlio")
if _perlio is not None:
    _PerlFile = _perlio.PerlFile

# pauses while polling for timeout= or a cooperative alarm
_POLL_FIRST = 0.0005
_POLL_MAX = 0.01


def _fileno(fh: object) -> int:
    """Return the descriptor of *fh*, a descriptor or a file object (flushed first).

    OSError(EBADF) if it has none.  As Perl's ``(void)PerlIO_flush(fp)``, a
    failed flush does not stop the lock operation.
    """
    if type(fh) is int:
        if not 0 <= fh <= 0x7FFFFFFF:
            raise OSError(errno.EBADF, f"bad file descriptor {fh}")
        return fh
    fileno = getattr(fh, "fileno", None)
    if fileno is None:
        raise OSError(errno.EBADF, "not a file handle")
    try:
        flush = getattr(fh, "flush", None)
        if flush is not None:
            flush()
    except ValueError:  # closed (io.UnsupportedOperation too)
        raise OSError(errno.EBADF, "closed file handle") from None
    except OSError as exc:  # not fatal, as in Perl; an ALRM handler's error propagates
        reraise_foreign(exc)
    try:
        fd = fileno()
    except ValueError:  # closed, or no descriptor (io.UnsupportedOperation)
        raise OSError(errno.EBADF, "closed file handle") from None
    except OSError as exc:
        if exc.errno is None:
            raise OSError(errno.EBADF, str(exc)) from None
        raise
    if type(fd) is not int or fd < 0:
        raise OSError(errno.EBADF, "closed file handle")
    return fd


def flock(fh: object, operation: int, timeout: float | None = None) -> int:
    """Lock or unlock *fh* like Perl's ``flock``: 1 on success, else 0 with ``$!`` set.

    *operation* is LOCK_SH, LOCK_EX or LOCK_UN, optionally ``| LOCK_NB``; a busy
    LOCK_NB request gives 0 with ``$!`` = EWOULDBLOCK.  *timeout* (seconds, new
    code only) bounds a blocking request the same way.
    """
    if type(operation) is not int and not (
        isinstance(operation, int) and not isinstance(operation, bool)
    ):
        return fail(errno.EINVAL)
    if operation not in VALID_OPERATIONS:
        return fail(errno.EINVAL)
    if timeout is not None:
        timeout = clock.check_seconds("flock timeout", timeout)
    perl_file = type(fh) is _PerlFile
    try:
        if perl_file:  # the common case: PerlFile.flushed_fileno, in line
            if fh._closed:  # type: ignore[attr-defined]
                return fail(errno.EBADF)
            if fh._wbuf or fh._rbuf:  # type: ignore[attr-defined]
                fh._flush_remembered()  # type: ignore[attr-defined]
            fd = fh._fd  # type: ignore[attr-defined]
        else:
            try:  # a PerlFile subclass flushes itself as Perl does
                fd = fh.flushed_fileno()  # type: ignore[attr-defined]
            except AttributeError:  # an fd or a Python file object
                fd = _fileno(fh)
        # (the middle test is _must_poll's common case, without the call)
        if (
            operation & (LOCK_NB | LOCK_UN)
            or (timeout is None and clock._alarm is None)  # (alarm_installed(), inlined)
            or not _must_poll(timeout)
        ):
            lock_fd(fd, operation)
        elif not _poll(fd, operation, timeout):
            return fail(errno.EWOULDBLOCK)
        if not operation & LOCK_UN:
            name = fh.name if perl_file else getattr(fh, "name", None)  # type: ignore[attr-defined]
            if name not in _LOCAL_NAMES:
                _check_storage(fd, name)
    except OSError as exc:
        reraise_foreign(exc)
        return fail_from(exc)
    if perl_file or getattr(fh, "_flocked", None) is not None:  # it warns if dropped while held
        fh._flocked = 0 if operation & LOCK_UN else operation & (LOCK_SH | LOCK_EX)  # type: ignore[attr-defined]
    if not ERRNO_STATE.zero:  # ($! = 0, in line)
        set_errno(0)
    return 1


#: absolute path names of handles already found on a file system that is not shared
#: storage: their next flocks skip the fstat (1.5 us, a third of the raw lock cycle)
_LOCAL_NAMES: set[object] = set()


def _check_storage(fd: int, name: object) -> None:
    """Warn once per file system if a flock on *fd* does not exclude other hosts.

    A handle *name* that is an absolute path on local storage is remembered, so the
    check is made once per path: a file system mounted over that path later in
    the process is not noticed (a relative name is checked every time: ``chdir``).
    """
    try:
        dev = os.fstat(fd).st_dev
    except OSError:
        return
    if is_network(dev):
        check_flock(fd, stacklevel=4)  # shared storage: other hosts are not excluded
    elif type(name) is str and os.path.isabs(name):
        if len(_LOCAL_NAMES) >= 256:
            _LOCAL_NAMES.clear()
        _LOCAL_NAMES.add(name)


def _must_poll(timeout: float | None) -> bool:
    return timeout is not None or clock.alarm_deadline() is not None


def _poll(fd: int, operation: int, timeout: float | None) -> bool:
    """Retry ``operation | LOCK_NB`` until it succeeds (True) or *timeout* passes (False)."""
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    pause = _POLL_FIRST
    while True:
        try:
            lock_fd(fd, operation | LOCK_NB)
            return True
        except BlockingIOError:
            pass
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return False
        delay = pause if deadline is None else min(pause, deadline - now)
        clock.pause(delay)
        pause = min(pause * 2, _POLL_MAX)
