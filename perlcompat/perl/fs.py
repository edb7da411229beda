"""Perl's file and directory functions, with Perl's return values.

``mkdir``, ``rmdir``, ``rename``, ``symlink`` return 1 or 0; ``unlink`` and
``utime`` return how many files they handled; ``readlink`` the target or None;
``stat`` and ``lstat`` Perl's 13-element list, empty on failure, as a ``PerlList``
(an index past the end reads as ``undef``: ``stat(missing)[9]`` is Perl's undef).
Every failure sets ``OS_ERROR`` as Perl sets ``$!``.  ``filetest("-M", path)`` is Perl's ``-M``,
measured from ``BASETIME`` (Perl's ``$^T``, English ``$BASETIME``).
"""

from __future__ import annotations

import errno
import os
import stat as _stat

from .errno import fail, fail_from, set_errno
from .lists import PerlList
from .undef import undef

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Union

    from .undef import Undef

    PathArg = Union[str, bytes, "os.PathLike[str]"]

from .. import _START_TIME  # noqa: E402

BASETIME = _START_TIME


def mkdir(path: PathArg, mode: int = 0o777) -> int:
    """Create a directory: 1, or 0 with ``OS_ERROR`` set (EEXIST when it exists).

    *mode* is permission bits (or a whole ``st_mode``), 0 to 0o177777: anything
    else raises ValueError (Perl would make the directory with arbitrary bits).
    """
    if type(mode) is not int or not 0 <= mode <= 0o177777:
        raise ValueError(f"mkdir mode must be permission bits like 0o755, not {mode!r}")
    return _perl_call(os.mkdir, path, mode)


def rmdir(path: PathArg) -> int:
    """Remove an empty directory: 1, or 0 with ``OS_ERROR`` set."""
    return _perl_call(os.rmdir, path)


def rename(old: PathArg, new: PathArg) -> int:
    """Rename *old* to *new*, replacing *new* as POSIX rename(2) does: 1, or 0."""
    return _perl_call(os.replace, old, new)


def _perl_call(call: Callable[..., object], *args: object) -> int:
    """Run one system call the Perl way: 1, or 0 with ``OS_ERROR`` set from its OSError."""
    try:
        call(*args)
    except OSError as exc:
        return fail_from(exc)
    return 1


def _each(paths: tuple[PathArg, ...], change: Callable[[PathArg], object]) -> int:
    """Apply *change* to every path; return how many succeeded (``OS_ERROR``: the last failure).

    A number the OS cannot take (a mode or id out of range) fails that path with EINVAL.
    """
    done = 0
    for path in paths:
        try:
            done += _perl_call(change, path)
        except (OverflowError, ValueError):
            fail(errno.EINVAL)
    return done


def unlink(*paths: PathArg) -> int:
    """Delete files; return how many were deleted (``OS_ERROR`` names the last failure)."""
    return _each(paths, os.unlink)


def chmod(mode: int, *paths: PathArg) -> int:
    """Set permission bits; return how many files were changed (``OS_ERROR``: the last failure)."""
    return _each(paths, lambda path: os.chmod(path, mode))


def chown(uid: int, gid: int, *paths: PathArg) -> int:
    """Set owner and group (-1 keeps one); return how many files were changed."""
    change = getattr(os, "chown", None)
    if change is None:  # Windows
        return fail(errno.ENOSYS) if paths else 0
    return _each(paths, lambda path: change(path, uid, gid))


def symlink(old: PathArg, new: PathArg) -> int:
    """Create symbolic link *new* pointing to *old* (``symlink($$, $lock)``): 1, or 0."""
    try:
        return _perl_call(os.symlink, os.fspath(old) if not isinstance(old, int) else str(old), new)
    except NotImplementedError:
        return fail(errno.ENOSYS)


def readlink(path: str | os.PathLike[str]) -> str | None:
    """Return a symbolic link's target, or None with ``OS_ERROR`` set."""
    try:
        return os.readlink(path)
    except OSError as exc:
        fail_from(exc)
        return None


def utime(atime: float | None, mtime: float | None, *paths: PathArg) -> int:
    """Set access and modification times (None: now); return how many files were changed.

    A time that is not a number, NaN, infinite or beyond the platform's time_t
    raises ValueError naming it (Perl would store a wrapped, meaningless time).
    """
    if atime is None and mtime is None:
        times = None
    else:
        import time

        now = time.time()
        times = (now if atime is None else atime, now if mtime is None else mtime)
        for value in times:
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not -_MAX_TIME <= value <= _MAX_TIME  # NaN fails this too
            ):
                raise ValueError(f"utime needs times in seconds since the epoch, not {value!r}")
    return _each(paths, lambda path: os.utime(path, times))


