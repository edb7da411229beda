"""One CGI request in a forked child of ``perlcompat serve``: the script as ``__main__``.

The server's forker forks a spare child ahead of demand; :func:`serve_one` (never
returns) makes it look like the process a web server's mod_cgi would have started:
default signal dispositions, gc on, its own process group (the forker sets it, so a
time-out kills the script's children too), fd 1 and 2 = the pipes given, under the
``sys.stdin``/``stdout``/``stderr`` the forker made once (:func:`prepare_forker`: UTF-8
with ``surrogateescape`` as Python uses in the POSIX locale, block-buffered like a pipe).
It then waits for one request (:func:`receive`): fd 0 = the body, ``os.environ`` =
the server's environment plus the request's CGI variables, working directory and
``sys.path[0]`` = the script's directory, ``sys.argv`` = ``[script]``.  The script
runs in a fresh ``__main__`` module; ``exit()``, ``die()`` and exceptions end the
process with Python's (or Perl's) exit status, after its non-daemon threads have
ended, the ``atexit`` handlers (perlcompat's lock cleanup among them) and a flush.

What a child costs is mostly the pages of the forker's memory it writes to (each is
copied for it: about 2.7 us a page on a 2-core virtual machine), so the child runs as
little Python of its own as it can, and what every child needs is made in the forker.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import io
import itertools
import marshal
import os
import signal
import struct
import sys
import types

from perlcompat import LOCK_NB, LOCK_SH, LOCK_UN, close, flock, open_, print_, seek, tell, truncate
from perlcompat.perl.errno import set_errno

assert sys.platform != "win32"  # fork only: the serve command says so on Windows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

#: ``signal.signal`` without the signal module's enum conversions (whose code, run in a
#: child, copies about 100 pages of the forker's memory).
_set_signal: Callable[[int, Any], Any] = importlib.import_module("_signal").signal
#: signals the forker ignores or handles; the script gets them back at their defaults.
_RESET = tuple(int(getattr(signal, name)) for name in ("SIGTERM", "SIGHUP", "SIGCHLD"))
_SIG_DFL = int(signal.SIG_DFL)
_SIGINT = int(signal.SIGINT)
_INT_HANDLER = signal.default_int_handler
#: the most requests one child runs (``serve --reuse``); 1: a fresh process for each.
REUSE = 1
#: the request pipe, once a request came (the exit status goes back on it).
_ctl_fd = -1
_ctl_pid = 0  # the child that took the request (a copy the script forks is not it)
#: fds closed before the exit status is sent, where /proc/self/fd does not list them.
MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536
#: a body up to this size goes through a pipe; a larger one through an unlinked temp file.
PIPE_BODY = 65536


def _stdin_fd(body: bytes) -> int:
    """An fd that reads *body* and then end-of-file: a pipe if it fits, else a temp file."""
    if len(body) <= PIPE_BODY:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        try:
            written = os.write(write_end, body) if body else 0
        except BlockingIOError:
            written = -1
        os.close(write_end)
        if written == len(body):
            return read_end
        os.close(read_end)  # a pipe smaller than the body: spool it instead
    import tempfile

    spool = tempfile.TemporaryFile()  # noqa: SIM115  unlinked at once; gone when the script exits
    spool.write(body)
    spool.flush()
    fd = os.dup(spool.fileno())
    spool.close()
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _text_stream(fd: int, mode: str, errors: str) -> io.TextIOWrapper:
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: io.BufferedIOBase
    buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    stream = io.TextIOWrapper(buffered, encoding="utf-8", errors=errors, write_through=False)
    _STREAMS.append(stream)
    return stream


#: the streams made for this process's request (``--reuse`` closes them after it).
_STREAMS: list[io.TextIOWrapper] = []


#: the CGI variables a web server usually sends (RFC 3875 4.1 and common HTTP_ headers).
_USUAL = [
    "CONTENT_LENGTH",
    "CONTENT_TYPE",
    "DOCUMENT_ROOT",
    "GATEWAY_INTERFACE",
    "HTTP_ACCEPT",
    "HTTP_ACCEPT_ENCODING",
    "HTTP_ACCEPT_LANGUAGE",
    "HTTP_CONNECTION",
    "HTTP_COOKIE",
    "HTTP_HOST",
    "HTTP_REFERER",
    "HTTP_USER_AGENT",
    "PATH_INFO",
    "QUERY_STRING",
    "REDIRECT_STATUS",
    "REMOTE_ADDR",
    "REMOTE_PORT",
    "REQUEST_METHOD",
    "REQUEST_SCHEME",
    "REQUEST_URI",
    "SCRIPT_FILENAME",
    "SCRIPT_NAME",
    "SERVER_ADDR",
    "SERVER_NAME",
    "SERVER_PORT",
    "SERVER_PROTOCOL",
    "SERVER_SOFTWARE",
]


def prepare_forker() -> None:
    """Once, in the forker: what every child needs, made before it forks any.

    ``sys.stdin``/``stdout``/``stderr`` on fds 0, 1 and 2 (a child only puts its pipes
    under them; the forker itself writes nothing to them); the usual CGI variables
    set and unset (the C library's environment array keeps its room); each C library
    call a child makes, called once (the first call of a function binds it, which
    writes to a page of the forker's memory in every child); and the functions a
    child runs, run a few times here (CPython specializes a function's code as it
    runs, writing to it: done here, children write less).
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    _streams_on_pipes()
    global _ENVIRON
    if sys.platform == "linux" and isinstance(getattr(os.environ, "_data", None), dict):
        _ENVIRON = _c_environ()
    for _ in range(10):
        _environ(dict.fromkeys(_USUAL, "x" * 64))
        for name in _USUAL:
            del os.environ[name]  # unsetenv: in place, in the array the last call made
    if _ENVIRON is not None:
        import ctypes

        for size in range(64, 64 * 8 + 1, 64):
            ctypes.c_char_p * size  # made once, here: see _environ
    read_end, write_end = os.pipe()
    os.dup2(read_end, write_end)
    for fd in (read_end, write_end):
        os.close(fd)
    with contextlib.suppress(OSError):
        os.chdir(os.getcwd())
    os.closerange(MAX_FD, MAX_FD + 1)
    marshal.loads(request_message("", None, "", {"": ""}, b"")[20:])
    for _ in range(10):
        _warm_handles()


def _warm_handles() -> None:
    """Run the file-handle idioms once on /dev/null, before the request.

    Running a function in a forked child copies the pages its objects live on (the
    reference counts change); done here, while the spare waits, the port's own
    ``open_``/``flock``/``print_`` find them copied: the examples/counter request
    answers 0.3-0.5 ms sooner, for about 50 more pages (0.1 ms of CPU) per child.
    The forker runs it too, ten times (:func:`prepare_forker`): the functions are then
    specialized and the type caches filled, and a child writes about 30 pages fewer.
    The flock is shared and non-blocking: it never waits for anyone.
    """
    handle = open_("+< " + os.devnull)
    if handle:
        flock(handle, LOCK_SH | LOCK_NB)
        handle.readline()
        seek(handle, 0, 0)
        print_(handle, "")
        truncate(handle, tell(handle))
        flock(handle, LOCK_UN)
        close(handle)
    set_errno(0)  # the script starts with $! unset, as a new process does


def prepare(out_fd: int, err_fd: int) -> None:
    """Before any request: default signals, gc on, fd 1 and 2 = the given pipes, warm handles.

    The forker made the streams (:func:`prepare_forker`), put the child in its own
    process group and left every other signal at its default.
    """
    for number in _RESET:
        _set_signal(number, _SIG_DFL)
    _set_signal(_SIGINT, _INT_HANDLER)
    gc.enable()  # the forker runs without it; a script runs as under plain CGI
    os.dup2(out_fd, 1)  # inheritable: the script's own subprocesses share them
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    _warm_handles()


def _c_environ() -> Any:
    """The C library's ``environ`` pointer (a ctypes object), or None.

    None where ctypes cannot find it, or where the C environment is not what
    ``os.environ`` holds (C code changed it since Python started): a child then calls
    ``setenv`` for each variable, and nothing set that way is lost.
    """
    try:
        import ctypes

        pointer = ctypes.c_void_p.in_dll(ctypes.CDLL(None), "environ")
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    entries: list[bytes] = []
    if pointer.value:  # NULL: an empty environment
        strings = ctypes.cast(pointer.value, ctypes.POINTER(ctypes.c_char_p))
        while strings[len(entries)] is not None:
            entries.append(strings[len(entries)])
    data: dict[bytes, bytes] = os.environ._data  # type: ignore[attr-defined]
    if sorted(entries) != sorted(name + b"=" + value for name, value in data.items()):
        return None
    return pointer


#: the C library's ``environ``, set by :func:`prepare_forker`; None: ``setenv`` each variable.
_ENVIRON: Any = None
#: the C strings and array a child's environment points to (they live as long as the child).
_KEEP: list[object] = []


def _environ(params: dict[str, str]) -> None:
    """Add the request's CGI variables to ``os.environ`` (the server's own environment).

    ``HTTP_PROXY`` never comes from a request (httpoxy: it would be its Proxy header).
    Where the C library's ``environ`` can be had, the child points it at one new
    array of all the variables instead of calling ``setenv`` for each (whose copies
    and search tree write to some 30 pages of the heap per request); ``os.environ``
    is updated as its ``__setitem__`` would.  A later ``setenv`` (``os.environ[...] =``
    in the script) copies the array, as the C library does for any ``environ`` it did
    not allocate.
    """
    environ = os.environ
    if _ENVIRON is None:
        for name, value in params.items():
            if name != "HTTP_PROXY":
                environ[name] = value
        return
    import ctypes

    data: dict[bytes, bytes] = environ._data  # type: ignore[attr-defined]
    key: Callable[[str], bytes] = environ.encodekey  # type: ignore[assignment]
    value_of: Callable[[str], bytes] = environ.encodevalue  # type: ignore[assignment]
    for name, value in params.items():
        if name != "HTTP_PROXY":
            data[key(name)] = value_of(value)
    entries = [name + b"=" + value for name, value in data.items()]
    # room in steps of 64: ctypes makes a type per array length, and the forker has
    # made these (unused slots are NULL: the end of the environment)
    array = (ctypes.c_char_p * ((len(entries) // 64 + 1) * 64))(*entries)
    _ENVIRON.value = ctypes.addressof(array)
    _KEEP[:] = [(entries, array)]  # the last request's array is not environ any more


def _finish(status: int) -> NoReturn:
    """Wait for the script's threads, run the atexit handlers, flush, close every file,
    tell the parent *status*, exit.

    Closing first releases the script's flocks and ends its output at once, instead
    of after the kernel has torn the process down; the parent ends the request on
    the status and reaps the child later.  (No ``contextlib.suppress`` here: each
    helper a child runs for the first time costs it pages.)
    """
    threading = sys.modules.get("threading")
    try:
        # non-daemon threads are waited for, as at Python's exit (with only this thread
        # and no threading exit hook there is nothing to do, and 30 pages fewer copied)
        if threading is not None and (
            threading.active_count() > 1 or getattr(threading, "_threading_atexits", True)
        ):
            threading._shutdown()
        atexit._run_exitfuncs()
        teardown()
    finally:
        for stream in (getattr(sys, "stdout", None), getattr(sys, "stderr", None), *_STREAMS):
            try:  # noqa: SIM105
                stream.flush()  # type: ignore[union-attr]  # (ours too: under the script's)
            except Exception:  # (whatever the script put there: Python's exit ignores it too)
                pass
        status &= 0xFF
        if _ctl_fd >= 0 and os.getpid() == _ctl_pid:  # (a script's os.fork() copy says nothing)
            close_fds_but(_ctl_fd)
            try:  # noqa: SIM105
                os.write(_ctl_fd, bytes((status,)))
            except OSError:
                pass
        os._exit(status)


def teardown(collect: bool = False) -> None:
    """What Python's exit does to the script: ``__main__``'s names go (and, if *collect*,
    a collection).

    A file the script left open is closed (its buffer written) as ``python script.py``
    would; names starting with ``_`` go first, as CPython clears a module.  The
    collection, which also closes a file held only by a reference cycle, is left out
    in a child that runs one request: it costs such a child about 0.4 ms of CPU.
    """
    main = sys.modules.get("__main__")
    names = getattr(main, "__dict__", None)
    if names is None or names.get("__name__") != "__main__":
        return
    for first in (True, False):
        for name in [n for n in names if n.startswith("_") is first and n != "__builtins__"]:
            names[name] = None
    if collect:
        gc.collect()


def close_fds_but(keep: int) -> None:
    """Close every open fd except *keep*.

    Python 3.10 and later close a range in one close_range(2) call where the system
    has it (or walk /proc/self/fd); 3.9's ``os.closerange`` calls close() on every
    number up to the limit (with SC_OPEN_MAX 20000: 2 ms a request), so there only
    the fds /proc/self/fd lists are closed.  (Listing /proc/self/fd costs too: the
    kernel drops the listing's dentries when the child is reaped.)
    """
    names: list[str] = []
    if sys.version_info < (3, 10):
        try:  # noqa: SIM105
            names = os.listdir("/proc/self/fd")
        except OSError:
            pass
    if not names:
        os.closerange(0, keep)
        os.closerange(keep + 1, MAX_FD)
        return
    for name in names:
        fd = int(name)
        if fd != keep:
            try:  # noqa: SIM105
                os.close(fd)
            except OSError:  # the listing's own fd is closed already
                pass


def _uncaught(exc: BaseException) -> int:
    """Report an exception no ``try`` caught as Python (or perlcompat's ``die``) does."""
    from perlcompat.perl import die

    if isinstance(exc, die.Die) and sys.excepthook is die._die_hook:
        sys.stderr.write(exc.message)  # what the hook prints; its status, without its exit
        return exc.status & 0xFF or 255
    sys.excepthook(type(exc), exc, exc.__traceback__)
    return 1


def _exit_status(exc: SystemExit) -> int:
    """What ``python script.py`` exits with after *exc* (printing a message code)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"{code}\n")
    return 1


def receive(ctl_fd: int) -> tuple[str, types.CodeType | None, str, dict[str, str], bytes]:
    """Wait for the request on *ctl_fd*: (path, code, compile error, environment, body).

    The parent sends what :func:`request_message` makes.  End of file first means
    "no request" (the server is stopping): the child exits quietly.  The script's code
    is the forker's copy when the forker has it (:data:`CODES`), else the one sent.
    """
    global _ctl_fd, _ctl_pid
    data: bytes | bytearray = os.read(ctl_fd, 65536)
    need = 8 + int.from_bytes(data[:8], "big") if len(data) >= 8 else 8
    if len(data) < need:  # a large body: more reads
        data = bytearray(data)
        while len(data) < need:
            chunk = os.read(ctl_fd, max(need - len(data), 65536))
            if not chunk:
                os._exit(0)
            data += chunk
            if need == 8 and len(data) >= 8:
                need = 8 + int.from_bytes(data[:8], "big")
    _ctl_fd = ctl_fd
    _ctl_pid = os.getpid()
    view = memoryview(data)[8:need]
    sent = 12 + int.from_bytes(view[8:12], "big")
    code = CODES.get(int.from_bytes(view[:8], "big"))
    if code is None and sent > 12:
        code = marshal.loads(view[12:sent])
    path, error, env, body = marshal.loads(view[sent:])
    return path, code, error, env, body


#: the forker's copies of the scripts' code, by number (:func:`request_message`); a child
#: runs these instead of unmarshalling the code sent (which interns every name again).
CODES: dict[int, types.CodeType] = {}
#: the most codes kept, in the parent's record and in the forker.
MAX_CODES = 64
#: in the parent: the code objects sent so far, by ``id``: (code, number, marshal of it).
_sent: dict[int, tuple[types.CodeType, int, bytes]] = {}
_numbers = itertools.count(1)
#: in the parent: what gives the forker a new code (``Forker.share``); None: no forker yet.
share: Callable[[int, bytes], object] | None = None


def request_message(
    path: str, code: types.CodeType | None, error: str, env: dict[str, str], body: bytes
) -> bytes:
    """What :func:`receive` reads (built by the parent).

    A length, the code's number (0: none) and its ``marshal``, then a ``marshal`` of
    the rest.  A code object not seen before gets a new number and is offered to the
    forker, so the spares it forks afterwards have their own copy of it.
    """
    number, blob = 0, b""
    if code is not None:
        known = _sent.get(id(code))
        if known is None or known[0] is not code:
            known = (code, next(_numbers), marshal.dumps(code))
            _sent[id(code)] = known
            while len(_sent) > MAX_CODES:
                del _sent[next(iter(_sent))]
            if share is not None:
                share(known[1], known[2])
        number, blob = known[1], known[2]
    rest = marshal.dumps((path, error, env, body))
    size = 12 + len(blob) + len(rest)
    head = size.to_bytes(8, "big") + number.to_bytes(8, "big") + len(blob).to_bytes(4, "big")
    return head + blob + rest


def take_code(number: int, blob: bytes) -> None:
    """In the forker: keep the code the parent offered, for the spares forked from now on."""
    try:
        code = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return
    if isinstance(code, types.CodeType):
        CODES[number] = code
        while len(CODES) > MAX_CODES:
            del CODES[next(iter(CODES))]
        gc.freeze()  # the children's collections leave it alone (and its pages unwritten)


def serve_one(ctl_fd: int, out_fd: int, err_fd: int) -> NoReturn:
    """A spare child: get ready, wait for a request on *ctl_fd*, run it; never returns.

    With ``serve --reuse N`` (:data:`REUSE`) a child whose request left it clean
    (``tools.reuse``) gets new pipes and waits for the next one, N requests at most.
    """
    try:
        prepare(out_fd, err_fd)
    except BaseException as exc:
        os.write(2, f"perlcompat serve: cannot start the script: {exc!r}\n".encode())
        os._exit(127)
    left = REUSE
    base = None
    if left > 1:
        from . import reuse

        base = reuse.Baseline()
    while True:
        path, code, error = _start(ctl_fd)
        if base is not None:
            from . import reuse

            reuse.unshadow(base, path[: path.rindex("/")] or "/")
        left -= 1
        if base is None or left <= 0:
            run(path, code, error)
        status = execute(path, code, error)
        _next(base, status)


def _start(ctl_fd: int) -> tuple[str, types.CodeType | None, str]:
    """Wait for the request; make the process its CGI process (stdin, environment, directory)."""
    try:
        path, code, error, env, body = receive(ctl_fd)
        stdin = _stdin_fd(body)
        if stdin != 0:
            os.dup2(stdin, 0)  # sys.stdin reads fd 0: now the body
            os.close(stdin)
        _environ(env)
        directory = path[: path.rindex("/")] or "/"  # the parent sends a real, absolute path
        os.chdir(directory)
        sys.argv = [path]
        sys.path[0] = directory
    except BaseException as exc:  # the request cannot start: say why on the log
        os.write(2, f"perlcompat serve: cannot start the script: {exc!r}\n".encode())
        os._exit(127)
    return path, code, error


def _next(base: Any, status: int) -> None:
    """After a request of a reused child: end as :func:`_finish` does, or get ready for the next.

    Ready (``tools.reuse``): the exit status and the read ends of two new pipes (the
    next request's stdout and stderr) go to the parent on the request pipe, with ``R``.
    """
    from . import reuse

    try:
        if os.getpid() != _ctl_pid or not reuse.ready(base):
            _finish(status)  # (a copy the script forked: _finish says nothing for it)
        dropped = reuse.drop_modules(base)
        _own_streams_back()  # (a replacement that owns fd 1 closes it now, on this request)
        teardown(collect=True)
        if not (dropped and reuse.clean(base) and _close_streams()):
            _finish(status)
        reuse.restore(base)
    except BaseException as exc:  # (a script may leave what the checks cannot read)
        try:  # noqa: SIM105
            os.write(2, f"perlcompat serve: the child ends after its request: {exc!r}\n".encode())
        except OSError:
            pass
        _finish(status)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    os.dup2(out_w, 1)  # the last request's pipes end here: the parent reads their end
    os.dup2(err_w, 2)
    for fd in (out_w, err_w):
        os.close(fd)
    _fresh_streams()
    import socket

    sock = socket.socket(fileno=_ctl_fd)
    try:
        rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("2i", out_r, err_r))
        sock.sendmsg((bytes((status & 0xFF,)) + b"R",), (rights,))
    except OSError:
        os._exit(status & 0xFF)  # the parent is gone
    finally:
        sock.detach()
        os.set_blocking(_ctl_fd, True)  # (a default socket time-out would have cleared it)
    os.close(out_r)
    os.close(err_r)


def _own_streams_back() -> None:
    """Flush whatever the script put in ``sys.stdin``/``stdout``/``stderr`` (and their
    ``__std*__``), and put the streams made for the request back there; the script's
    objects then go with its ``__main__`` (one that owns a descriptor closes it: the
    request's pipe, and the descriptor check ends the child)."""
    names = ("stdin", "stdout", "stderr")
    for prefix in ("", "__"):  # sys.stdout first, as Python's exit flushes it
        for index, name in enumerate(names):
            current = getattr(sys, f"{prefix}{name}{prefix}", None)
            if current is not _STREAMS[index - 3]:
                try:  # noqa: SIM105
                    current.flush()  # type: ignore[union-attr]  # (into ours: flushed next)
                except Exception:  # (whatever the script put there, or nothing)
                    pass
    for index, name in enumerate(names):
        own = _STREAMS[index - 3]
        try:  # noqa: SIM105  (a script's wrapper of its buffer closes or detaches it)
            own.flush()
        except Exception:  # (_close_streams flushes again: a failure there counts)
            pass
        setattr(sys, name, own)
        setattr(sys, f"__{name}__", own)


def _close_streams() -> bool:
    """Flush the request's stdout and stderr (the script's own ``sys.stdout`` too), then
    close the streams made for it: nothing written to them later reaches the next
    request's pipes.  False if a flush failed (what it held goes nowhere)."""
    done = True
    streams: list[Any] = [sys.stdout, sys.stderr]
    for stream in {id(s): s for s in streams}.values():
        try:
            if not stream.closed:
                stream.flush()
        except ValueError:  # closed or detached by a wrapper of the script's: it said so
            pass
        except Exception:  # (whatever the script put there)
            done = False
    for own in _STREAMS:
        try:
            own.close()  # (the descriptor stays: closefd=False; closing twice is nothing)
        except ValueError:  # detached by a wrapper of the script's (which has its buffer)
            pass
        except Exception:
            done = False
    _STREAMS.clear()
    return done


def _streams_on_pipes() -> None:
    """:func:`_fresh_streams`, made while fds 0-2 are a pipe, as they are in a child: a
    stream notes once whether its file can seek (``serve``'s own stdout may be
    ``/dev/null`` or a file; a script's ``sys.stdout.reconfigure()`` would then ask the
    child's pipe for its position and fail with ESPIPE)."""
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    read_end, write_end = os.pipe()
    try:
        os.dup2(read_end, 0)
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        _fresh_streams()
        for stream in _STREAMS[-3:]:
            stream.seekable()  # asked now, of the pipe
    finally:
        for fd, copy in enumerate(saved):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(read_end)
        os.close(write_end)


def _fresh_streams() -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` on fds 0-2, the originals (``sys.__stdout__``)
    too: a CGI process has only these (a request may have changed or replaced them)."""
    for name, fd, mode, errors in (
        ("stdin", 0, "r", "surrogateescape"),
        ("stdout", 1, "w", "surrogateescape"),
        ("stderr", 2, "w", "backslashreplace"),
    ):
        stream = _text_stream(fd, mode, errors)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def run(path: str, code: types.CodeType | None, error: str) -> NoReturn:
    """Run *code* as ``__main__`` (or print its compile *error*) and end the process."""
    _finish(execute(path, code, error))


def execute(path: str, code: types.CodeType | None, error: str) -> int:
    """Run *code* as ``__main__`` (or print its compile *error*); its exit status."""
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__dict__["__builtins__"] = __builtins__
    main.__dict__["__cached__"] = None
    sys.modules["__main__"] = main
    status = 0
    try:
        if code is None:
            sys.stderr.write(error)
            status = 1
        else:
            exec(code, main.__dict__)
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:
        status = _uncaught(exc)
    return status
