"""A child of ``perlcompat serve --reuse N``: the next request in the same process, or none.

A child that ran a request runs the next one only if the request left the process as
it found it; on any doubt it ends as under plain CGI (the next request gets a fresh
fork).  After the script, :func:`drop_modules` drops the modules the request imported
(but the standard library's and site-packages'), ``runner.teardown`` clears its
``__main__`` and collects (its files closed, as at Python's exit), and :func:`clean`
checks: no thread but this one, no ``atexit`` handler added, no child process (the
child adopts what its script's processes leave: Linux's PR_SET_CHILD_SUBREAPER), no
timer or alarm; the signal handlers (perlcompat's own aside), mask, umask, user and
group ids, priority, resource limits, locale, ``sys`` and ``threading`` hooks,
builtins, ``gc`` settings and callbacks, socket time-out, every logger's set-up, the
``decimal`` context, ``csv``'s limit and perlcompat's classes as before; no
perlcompat handle or lock held; the same file descriptors open as before the first
request; no perlcompat module imported by the request; ``os.environ`` the same object.
``runner`` then flushes and closes the request's streams (a failed flush ends the child).

Then :func:`restore` puts back what the request changed: the environment (and the time
zone read from it), ``sys.path``, the signal handlers perlcompat installed, the
warnings filters, every global of perlcompat's modules but the server's own
(``param()``'s query object, ``require``'s ``%INC``, ``$!``, ``%SIG`` hooks: the
rebound names, the contents of the dicts, lists and sets they hold, and the
attributes and slots of the perlcompat objects among them, such as ``STDIN``'s
read-ahead and ``STDOUT``'s layers), ``random``'s seed; stdin, stdout and stderr are
new streams on new pipes.  What stays, as under mod_perl's Registry or any FastCGI
loop: the process id, and the state of the standard library's and installed modules
the scripts import.
"""

from __future__ import annotations

import _locale
import _thread
import atexit
import builtins
import gc
import importlib
import os
import resource
import signal
import sys
import sysconfig
import types

assert sys.platform != "win32"  # fork only

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_signal: Any = importlib.import_module("_signal")
_SIGNALS = tuple(int(n) for n in signal.valid_signals() if n not in (9, 19))  # KILL, STOP
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_LIMITS = tuple(getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_"))
_NOT_STATE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
#: a dict, list or set with more entries than this when the first request comes is a
#: table, not state: not compared after each request (a script does not change tables).
MAX_STATE = 64


class Baseline:
    """What the process was before its first request."""

    def __init__(self) -> None:
        adopt_orphans()  # a background job the script leaves is then a child clean() sees
        cleanup = sys.modules.get("perlcompat.locks.cleanup")
        if cleanup is not None:
            cleanup._watch_forks()  # once, here: a request would register it again each time
        self.fds = sorted(os.listdir("/proc/self/fd"))
        self.atexits = atexit._ncallbacks()
        self.signals = [_signal.getsignal(n) for n in _SIGNALS]
        self.environ_object = os.environ
        self.environ: dict[bytes, bytes] = dict(os.environ._data)  # type: ignore[attr-defined]
        self.path = list(sys.path)
        self.modules = set(sys.modules)
        self.process = _process()
        self.python = _python()
        self.builtins = dict(vars(builtins))
        self.classes = _classes()
        self.kept: set[str] = set()  # modules a request imported and the child keeps
        warnings = sys.modules.get("warnings")
        self.filters = list(warnings.filters) if warnings is not None else None
        places = sysconfig.get_paths()
        self.installed = tuple(
            os.path.realpath(places[key]) + "/"
            for key in ("stdlib", "platstdlib", "purelib", "platlib")
            if key in places
        )
        self.globals: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.contents: list[tuple[Any, Any]] = []
        self.slots: list[tuple[object, tuple[str, ...], list[object]]] = []
        for name, module in list(sys.modules.items()):
            ours = name == "perlcompat" or name.startswith("perlcompat.")
            if ours and not name.startswith("perlcompat.tools") and module is not None:
                names = vars(module)
                self.globals.append((names, dict(names)))
                for value in names.values():
                    self._take(value)
                    if type(value) is dict and len(value) <= MAX_STATE:
                        for item in value.values():
                            self._take(item, contents=False)
        gc.freeze()  # what is here now is left out of the collections after each request

    def _take(self, value: object, contents: bool = True) -> None:
        """Remember the state *value* holds (see :func:`restore`)."""
        if type(value) in (dict, list, set):
            if contents and len(value) <= MAX_STATE:  # type: ignore[arg-type]
                self.contents.append((value, value.copy()))  # type: ignore[attr-defined]
            return
        if isinstance(value, _NOT_STATE):
            return
        if not (
            isinstance(value, _thread._local) or type(value).__module__.startswith("perlcompat")
        ):
            return
        names = getattr(value, "__dict__", None)
        if type(names) is dict and len(names) <= MAX_STATE:
            self.contents.append((names, names.copy()))
        slots = _slot_names(type(value))
        if slots and all(thing is not value for thing, _names, _values in self.slots):
            self.slots.append((value, slots, _slot_values(value, slots)))


#: what a slot holds when it is not set.
_UNSET = object()


def _slot_names(cls: type) -> tuple[str, ...]:
    """The slots *cls* and its bases declare."""
    names: list[str] = []
    for klass in cls.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        names += [declared] if isinstance(declared, str) else list(declared)
    return tuple(n for n in names if n not in ("__dict__", "__weakref__"))


def _slot_values(value: object, names: tuple[str, ...]) -> list[object]:
    """What *value*'s slots *names* hold (:data:`_UNSET` where one is not set)."""
    return [getattr(value, name, _UNSET) for name in names]


def adopt_orphans() -> bool:
    """Make this process the parent of its descendants' orphans (Linux's
    PR_SET_CHILD_SUBREAPER); False where the system cannot.  (Also the server's: a dead
    forker's children become its own.)"""
    try:
        import ctypes

        return int(ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)) == 0
    except (ImportError, OSError, AttributeError):
        return False


