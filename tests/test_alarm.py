"""alarm, %SIG and local $SIG{ALRM}: seed 000's timed flock against a lock held by real perl.

The main thread gets a real SIGALRM; worker threads (and the Windows emulation,
``_HAVE_SIGALRM = False``) get the cooperative deadline that perlcompat's blocking
calls honour.  Every case checks the handler's exception reaches the caller.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from perlutil import Child, run_perl, run_python

import perlcompat
from perlcompat import (
    OS_ERROR,
    SIG,
    Die,
    alarm,
    close,
    die,
    flock,
    local_sig,
    lock,
    open_,
    print_,
    seek,
    tell,
    truncate,
)
from perlcompat.perl import alarm as _alarm

HOLD_FLOCK = """
alarm 20;  # a broken perlcompat fails the test instead of hanging it
use Fcntl qw(:flock);
open(my $fh, "+<", $ARGV[0]) or die "open: $!";
flock($fh, LOCK_EX) or die "flock: $!";
print "locked\\n";
my $go = <STDIN>;
close($fh);
print "released\\n";
"""


class Boom(Exception):
    """A handler's own exception (not Die, not OSError)."""


def seed_block(datafile: str, marks: dict[str, float], wait: float = 1) -> object:
    """Seed 000's eval block, ported line by line; returns alarm(0)'s value or "timeout"."""
    try:
        with local_sig("ALRM", lambda *a: die("time out")):
            OUT = open_("+< " + datafile) or die()
            marks["alarm"] = time.monotonic()
            alarm(wait)  # wait for the previous holder at most `wait` s
            flock(OUT, 2) or die()
            alarm(300)  # this script's own limit
            count = int(OUT.readline() or 0)
            seek(OUT, 0, 0) or die()
            print_(OUT, f"{count + 1}\n") or die()
            truncate(OUT, tell(OUT)) or die()
            close(OUT)
            return alarm(0)
    except Die as e:
        marks["died"] = time.monotonic()
        if "time out" in str(e):  # $@ =~ /time out/
            return "timeout"
        raise


