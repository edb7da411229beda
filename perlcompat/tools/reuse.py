"""A child of ``perlcompat serve --reuse N``: the next request in the same process, or none.

A child that ran a request runs the next one only if the request left the process as
it found it; on any doubt it ends as under plain CGI (the next request gets a fresh
fork).  The check, after the script's ``__main__`` is cleared (its files closed, as
at Python's exit): no thread but this one, no ``atexit`` handler added, no child
process, no timer or alarm, the signal handlers, mask, umask, user and group ids,
resource limits and ``sys`` hooks as before (perlcompat's own handlers aside: they are
put back), no perlcompat handle or lock held, the
same file descriptors open as before the first request (0, 1, 2, the request pipe), no
perlcompat module imported by the request, stdout and stderr flushed without error.

Then what the request changed is put back: the environment, ``sys.path``, every
global of perlcompat's modules but the server's own (``param()``'s query object,
``require``'s ``%INC``, ``$!``, ``%SIG`` hooks: the rebound names, and the contents of
the dicts, lists, sets and perlcompat objects they hold), the modules the script
imported from its own directory (imported again by the next request that wants them),
``random``'s seed; stdin,
stdout and stderr are new streams on new pipes.  What stays, as under mod_perl's
Registry or any FastCGI loop: the process id, and the state of the other modules the
scripts import (``--preload`` ones and the standard library's).
"""

from __future__ import annotations

import _thread
import atexit
import gc
import importlib
import os
import resource
import signal
import sys
import types

assert sys.platform != "win32"  # fork only

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_signal: Any = importlib.import_module("_signal")
_SIGNALS = tuple(int(n) for n in signal.valid_signals() if n not in (9, 19))  # KILL, STOP
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_LIMITS = tuple(
    getattr(resource, name)
    for name in ("RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NPROC")
    if hasattr(resource, name)
)


#: a dict, list or set with more entries than this when the first request comes is a
#: table, not state: not compared after each request (a script does not change perlcompat's tables).
MAX_STATE = 64


class Baseline:
    """What the process was before its first request (:func:`take`)."""

    def __init__(self) -> None:
        _subreaper()
        self.fds = sorted(os.listdir("/proc/self/fd"))
        self.atexits = atexit._ncallbacks()
        self.signals = [_signal.getsignal(n) for n in _SIGNALS]
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        self.umask = _umask()
        self.ids = _ids()
        self.limits = [resource.getrlimit(n) for n in _LIMITS]
        self.hooks = _hooks()
        self.meta = (len(sys.meta_path), len(sys.path_hooks))
        self.environ: dict[bytes, bytes] = dict(os.environ._data)  # type: ignore[attr-defined]
        self.path = list(sys.path)
        self.modules = set(sys.modules)
        self.globals: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.contents: list[tuple[Any, Any]] = []
        for name, module in list(sys.modules.items()):
            ours = name == "perlcompat" or name.startswith("perlcompat.")
            if ours and not name.startswith("perlcompat.tools") and module is not None:
                names = vars(module)
                self.globals.append((names, dict(names)))
                for value in names.values():
                    state = _state_of(value)
                    if state is not None and len(state) <= MAX_STATE:
                        self.contents.append((state, state.copy()))
        gc.freeze()  # what is here now is left out of the collections after each request


def _state_of(value: object) -> Any:
    """The mutable state a module global holds: a dict, list or set itself, or the
    attributes of a perlcompat object or thread-local (this thread's); else None."""
    if type(value) in (dict, list, set):
        return value
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
        return None
    if isinstance(value, _thread._local) or type(value).__module__.startswith("perlcompat"):
        names = getattr(value, "__dict__", None)
        return names if type(names) is dict else None
    return None


