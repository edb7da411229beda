"""lock-order: two locks taken in opposite orders, directly or through a called sub.

An edge (held lock -> lock taken) is recorded at each acquisition and at each call of a
sub that acquires; a pair of edges in both directions is reported at both places, as an
error when every acquisition involved blocks (a deadlock), else a warning.  A scope that
holds more locks at once than the walk tracks (an ``untracked`` event) gets one note (info):
its later locks are not checked.
"""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import Inst, Program, Result, bare
from ..source import display
from ..suggest import py_name
from .common import Judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

POLICY = Policy("lock-order", "warning", "two locks taken in opposite orders (error if both block)")


def check(res: Result, judge: Judge) -> Iterator[Finding]:
    """The note of a scope past the walk's limit of locks held at once."""
    for ev in res.events:
        if ev.kind == "untracked" and ev.inst is not None:
            yield POLICY.finding(
                res.source.name,
                ev.line,
                f"{display(ev.inst.text)} is taken while {len(ev.held)} other locks are held:"
                f" the audit tracks at most {ev.value} locks held at once, so this one and"
                " later ones are not checked (lock order, reads and writes under them)",
                "",
                "info",
            )


def check_program(prog: Program, results: list[Result]) -> list[Finding]:
    """Pairs of locks taken in both orders, directly or through a called sub."""

    def order_key(res: Result, inst: Inst) -> str:
        return f"{id(res)}:{inst.key}" if inst.local else inst.key

    acquired: dict[tuple[str, str], list[str]] = {}
    for res in results:
        if res.scope in prog.subs:
            acquired.setdefault((res.source.name, res.scope), []).extend(
                e.inst.key
                for e in res.events
                if e.kind == "acquire" and e.inst and e.inst.kind != "caller" and not e.inst.local
            )
    edges: dict[tuple[str, str], list[tuple[str, int, bool, Inst, Inst | None]]] = {}
    for res in results:
        for ev in res.events:
            held = [
                res.insts[i] for i in ev.held if i in res.insts and res.insts[i].kind != "caller"
            ]
            if ev.kind == "acquire" and ev.inst is not None:
                new = order_key(res, ev.inst)
                for h in held:
                    old = order_key(res, h)
                    if old != new:
                        blocking = h.blocking and ev.inst.blocking
                        edges.setdefault((old, new), []).append(
                            (res.source.name, ev.line, blocking, h, ev.inst)
                        )
            elif ev.kind == "call" and not prog.classify(ev.via, source=res.source):
                reached = prog.visible(res.source, ev.via) if ev.via in prog.subs else []
                for key in [k for s in reached for k in acquired.get((s.name, ev.via), [])]:
                    for h in held:
                        old = order_key(res, h)
                        if old != key:
                            edges.setdefault((old, key), []).append(
                                (res.source.name, ev.line, False, h, None)
                            )
    out: list[Finding] = []
    for (a, b), sites in edges.items():
        back = edges.get((b, a))
        if not back or a > b:
            continue
        blocking = all(s[2] for s in sites) and all(s[2] for s in back)
        for site, other in ((sites[0], back[0]), (back[0], sites[0])):
            first = site[3].text if site[3].kind == "sub" else bare(site[3].key)
            taken = site[4]
            second = (
                (taken.text if taken.kind == "sub" else bare(taken.key))
                if taken
                else "a sub's lock"
            )
            out.append(
                POLICY.finding(
                    site[0],
                    site[1],
                    f"{display(second)} is locked here while holding {display(first)}, and "
                    f"{other[0]}:{other[1]} takes them in the opposite order: two requests at "
                    f"once wait for each other {'forever' if blocking else 'until one gives up'}",
                    _order_suggestion(sites[0][3], sites[0][4]),
                    "error" if blocking else "warning",
                )
            )
    return out


def _acquire_line(inst: Inst) -> str:
    if inst.kind == "flock" and inst.open is not None:
        h = py_name(inst.open.handle)
        return f"flock({h}, LOCK_EX) or die(...)"
    method = {"mkdir": "", "sub": "", "file": ', method="excl"', "excl": ', method="excl"'}.get(
        inst.kind, f', method="{inst.kind}"'
    )
    return f'lock({inst.name or "name"}{method}) or die("busy")'


def _order_suggestion(first: Inst, second: Inst | None) -> str:
    """The two acquisitions in the order *first*, *second*, for every script to copy."""
    if second is None:
        return f"{_acquire_line(first)}  # first, in every script and sub"
    return f"{_acquire_line(first)}; {_acquire_line(second)}  # this order in every script and sub"