def in_thread(func: functools.partial[object]) -> object:
    """Run *func* in a worker thread; return its result or re-raise its exception."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["result"] = func()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]


@pytest.fixture
def datafile(tmp_path: Path) -> str:
    path = tmp_path / "count.dat"
    path.write_text("0\n")
    return str(path)


@pytest.fixture
def perl_holds(datafile: str):  # type: ignore[no-untyped-def]
    """Real perl holding flock(LOCK_EX) on the data file until released."""
    holder = Child.perl(HOLD_FLOCK, datafile)
    holder.expect("locked")
    yield holder
    holder.kill()


@pytest.fixture(autouse=True)
def no_leftover_alarm():  # type: ignore[no-untyped-def]
    yield
    alarm(0)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert SIG["ALRM"] == "DEFAULT"


# -- seed 000's block against a perl holder ---------------------------------------


def test_seed_block_times_out_in_main_thread(datafile: str, perl_holds: Child) -> None:
    marks: dict[str, float] = {}
    assert seed_block(datafile, marks) == "timeout"
    late = marks["died"] - marks["alarm"]
    assert 0.99 <= late <= 1.3, late
    assert Path(datafile).read_text() == "0\n"


def test_seed_block_times_out_in_worker_thread(datafile: str, perl_holds: Child) -> None:
    marks: dict[str, float] = {}
    assert in_thread(functools.partial(seed_block, datafile, marks)) == "timeout"
    late = marks["died"] - marks["alarm"]
    assert 0.99 <= late <= 1.3, late
    assert Path(datafile).read_text() == "0\n"


def test_worker_alarm_leaves_the_process_timer_alone(datafile: str, perl_holds: Child) -> None:
    seen: list[tuple[float, float]] = []

    def block() -> object:
        alarm(5)
        seen.append(signal.getitimer(signal.ITIMER_REAL))
        seen.append((_alarm.pending_deadline() or 0.0, 0.0))
        return alarm(0)

    assert in_thread(functools.partial(block)) == 5
    assert seen[0] == (0.0, 0.0)
    assert seen[1][0] > time.monotonic()  # the deadline was the worker's own
    assert _alarm.pending_deadline() is None


def test_seed_block_times_out_with_windows_emulation(
    datafile: str, perl_holds: Child, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_alarm, "_HAVE_SIGALRM", False)
    marks: dict[str, float] = {}
    assert seed_block(datafile, marks) == "timeout"
    late = marks["died"] - marks["alarm"]
    assert 0.99 <= late <= 1.3, late
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no real timer was used


def test_seed_block_succeeds_when_perl_releases_in_time(datafile: str, perl_holds: Child) -> None:
    marks: dict[str, float] = {}
    releaser = threading.Timer(0.2, perl_holds.send, ["release"])
    releaser.start()
    assert seed_block(datafile, marks, wait=5) == 300  # alarm(0) returns the 300 s limit
    releaser.join()
    assert "died" not in marks
    assert Path(datafile).read_text() == "1\n"
    assert perl_holds.readline() == "released"


def test_seed_block_succeeds_in_worker_when_perl_releases(datafile: str, perl_holds: Child) -> None:
    marks: dict[str, float] = {}
    releaser = threading.Timer(0.2, perl_holds.send, ["release"])
    releaser.start()
    assert in_thread(functools.partial(seed_block, datafile, marks, 5)) == 300
    releaser.join()
    assert Path(datafile).read_text() == "1\n"


def test_busy_worker_does_not_steal_the_main_threads_sigalrm(
    datafile: str, perl_holds: Child
) -> None:
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        marks: dict[str, float] = {}
        assert seed_block(datafile, marks) == "timeout"
        assert marks["died"] - marks["alarm"] <= 1.3
    finally:
        stop.set()
        spinner.join()


# -- alarm(300): the script's own limit ends a stuck section ------------------------


def stuck_section(stuck: functools.partial[object]) -> float:
    """Seed 000's ``alarm(N)`` limit around a section that never ends; seconds until the die."""
    start = time.monotonic()
    with pytest.raises(Die, match="time out"), local_sig("ALRM", lambda *a: die("time out")):
        alarm(1)
        stuck()
        alarm(0)
    return time.monotonic() - start


def test_limit_ends_stuck_flock_in_main_thread(datafile: str, perl_holds: Child) -> None:
    fh = open_("< " + datafile) or die()
    assert 0.99 <= stuck_section(functools.partial(flock, fh, 2)) <= 1.3
    close(fh)


def test_limit_ends_stuck_sleep_in_main_thread() -> None:
    assert 0.99 <= stuck_section(functools.partial(time.sleep, 10)) <= 1.3


def test_limit_ends_stuck_perlcompat_sleep_in_worker() -> None:
    took = in_thread(functools.partial(stuck_section, functools.partial(perlcompat.sleep, 10)))
    assert 0.99 <= took <= 1.3  # type: ignore[operator]


def test_limit_ends_stuck_flock_in_worker(datafile: str, perl_holds: Child) -> None:
    fh = open_("< " + datafile) or die()
    took = in_thread(functools.partial(stuck_section, functools.partial(flock, fh, 2)))
    assert 0.99 <= took <= 1.3  # type: ignore[operator]
    close(fh)


def test_limit_ends_stuck_lock_in_worker(tmp_path: Path) -> None:
    lockdir = str(tmp_path / "lockdir")
    assert run_perl("mkdir $ARGV[0] or die $!", lockdir).returncode == 0  # perl holds it
    stuck = functools.partial(lock, lockdir, retry=20, wait=0.5)
    took = in_thread(functools.partial(stuck_section, stuck))
    assert 0.99 <= took <= 1.3  # type: ignore[operator]
    assert os.path.isdir(lockdir)  # perl's lock was not touched


# -- the handler's exception is never swallowed ------------------------------------


def raising_handler(*args: object) -> None:
    raise Boom(*args)


