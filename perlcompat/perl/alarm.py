"""Perl's ``alarm``, ``%SIG`` and ``local $SIG{...}``, in every thread and on Windows.

``alarm(n)`` asks for an ALRM "signal" *n* seconds from now and returns the whole
seconds left on the previous alarm (rounded as alarm(2) rounds; ``alarm(0)``
cancels).  Fractions are honoured, like ``Time::HiRes::alarm``.  ``SIG`` is
``%SIG``: ``SIG["ALRM"] = handler``, ``"DEFAULT"``, ``"IGNORE"``; ``local_sig``
is ``local $SIG{ALRM} = ...``, restoring the previous handler on exit.  A handler
is called Perl-style with the signal name (``"ALRM"``); one that takes no
arguments is called with none.

Two ways to deliver, one behaviour:

* **Main thread on POSIX**: a real SIGALRM (``setitimer(ITIMER_REAL)``).  Its
  handler runs wherever the thread is, and an exception it raises escapes a
  blocking ``flock``, ``sleep`` or read (PEP 475 retries the call only when the
  handler returns).
* **Other threads, and Windows** (no SIGALRM there): a per-thread deadline that
  perlcompat's blocking calls (``flock``, ``lock``, ``sleep``, ``sem_acquire``,
  ``replace_file``'s lock wait) honour: they wake at the deadline and run the
  handler in the calling thread.  Pure Python code between those calls is not
  interrupted; ``sleep(0)`` is a checkpoint.  ``SIG["ALRM"]`` set in a worker
  thread is that thread's own (as ``%SIG`` is per interpreter under Perl
  ithreads); a thread that sets none uses the main thread's.

``SIG["__DIE__"]`` and ``SIG["__WARN__"]`` are Perl's hooks, not signals: ``die`` and
``warn`` call them (``perl.die``).  ``SIG["PIPE"]`` reads ``"DEFAULT"`` until set: as in
Perl, a write to a broken pipe kills the process (``openfiles.broken_pipe``);
``SIG["PIPE"] = "IGNORE"`` makes it fail with EPIPE instead.

The handler's exception always propagates; nothing here catches it.  An alarm
with no handler (``"DEFAULT"``) ends the process, as in Perl ("Alarm clock").
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
import time
from _thread import _local

from . import clock as _clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType, TracebackType
    from typing import Any, Union

    Disposition = Union[Callable[[int, Union[FrameType, None]], Any], int, signal.Handlers, None]

#: True where a real SIGALRM and ``setitimer`` exist (POSIX).
_HAVE_SIGALRM = hasattr(signal, "setitimer")
#: SIGALRM's number (14 wherever it is defined; used for the name on Windows).
_SIGALRM = 14
if sys.platform != "win32":
    _SIGALRM = int(signal.SIGALRM)

_UNSET = object()
_tls = _local()  # .deadline: monotonic deadline of this thread's cooperative alarm
#                  .handler: this thread's own ALRM disposition (worker threads)
#: the process-wide ALRM disposition where there is no real SIGALRM.
_process_alrm: Disposition = signal.SIG_DFL


def _forget_after_fork() -> None:
    """A forked child inherits no alarm (alarm(2) is not inherited either)."""
    _tls.deadline = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _is_main() -> bool:
    return threading.current_thread() is threading.main_thread()


def _real() -> bool:
    """True when this thread's alarm is a real SIGALRM (main thread on POSIX)."""
    return _HAVE_SIGALRM and _is_main()


def _whole(seconds: float) -> int:
    """Round remaining *seconds* as glibc's alarm(2) does (never 0 while pending)."""
    whole = int(seconds)
    rest = seconds - whole
    if rest >= 0.5 or (whole == 0 and rest > 0):
        whole += 1
    return whole


# -- alarm -------------------------------------------------------------


