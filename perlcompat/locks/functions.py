"""``lock()`` and ``unlock()``: the mkdir lock sub's shape (1, or 0 and ``$!``) over ``Lock``.

Each ``lock()`` makes one ``locks.api.Lock`` and takes it with the sub's patience;
``unlock()`` releases the lock this thread holds at the name (the registry of held
locks is ``locks.cleanup``'s), and never someone else's.
"""

from __future__ import annotations

import errno
import os

from ..perl.errno import fail, set_errno
from . import cleanup as _cleanup
from .api import Lock, owned_here
from .contract import URL_METHOD, detect as detect_method, names
from .errors import perl_failure
from .options import UNSET, locate, perl_formats


def lock(
    name: str | os.PathLike[str] = "lockdir",
    *,
    method: str | None = None,
    retry: int | None = 5,
    wait: float = 1.0,
    stale: float = 180.0,
    shared: bool = False,
    root: str | os.PathLike[str] | None = None,
    poll: float | None = None,
    url: str | None = None,
    mode: int | None = None,
    held: str | os.PathLike[str] | None = None,
    record: str | None = None,
    target: str | None = None,
    pidfile: str | None = None,
    data: bool | None = None,
) -> int:
    """The mkdir lock sub: 1 once *name* is locked, 0 and ``$!`` after ``(retry-1)*wait`` s.

    As the sub, ``retry`` tries ``wait`` seconds apart (``retry`` 0 or 1: one
    try); ``poll`` seconds between tries (or ``PERLCOMPAT_LOCK_POLL``) waits at
    the sub's cadence, fair to Perl waiters.  Bad arguments (empty name,
    unknown method, a name escaping the lock root, an option the method does
    not take) raise ``ValueError``/``TypeError`` naming what was wrong; a busy
    lock or an OS failure (missing or unwritable directory, a symlink planted
    at the lock path) returns 0 with ``$!`` set.  Never returns 1 without
    holding the lock.  ``record=``/``target=``/``pidfile=`` declare what the Perl
    side writes into its lock (``locks.record``; docs/locks.md).
    """
    try:
        Lock(
            name,
            method=method,
            retry=retry,
            wait=wait,
            stale=stale,
            shared=shared,
            root=root,
            poll=poll,
            url=url,
            mode=mode,
            held=held,
            record=record,
            target=target,
            pidfile=pidfile,
            data=data,
        )._acquire(UNSET, None, True, True)
    except OSError as exc:
        return perl_failure(exc)  # (``errors.perl_sub``'s rule, without a wrapper on the path)
    set_errno(0)
    return 1


def unlock(
    name: str | os.PathLike[str] = "lockdir",
    *,
    method: str | None = None,
    root: str | os.PathLike[str] | None = None,
    url: str | None = None,
    record: str | None = None,
    target: str | None = None,
    pidfile: str | None = None,
) -> int:
    """The mkdir lock's ``sub unlock``: 1 when this thread's lock is released, else 0 with ``$!``.

    Without ``method=``/``url=`` it releases the lock this thread holds at
    *name* whatever its method.  Only a lock taken by ``lock()`` in this
    process *and thread* is removed; someone else's lock (another process's,
    another thread's) is never touched (``$!`` = ENOLCK, and a WARNING on the
    ``perlcompat`` logger names the method the lock on disk looks like).  A
    release that fails leaves the lock held (0, ``$!`` set), so ``unlock()``
    may be called again.  ``record=``/``target=``/``pidfile=``, if given, must be
    those the lock was taken with (ValueError otherwise).
    """
    try:
        method, path, url = locate(name, method, url, root)
        found = _cleanup.held_at(path, method)
        if record is not None or target is not None or pidfile is not None:
            given = perl_formats(None, None, record, target, pidfile)
            for key, value in given.items():
                if found is not None and found.formats.get(key) != value:
                    raise ValueError(
                        f"unlock({os.fspath(name)!r}, {key}={value!r}): the lock was taken"
                        f" with {key}={found.formats.get(key)!r}"
                    )
        if found is None:
            if method != URL_METHOD:
                _not_ours(path, method)
            return fail(errno.ENOLCK)
        found.release()
    except OSError as exc:
        return perl_failure(exc)
    set_errno(0)
    return 1


def _not_ours(path: str, method: str | None) -> None:
    """Log why ``unlock()`` of *path* found no lock of this thread (if one is on disk)."""
    mine = [m for m in names() if owned_here(m, path) is not None]
    try:
        on_disk = detect_method(path)
    except OSError:
        on_disk = None
    if not mine and on_disk is None:
        return
    from . import log as _log

    if mine:
        _log.warning(
            "unlock(%r, method=%r): this thread holds it with method=%r; pass that",
            path,
            method,
            mine[0],
        )
    else:
        _log.warning(
            "unlock(%r): this thread holds no lock there; the lock there looks like"
            " a %s lock, taken by another process or thread",
            path,
            on_disk,
        )