@pytest.mark.parametrize("where", ["main", "worker"])
def test_raising_handler_escapes_flock(where: str, datafile: str, perl_holds: Child) -> None:
    fh = open_("< " + datafile) or die()

    def block() -> object:
        with local_sig("ALRM", raising_handler):
            alarm(0.3)
            return flock(fh, 2)  # returns only if the exception was swallowed

    call = functools.partial(block)
    with pytest.raises(Boom) as caught:
        call() if where == "main" else in_thread(call)
    assert caught.value.args == ("ALRM",)
    close(fh)


@pytest.mark.parametrize("where", ["main", "worker"])
def test_raising_handler_escapes_lock(where: str, tmp_path: Path) -> None:
    lockdir = str(tmp_path / "lockdir")
    os.mkdir(lockdir)

    def block() -> object:
        with local_sig("ALRM", raising_handler):
            alarm(0.3)
            return lock(lockdir, retry=20, wait=0.5)

    call = functools.partial(block)
    with pytest.raises(Boom):
        call() if where == "main" else in_thread(call)


@pytest.mark.parametrize("where", ["main", "worker"])
def test_raising_handler_escapes_sleep(where: str) -> None:
    def block() -> object:
        with local_sig("ALRM", raising_handler):
            alarm(0.2)
            return perlcompat.sleep(10)

    call = functools.partial(block)
    start = time.monotonic()
    with pytest.raises(Boom):
        call() if where == "main" else in_thread(call)
    assert time.monotonic() - start < 1.0


def test_returning_handler_lets_a_worker_sleep_go_on() -> None:
    calls: list[tuple[object, ...]] = []

    def block() -> float:
        with local_sig("ALRM", lambda *a: calls.append(a)):
            start = time.monotonic()
            alarm(0.1)
            perlcompat.sleep(0.4)
            return time.monotonic() - start

    took = in_thread(functools.partial(block))
    assert calls == [("ALRM",)]
    assert 0.39 <= took < 1.0  # type: ignore[operator]


def test_ignored_alarm_in_worker_does_nothing() -> None:
    def block() -> float:
        with local_sig("ALRM", "IGNORE"):
            start = time.monotonic()
            alarm(0.1)
            perlcompat.sleep(0.3)
            assert _alarm.pending_deadline() is None  # it went off, ignored
            return time.monotonic() - start

    assert 0.29 <= in_thread(functools.partial(block)) < 1.0  # type: ignore[operator]


# -- handlers of any shape ------------------------------------------------------


class CallableObject:
    def __call__(self, name: str) -> None:
        raise Boom("object", name)


class Holder:
    def method(self, name: str) -> None:
        raise Boom("method", name)


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        (lambda *a: raising_handler(*a), ("ALRM",)),
        (lambda: raising_handler("none"), ("none",)),
        (lambda name: raising_handler(name), ("ALRM",)),
        (lambda signum, frame: raising_handler(signum, frame is None), ("ALRM", None)),
        (functools.partial(raising_handler, "partial"), ("partial", "ALRM")),
        (CallableObject(), ("object", "ALRM")),
        (Holder().method, ("method", "ALRM")),
    ],
)
@pytest.mark.parametrize("where", ["main", "worker"])
def test_handler_arity(where: str, handler: object, expected: tuple[object, ...]) -> None:
    def block() -> None:
        with local_sig("ALRM", handler):
            alarm(0.05)
            perlcompat.sleep(5)

    call = functools.partial(block)
    with pytest.raises(Boom) as caught:
        call() if where == "main" else in_thread(call)
    args = caught.value.args
    if expected == ("ALRM", None):  # (name, frame): a real frame in main, None when cooperative
        assert args[0] == "ALRM"
        assert args[1] is (where == "worker")
    else:
        assert args == expected


# -- alarm's return value and arguments ----------------------------------------------


@pytest.mark.parametrize("where", ["main", "worker"])
def test_alarm_returns_seconds_left_on_previous(where: str) -> None:
    def block() -> list[int]:
        return [alarm(10), alarm(3), alarm(2.4), alarm(0.45), alarm(0), alarm(0)]

    call = functools.partial(block)
    # IGNORE: a stall past the 0.45 s alarm fails the assertion below instead of
    # SIGALRM's default action killing the whole test run
    with local_sig("ALRM", "IGNORE"):
        result = call() if where == "main" else in_thread(call)
    # 0 (none), 10, 3, 2 (2.4 rounds down), 1 (0.45: never 0 while pending), 0 (cancelled)
    assert result == [0, 10, 3, 2, 1, 0]


