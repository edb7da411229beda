"""Perl's child processes: piped ``open``, ``qx``/backticks, ``system``, and ``$?``.

``CHILD_ERROR`` is English.pm's name for ``$?``: the wait status of the last
child that ``close`` of a pipe, ``qx`` or ``system`` waited for (exit code << 8,
or the signal number, +128 if it dumped core), -1 when the command could not be
started.  It is one live object, like ``OS_ERROR``: ``CHILD_ERROR >> 8``,
``int(CHILD_ERROR)``, ``CHILD_ERROR == 768``, ``f"{CHILD_ERROR}"`` all read the
calling thread's value; ``CHILD_ERROR.set(n)`` is ``$? = n``.

A command given as one string runs as Perl runs it: through ``/bin/sh -c`` when
it holds a shell metacharacter (``$&*(){}[]'";\\|?<>~`` and backquote, a newline
inside, ``VAR=value`` or ``exec`` at the start), else split on white space and
executed directly (so ``system("exit 5")`` fails to start: -1, as in Perl); a
final ``2>&1`` is honoured without a shell.  Several arguments never go through
the shell.  As Perl does since 5.6, every handle's pending output (and
``sys.stdout``/``sys.stderr``) is written before the child starts.

``subprocess`` is imported here, and this module is loaded only by the first
pipe, ``qx`` or ``system``: ``import perlcompat`` stays cheap.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from _thread import _local

from .errno import fail, fail_from, set_errno
from .lists import PerlList
from .openfiles import flush_all
from .perlio import _DEFAULT_CRLF, PerlFile, Unopened

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence
    from typing import Union

    Command = Union[str, Sequence[object]]

__all__ = ["CHILD_ERROR", "PipeFile", "open_pipe", "qx", "qx_lines", "system"]

# -- $? ---------------------------------------------------------------------------

_state = _local()  # .status: this thread's $?


def get_status() -> int:
    """The calling thread's ``$?``."""
    status: int = getattr(_state, "status", 0)
    return status


def set_status(status: int) -> None:
    """Set the calling thread's ``$?``."""
    _state.status = int(status)


class _ChildErrorVar:
    """The live value behind ``CHILD_ERROR`` (``$?``): an int that follows the last wait."""

    __slots__ = ()

    def set(self, status: int) -> None:
        """Assign, like Perl's ``$? = N``."""
        set_status(status)

    @property
    def value(self) -> int:
        """The wait status as a plain int."""
        return get_status()

    def __int__(self) -> int:
        return get_status()

    def __index__(self) -> int:
        return get_status()

    def __str__(self) -> str:
        return str(get_status())

    def __format__(self, spec: str) -> str:
        return format(get_status(), spec)

    def __repr__(self) -> str:
        return f"CHILD_ERROR({get_status()})"

    def __bool__(self) -> bool:
        return get_status() != 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _ChildErrorVar):
            return True
        if isinstance(other, (int, float)):
            return get_status() == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(get_status())

    def __lt__(self, other: int) -> bool:
        return get_status() < other

    def __le__(self, other: int) -> bool:
        return get_status() <= other

    def __gt__(self, other: int) -> bool:
        return get_status() > other

    def __ge__(self, other: int) -> bool:
        return get_status() >= other

    def __rshift__(self, other: int) -> int:
        return get_status() >> other

    def __and__(self, other: int) -> int:
        return get_status() & other

    __rand__ = __and__

    def __add__(self, other: int) -> int:
        return get_status() + other

    __radd__ = __add__


CHILD_ERROR = _ChildErrorVar()


def _wait_status(code: int) -> int:
    """Perl's ``$?`` from a ``Popen.returncode`` (Windows; POSIX reads the raw status)."""
    return -code if code < 0 else (code & 0xFFFFFF) << 8


# -- how Perl runs a command string (doio.c, do_exec3) ------------------------------

_METACHARS = frozenset("$&*(){}[]'\";\\|?<>~`\n")
_SPACES = str.maketrans("\t\n\r\f\v", "     ")  # Perl's isSPACE: ASCII white space only


def perl_argv(command: str) -> tuple[list[str] | None, bool]:
    """How Perl runs *command*: ``(argv, stderr_to_stdout)``; argv None means ``sh -c``."""
    cmd = command.lstrip()
    if cmd.startswith(". ") or cmd.startswith(".\t"):
        return None, False
    if cmd.startswith("exec") and cmd[4:5].isspace():
        return None, False
    word = 0
    while word < len(cmd) and (cmd[word].isascii() and (cmd[word].isalnum() or cmd[word] == "_")):
        word += 1
    if cmd[word : word + 1] == "=":
        return None, False
    merge = False
    for i, char in enumerate(cmd):
        if char == " " or char not in _METACHARS:
            continue
        if char == "\n" and i == len(cmd) - 1:
            cmd = cmd[:i]
            break
        if (
            cmd[i : i + 3] == ">&1"
            and i > 1
            and cmd[i - 1] == "2"
            and cmd[i - 2].isspace()
            and not cmd[i + 3 :].strip()
        ):
            cmd = cmd[: i - 2]
            merge = True
            break
        return None, False
    return [word for word in cmd.translate(_SPACES).split(" ") if word], merge


