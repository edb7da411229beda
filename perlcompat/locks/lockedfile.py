"""``LockedFile``: a data file opened, flocked and handed over as a Python file object.

Perl's ``open(OUT, ">> $file"); flock(OUT, 2); print OUT ...`` in one object, with
portalocker's ``Lock`` shape (``with LockedFile(f, "w") as fh: fh.write(...)``):

* the lock is flock(2) on the data file itself, the same lock Perl's ``flock`` takes
  (and a ``Lock(f, method="flock")``), through a ``Lock`` with the flock method, so
  its patience, threads, signals, exit cleanup and ``fork()`` are ``Lock``'s;
* *mode* is ``open()``'s ``r``, ``r+``, ``w``, ``w+``, ``a``, ``a+`` (``b`` for bytes);
  ``w`` never truncates at open: the file is emptied only once the lock is held (as
  portalocker does), so a busy file is never modified; ``r`` needs the file to exist,
  the others create it (0666 less the umask);
* the file is opened without following a symlink (ELOOP), without waiting on a FIFO,
  close-on-exec; anything but a regular file is refused, as for every flock lock;
* the descriptor belongs to the hold: ``release()`` flushes the handle, unlocks (Perl's
  flock flushes first too) and closes it; the program's own ``fh.close()`` does not
  release the lock (the object would still say it holds it);
* ``counted=False`` (the default): taking it again in the holder thread gives the same
  handle and one ``release()`` frees it, and a ``release()`` of a lock not held does
  nothing: Perl's ``flock`` on one handle, and portalocker's ``Lock``.
  ``counted=True`` counts every ``acquire()`` (released at the last ``release()``; one
  too many raises ``NotLockedError``): portalocker's ``RLock`` and ``Lock``'s rule.
"""

from __future__ import annotations

import os
from _thread import get_ident

from ..perl.consts import LOCK_UN
from ..perl.flock import lock_fd
from ..perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from .api import Lock
from .errors import LockError
from .files import open_error
from .methods.flock import FlockBackend
from .options import UNSET, _Unset

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import IO, Any

__all__ = ["LockedFile"]

#: ``os.open`` flags of each mode; "w" has no O_TRUNC: it is emptied once locked.
_FLAGS = {
    "r": os.O_RDONLY,
    "r+": os.O_RDWR,
    "w": os.O_WRONLY | os.O_CREAT,
    "w+": os.O_RDWR | os.O_CREAT,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND,
}
#: O_NONBLOCK: a planted FIFO is not waited on (a regular file's I/O ignores the flag)
_OPEN = O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
_NEWLINES = (None, "", "\n", "\r", "\r\n")


def parse_mode(mode: object) -> tuple[str, bool]:
    """``open()``'s *mode* as (``"r"`` .. ``"a+"``, binary); ValueError naming it if not one."""
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str such as 'a' or 'r+b', not {mode!r}")
    chars = set(mode)
    if "x" in chars:
        raise ValueError(
            f"mode {mode!r}: 'x' makes the file, so there is nothing to lock against;"
            " use 'w' (emptied once the lock is held) or 'a'"
        )
    base = chars & {"r", "w", "a"}
    if len(chars) != len(mode) or not chars <= set("rwa+bt") or len(base) != 1:
        raise ValueError(f"mode must be open()'s r, r+, w, w+, a or a+ (b: bytes), not {mode!r}")
    if {"b", "t"} <= chars:
        raise ValueError(f"mode {mode!r} is both binary and text")
    return base.pop() + ("+" if "+" in chars else ""), "b" in chars


class _DataFlock(FlockBackend):
    """The flock backend over the data file, opened in the caller's mode; holds the handle."""

    def __init__(
        self, path: str, *, stale: float, shared: bool, mode: str, binary: bool, io: dict[str, Any]
    ) -> None:
        super().__init__(path, stale=stale, shared=shared)
        self.mode = mode
        self.binary = binary
        self.io = io
        #: the open handle while the lock is held, else None
        self.handle: IO[Any] | None = None

    _stacklevel = 5  # (LockedFile.acquire calls Lock.acquire)

    def _open(self) -> tuple[int, bool]:
        """Open the data file in the caller's mode ("w" without truncating)."""
        try:
            return os.open(self.path, _FLAGS[self.mode] | _OPEN, 0o666), False
        except OSError as exc:
            raise open_error(self.path, exc, "regular file") from None

    def _taken(self, fd: int) -> None:
        """Once held: empty the file for "w", and wrap it."""
        if self.mode[0] == "w":
            os.ftruncate(fd, 0)  # only now: the lock is ours
        mode = self.mode + ("b" if self.binary else "")
        self.handle = open(fd, mode, closefd=False, **self.io)  # noqa: SIM115

    def release(self) -> bool:
        """Flush the handle (an error keeps the lock held), unlock, close; True."""
        fd, handle = self._fd, self.handle
        if fd is None or handle is None:
            return False
        if not handle.closed:
            handle.flush()  # raises: still held, the data still buffered; release again
        self._fd = self.handle = None
        try:
            lock_fd(fd, LOCK_UN)
        finally:
            try:
                handle.close()  # (closefd=False: nothing left to write, the descriptor stays)
            finally:
                os.close(fd)
        return True

    def forget(self) -> None:
        """In a forked child: drop the handle unflushed; the parent still holds the flock."""
        self.handle = None
        super().forget()


