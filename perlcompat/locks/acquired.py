"""What ``Lock.acquire()`` returns: the lock, as a context manager that releases it once.

filelock's ``AcquireReturnProxy`` (``with lk.acquire(timeout=1):``); it passes for the
``Lock`` itself everywhere else.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

    from .api import Lock


class Acquired:
    """What ``Lock.acquire()`` returns: the lock, as a context manager that releases it.

    filelock's ``AcquireReturnProxy``: ``with lk.acquire(timeout=1):`` takes the
    lock once and releases it once on exit.  Every other attribute is the lock's,
    so ``held = lk.acquire(); ...; held.release()`` works as before, and it
    passes for the lock that ``acquire()`` returned before: ``isinstance(held,
    Lock)``, ``held == lk``, the same hash.
    """

    __slots__ = ("lock",)

    def __init__(self, lock: Lock) -> None:
        self.lock = lock

    @property  # type: ignore[misc]
    def __class__(self) -> type[Lock]:  # type: ignore[override]  # isinstance() reads it
        return type(self.lock)

    def __eq__(self, other: object) -> bool:
        return self.lock == (other.lock if type(other) is Acquired else other)

    def __hash__(self) -> int:
        return hash(self.lock)

    def __copy__(self) -> Acquired:
        return Acquired(self.lock)

    def __reduce__(self) -> tuple[type[Acquired], tuple[Lock]]:
        return Acquired, (self.lock,)

    def __enter__(self) -> Lock:
        return self.lock

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.lock.__exit__(kind, value, tb)

    async def __aenter__(self) -> Lock:  # ``async with await lk.acquire_async():`` (filelock)
        return self.lock

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.lock.__aexit__(kind, value, tb)

    def __getattr__(self, name: str) -> Any:
        if name == "lock":  # not set yet (a copy in the making): no recursion through it
            raise AttributeError(name)
        return getattr(self.lock, name)

    def __setattr__(self, name: str, value: object) -> None:
        if name == "lock":
            object.__setattr__(self, name, value)
        else:
            setattr(self.lock, name, value)

    def __repr__(self) -> str:
        return repr(self.lock)