def _flush_for_child() -> None:
    """Write out all pending output before a child starts, as Perl does since 5.6."""
    flush_all()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is not None:
            try:  # noqa: SIM105
                stream.flush()
            except (OSError, ValueError):
                pass


def _spawn(command: Command, **streams: int) -> subprocess.Popen[bytes]:
    """Start *command* Perl's way (see the module doc); OSError if it cannot start."""
    import subprocess

    _flush_for_child()
    merge = False
    if isinstance(command, str):
        argv, merge = perl_argv(command)
        if argv is not None and not argv:
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    else:
        argv = [_arg(item) for item in command]
        if not argv:
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), "")
    if merge:
        streams["stderr"] = subprocess.STDOUT
    if argv is None:
        return subprocess.Popen(command, shell=True, **streams)  # type: ignore[call-overload, no-any-return]
    try:
        return subprocess.Popen(argv, **streams)  # type: ignore[call-overload, no-any-return]
    except OSError as exc:
        if exc.errno != errno.ENOEXEC or not isinstance(command, str):
            raise
        return subprocess.Popen(command, shell=True, **streams)  # type: ignore[call-overload, no-any-return]


def _arg(item: object) -> str:
    """One argument of the list form, stringified as Perl does."""
    if isinstance(item, str):
        return item
    if isinstance(item, bytes):
        return os.fsdecode(item)
    if item is None or item is False:
        return ""
    if item is True:
        return "1"
    if isinstance(item, float) and item.is_integer() and abs(item) < 1e15:
        return str(int(item))
    return format(item, ".15g") if isinstance(item, float) else str(item)


def _reap(proc: subprocess.Popen[bytes]) -> int:
    """Wait for *proc*; return Perl's ``$?`` for it (-1 and ``$!`` if the wait failed)."""
    if sys.platform == "win32":
        return _wait_status(proc.wait())
    while True:
        try:
            pid, status = os.waitpid(proc.pid, 0)
        except ChildProcessError:
            set_errno(errno.ECHILD)
            proc.returncode = 0  # (not ours to wait for: Popen must not try again)
            return -1
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return status


def _args(command: tuple[object, ...]) -> Command:
    """``system("cmd")``, ``system("prog", "arg")`` or ``system(["prog", "arg"])``."""
    if len(command) == 1:
        first = command[0]
        if isinstance(first, (list, tuple)):
            return list(first)
        return first if isinstance(first, str) else _arg(first)
    return list(command)


# -- system, qx ---------------------------------------------------------------------


def system(*command: object) -> int:
    """Perl's ``system``: run and wait; return ``$?`` (0: success; -1: could not start).

    As Perl, the parent ignores SIGINT and SIGQUIT while it waits (main thread, POSIX).
    """
    try:
        proc = _spawn(_args(command))
    except OSError as exc:
        fail_from(exc)
        set_status(-1)
        return -1
    saved = _ignore_interrupts()
    try:
        status = _reap(proc)
    finally:
        _restore_interrupts(saved)
    set_status(status)
    return status


def _ignore_interrupts() -> list[tuple[int, object]]:
    saved: list[tuple[int, object]] = []
    if sys.platform == "win32":
        return saved
    import threading

    if threading.current_thread() is not threading.main_thread():
        return saved
    for signum in (signal.SIGINT, signal.SIGQUIT):
        saved.append((signum, signal.signal(signum, signal.SIG_IGN)))
    return saved


def _restore_interrupts(saved: list[tuple[int, object]]) -> None:
    for signum, handler in saved:
        signal.signal(signum, handler)  # type: ignore[arg-type]


def _capture(command: Command) -> bytes | None:
    """Run *command* with its output in a pipe; the bytes (None: it could not start)."""
    read_end, write_end = os.pipe()
    try:
        proc = _spawn(command, stdout=write_end)
    except OSError as exc:
        os.close(read_end)
        os.close(write_end)
        fail_from(exc)
        set_status(-1)
        return None
    os.close(write_end)
    parts = []
    try:
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            parts.append(chunk)
    finally:  # (an ALRM handler's die leaves the command running, unwaited, as in Perl)
        os.close(read_end)
    set_status(_reap(proc))
    data = b"".join(parts)
    return data.replace(b"\r\n", b"\n") if _DEFAULT_CRLF else data