def _process() -> tuple[object, ...]:
    """The process's settings a script may change: ids, umask, mask, priority, limits, locale."""
    mask = os.umask(0o022)
    os.umask(mask)
    return (
        os.getuid(),
        os.geteuid(),
        os.getgid(),
        os.getegid(),
        tuple(os.getgroups()),
        mask,
        signal.pthread_sigmask(signal.SIG_BLOCK, []),
        os.getpriority(os.PRIO_PROCESS, 0),
        [resource.getrlimit(n) for n in _LIMITS],
        _locale.setlocale(_locale.LC_ALL, None),
    )


def _python() -> tuple[object, ...]:
    """The interpreter's settings a script may change (hooks, gc, socket time-out, logging)."""
    threading = sys.modules.get("threading")
    socket = sys.modules.get("socket")
    warnings = sys.modules.get("warnings")
    decimal = sys.modules.get("decimal")
    csv = sys.modules.get("csv")
    return (
        _loggers(),
        tuple(gc.callbacks),
        tuple(sys.meta_path),
        tuple(sys.path_hooks),
        getattr(sys, "get_int_max_str_digits", lambda: None)(),
        repr(decimal.getcontext()) if decimal is not None else None,
        csv.field_size_limit() if csv is not None else None,
        sys.excepthook,
        sys.displayhook,
        sys.unraisablehook,
        sys.breakpointhook,
        sys.gettrace(),
        sys.getprofile(),
        sys.getrecursionlimit(),
        sys.getswitchinterval(),
        gc.isenabled(),
        gc.get_threshold(),
        getattr(threading, "excepthook", None),
        socket.getdefaulttimeout() if socket is not None else None,
        getattr(warnings, "showwarning", None),
    )


def _loggers() -> object:
    """How ``logging`` is set up: each logger's handlers, filters, level and switches."""
    logging = sys.modules.get("logging")
    if logging is None:
        return None
    manager = logging.Logger.manager
    loggers = [("", logging.root), *manager.loggerDict.items()]
    return [
        logging.getLogRecordFactory(),
        logging.getLoggerClass(),
        manager.disable,
        manager.loggerClass,
        manager.logRecordFactory,
        logging.lastResort,
        logging.raiseExceptions,
        *(
            (
                name,
                [(h, h.formatter, h.level, tuple(h.filters)) for h in one.handlers],
                tuple(one.filters),
                one.level,
                one.propagate,
                one.disabled,
            )
            for name, one in loggers
            if isinstance(one, logging.Logger)
            and (one.handlers or one.filters or one.level or not one.propagate or one.disabled)
        ),
    ]


def _classes() -> list[tuple[type, dict[str, Any]]]:
    """perlcompat's classes (the run-time ones) and what each holds."""
    found = []
    for name, module in list(sys.modules.items()):
        if name.startswith("perlcompat") and not name.startswith("perlcompat.tools"):
            for value in vars(module).values():
                if isinstance(value, type) and value.__module__ == name:
                    found.append((value, _own(value)))
    return found


def _own(cls: type) -> dict[str, Any]:
    """What *cls* holds, but its singletons' registry (weak: it keeps no request's object)."""
    return {key: item for key, item in vars(cls).items() if key != "_instances"}