def alarm(seconds: float) -> int | None:
    """Deliver ALRM in *seconds* (0 cancels); return whole seconds left on the previous alarm.

    As in Perl, negative, infinite or huge (>= 2**31) *seconds* return None
    (undef) with ``OS_ERROR`` = EINVAL and a RuntimeWarning, and leave the pending
    alarm as it was; NaN raises ValueError (Perl would take it as 0 and cancel).
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"alarm needs a number of seconds, not {seconds!r}")
    if _clock.out_of_range("alarm", seconds):
        from .errno import set_errno

        set_errno(errno.EINVAL)
        return None
    if _real():
        return _whole(_setitimer(float(seconds)))
    now = time.monotonic()
    previous: float | None = getattr(_tls, "deadline", None)
    _tls.deadline = now + seconds if seconds > 0 else None
    return 0 if previous is None else _whole(max(previous - now, 0.0))


def _setitimer(seconds: float) -> float:
    """Set the real ITIMER_REAL; return what was left of the previous one."""
    if sys.platform == "win32":  # pragma: no cover - guarded by _real()
        raise OSError("SIGALRM does not exist on Windows")
    old, _interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    return old


# -- the interface perlcompat's blocking calls use -----------------------


def pending_deadline() -> float | None:
    """``time.monotonic()`` deadline of this thread's cooperative alarm, or None."""
    return getattr(_tls, "deadline", None)


def raised_by_handler(exc: BaseException) -> bool:
    """True if *exc* was raised by a signal handler run through ``%SIG``/``alarm`` here."""
    return getattr(_tls, "raised", None) is exc


def fire_if_due() -> None:
    """Run the ALRM handler if this thread's cooperative alarm is due (its exception propagates)."""
    deadline: float | None = getattr(_tls, "deadline", None)
    if deadline is None or time.monotonic() < deadline:
        return
    _tls.deadline = None
    _deliver()


def sleep_checked(seconds: float) -> None:
    """Sleep *seconds*, running this thread's ALRM handler at its deadline (it may raise).

    A handler that returns (or IGNORE) lets the sleep go on, as PEP 475 resumes
    an interrupted ``time.sleep`` in the main thread.
    """
    deadline: float | None = getattr(_tls, "deadline", None)
    if deadline is None:
        time.sleep(max(seconds, 0.0))
        return
    end = time.monotonic() + max(seconds, 0.0)
    while True:
        now = time.monotonic()
        deadline = getattr(_tls, "deadline", None)
        if deadline is not None and deadline <= now:
            fire_if_due()
            continue
        if now >= end:
            return
        time.sleep((end if deadline is None else min(end, deadline)) - now)


def _deliver() -> None:
    """Act on a due cooperative alarm as the kernel would on SIGALRM."""
    disposition = _alrm_disposition()
    if disposition == signal.SIG_IGN:
        return
    if disposition is None or disposition == signal.SIG_DFL:
        _default_action()
    elif callable(disposition):
        try:
            disposition(_SIGALRM, None)
        except BaseException as exc:
            _tls.raised = exc
            raise


def _default_action() -> None:
    """SIGALRM's default action: end the whole process."""
    if sys.platform != "win32" and _HAVE_SIGALRM and _process_disposition() == signal.SIG_DFL:
        signal.pthread_kill(threading.get_ident(), signal.SIGALRM)
    import contextlib

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os.write(2, b"Alarm clock\n")
    os._exit(128 + _SIGALRM)


# -- dispositions --------------------------------------------------------


class _PerlHandler:
    """A Perl-style handler installed as a Python signal handler: called with the name."""

    __slots__ = ("func", "nargs")

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.nargs = _nargs(func)

    def __call__(self, signum: int, frame: FrameType | None) -> Any:
        args: tuple[object, ...] = (_signame(signum), frame)
        if self.nargs > 2:
            args += (None,) * (self.nargs - 2)
        try:
            return self.func(*args[: self.nargs])
        except BaseException as exc:
            _tls.raised = exc  # lets flock()/lock() tell the handler's error from their own
            raise

    def __repr__(self) -> str:
        return f"<Perl-style handler {self.func!r}>"


