"""``perlcompat serve``: ported CGI scripts behind FastCGI, a forked child per request.

``perlcompat serve --fastcgi unix:PATH|HOST:PORT|PORT --root DIR [--timeout S]
[--max-children N] [--max-connections N] [--idle-timeout S] [--max-body BYTES]
[--ext .py,...] [--preload MOD,...] [--reuse N]``.
The parent imports perlcompat (every name) and the ``--preload`` modules once;
each request then costs a fork instead of an interpreter start.  The web server
passes SCRIPT_FILENAME; only files inside ``--root`` (symlinks and ``..``
resolved) with an allowed extension run, anything else is a 403 with nothing run.
A unix socket is created with mode 0660; a bare PORT listens on 127.0.0.1, which
every local user can reach (the command warns).  A request sets only CGI variables.
The loop is ``tools.server``, the child ``tools.runner``, the wire format
``tools.fastcgi``.  Needs ``fork``: on Windows it says so and exits with status 2.
"""

from __future__ import annotations

import contextlib
import os
import sys


def _log(message: str) -> None:
    try:
        sys.stderr.write(f"perlcompat serve: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _size(text: str) -> int:
    """``1048576``, ``512K``, ``64M``, ``1G`` -> bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    scale = units.get(text[-1:].upper(), 1)
    number = text[:-1] if scale > 1 else text
    if not number.isdigit():
        raise ValueError(f"{text!r} is not a size (bytes, or with K, M or G)")
    return int(number) * scale


def preload(modules: list[str]) -> None:
    """Import perlcompat's every name and each of *modules* (raises ImportError), then warm."""
    import importlib

    import perlcompat

    for name in perlcompat.__all__:
        getattr(perlcompat, name)
    for module in modules:
        importlib.import_module(module)
    warm_up()


def warm_up() -> None:
    """Run the file-handle idioms once on a private temp file, then remove it.

    A port's first ``open_``/``flock``/``print_`` in a process fills caches (codecs,
    layers, compiled patterns); done here, every forked child starts with them filled
    (measured: a counter's first run in a child 0.65 -> 0.27 ms).  Nothing stays open
    or locked, and the temp directory is gone afterwards.
    """
    import tempfile

    from perlcompat import (
        LOCK_EX,
        LOCK_UN,
        OS_ERROR,
        Die,
        close,
        die,
        filetest,
        flock,
        open_,
        print_,
        seek,
        tell,
        truncate,
    )

    with tempfile.TemporaryDirectory(prefix="perlcompat-warm-") as directory:
        path = os.path.join(directory, "warm.dat")
        for mode in (">> ", "+< ", "< ", "> "):
            if not filetest("-e", path) and mode != ">> ":
                continue
            handle = open_(mode + path) or die(f"warm-up: {OS_ERROR}")
            flock(handle, LOCK_EX)
            if mode in ("+< ", "< "):
                handle.readline()
                handle.readlines()
            if mode != "< ":
                seek(handle, 0, 0)
                print_(handle, "1\n", 2, "\n")
                truncate(handle, tell(handle))
            flock(handle, LOCK_UN)
            close(handle)
        with contextlib.suppress(Die):
            die("warm-up")
    from perlcompat.perl.errno import set_errno

    set_errno(0)  # the children start with $! unset, as a new process does


def main(argv: list[str]) -> int:
    """Run the server until SIGTERM/SIGINT; 2 on a usage error or where there is no fork."""
    if sys.platform == "win32" or not hasattr(os, "fork"):
        _log("needs fork (a POSIX system); on Windows run the scripts as plain CGI (docs/serve.md)")
        return 2
    else:  # a branch of its own: type checkers for Windows skip it
        _open_std_fds()
        return _serve(argv)


def _open_std_fds() -> None:
    """Put ``/dev/null`` on fd 0, 1 or 2 if closed (a daemon manager may start serve so).

    Else the first socket or pipe serve makes takes that number, and a child's
    streams put onto fd 0-2 close it under the server.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for name, fd in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:  # (Python started without it)
            stream = open(fd, "r" if fd == 0 else "w", closefd=False)  # noqa: SIM115
            setattr(sys, name, stream)
            setattr(sys, f"__{name}__", stream)


TYPE_CHECKING = False

if sys.platform != "win32":
    if TYPE_CHECKING:
        from .forker import Forker

    def _start_forker() -> Forker:
        """Fork the forker now, before the server's own modules load (``tools.forker``).

        Every child is forked from the forker, and the less memory it has, the less a
        fork costs it and an exit its child (measured: each MiB of it about 0.07 ms of
        CPU per request; the server's modules are some 2 MiB).  The CGI variables are
        gone from its environment first (a request brings its own).
        """
        from .cgienv import clear_cgi_variables
        from .forker import Forker

        clear_cgi_variables()
        return Forker(lambda: None)  # nothing to close: no socket exists yet

    def _serve(argv: list[str]) -> int:
        """Parse the options, listen, and run the server."""
        import argparse
        import socket

        parser = argparse.ArgumentParser(
            prog="perlcompat serve",
            description="Serve ported CGI scripts over FastCGI: a warm parent forks a child per"
            " request; only scripts inside --root run.",
        )
        parser.add_argument(
            "--fastcgi",
            required=True,
            metavar="ADDRESS",
            help="HOST:PORT, PORT (on 127.0.0.1) or unix:PATH (created with mode 0660)",
        )
        parser.add_argument("--root", required=True, help="only scripts inside DIR run")
        parser.add_argument(
            "--timeout",
            type=float,
            default=300.0,
            metavar="S",
            help="seconds a request may run before it is killed (default 300)",
        )
        parser.add_argument(
            "--max-children",
            type=int,
            default=16,
            metavar="N",
            help="requests running at once; more wait their turn (default 16)",
        )
        parser.add_argument(
            "--max-connections",
            type=int,
            default=256,
            metavar="N",
            help="connections at once, one peer (user or address) at most half (default 256)",
        )
        parser.add_argument(
            "--idle-timeout",
            type=float,
            default=60.0,
            metavar="S",
            help="seconds a connection may stay without a complete request (default 60)",
        )
        parser.add_argument(
            "--max-body",
            default="64M",
            metavar="BYTES",
            help="largest request body; a larger one is a 413 (default 64M)",
        )
        parser.add_argument(
            "--ext",
            default=".py",
            metavar="EXT,...",
            help="extensions a script may have (default .py; e.g. .py,.cgi for ports kept as .cgi)",
        )
        parser.add_argument(
            "--reuse",
            type=int,
            default=1,
            metavar="N",
            help="requests one child may run, each only if the last left it clean (default 1:"
            " a fresh process per request; see docs/serve.md)",
        )
        parser.add_argument(
            "--preload",
            default="",
            metavar="MOD,...",
            help="modules to import once in the parent (the scripts' own imports)",
        )
        args = parser.parse_args(argv)
        try:
            max_body = _size(args.max_body)
        except ValueError as exc:
            parser.error(f"--max-body: {exc}")
        if (
            min(args.timeout, args.idle_timeout) <= 0
            or min(args.max_children, args.max_connections, args.reuse) < 1
        ):
            parser.error(
                "--timeout, --idle-timeout, --max-children, --max-connections, --reuse: positive"
            )
        extensions = tuple(e if e.startswith(".") else "." + e for e in args.ext.split(",") if e)
        if not extensions:
            parser.error("--ext: name at least one extension")
        if not os.path.isdir(args.root):
            parser.error(f"--root {args.root}: not a directory")
        modules = [m.strip() for m in args.preload.split(",") if m.strip()]
        try:
            preload(modules)
        except ImportError as exc:
            parser.error(f"--preload: {exc}")

        from . import runner

        runner.REUSE = args.reuse
        forker = _start_forker()
        from .listen import listen
        from .server import Options, Server

        try:
            listener = listen(args.fastcgi)
        except (OSError, ValueError) as exc:
            forker.close()
            parser.error(f"--fastcgi {args.fastcgi}: {exc}")
        if listener.family != socket.AF_UNIX:
            host = listener.getsockname()[0]
            if not (host.startswith("127.") or host == "::1"):
                _log(f"warning: listening on {host}, not loopback: whoever reaches it runs scripts")
            else:
                _log(
                    f"warning: TCP {host} is open to every local user, who can then run the"
                    " scripts as this user; a unix socket (unix:PATH, mode 0660) is not"
                )
        options = Options(
            root=args.root,
            timeout=args.timeout,
            max_children=args.max_children,
            max_body=max_body,
            extensions=extensions,
            max_connections=args.max_connections,
            idle_timeout=args.idle_timeout,
            reuse=args.reuse,
        )
        _log(f"listening on {args.fastcgi}, root {os.path.realpath(args.root)}")
        try:
            return Server(listener, options, _log, forker).serve()
        finally:
            if args.fastcgi.startswith("unix:"):
                with contextlib.suppress(OSError):
                    os.unlink(args.fastcgi[5:])
            listener.close()