def preload() -> None:
    """Import perlcompat's run-time modules (a request that imports one is not reused).

    All but the tools, the Windows-only ones and (unless ``--preload`` loaded redis-py)
    the Redis method; one that cannot be imported here is left out.  Also ``logging``,
    which registers an ``atexit`` handler when first imported.
    """
    import logging  # noqa: F401
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
    """Before anything is cleared: no thread, ``atexit`` handler, perlcompat handle or lock
    left (if one is, the child ends as Python would: threads waited for, handlers run)."""
    threading = sys.modules.get("threading")
    if threading is not None and (
        threading.active_count() > 1 or getattr(threading, "_threading_atexits", None)
    ):
        return False
    try:  # (a ``_thread`` or C thread too: faulthandler's, an extension's)
        if len(os.listdir("/proc/self/task")) != 1:
            return False
    except OSError:
        return False
    return atexit._ncallbacks() == base.atexits and not _held()


def drop_modules(base: Baseline) -> bool:
    """Drop the modules the request imported but the standard library's and installed ones
    (the next request imports them anew); False if it imported one of perlcompat's."""
    if sys.modules.keys() == base.modules:
        return True
    for name in [n for n in sys.modules if n not in base.modules]:
        module = sys.modules.get(name)
        if name.startswith("perlcompat"):
            return False
        if _installed(module, base.installed):
            base.modules.add(name)  # (kept: not looked at again)
            base.kept.add(name.partition(".")[0])
            continue
        del sys.modules[name]
        parent, _, leaf = name.rpartition(".")
        owner = sys.modules.get(parent)
        if owner is not None and getattr(owner, leaf, None) is module:
            try:  # noqa: SIM105
                delattr(owner, leaf)
            except (AttributeError, TypeError):
                pass
    return True


def _installed(module: object, places: tuple[str, ...]) -> bool:
    """Whether *module* is built in, or a file of the standard library or site-packages."""
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    if origin in ("built-in", "frozen"):
        return True
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and os.path.realpath(file).startswith(places)


def unshadow(base: Baseline, directory: str) -> None:
    """Before a request: if a module an earlier request imported (and the child kept) has
    the name of one the script's *directory* holds, drop every kept one: the script gets
    its own, as in a new process, and no kept module keeps a copy of another."""
    from importlib.machinery import PathFinder

    for top in base.kept:
        spec = PathFinder.find_spec(top, [directory])
        if spec is not None and spec.origin not in (None, "namespace"):
            break
    else:
        return
    for name in [n for n in sys.modules if n.partition(".")[0] in base.kept]:
        del sys.modules[name]
        base.modules.discard(name)
    base.kept.clear()


def clean(base: Baseline) -> bool:
    """After ``runner.teardown``: whether the request left the process as *base* (see the
    module docstring)."""
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
    if _process() != base.process or _python() != base.python:
        return False
    if os.environ is not base.environ_object or vars(builtins) != base.builtins:
        return False
    if any(vars(cls) != saved and _own(cls) != saved for cls, saved in base.classes):
        return False  # (a perlcompat class changed: CGI.param replaced, say)
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


def _put_back(names: dict[Any, Any], saved: dict[Any, Any]) -> None:
    """Make *names* equal to *saved* key by key (a module's dict is never cleared: that
    would throw away every cache of its functions' global lookups)."""
    for key in [k for k in names if k not in saved]:
        del names[key]
    for key, value in saved.items():
        if names.get(key, _UNSET) is not value:
            names[key] = value


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
    import time

    time.tzset()  # the time zone from the environment put back (a script may set TZ)
    for number, before in zip(_SIGNALS, base.signals):
        if _signal.getsignal(number) is not before:
            _signal.signal(number, before)
    if sys.path != base.path:
        sys.path[:] = base.path
    warnings = sys.modules.get("warnings")
    if warnings is not None and base.filters is not None and warnings.filters != base.filters:
        warnings.filters[:] = base.filters
        warnings._filters_mutated()
    for names, saved in base.globals:
        if names != saved:
            _put_back(names, saved)
    for value, saved in base.contents:
        if value != saved:
            if type(value) is dict:
                _put_back(value, saved)
            else:
                value.clear()
                value.update(saved) if type(value) is set else value.extend(saved)
    for thing, slots, values in base.slots:
        if _slot_values(thing, slots) != values:
            for slot, item in zip(slots, values):
                if item is _UNSET:
                    if hasattr(thing, slot):
                        delattr(thing, slot)
                elif getattr(thing, slot, _UNSET) is not item:
                    setattr(thing, slot, item)
    errno = sys.modules.get("perlcompat.perl.errno")
    if errno is not None:
        errno.set_errno(0)  # $! unset, as in a new process
    random = sys.modules.get("random")
    if random is not None:
        random.seed()  # as a new process: its numbers are not the last request's