def _nargs(func: Callable[..., Any]) -> int:
    """How many positional arguments to pass *func*: 1 (the name) unless it needs 0 or more."""
    inner = getattr(func, "__func__", None)  # a bound method: skip self
    skip = 0 if inner is None else 1
    target = func if inner is None else inner
    code = getattr(target, "__code__", None)
    defaults = getattr(target, "__defaults__", None)
    if code is not None:
        has_varargs = bool(code.co_flags & 0x04)  # CO_VARARGS
        positional = code.co_argcount - skip
        required = positional - len(defaults or ())
    else:
        import inspect

        try:
            params = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            return 1
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        has_varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        positional = sum(1 for p in params if p.kind in kinds)
        required = sum(1 for p in params if p.kind in kinds and p.default is p.empty)
    if has_varargs or positional >= 1:
        return max(int(required), 1)
    return 0


def _signame(signum: int) -> str:
    """Perl's name for *signum*: ``"ALRM"`` for SIGALRM."""
    if signum == _SIGALRM:
        return "ALRM"
    try:
        return signal.Signals(signum).name[3:]
    except ValueError:
        return str(signum)


def _signum(name: str) -> int:
    """The number of the (already checked) signal *name*."""
    if name == "ALRM":
        return _SIGALRM
    return int(signal.Signals["SIG" + name])


#: Perl's hooks in ``%SIG``: not signals; ``die``/``warn`` call them (``perl.die.HOOKS``).
_HOOKS = ("__DIE__", "__WARN__")
#: ``_raw_get("PIPE")`` when SIGPIPE is ignored by Python's start-up, not by the port:
#: Perl's default (a write to a broken pipe kills), see ``openfiles.broken_pipe``.
_PYTHON_IGNORES = object()


def _key(key: object) -> str:
    """Normalise a ``%SIG`` key ("ALRM", "SIGALRM", "__DIE__") or raise ValueError naming it."""
    if not isinstance(key, str):
        raise TypeError(f"signal names are strings like 'ALRM', not {key!r}")
    if key in _HOOKS:
        return key
    name = key[3:] if key.startswith("SIG") else key
    if name == "ALRM" or "SIG" + name in signal.Signals.__members__:
        return name
    raise ValueError(f"no such signal: SIG{name} (%SIG keys are names like 'ALRM', 'INT')")


def _to_disposition(name: str, value: object) -> Disposition:
    """Turn a ``%SIG`` value into what ``signal.signal`` takes (a hook: the callable or None)."""
    if name in _HOOKS:
        if value is None or value in ("", "DEFAULT", "IGNORE"):  # (Perl: no hook, both)
            return None
        if callable(value):
            return value
        raise TypeError(f"SIG[{name!r}] must be a callable, None, 'DEFAULT' or '', not {value!r}")
    if value is None:
        return signal.SIG_DFL
    if isinstance(value, str):
        if value == "DEFAULT":
            return signal.SIG_DFL
        if value == "IGNORE":
            return signal.SIG_IGN
        raise ValueError(
            f'SIG[{name!r}] must be a callable, "DEFAULT", "IGNORE" or None, not {value!r}'
        )
    if isinstance(value, (signal.Handlers, _PerlHandler)):
        return value
    if callable(value):
        return _PerlHandler(value)
    raise TypeError(f'SIG[{name!r}] must be a callable, "DEFAULT", "IGNORE" or None, not {value!r}')


def _from_disposition(disposition: object) -> object:
    """Turn a disposition back into a ``%SIG`` value."""
    if isinstance(disposition, _PerlHandler):
        return disposition.func
    if disposition == signal.SIG_DFL:
        return "DEFAULT"
    if disposition == signal.SIG_IGN:
        return "IGNORE"
    return disposition


def _process_disposition() -> Disposition:
    """The process-wide ALRM disposition (the main thread's)."""
    if sys.platform != "win32" and _HAVE_SIGALRM:
        return signal.getsignal(signal.SIGALRM)
    return _process_alrm


def _alrm_disposition() -> Disposition:
    """The ALRM disposition in effect for the calling thread."""
    if not _is_main():
        own: Disposition | object = getattr(_tls, "handler", _UNSET)
        if own is not _UNSET:
            return own  # type: ignore[return-value]
    return _process_disposition()


