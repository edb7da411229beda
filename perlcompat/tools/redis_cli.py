"""``perlcompat redis-lift URL``: lift a Redis lock server's hold-off, when no lock can be held.

A Redis server that perlcompat has no record on (new, restarted, flushed)
grants no lock for one max lease after its start (docs/redis.md, "Restarts and
the hold-off"), because a holder from before may still be working.  On a fresh
install, or once every client is stopped, the operator knows better: this
command shows the hold-off left and the locks held there, asks for
confirmation (``--yes`` answers it), and then records "no lock from before"
(``SET perlcompat:epoch 0``), in one atomic step that refuses while any
perlcompat lock is held there.  Exit status: 0 lifted (or nothing to lift),
1 declined or refused (a lock is held), 2 a usage error or a server that
cannot be reached.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def main(argv: list[str], ask: Callable[[str], str] | None = None) -> int:
    """Run ``perlcompat redis-lift``; *ask* prompts for the confirmation (default ``input``)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="perlcompat redis-lift",
        description="Lift the hold-off of a Redis lock server that holds no lock from before"
        " its start (a fresh install, or every client stopped): its locks are granted at once.",
    )
    parser.add_argument("url", help="the lock url, as the clients give it (redis://host:6379/0)")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    args = parser.parse_args(argv)
    try:
        from ..locks.methods.redis import hold_off, redact

        shown = redact(args.url)
        left, held = hold_off(args.url)
    except (OSError, ValueError, ModuleNotFoundError) as exc:
        sys.stderr.write(f"perlcompat redis-lift: {exc}\n")
        return 2
    if held:
        sys.stdout.write(
            f"{shown}: {len(held)} lock(s) held there ({', '.join(held)}): not lifted;"
            " the hold-off ends by itself\n"
        )
        return 1
    if left == 0:
        sys.stdout.write(f"{shown}: no hold-off: locks are granted now\n")
        return 0
    state = "no record yet (the first lock waits up to one max lease after the server's start)"
    if left is not None:
        state = f"no lock is granted for {left:.3g} s more"
    sys.stdout.write(f"{shown}: {state}; no perlcompat lock is held there\n")
    if not args.yes:
        prompt = (
            "Lift the hold-off? Only if no process can still be working under a lock"
            " taken before the server's start. [y/N] "
        )
        try:
            answer = (ask or input)(prompt)
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            sys.stdout.write("not lifted\n")
            return 1
    try:
        left, held = hold_off(args.url, lift=True)
    except OSError as exc:
        sys.stderr.write(f"perlcompat redis-lift: {exc}\n")
        return 2
    if held:  # taken meanwhile: the check and the lift are one step on the server
        sys.stdout.write(f"{shown}: a lock was taken meanwhile ({', '.join(held)}): not lifted\n")
        return 1
    sys.stdout.write(f"{shown}: lifted: locks are granted now\n")
    return 0
