"""Counting semaphores across processes: at most *n* holders, freed when a holder dies.

A semaphore named ``name`` is *n* slot files ``name.0`` .. ``name.<n-1>``.  To
acquire, a process tries ``flock(LOCK_EX|LOCK_NB)`` on each slot in turn
(starting at a random one, from ``os.urandom``) and keeps the first it gets; holding a slot is
holding that open descriptor.  An exclusive flock has one holder, so there are
never more than *n* holders; and the kernel drops a flock when the last
descriptor of its open file closes, so a holder that exits, crashes or is
killed with SIGKILL frees its slot at once: no stale state, no age guess, no
cleanup pass.  When every slot is busy the attempt is repeated with the same
patience as ``lock()`` (``(retry - 1) * wait`` seconds, short jittered pauses, a
pending ``alarm()`` honoured between tries: ``locks.retry``).

Slot files are created if missing (mode 0666 less umask), opened with
``O_NOFOLLOW``, ``O_NONBLOCK`` (a FIFO another user planted is refused, not waited
on) and ``O_CLOEXEC`` and never truncated or unlinked: unlinking a flock'd file would
let a newcomer lock a fresh inode beside a live holder.  Every participant must
use the same *n*.  A Perl script can take part by opening ``"$name.$i"`` and
calling ``flock($fh, LOCK_EX|LOCK_NB)`` on each slot (see docs/timeouts.md).
"""

from __future__ import annotations

import errno
import os

from ..perl.clock import check_seconds
from ..perl.consts import LOCK_EX, LOCK_NB, LOCK_UN
from ..perl.errno import fail
from ..perl.flock import lock_fd
from . import retry as _retry
from .cleanup import _token as token  # this thread's token (an ended thread's ident has another)
from .errors import DuplicateLockError, LockTimeout, NotLockedError, perl_sub
from .options import UNSET, _Unset, check_timeout, resolve_path, retry_patience

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Literal, overload


def slot_names(path: str, n: int, pattern: str, first: int = 0) -> list[str]:
    """Paths of slots *first* .. *n* - 1: *pattern* with ``{name}`` (*path*'s base name)
    and ``{number}``, in *path*'s directory; ValueError if that gives no distinct names."""
    directory, base = os.path.split(path)
    names = []
    for number in range(first, n):
        try:
            name = pattern.format(name=base, number=number)
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            raise ValueError(f"slot pattern {pattern!r}: {exc!r} (fields: name, number)") from None
        if not name or name in (".", "..") or os.sep in name or "/" in name:
            raise ValueError(
                f"slot pattern {pattern!r} gives {name!r}: not a file name in the"
                " semaphore's directory"
            )
        names.append(os.path.join(directory, name))
    if len(set(names)) != len(names):
        raise ValueError(f"slot pattern {pattern!r} must give each slot its own name ({{number}})")
    return names


def open_slot(path: str) -> int:
    """Open (creating) one slot file: ``locks.files.open_flock_file``.

    No symlink followed, no FIFO waited on, nothing but a regular file; never
    truncated; close-on-exec: a program the holder starts must not keep the slot held.
    """
    from .files import open_flock_file

    return open_flock_file(path)


class _Hold:
    """One slot held through a ``Semaphore`` object by one thread."""

    __slots__ = ("fd", "pid", "slot")

    def __init__(self, fd: int, slot: int) -> None:
        self.fd = fd
        self.slot = slot
        self.pid = os.getpid()  # the process that took it


