"""The contract every lock method implements, the registry of methods, and ``detect()``.

A lock *method* is one :class:`Backend` subclass in a module of its own under
``locks.methods``.  It makes one non-blocking attempt (``try_acquire``),
releases only what it holds (``release``), recovers a stale lock (older than
``stale``, or its owner dead) without removing a successor's (``break_stale``)
and describes the lock at its path for the tools (``describe``): the four
required operations.  ``locks.api.Lock`` adds the
patience, ownership and cleanup on top, once for every method.

What only some methods can do is declared here with a default, never looked up
with ``getattr``: ``why_busy`` (the reason a wait timed out, "" if none),
``forget`` (a forked child drops its parent's hold; default: nothing to drop),
``extend`` (renew a lease, when ``supports_extend``) and ``wait_for_release``
(block until a release wakes the waiter, when ``waits_for_release``; else
``Lock.acquire`` polls), ``refresh`` (make the held lock young again for every
age rule: ``Lock.refresh``), ``abandon``, ``fileno`` and ``fencing_token``.

**Registry.** :data:`METHODS` names each method's module, imported on first use
(a ``lock()`` imports only its own method); the module registers its class with
:func:`register`.  Adding a method is one new module plus one line in
:data:`METHODS` (and in :data:`OFF_DISK` if its locks are not files).

**Detection.** Each method recognises its own locks on disk
(:meth:`Backend.detect`) and the files beside a lock that belong to it
(:meth:`Backend.part_of`: a held rename marker, an mkdir owner file, the
remover's breaker file).  :func:`detect` asks every on-disk method; a method
whose ``detect`` takes any plain file (``catch_all``: flock, since any file can
be flocked) is asked only when no other method claims the entry.
:func:`find_locks` lists a directory's locks with them.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, TypedDict, TypeVar

    B = TypeVar("B", bound="type[Backend]")

    class _Holder(TypedDict):
        method: str
        path: str
        pid: int | None
        host: str | None
        alive: bool | None
        age: float | None

    class Description(_Holder, total=False):
        """What ``Backend.describe()`` says of a held lock (``perlcompat locks`` shows it).

        Every method gives the keys of ``_Holder``; the file methods add ``judged``
        (how liveness is judged, ``owner.judged``), redis ``expires_in``, ``fence``, ``url``.
        """

        judged: str
        expires_in: float | None
        fence: int
        url: str


#: lock method name -> module of ``locks.methods`` that defines and registers it.
METHODS = {
    "mkdir": "mkdir",
    "symlink": "symlink",
    "rename": "rename",
    "excl": "excl",
    "link": "link",
    "flock": "flock",
    "toplock": "toplock",
    "redis": "redis",
}
#: methods whose locks are not files: never imported to look at a directory.
OFF_DISK = frozenset({"redis"})
#: the method of ``lock()`` without ``method=`` or ``url=`` (the mkdir lock sub).
DEFAULT_METHOD = "mkdir"
#: the method ``url=`` (or ``PERLCOMPAT_LOCK_URL``) selects.
URL_METHOD = "redis"


class Backend(ABC):
    """One lock method's primitive operations on one lock path (or key).

    Subclasses implement :meth:`try_acquire`, :meth:`release`,
    :meth:`break_stale` and :meth:`describe`; they raise ``OSError`` (errno
    set, message naming the path) for anything that is not "busy", and never
    report a lock they did not take.
    """

    #: the method's name, as ``Lock(method=...)`` takes it (set by each subclass).
    method: ClassVar[str] = ""
    can_share: ClassVar[bool] = False
    #: the keyword options this method's constructor takes beyond the common ones.
    options: ClassVar[tuple[str, ...]] = ()
    #: :meth:`extend` renews the hold (a lease).
    supports_extend: ClassVar[bool] = False
    #: :meth:`wait_for_release` blocks until a release (``Lock.acquire`` polls otherwise).
    waits_for_release: ClassVar[bool] = False
    #: :meth:`detect` takes any plain file: asked after every other method.
    catch_all: ClassVar[bool] = False
    #: when the running ``Lock.acquire`` gives up (``time.monotonic()``), None for
    #: never; set before the first attempt, for methods that wait on a network (redis).
    deadline: float | None = None

    def __init__(self, path: str, *, stale: float, shared: bool = False) -> None:
        if shared and not self.can_share:
            raise ValueError(f"lock method {self.method!r} cannot take shared locks")
        self.path = path
        self.stale = stale
        self.shared = shared

    # -- required ----------------------------------------------------------
    @abstractmethod
    def try_acquire(self) -> bool:
        """Make one non-blocking attempt; True if the lock is now held by us."""

    @abstractmethod
    def release(self) -> bool:
        """Release our lock; True if it was still ours, False if it was gone or replaced."""

    @abstractmethod
    def break_stale(self) -> bool:
        """Remove the current lock if stale (age or dead owner), race-free; True if removed."""

    @abstractmethod
    def describe(self) -> Description | None:
        """Describe the lock at the path for ``perlcompat locks``; None if there is none.

        Keys (:class:`Description`): ``method``, ``path``, ``pid`` (int or None), ``host``
        (str or None), ``alive`` (True, False, or None when unknown) and ``age`` (seconds).
        """

    # -- optional, with defaults -------------------------------------------
    def abandon(self) -> bool:
        """Release for cleanup at exit or on a signal, without blocking long; as ``release``."""
        return self.release()

    def forget(self) -> None:  # noqa: B027 - optional hook, nothing to drop by default
        """In a forked child: drop the parent's hold without releasing it (default: nothing)."""

    def refresh(self) -> bool:
        """Make our held lock young again for every age rule; False if no longer ours.

        Perlcompat's and a Perl sub's age checks alike (the lock's mtime, and its
        owner record, which then names this process: a ``perlcompat.fork()`` child
        re-signs its parent's lock so).  A lock not ours is never touched.  Every
        built-in method has one; TypeError otherwise.
        """
        raise TypeError(f"lock method {self.method!r} cannot be refreshed")

    def holds(self) -> bool | None:
        """Whether our hold is still the lock at its path (one look); None if the method
        cannot tell (default), False if it was broken or replaced."""
        return None

    def why_busy(self) -> str:
        """Why the lock could not be had, for the time-out message; "" if nothing to add."""
        return ""

    def extend(self, seconds: float | None = None) -> bool:
        """Renew the hold to *seconds* (default ``stale``) from now; False if already lost.

        Only where :attr:`supports_extend`; TypeError otherwise.
        """
        raise TypeError(f"lock method {self.method!r} has no lease to extend")

    def wait_for_release(self, timeout: float | None = None) -> None:
        """Block until a release may have freed the lock, at most *timeout* seconds.

        Only where :attr:`waits_for_release`; TypeError otherwise.
        """
        raise TypeError(f"lock method {self.method!r} cannot wait for a release")

    def fileno(self) -> int | None:
        """Descriptor to keep open while held (flock method), else None."""
        return None

    @property
    def fencing_token(self) -> int | None:
        """Monotonic token of the current hold, where the method has one."""
        return None

    # -- on disk -----------------------------------------------------------
    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """True if the entry at *path* (its lstat *st*, None if absent) is this method's lock.

        Only what this method makes counts; OSError while looking means no.
        """
        return False

    @classmethod
    def part_of(cls, path: str) -> str | None:
        """The lock path whose piece the entry *path* is (not a lock itself), else None."""
        return None

    @classmethod
    def parts(cls, path: str) -> tuple[str, ...]:
        """The paths beside the lock *path* that may be pieces of it."""
        return ()