def qx(*command: object) -> str | None:
    """Perl's `` `cmd` `` / ``qx(cmd)`` in scalar context: the output as text (None: not started).

    The output is decoded as a handle decodes it (UTF-8, ``surrogateescape``: any
    bytes come back unchanged when printed); ``CHILD_ERROR`` is set as Perl sets ``$?``.
    """
    data = _capture(_args(command))
    return None if data is None else data.decode("utf-8", "surrogateescape")


def qx_lines(*command: object) -> list[str]:
    """`` @lines = `cmd` ``: the output's lines, each with its newline (``[]``: not started)."""
    data = _capture(_args(command))
    lines: list[str] = PerlList()
    if data:
        text = data.decode("utf-8", "surrogateescape")
        lines.extend(text.splitlines(keepends=True) if "\r" not in text else _lines(text))
    return lines


def _lines(text: str) -> list[str]:
    """Split at ``\\n`` only (str.splitlines also splits at ``\\r`` and others)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# -- piped open ----------------------------------------------------------------------


class PipeFile(PerlFile):
    """A handle on a child's stdin (``open_("|cmd")``) or stdout (``open_("cmd |")``).

    ``close`` flushes, closes and waits for the child, setting ``CHILD_ERROR``; as
    Perl's, it returns 0 when the child exited non-zero (``OS_ERROR`` 0 then), or
    0 with ``OS_ERROR`` set and ``CHILD_ERROR`` -1 when the last write failed.
    """

    __slots__ = ("_owner", "_proc")

    _proc: subprocess.Popen[bytes] | None
    _owner: int  # the pid that started the child (a forked copy does not wait for it)

    def perl_close(self) -> int:
        """Perl's ``close`` of a piped handle (see the class doc)."""
        if self._closed:
            return fail(errno.EBADF)
        failed: OSError | None
        try:
            failed = PerlFile._shut(self)
        except OSError as exc:
            failed = exc
        status = self._wait()
        if failed is not None:
            set_status(-1)
            return fail_from(failed)
        set_status(status)
        if status:
            set_errno(0)
            return 0
        return 1

    def _wait(self) -> int:
        proc, self._proc = self._proc, None
        if proc is None:
            return 0
        if self._owner != os.getpid():  # a forked child: not its child to wait for
            proc.returncode = 0
            set_errno(errno.ECHILD)
            return -1
        return _reap(proc)

    def _shut(self) -> OSError | None:
        failed = PerlFile._shut(self)
        set_status(self._wait())
        return failed

    def close(self) -> None:
        """Flush, close and wait for the child (``CHILD_ERROR`` says how it ended)."""
        if not self._closed:
            failed = self._shut()
            if failed is not None:
                raise failed

    def seekable(self) -> bool:
        """False: a pipe cannot seek."""
        return False

    def _seek(self, offset: int, whence: int) -> int:
        raise OSError(errno.ESPIPE, os.strerror(errno.ESPIPE))  # (nothing read ahead is lost)

    def _drop_read(self) -> None:
        """Keep the read-ahead: a pipe cannot move back (a flush or ``flock`` loses nothing)."""

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"fd={self._fd}"
        return f"<PipeFile {self.mode}{self.name!r} {state}>"


def open_pipe(mode: str, command: Command, text: bool, encoding: str, crlf: bool) -> PerlFile:
    """Start *command* with a pipe to its stdin (*mode* ``|-``) or from its stdout (``-|``).

    Returns a :class:`PipeFile`, or a closed false handle with ``OS_ERROR`` set if
    the command could not be started (Perl's ``open`` reports a failed exec too).
    """
    read_end, write_end = os.pipe()
    writing = mode == "|-"
    ours, theirs = (write_end, read_end) if writing else (read_end, write_end)
    name = command if isinstance(command, str) else " ".join(_arg(a) for a in command)
    try:
        proc = _spawn(command, **{"stdin" if writing else "stdout": theirs})
    except OSError as exc:
        os.close(ours)
        os.close(theirs)
        fail_from(exc)
        failed = object.__new__(Unopened)
        failed._setup(-1, name, mode, not writing, writing, False, text, encoding, crlf)
        failed._closed = failed._eof = True
        failed._pos = -1
        failed._site = None
        return failed
    os.close(theirs)
    fh: PipeFile = object.__new__(PipeFile)
    fh._setup(ours, name, mode, not writing, writing, False, text, encoding, crlf)
    fh._pos = 0  # as PerlIO: tell() counts the bytes read or written
    fh._proc = proc
    fh._owner = os.getpid()
    caller = sys._getframe(2)
    fh._site = caller.f_code
    fh._site_at = caller.f_lasti
    set_errno(errno.ESPIPE if sys.platform != "win32" else 0)  # (Perl's lseek at open fails)
    return fh
