"""The ``perlcompat`` command: ``demo``, ``audit``, ``locks``, ``redis-lift``, ``serve``, ``port``.

argparse is imported only here, when the command runs.  Usage errors go to stderr with
exit status 2; ``--help`` works at every level; Ctrl-C ends any subcommand with one line
on stderr and exit status 130 (each subcommand's ``with`` blocks remove its temp files
on the way out).
"""

from __future__ import annotations

import sys

#: subcommand -> (module, one-line help).  Each module has ``main(argv) -> int``.
COMMANDS = {
    "demo": ("tools.demo", "run concurrent writers for every idiom and print what each lost"),
    "audit": ("tools.audit.command", "report unsafe locking idioms in Perl scripts"),
    "locks": ("tools.locks_cli", "list the locks in a directory; --break-stale removes stale ones"),
    "redis-lift": ("tools.redis_cli", "lift a Redis lock server's hold-off when no lock is held"),
    "serve": ("tools.serve", "run ported CGI scripts over FastCGI, a forked child per request"),
    "port": ("tools.port.command", "write a first Python port of a Perl CGI script (needs PPI)"),
}


def version() -> str:
    """The installed distribution's version (``unknown`` when run from a bare checkout)."""
    from importlib import metadata

    try:
        return metadata.version("perlcompat-locks")
    except metadata.PackageNotFoundError:
        return "unknown"


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _run(args: list[str]) -> int:
    import argparse

    class _Version(argparse.Action):
        def __call__(self, *_: object) -> None:
            sys.stdout.write(f"perlcompat {version()}\n")
            raise SystemExit(0)

    parser = argparse.ArgumentParser(
        prog="perlcompat",
        description="Perl CGI locking idioms for Python ports: tools.",
        epilog="commands:\n"
        + "".join(f"  {name:<10} {help_}\n" for name, (_, help_) in COMMANDS.items())
        + "\n'perlcompat COMMAND --help' describes each command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", nargs=0, action=_Version, help="print the version and exit")
    parser.add_argument("command", nargs="?", choices=list(COMMANDS), metavar="COMMAND")
    try:
        if not args or args[0] not in COMMANDS:
            parser.parse_args(args)  # --help, --version, or a usage error
            parser.error("a COMMAND is required")
    except SystemExit as exc:
        return _exit_code(exc)
    from importlib import import_module

    module = import_module(f"perlcompat.{COMMANDS[args[0]][0]}")
    try:
        status: int = module.main(args[1:])
    except SystemExit as exc:
        return _exit_code(exc)
    return status


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand and return its exit status (130 after Ctrl-C)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        status = _run(args)
        sys.stdout.flush()  # a full disk or closed pipe shows here, not at exit
        return status
    except KeyboardInterrupt:
        sys.stderr.write("perlcompat: interrupted\n")
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 141  # what a shell reports for a command ended by SIGPIPE
    except OSError as exc:
        if exc.errno is None or not _is_stdout(exc):
            raise
        _quiet_stdout()
        sys.stderr.write(f"perlcompat: cannot write the output: {exc.strerror}\n")
        return 2


def _is_stdout(exc: OSError) -> bool:
    """True if *exc* came from writing standard output (full disk, I/O error)."""
    import errno

    wanted = (errno.ENOSPC, errno.EIO, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC))
    return exc.filename is None and exc.errno in wanted


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