def _raw_get(name: str) -> object:
    """This thread's own disposition for *name* (``_UNSET`` for a worker that set none)."""
    if name in _HOOKS:
        from .die import HOOKS

        return HOOKS[name]
    if name == "PIPE" and sys.platform != "win32":
        from . import openfiles

        current = signal.getsignal(signal.SIGPIPE)
        if current == signal.SIG_IGN and not openfiles.PIPE_IGNORED:
            return _PYTHON_IGNORES
        return current
    if name == "ALRM":
        if not _is_main():
            return getattr(_tls, "handler", _UNSET)
        return _process_disposition()
    return signal.getsignal(_signum(name))


def _raw_set(name: str, disposition: object) -> None:
    """Install *disposition* (from ``_to_disposition`` or ``_raw_get``) for *name*."""
    global _process_alrm
    if name in _HOOKS:
        from . import die

        die.HOOKS[name] = disposition  # type: ignore[assignment]
        if name == "__DIE__" and disposition is not None:
            die._install_hook()  # an uncaught Python error calls it too
        return
    if name == "PIPE" and sys.platform != "win32":
        from . import openfiles

        openfiles.PIPE_IGNORED = disposition == signal.SIG_IGN
        if disposition is _PYTHON_IGNORES:
            disposition = signal.SIG_IGN
    if disposition is None:
        disposition = signal.SIG_DFL  # installed outside Python: the best restore we have
    if name == "ALRM" and not _is_main():
        if disposition is _UNSET:
            if hasattr(_tls, "handler"):
                del _tls.handler
        else:
            _tls.handler = disposition
    elif name == "ALRM" and not _HAVE_SIGALRM:
        _process_alrm = disposition  # type: ignore[assignment]
    else:
        signal.signal(_signum(name), disposition)  # type: ignore[arg-type]


# -- %SIG and local $SIG{...} -----------------------------------------------


class _Sig:
    """Perl's ``%SIG``: ``SIG["ALRM"] = handler | "DEFAULT" | "IGNORE"``; reads give them back."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        name = _key(key)
        if name == "ALRM":
            return _from_disposition(_alrm_disposition())
        if name in _HOOKS or name == "PIPE":
            value = _raw_get(name)
            return "DEFAULT" if value is _PYTHON_IGNORES else _from_disposition(value)
        return _from_disposition(signal.getsignal(_signum(name)))

    def __setitem__(self, key: str, value: object) -> None:
        name = _key(key)
        _raw_set(name, _to_disposition(name, value))

    def __delitem__(self, key: str) -> None:
        self[key] = "DEFAULT"

    def get(self, key: str, default: object = None) -> Any:
        """``SIG[key]``, or *default* for a name that is not a signal."""
        try:
            return self[key]
        except ValueError:
            return default

    def __contains__(self, key: object) -> bool:
        try:
            _key(key)
        except (TypeError, ValueError):
            return False
        return True

    def keys(self) -> list[str]:
        """Every signal name this platform knows, plus ``"ALRM"``."""
        names = {member[3:] for member in signal.Signals.__members__ if member.startswith("SIG")}
        names = {n for n in names if not n.startswith("_")}
        names.add("ALRM")
        return sorted(names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def items(self) -> list[tuple[str, Any]]:
        """``(name, value)`` pairs, as ``%SIG`` lists them."""
        return [(name, self[name]) for name in self.keys()]

    def __repr__(self) -> str:
        return f"<%SIG ALRM={self['ALRM']!r}>"


SIG = _Sig()


class local_sig:
    """``with local_sig("ALRM", handler):`` is Perl's ``local $SIG{ALRM} = handler``."""

    __slots__ = ("_disposition", "_name", "_saved")

    def __init__(self, name: str, handler: object) -> None:
        self._name = _key(name)
        self._disposition = _to_disposition(self._name, handler)
        self._saved: object = _UNSET

    def __enter__(self) -> local_sig:
        self._saved = _raw_get(self._name)
        _raw_set(self._name, self._disposition)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _raw_set(self._name, self._saved)


_clock.install(sys.modules[__name__])  # the waits find the alarm through perl.clock