class LockedFile:
    """The data file *name*, flocked and opened in *mode*: ``acquire()`` gives the handle.

    ``with LockedFile("log.txt", "a", timeout=5) as fh: fh.write(line)``.  The lock is
    Perl's ``flock`` on that file (LOCK_EX, LOCK_SH with ``shared=True``); the patience
    is ``Lock``'s (``timeout``, ``retry``, ``wait``, ``poll``, ``root``), and so is the
    rest: ``LockTimeout`` when busy, one holder thread, released at exit and on a
    stopping signal.  *encoding*, *errors*, *newline* and *buffering* are ``open()``'s.
    ``counted``: see the module (default: Perl's and portalocker's ``Lock``'s rule).
    """

    def __init__(
        self,
        name: str | os.PathLike[str],
        mode: str = "a",
        *,
        timeout: float | _Unset | None = UNSET,
        retry: int | _Unset | None = UNSET,
        wait: float = 1.0,
        poll: float | None = None,
        shared: bool = False,
        root: str | os.PathLike[str] | None = None,
        counted: bool = False,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
        buffering: int = -1,
    ) -> None:
        base, binary = parse_mode(mode)
        io: dict[str, Any] = {"buffering": buffering}
        if binary:
            given = [k for k, v in (("encoding", encoding), ("errors", errors)) if v is not None]
            if newline is not None:
                given.append("newline")
            if given:
                raise ValueError(f"mode {mode!r} is binary: it takes no {', '.join(given)}")
        else:
            if buffering == 0:
                raise ValueError(f"mode {mode!r} is text: buffering=0 needs a binary mode")
            if newline not in _NEWLINES:
                raise ValueError(f"newline must be one of {_NEWLINES!r}, not {newline!r}")
            if encoding is not None:
                import codecs

                codecs.lookup(encoding)  # LookupError naming it, now rather than once locked
            io.update(encoding=encoding, errors=errors, newline=newline)
        if isinstance(buffering, bool) or not isinstance(buffering, int):
            raise TypeError(f"buffering must be an int, not {buffering!r}")
        self.mode = mode
        self.counted = counted
        lock = Lock(
            name,
            method="flock",
            timeout=timeout,
            retry=retry,
            wait=wait,
            poll=poll,
            shared=shared,
            root=root,
        )
        backend = _DataFlock(
            lock.path, stale=lock.stale, shared=shared, mode=base, binary=binary, io=io
        )
        lock._backend = backend
        self._lock = lock
        self._data = backend

    # -- state ---------------------------------------------------------
    @property
    def path(self) -> str:
        """The data file's path, as the lock resolved it."""
        return self._lock.path

    @property
    def lock(self) -> Lock:
        """The ``Lock`` (method flock) that holds the file."""
        return self._lock

    @property
    def is_locked(self) -> bool:
        """True while this object holds the file."""
        return self._lock.is_locked

    @property
    def handle(self) -> IO[Any] | None:
        """The open handle while held, else None."""
        return self._data.handle if self._lock.is_locked else None

    @property
    def timeout(self) -> float | None:
        """Seconds ``acquire()`` waits by default, None for ever (settable, as ``Lock``'s)."""
        return self._lock.timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._lock.timeout = value

    def __repr__(self) -> str:
        state = "locked" if self.is_locked else "unlocked"
        return f"<LockedFile {self.path!r} mode={self.mode!r} {state}>"

    # -- acquire / release ---------------------------------------------
    def acquire(
        self,
        timeout: float | _Unset | None = UNSET,
        poll_interval: float | None = None,
        *,
        blocking: bool = True,
    ) -> IO[Any]:
        """Take the lock within *timeout* seconds (``Lock.acquire``'s arguments); the handle.

        Held by this thread already: the same handle (with ``counted=True``, one more hold).
        """
        lock = self._lock
        handle = self._data.handle
        if not self.counted and handle is not None and lock._owner_thread == get_ident():
            lock._release_failed = None  # taken again by its holder: held, not pending release
            return handle  # (Perl: flock again on a handle holding it changes nothing)
        lock._acquire(timeout, poll_interval, blocking)
        handle = self._data.handle
        if handle is None:  # (a lock taken by this backend always has one)
            raise LockError(f"lock {self.path!r} is held but its file is not open")
        return handle

    def release(self, force: bool = False) -> None:
        """Flush, unlock and close the handle (``Lock.release``: *force*, errors).

        With ``counted=False`` a release of a lock not held does nothing.
        """
        if not self.counted and self._lock._owner_thread is None:
            force = True  # (``Lock``: a forced release of a lock not held does nothing)
        self._lock.release(force)

    def __enter__(self) -> IO[Any]:
        return self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.counted and self._lock._owner_thread is None:
            return  # released in the block already
        self._lock.__exit__(kind, value, tb)  # (the body's exception goes on)