#: the registry: method name -> its backend class (:func:`register`).
REGISTERED: dict[str, type[Backend]] = {}


def register(cls: B) -> B:
    """Class decorator: make *cls* the backend of the lock method ``cls.method``."""
    name = cls.method
    if not name or not isinstance(name, str):
        raise ValueError(f"{cls.__qualname__} has no method name")
    known = REGISTERED.get(name)
    if known is not None and known is not cls:
        raise ValueError(f"lock method {name!r} is already {known.__qualname__}")
    REGISTERED[name] = cls
    return cls


def names() -> list[str]:
    """Every lock method's name: :data:`METHODS`, then any registered from elsewhere."""
    return [*METHODS, *(name for name in REGISTERED if name not in METHODS)]


def backend_class(method: str) -> type[Backend]:
    """The backend class of lock method *method*, its module imported on first use."""
    cls = REGISTERED.get(method)
    if cls is not None:
        return cls
    module = METHODS.get(method) if isinstance(method, str) else None
    if module is None:
        raise ValueError(f"unknown lock method {method!r}; choose one of {', '.join(names())}")
    from importlib import import_module

    import_module(f"{__package__}.methods.{module}")
    cls = REGISTERED.get(method)
    if cls is None:
        raise LookupError(f"module locks.methods.{module} registers no lock method {method!r}")
    return cls


def on_disk() -> list[type[Backend]]:
    """The backends whose locks are files, in :func:`names` order (imports their modules)."""
    found = [backend_class(name) for name in names() if name not in OFF_DISK]
    return sorted(found, key=lambda cls: cls.catch_all)  # stable: catch-alls last


def detect(path: str | os.PathLike[str]) -> str | None:
    """Which lock method made the lock found at *path*; None if there is no lock there.

    Only what a lock method can have made counts, so that a tool which breaks
    stale locks never takes a data file for one.  A piece of another lock (an
    mkdir owner file, a held rename marker, a breaker file) is not a lock: None.
    """
    text = os.path.abspath(os.fspath(path))
    backends = on_disk()
    if any(cls.part_of(text) is not None for cls in backends):
        return None
    from .files import lstat  # (every on-disk method's module has imported it)

    try:
        st = lstat(text)
    except OSError:  # cannot be looked at: each method looks for itself (OSError means no)
        st = None
    for cls in backends:
        if cls.detect(text, st):
            return cls.method
    return None


def parts(path: str | os.PathLike[str]) -> list[str]:
    """The paths beside the lock *path* that may be pieces of a lock there, of any method."""
    text = os.path.abspath(os.fspath(path))
    return sorted({part for cls in on_disk() for part in cls.parts(text)})


def lock_of(path: str | os.PathLike[str]) -> str | None:
    """The lock path whose piece the entry *path* is (a held rename marker ...), else None."""
    text = os.path.abspath(os.fspath(path))
    for cls in on_disk():
        lock = cls.part_of(text)
        if lock is not None:
            return lock
    return None


def find_locks(directory: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """List (lock path, method) for every lock in *directory*, sorted by path.

    A piece of a lock (a held rename marker) lists the lock it belongs to.
    """
    base = os.fspath(directory)
    found: dict[str, str] = {}
    for name in sorted(os.listdir(base)):
        path = os.path.abspath(os.path.join(base, name))
        lock = lock_of(path)
        method = detect(path if lock is None else lock)
        if method is not None:
            found[path if lock is None else lock] = method
    return sorted(found.items())