def test_alarm_zero_cancels_in_main_thread() -> None:
    with local_sig("ALRM", raising_handler):
        alarm(0.5)  # long enough that a stall before the next line does not fire it
        alarm(0)
        time.sleep(0.7)  # would raise Boom if the alarm were still armed


def test_alarm_zero_cancels_in_worker() -> None:
    def block() -> None:
        with local_sig("ALRM", raising_handler):
            alarm(0.1)
            alarm(0)
            perlcompat.sleep(0.2)

    in_thread(functools.partial(block))


@pytest.mark.parametrize("bad", ["5", None, True, [1]])
def test_alarm_refuses_non_numbers(bad: object) -> None:
    with pytest.raises(TypeError, match="alarm needs a number"):
        alarm(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, -0.5, float("inf")])
def test_alarm_refuses_bad_numbers(bad: float) -> None:
    """As Perl: undef with EINVAL and a warning (tests/test_huge_numbers.py compares)."""
    with pytest.warns(RuntimeWarning, match="alarm"):
        assert alarm(bad) is None
    assert OS_ERROR == errno.EINVAL


def test_alarm_refuses_nan() -> None:
    with pytest.raises(ValueError, match="alarm needs a number"):
        alarm(float("nan"))


def test_pending_deadline_is_none_where_a_real_signal_comes() -> None:
    alarm(5)
    assert _alarm.pending_deadline() is None
    assert 4 < signal.getitimer(signal.ITIMER_REAL)[0] <= 5


# -- %SIG and local_sig --------------------------------------------------------------


def test_sig_values_round_trip() -> None:
    def handler(name: str) -> None:
        pass

    assert SIG["ALRM"] == "DEFAULT"
    SIG["ALRM"] = handler
    try:
        assert SIG["ALRM"] is handler
        assert SIG["SIGALRM"] is handler
        assert signal.getsignal(signal.SIGALRM) is not handler  # wrapped Perl-style
        SIG["ALRM"] = "IGNORE"
        assert SIG["ALRM"] == "IGNORE"
        assert signal.getsignal(signal.SIGALRM) == signal.SIG_IGN
        SIG["ALRM"] = None
        assert SIG["ALRM"] == "DEFAULT"
        SIG["ALRM"] = handler
        del SIG["ALRM"]
        assert SIG["ALRM"] == "DEFAULT"
    finally:
        SIG["ALRM"] = "DEFAULT"


def test_sig_other_signals_are_real(tmp_path: Path) -> None:
    got: list[object] = []
    with local_sig("USR1", lambda *a: got.append(a)):
        assert "USR1" in SIG
        signal.raise_signal(signal.SIGUSR1)  # to this thread; its handler runs before returning
    assert got == [("USR1",)]
    assert SIG["USR1"] == "DEFAULT"


def test_sig_refuses_bad_names_and_values() -> None:
    with pytest.raises(ValueError, match="no such signal: SIGALARM"):
        SIG["ALARM"] = "IGNORE"
    with pytest.raises(ValueError, match="no such signal"):
        SIG["ALARM"]
    with pytest.raises(TypeError, match="signal names are strings"):
        SIG[14]  # type: ignore[index]
    with pytest.raises(ValueError, match='must be a callable, "DEFAULT", "IGNORE"'):
        SIG["ALRM"] = "main::handler"
    with pytest.raises(TypeError, match='must be a callable, "DEFAULT", "IGNORE"'):
        SIG["ALRM"] = 42
    with pytest.raises(ValueError, match="no such signal"):
        local_sig("ALARM", "IGNORE")
    assert "ALARM" not in SIG
    assert "ALRM" in SIG and "ALRM" in list(SIG) and len(SIG) > 10
    assert SIG.get("ALARM", "nope") == "nope"