#: the largest time utime() passes on (a 64-bit time_t's seconds, as a float can hold them)
_MAX_TIME = 2.0**62


def _stat_result(target: object, follow: bool = True) -> os.stat_result | None:
    try:
        if isinstance(target, int):
            if not 0 <= target <= 0x7FFFFFFF:  # not a file descriptor (fstat would overflow)
                fail(errno.EBADF)
                return None
            return os.fstat(target)
        if isinstance(target, (str, bytes, os.PathLike)):
            return os.stat(target) if follow else os.lstat(target)
        fileno = getattr(target, "fileno", None)
        if fileno is None:
            fail(errno.EBADF)
            return None
        return os.fstat(fileno())
    except (ValueError, OverflowError):  # closed, or a descriptor no C int holds
        fail(errno.EBADF)
    except OSError as exc:
        fail_from(exc)
    return None


def stat(target: object) -> list[int | str]:
    """Perl's ``stat`` of a path, handle or fd: 13 numbers, or [] with ``OS_ERROR`` set.

    (dev, ino, mode, nlink, uid, gid, rdev, size, atime, mtime, ctime, blksize, blocks)
    in a :class:`PerlList`: ``stat(missing)[9]`` is ``undef``, as ``(stat $f)[9]`` is in Perl.
    """
    return _perl_stat(_stat_result(target))


def lstat(target: object) -> list[int | str]:
    """Perl's ``lstat``: ``stat`` of a symbolic link itself (of a handle or fd: ``stat``)."""
    return _perl_stat(_stat_result(target, follow=False))


def _perl_stat(st: os.stat_result | None) -> list[int | str]:
    if st is None:
        return PerlList()
    return PerlList(
        [
            st.st_dev,
            st.st_ino,
            st.st_mode,
            st.st_nlink,
            st.st_uid,
            st.st_gid,
            getattr(st, "st_rdev", 0),
            st.st_size,
            int(st.st_atime),
            int(st.st_mtime),
            int(st.st_ctime),
            getattr(st, "st_blksize", 0) or "",  # Perl gives '' where unsupported
            getattr(st, "st_blocks", 0) or "",
        ]
    )


def filetest(op: str, target: object) -> int | float | Undef:
    """Perl's file tests: ``-e -f -d -l -r -w -x -s -z -M -A -C`` on a path or handle.

    ``-e/-f/-d/-l/-r/-w/-x/-z`` give 1 or 0; ``-s`` the size (0 when empty);
    ``-M/-A/-C`` days before ``BASETIME``; ``undef`` when the file does not
    exist, with ``OS_ERROR`` set (false, 0 in ``-M $f > 0.01``, ``""`` in a string).
    """
    if op not in _TESTS:
        raise ValueError(f"unknown file test {op!r}; use one of {' '.join(_TESTS)}")
    st = _stat_result(target, follow=op != "-l")
    if st is None:
        return undef
    set_errno(0)
    mode = st.st_mode
    if op == "-e":
        return 1
    if op == "-f":
        return 1 if _stat.S_ISREG(mode) else 0
    if op == "-d":
        return 1 if _stat.S_ISDIR(mode) else 0
    if op == "-l":
        return 1 if _stat.S_ISLNK(mode) else 0
    if op == "-s":
        return st.st_size
    if op == "-z":
        return 1 if st.st_size == 0 else 0
    if op in ("-r", "-w", "-x"):
        flag = {"-r": os.R_OK, "-w": os.W_OK, "-x": os.X_OK}[op]
        if isinstance(target, (str, bytes, os.PathLike)):
            return 1 if os.access(target, flag) else 0
        return 1 if mode & {"-r": 0o444, "-w": 0o222, "-x": 0o111}[op] else 0
    when = {"-M": st.st_mtime, "-A": st.st_atime, "-C": st.st_ctime}[op]
    return (BASETIME - when) / 86400.0


_TESTS = ("-e", "-f", "-d", "-l", "-r", "-w", "-x", "-s", "-z", "-M", "-A", "-C")


def sleep(seconds: float) -> int:
    """Sleep *seconds* (fractions allowed); return the whole seconds slept, as Perl does.

    A pending ``alarm()`` interrupts it: its handler runs (and may raise).  As in
    Perl, negative, infinite or huge (>= 2**31) *seconds* return 0 at once with
    ``OS_ERROR`` = EINVAL and a RuntimeWarning; a non-number or NaN raises ValueError.
    """
    from .clock import out_of_range, pause

    if out_of_range("sleep", seconds):
        return fail(errno.EINVAL)
    import time

    start = time.monotonic()
    pause(seconds)
    return round(time.monotonic() - start)