class Semaphore:
    """At most *n* holders of *name* across processes and threads; context manager.

    ``acquire()`` raises ``LockError`` (errno EWOULDBLOCK) when no slot frees up
    within ``(retry - 1) * wait`` seconds; ``release()`` frees the slot.  One object
    holds at most one slot per thread: threads sharing it are separate holders, as
    with a ``threading.Semaphore`` (``is_locked``, ``slot`` and ``release()`` are the
    calling thread's).  A thread that ends holding a slot leaves it held until exit.
    ``timeout=`` gives the patience in seconds instead (not with ``retry=``);
    ``pattern=`` names the slot files in *name*'s directory from ``{name}`` (its base
    name) and ``{number}``: ``"{name}.{number:02d}.lock"`` shares the slots of
    portalocker's ``BoundedSemaphore(n, name)``; the default is the Perl side's ``"$name.$i"``.
    """

    def __init__(
        self,
        name: str | os.PathLike[str],
        n: int,
        *,
        retry: int | _Unset | None = UNSET,
        wait: float = 1.0,
        root: str | os.PathLike[str] | None = None,
        timeout: float | _Unset | None = UNSET,
        pattern: str = "{name}.{number}",
    ) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"semaphore size n must be a whole number >= 1, not {n!r}")
        if not isinstance(retry, _Unset) and not isinstance(timeout, _Unset):
            raise ValueError(
                "give the patience as timeout= (seconds) or as retry= (tries), not both"
                f" (timeout={timeout!r}, retry={retry!r})"
            )
        retry = 5 if isinstance(retry, _Unset) else retry
        if retry is not None and (
            isinstance(retry, bool) or not isinstance(retry, int) or retry < 0
        ):
            raise ValueError(f"retry must be a whole number >= 0 or None, not {retry!r}")
        wait = check_seconds("wait", wait)
        if retry is not None and retry > 2**53:
            raise ValueError(f"retry must be a whole number <= 2**53 or None, not {retry!r}")
        if retry is not None:
            retry_patience(retry, wait)
        self.name = os.fspath(name)
        self.path = resolve_path(name, root)
        self.n = n
        self.retry = retry
        self.wait = float(wait)
        #: the default patience given as ``timeout=`` (seconds, None for ever), else UNSET
        self.timeout = timeout if isinstance(timeout, _Unset) else check_timeout(timeout)
        self.pattern = pattern
        self._names = slot_names(self.path, n, pattern)
        #: the slot each thread holds, by thread token (issue 34: threads share the object)
        self._holds: dict[object, _Hold] = {}

    def _mine(self) -> _Hold | None:
        """The slot the calling thread holds through this object, if any."""
        return self._holds.get(token())

    @property
    def is_locked(self) -> bool:
        """True while the calling thread holds a slot through this object."""
        return self._mine() is not None

    @property
    def slot(self) -> int | None:
        """Index of the slot the calling thread holds (0 .. n-1), or None."""
        hold = self._mine()
        return None if hold is None else hold.slot

    def slot_path(self, index: int) -> str:
        """Path of slot file *index*: ``"<path>.<index>"`` (``pattern=``: see the class)."""
        if 0 <= index < self.n:
            return self._names[index]
        return slot_names(self.path, index + 1, self.pattern, index)[0]

    def patience(self) -> float | None:
        """Seconds ``acquire()`` waits by default (``timeout``, else ``(retry - 1) * wait``)."""
        if not isinstance(self.timeout, _Unset):
            return self.timeout
        return retry_patience(self.retry, self.wait)

    def __repr__(self) -> str:
        slot = self.slot
        state = "not held" if slot is None else f"holding slot {slot}"
        return f"<Semaphore {self.path!r} n={self.n} {state}>"

    def try_acquire(self) -> bool:
        """Make one pass over the slots without waiting; True if one is now ours."""
        slot = self.slot
        if slot is not None:
            raise DuplicateLockError(f"this Semaphore already holds slot {self.slot_path(slot)!r}")
        start = _retry.pick(self.n)
        for k in range(self.n):
            index = (start + k) % self.n
            fd = open_slot(self.slot_path(index))
            try:
                lock_fd(fd, LOCK_EX | LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            self._holds[token()] = _Hold(fd, index)
            return True
        return False

    if TYPE_CHECKING:

        @overload
        def acquire(
            self, timeout: float | _Unset | None = ..., *, raise_on_timeout: Literal[True] = ...
        ) -> Semaphore: ...
        @overload
        def acquire(
            self, timeout: float | _Unset | None = ..., *, raise_on_timeout: bool
        ) -> Semaphore | None: ...

    def acquire(
        self, timeout: float | _Unset | None = UNSET, *, raise_on_timeout: bool = True
    ) -> Semaphore | None:
        """Take a slot within *timeout* seconds or raise ``LockTimeout`` (a TimeoutError).

        *timeout* is finite seconds >= 0, or None or -1 for ever; not given,
        :meth:`patience`.  ``raise_on_timeout=False``: None instead of ``LockTimeout``
        (``threading.Semaphore.acquire`` answers False; portalocker's
        ``BoundedSemaphore`` None with ``fail_when_locked=False``).
        """
        timeout = self.patience() if isinstance(timeout, _Unset) else check_timeout(timeout)
        deadline = _retry.deadline_after(timeout)
        for _ in _retry.tries(deadline, cap=_retry.cap_for(self.wait)):
            if self.try_acquire():
                return self
        if not raise_on_timeout:
            return None
        raise LockTimeout(
            f"semaphore {self.path!r}: all {self.n} slots busy (waited {timeout or 0:g} s)"
        )

    def release(self) -> None:
        """Free the slot (NotLockedError if this object holds none).

        In a forked child the slot is the parent's: NotLockedError, and the child's copy
        of the descriptor is closed (the slot stays held by the parent).
        """
        hold = self._mine()
        if hold is None:
            raise NotLockedError(f"semaphore {self.path!r} is not held by this object")
        if hold.pid != os.getpid():
            self._forget()
            raise NotLockedError(
                f"semaphore {self.path!r} is held by the parent process, not this forked child"
            )
        fd = hold.fd
        del self._holds[token()]
        try:
            lock_fd(fd, LOCK_UN)  # also frees it for a forked child sharing the descriptor
        finally:
            os.close(fd)

    def _forget(self) -> None:
        """In a forked child: the parent holds the slots; close our copies, unreleased."""
        holds = list(self._holds.values())
        self._holds.clear()
        for hold in holds:
            os.close(hold.fd)  # (the flock stays: the parent's descriptor still holds it)

    def __enter__(self) -> Semaphore:
        return self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


@perl_sub()
def sem_acquire(
    name: str | os.PathLike[str],
    n: int,
    *,
    retry: int | None = 5,
    wait: float = 1.0,
    root: str | os.PathLike[str] | None = None,
) -> int:
    """Take one of *n* slots of *name* within ``(retry-1)*wait`` s: 1, or 0 with ``$!`` set.

    A thread that already holds a slot of *name* gets 0 with ``$!`` = EDEADLK
    (release it first); all slots busy gives EWOULDBLOCK.
    """
    from .cleanup import SEMAPHORE, hold, holder

    sem = Semaphore(name, n, retry=retry, wait=wait, root=root)
    if holder(SEMAPHORE, sem.path) is not None:
        return fail(errno.EDEADLK)
    sem.acquire()
    hold(SEMAPHORE, sem.path, sem)
    return 1


@perl_sub()
def sem_release(name: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> int:
    """Free the slot of *name* this thread took with ``sem_acquire``: 1, or 0 (``$!`` = ENOLCK)."""
    from .cleanup import SEMAPHORE, drop

    sem: Semaphore | None = drop(SEMAPHORE, resolve_path(name, root))
    if sem is None:
        return fail(errno.ENOLCK)
    sem.release()
    return 1
