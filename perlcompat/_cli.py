"""The ``perlcompat`` command: ``demo``, ``audit`` and ``locks`` subcommands."""

from __future__ import annotations

import sys

#: subcommand -> (module, one-line help).  Each module has ``main(argv) -> int``.
COMMANDS = {
    "demo": ("_demo", "run concurrent writers for every idiom and print what each lost"),
    "audit": ("_audit", "report unsafe locking idioms in Perl scripts"),
    "locks": ("_locks_cli", "list the locks in a directory; --break-stale removes stale ones"),
}


def _usage() -> str:
    lines = ["usage: perlcompat COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<6} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit status."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(_usage())
        return 0 if args else 2
    entry = COMMANDS.get(args[0])
    if entry is None:
        sys.stderr.write(f"perlcompat: unknown command {args[0]!r}\n{_usage()}")
        return 2
    from importlib import import_module

    module = import_module(f"perlcompat.{entry[0]}")
    status: int = module.main(args[1:])
    return status
