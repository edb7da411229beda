"""What the judged rules share: :class:`Judge` (facts across scopes and files) and event helpers."""

from __future__ import annotations

from ..model import LOCK_EX, LOCK_SH, LOCK_UN, Ev, Inst, Open, Path, Program, Result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


class Judge:
    """What the rules need to know across scopes and files, learned from every walked scope."""

    def __init__(self, prog: Program, results: list[Result]) -> None:
        self.prog = prog
        #: path key -> (file, line, open) of one flock taken on that very file.
        self.flocked: dict[str, tuple[str, int, Open]] = {}
        #: the same per scope, including keys local to the scope.
        self.flocked_in: dict[int, dict[str, tuple[str, int, Open]]] = {}
        #: keys of every lock acquired anywhere.
        self.lock_keys: set[str] = set()
        for res in results:
            for ev in res.events:
                if (
                    ev.kind == "flock"
                    and ev.inst is not None
                    and ev.open is not None
                    and ev.open.real
                ):
                    site = (res.source.name, ev.line, ev.open)
                    if not ev.open.path.local:
                        self.flocked.setdefault(ev.open.path.key, site)
                    self.flocked_in.setdefault(id(res), {}).setdefault(ev.open.path.key, site)
                if (
                    ev.kind == "acquire"
                    and ev.inst
                    and ev.inst.kind != "caller"
                    and not ev.inst.local
                ):
                    self.lock_keys.add(ev.inst.key)

    def flock_site(self, res: Result, path: Path) -> tuple[str, int, Open] | None:
        """Where *path* is flocked: in this scope, or anywhere when the path is not local."""
        here = self.flocked_in.get(id(res), {}).get(path.key)
        if here is not None or path.local:
            return here
        return self.flocked.get(path.key)

    def where(self, res: Result, path: Path) -> str:
        site = self.flock_site(res, path)
        assert site is not None
        return f"line {site[1]}" if site[0] == res.source.name else f"{site[0]}:{site[1]}"


def by_open(res: Result) -> dict[int, list[tuple[int, Ev]]]:
    """The events of each open (by ``id``), with their index in the scope."""
    opens: dict[int, list[tuple[int, Ev]]] = {}
    for n, ev in enumerate(res.events):
        if ev.open is not None:
            opens.setdefault(id(ev.open), []).append((n, ev))
    return opens


def flocked_opens(res: Result) -> Iterator[tuple[Open, list[tuple[int, Ev]], list[tuple[int, Ev]]]]:
    """Each open of the scope that is flocked: (open, its events, its flock events)."""
    opens = by_open(res)
    for op in res.opens:
        evs = opens.get(id(op), [])
        flocks = [(n, ev) for n, ev in evs if ev.kind == "flock" and ev.inst is not None]
        if flocks:
            yield op, evs, flocks


def style_inst(res: Result, key: str) -> Inst | None:
    """The hold of lock *key* in this scope whose retry loop is known, if any."""
    for inst in res.insts.values():
        if inst.key == key and (inst.retry or inst.wait):
            return inst
    return None


def shared_writes(res: Result) -> dict[int, tuple[Ev, Ev]]:
    """Each ``flock(F, LOCK_SH)`` (1 or 5) of the scope under which F is written.

    Inst id of the shared flock -> (its flock event, the first write made while it is
    held): a ``print``, ``printf``, ``syswrite`` or ``truncate`` of the same handle, or a
    ``truncate`` of its file by name.  Locks of unknown value are left out.
    """
    shared: dict[int, Ev] = {}
    for ev in res.events:
        if (
            ev.kind == "flock"
            and ev.inst is not None
            and ev.value is not None
            and ev.value & LOCK_SH
            and not ev.value & (LOCK_EX | LOCK_UN)
        ):
            shared[ev.inst.id] = ev
    found: dict[int, tuple[Ev, Ev]] = {}
    if not shared:
        return found
    for ev in res.events:
        if ev.kind != "write" or ev.via == "rename":
            continue
        for inst_id in ev.held & shared.keys():
            lock = shared[inst_id]
            assert lock.open is not None and lock.inst is not None
            same = ev.open is lock.open or (
                ev.open is None and ev.path is not None and ev.path.key == lock.open.path.key
            )
            if same and inst_id not in found and not ev.exclusive(lock):
                found[inst_id] = (lock, ev)
    return found