def _subreaper() -> None:
    """Become the parent of whatever the script's processes leave (Linux's
    PR_SET_CHILD_SUBREAPER): a background job of ``system("cmd &")`` is then a child
    :func:`clean` sees, not init's."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (ImportError, OSError, AttributeError):
        pass


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _ids() -> tuple[object, ...]:
    return (os.getuid(), os.geteuid(), os.getgid(), os.getegid(), tuple(os.getgroups()))


def _hooks() -> tuple[object, ...]:
    return (
        sys.excepthook,
        sys.displayhook,
        sys.unraisablehook,
        sys.gettrace(),
        sys.getprofile(),
        sys.getrecursionlimit(),
        sys.getswitchinterval(),
    )


def preload() -> None:
    """Import perlcompat's run-time modules (a request that imports one is not reused).

    All but the tools, the Windows-only ones and (unless ``--preload`` loaded redis-py)
    the Redis method; one that cannot be imported here is left out.
    """
    import pkgutil

    import perlcompat

    skip: tuple[str, ...] = ("perlcompat.tools", "perlcompat.__main__")
    skip += () if "redis" in sys.modules else ("perlcompat.locks.methods.redis",)
    packages = [perlcompat]
    while packages:
        package = packages.pop()
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            if info.name.startswith(skip) or "windows" in info.name:
                continue
            try:
                module = importlib.import_module(info.name)
            except ImportError:
                continue
            if info.ispkg:
                packages.append(module)
    for name in perlcompat.__all__:
        getattr(perlcompat, name)


def ready(base: Baseline) -> bool:
    """Before ``runner.teardown``: no thread, ``atexit`` handler, perlcompat handle or lock
    left (if one is, the child ends as Python would: threads waited for, handlers run)."""
    threading = sys.modules.get("threading")
    if threading is not None and (
        threading.active_count() > 1 or getattr(threading, "_threading_atexits", None)
    ):
        return False
    return atexit._ncallbacks() == base.atexits and not _held()


def clean(base: Baseline, directory: str) -> bool:
    """After ``runner.teardown``: whether the request left the process as *base* (see the
    module docstring).  The modules the script imported from *directory* are dropped."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            return False  # a child process runs on
    if any(signal.getitimer(timer) != (0.0, 0.0) for timer in _TIMERS):
        return False
    handlers = [_signal.getsignal(n) for n in _SIGNALS]
    if handlers != base.signals:
        for now, before in zip(handlers, base.signals):
            if now != before and not _perlcompats(now):
                return False  # (perlcompat's own, for a lock or an alarm, are put back)
    if signal.pthread_sigmask(signal.SIG_BLOCK, []) != base.mask:
        return False
    if _umask() != base.umask or _ids() != base.ids or _hooks() != base.hooks:
        return False
    if [resource.getrlimit(n) for n in _LIMITS] != base.limits:
        return False
    if (len(sys.meta_path), len(sys.path_hooks)) != base.meta:
        return False
    if not _flushed():
        return False
    fresh = set(sys.modules) - base.modules
    prefix = directory.rstrip("/") + "/"
    for name in fresh:
        if name.startswith("perlcompat"):
            return False
        file = getattr(sys.modules[name], "__file__", None) or ""
        if file.startswith(prefix):
            del sys.modules[name]  # the script's own module: imported anew next time
    try:
        return sorted(os.listdir("/proc/self/fd")) == base.fds
    except OSError:
        return False


def _perlcompats(handler: object) -> bool:
    """Whether *handler* is perlcompat's (its lock cleanup's, its ``alarm``'s)."""
    module = getattr(handler, "__module__", None)
    return isinstance(module, str) and module.startswith("perlcompat.")


def _held() -> bool:
    """Whether a perlcompat handle is open or a perlcompat lock held."""
    openfiles = sys.modules.get("perlcompat.perl.openfiles")
    for handle in list(openfiles.OPEN.values()) if openfiles is not None else ():
        try:
            if not handle.standard:
                return True  # (a handle open at the end is closed at exit, as Perl's)
        except ReferenceError:  # (a weak reference to one gone)
            continue
    cleanup = sys.modules.get("perlcompat.locks.cleanup")
    return cleanup is not None and bool(cleanup._held)


def _flushed() -> bool:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            return False
    return True


def restore(base: Baseline) -> None:
    """Put back what a clean request changed (see the module docstring)."""
    environ: dict[bytes, bytes] = os.environ._data  # type: ignore[attr-defined]
    if environ != base.environ:
        for name in [n for n in environ if n not in base.environ]:
            os.unsetenv(name)
            del environ[name]
        for name, value in base.environ.items():
            if environ.get(name) != value:
                os.putenv(name, value)
                environ[name] = value
    for number, before in zip(_SIGNALS, base.signals):
        if _signal.getsignal(number) is not before:
            _signal.signal(number, before)
    if sys.path != base.path:
        sys.path[:] = base.path
    for names, saved in base.globals:
        if names != saved:
            names.clear()
            names.update(saved)
    for value, saved in base.contents:
        if value != saved:
            value.clear()
            value.update(saved) if not isinstance(value, list) else value.extend(saved)
    errno = sys.modules.get("perlcompat.perl.errno")
    if errno is not None:
        errno.set_errno(0)  # $! unset, as in a new process
    random = sys.modules.get("random")
    if random is not None:
        random.seed()  # as a new process: its numbers are not the last request's