def test_local_sig_restores_on_exception() -> None:
    def outer(name: str) -> None:
        pass

    SIG["ALRM"] = outer
    try:
        with pytest.raises(Boom), local_sig("ALRM", raising_handler):
            assert SIG["ALRM"] is raising_handler
            with local_sig("ALRM", "IGNORE"):
                assert SIG["ALRM"] == "IGNORE"
            assert SIG["ALRM"] is raising_handler
            raise Boom
        assert SIG["ALRM"] is outer
    finally:
        SIG["ALRM"] = "DEFAULT"


def test_local_sig_restores_a_foreign_python_handler() -> None:
    def python_style(signum: int, frame: object) -> None:
        pass

    previous = signal.signal(signal.SIGALRM, python_style)
    try:
        with local_sig("ALRM", "IGNORE"):
            assert SIG["ALRM"] == "IGNORE"
        assert signal.getsignal(signal.SIGALRM) is python_style
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_worker_sig_is_its_own_and_falls_back_to_main() -> None:
    def main_handler(name: str) -> None:
        raise Boom("main", name)

    def worker_handler(name: str) -> None:
        pass

    def block() -> list[object]:
        seen = [SIG["ALRM"]]
        SIG["ALRM"] = worker_handler
        seen.append(SIG["ALRM"])
        with local_sig("ALRM", "IGNORE"):
            seen.append(SIG["ALRM"])
        seen.append(SIG["ALRM"])
        return seen

    with local_sig("ALRM", main_handler):
        seen = in_thread(functools.partial(block))
        assert seen == [main_handler, worker_handler, "IGNORE", worker_handler]
        assert SIG["ALRM"] is main_handler  # the worker's assignment stayed in the worker

        def fallback() -> None:
            alarm(0.05)
            perlcompat.sleep(5)

        with pytest.raises(Boom) as caught:  # a worker with no SIG of its own uses main's
            in_thread(functools.partial(fallback))
        assert caught.value.args == ("main", "ALRM")


# -- DEFAULT: the alarm ends the process, as in Perl -----------------------------------


def test_default_alarm_kills_the_process_in_main_thread() -> None:
    child = run_python("import time\nfrom perlcompat import alarm\nalarm(0.2)\ntime.sleep(10)")
    assert child.returncode == -signal.SIGALRM


def test_default_alarm_kills_the_process_from_a_worker() -> None:
    code = """if True:
        import threading, perlcompat
        def work():
            perlcompat.alarm(0.2)
            perlcompat.sleep(10)
        t = threading.Thread(target=work); t.start(); t.join()
        print("survived")
    """
    child = run_python(code)
    assert child.returncode == -signal.SIGALRM
    assert b"survived" not in child.stdout


def test_worker_default_with_main_handler_exits_142() -> None:
    code = """if True:
        import threading, perlcompat
        perlcompat.SIG["ALRM"] = lambda *a: print("main handler ran")
        def work():
            perlcompat.SIG["ALRM"] = "DEFAULT"
            perlcompat.alarm(0.2)
            perlcompat.sleep(10)
        t = threading.Thread(target=work); t.start(); t.join()
        print("survived")
    """
    child = run_python(code)
    assert child.returncode == 142
    assert child.stderr == b"Alarm clock\n"
    assert child.stdout == b""


def test_windows_emulation_default_alarm_ends_the_process() -> None:
    code = """if True:
        import perlcompat
        from perlcompat.perl import alarm as _alarm
        _alarm._HAVE_SIGALRM = False
        perlcompat.alarm(0.2)
        perlcompat.sleep(10)
        print("survived")
    """
    child = run_python(code)
    assert (child.returncode, child.stdout, child.stderr) == (142, b"", b"Alarm clock\n")


def test_forked_child_inherits_no_cooperative_alarm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_alarm, "_HAVE_SIGALRM", False)
    with local_sig("ALRM", raising_handler):
        alarm(0.2)
        pid = os.fork()
        if pid == 0:  # child: the parent's alarm must not go off here
            try:
                perlcompat.sleep(0.4)
                os._exit(0 if _alarm.pending_deadline() is None else 2)
            except BaseException:
                os._exit(3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        with pytest.raises(Boom):  # while the parent's still does
            perlcompat.sleep(1)
