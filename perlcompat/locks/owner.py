"""Who holds a lock, and whether that holder is still running.

A holder is named by its pid, its host name and its process start time (field 22
of ``/proc/<pid>/stat``, clock ticks since boot).  The judgement is three-valued:

* ``False`` (dead): the host is this host and ``kill(pid, 0)`` fails with ESRCH,
  or the process is a zombie, or the pid now belongs to a process with another
  start time than the one recorded (the pid was reused), or, where no start
  time is recorded, to a process that started more than ``START_SLACK``
  seconds after the lock was made (a lock cannot be older than its maker; the
  wide margin keeps a wall-clock step from killing a live holder).
* ``True`` (alive): ``kill(pid, 0)`` succeeds, or fails with EPERM (a live
  process of another user), and nothing above says the pid was reused.
* ``None`` (unknown): the lock names another host, names no pid (or a number
  that cannot be a pid: 0, negative, or not below 2**31, which ``kill(2)``
  cannot even be asked about), or this platform cannot ask (Windows:
  ``os.kill`` there would terminate the process).

Only ``False`` lets a lock be broken before its age limit; ``None`` leaves it to age.
"""

from __future__ import annotations

import itertools
import os

from . import osapi as _osapi

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: pids are positive and below this (pid_t is a 32-bit signed integer).
PID_LIMIT = 2**31

#: seconds of slack between a process's start time and a lock's creation time (used only
#: when the lock records no start time; wide, so a wall-clock step cannot make a live holder
#: look younger than its lock).
START_SLACK = 60.0

_me: tuple[int, str, int | None] | None = None
_host: str | None = None
_boot: tuple[float, float] | None = None


def hostname() -> str:
    """Return this host's name (``uname -n``)."""
    global _host
    if _host is None:
        _host = _osapi.nodename().replace(" ", "_") or "localhost"
    return _host


def proc_stat(pid: int) -> tuple[str, int] | None:
    """Return (state letter, start time in clock ticks) of *pid* from /proc, or None."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as stream:
            data = stream.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return fields[0].decode("ascii", "replace"), int(fields[19])
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """Return *pid*'s start time in clock ticks since boot, None where /proc cannot tell."""
    found = proc_stat(pid)
    return None if found is None else found[1]


def _boot_clock() -> tuple[float, float]:
    """Return (boot time as epoch seconds, clock ticks per second)."""
    global _boot
    if _boot is None:
        btime = 0.0
        try:
            with open("/proc/stat", "rb") as stream:
                for line in stream:
                    if line.startswith(b"btime "):
                        btime = float(line.split()[1])
                        break
        except OSError:
            pass
        _boot = (btime, _osapi.clock_ticks())
    return _boot


def started_at(ticks: int) -> float | None:
    """Convert a start time in clock ticks to epoch seconds (None without /proc/stat)."""
    btime, hz = _boot_clock()
    if not btime:
        return None
    return btime + ticks / hz


def me() -> tuple[int, str, int | None]:
    """Return this process's (pid, host, start time).

    Asked once per process: a forked child forgets it (``os.register_at_fork``), so a
    lock's path makes no ``getpid`` for it.
    """
    global _me
    if _me is None:
        pid = os.getpid()
        _me = (pid, hostname(), start_time(pid))
    return _me


def _forget_me() -> None:
    """In a forked child: this process is another one (:func:`me` asks again)."""
    global _me
    _me = None
    _heads.clear()


if hasattr(os, "register_at_fork"):  # (not on Windows, where no process forks)
    os.register_at_fork(after_in_child=_forget_me)


def alive(
    pid: int | None,
    host: str | None = None,
    start: int | None = None,
    created: float | None = None,
) -> bool | None:
    """Judge whether the holder (*pid* on *host*, started at *start* ticks) still runs.

    *created* (epoch seconds) is when the lock was made: where no *start* is
    recorded, a process that started more than ``START_SLACK`` seconds later
    cannot have made it.
    """
    if pid is None or not 0 < pid < PID_LIMIT:
        return None  # no pid, or a number no process can have: unknown, never an error
    if host is not None and host != hostname():
        return None
    exists = _osapi.process_exists(pid)  # kill(pid, 0); None where pids cannot be asked about
    if exists is not True:
        return exists
    found = proc_stat(pid)
    if found is None:
        return True
    state, ticks = found
    if state in ("Z", "X", "x"):
        return False
    if start is not None:
        return ticks == start  # the recorded start decides; wall-clock times play no part
    if created is not None:
        began = started_at(ticks)
        if began is not None and began > created + START_SLACK:
            return False
    return True


def record(kind: str, *, where: bool = True, **extra: object) -> str:
    """Return a one-line owner record for this process: ``perlcompat KIND pid=.. host=.. ...``.

    With *where*, ``boot=`` and ``pidns=`` (see :func:`place`) follow where /proc has them.
    """
    return _line(me(), kind, where, extra)


def signed(kind: str, **extra: object) -> tuple[str, str]:
    """(record, token): :func:`record` with a fresh :func:`nonce` as its last field, ``token=``.

    One look at :func:`me` for both.
    """
    ident = _me or me()
    token = nonce(ident[0])
    head = _heads.get(kind)
    if head is None:  # this process's part of the record, made once per kind
        head = _heads[kind] = _line(ident, kind, True, {}).rstrip("\n")
    for key, value in extra.items():
        head += f" {key}={value}"
    return f"{head} token={token}\n", token


#: kind -> the start of this process's records (:func:`signed`); a forked child clears it.
_heads: dict[str, str] = {}


def _line(
    ident: tuple[int, str, int | None], kind: str, where: bool, extra: dict[str, object]
) -> str:
    pid, host, start = ident
    head = f"perlcompat {kind} pid={pid} host={host}"
    if start is not None:
        head += f" start={start}"
    boot, pidns = place(pid) if where else ("", "")
    if boot:
        head += f" boot={boot}"
    if pidns:
        head += f" pidns={pidns}"
    return " ".join([head, *(f"{key}={value}" for key, value in extra.items())]) + "\n"


#: a record rewritten in place (mkdir's owner file) is padded to this many bytes, so that a
#: shorter record never leaves the tail of a longer one behind.
RECORD_SIZE = 256


def padded(text: str = "") -> bytes:
    """The one-line record *text* as :data:`RECORD_SIZE` bytes (spaces before its newline).

    ``padded()`` is a blank record: one that names nobody.
    """
    return text.rstrip("\n").encode().ljust(RECORD_SIZE - 1) + b"\n"


def parse(text: str | bytes, kind: str | None = None) -> dict[str, str] | None:
    """Parse an owner record; None if *text* is not one (or not of *kind*)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line = text.split("\n", 1)[0].split()
    if len(line) < 2 or line[0] != "perlcompat" or (kind is not None and line[1] != kind):
        return None
    fields = {"kind": line[1]}
    for item in line[2:]:
        key, sep, value = item.partition("=")
        if sep:
            fields[key] = value
    return fields


def owner_of(fields: Mapping[str, str] | None) -> tuple[int | None, str | None, int | None]:
    """Return (pid, host, start) named by a parsed record (Nones where absent or bad).

    A holder on this host but in another boot or pid namespace is named with
    that said after its host name (:func:`elsewhere`), so it is judged by age only.
    """
    if not fields:
        return None, None, None
    host = elsewhere(fields.get("host") or None, fields.get("boot"), fields.get("pidns"))
    return pid_of(fields.get("pid")), host, _int(fields.get("start"))


def pid_of(text: str | None) -> int | None:
    """Return the pid written as ASCII digits in *text*; None if it is not one (0, >= 2**31)."""
    number = _int(text)
    return number if number is not None and 0 < number < PID_LIMIT else None


def _int(text: str | None) -> int | None:
    if text is None or not text.isascii() or not text.isdigit() or len(text) > 30:
        return None
    return int(text)


_tokens = itertools.count(1)
_salt: tuple[int, str] = (0, "")


def nonce(pid: int | None = None) -> str:
    """Return a token no other hold has: our pid (*pid*, else :func:`me`'s), a per-process count
    and random bits drawn once per process (pids repeat across hosts and pid namespaces
    sharing one directory)."""
    global _salt
    if pid is None:
        pid = me()[0]
    if _salt[0] != pid:
        _salt = (pid, os.urandom(4).hex())
    return f"{pid}.{next(_tokens)}.{_salt[1]}"


#: the inode of the initial pid namespace (Linux's PROC_PID_INIT_INO).
INITIAL_PIDNS = "4026531836"

_place: tuple[int, str, str] | None = None


def place(pid: int | None = None) -> tuple[str, str]:
    """Return (boot id, pid namespace id) of this process (*pid*: :func:`me`'s); "" where
    /proc cannot tell.

    The boot id (``/proc/sys/kernel/random/boot_id``, without dashes) changes at
    every boot; the pid namespace id (the inode of ``/proc/self/ns/pid``) differs
    between containers.  A pid means the same process only where both match.
    """
    global _place
    if pid is None:
        pid = me()[0]
    if _place is None or _place[0] != pid:
        boot, pidns = _osapi.boot_and_pidns()
        _place = (pid, boot, pidns if pidns.isdigit() else "")
    return _place[1], _place[2]


def elsewhere(host: str | None, boot: str | None, pidns: str | None) -> str | None:
    """Return *host*, with where its holder runs appended if its pid cannot be judged here.

    A record made on this host (by name) in another boot or another pid namespace
    (a container sharing the volume) names a pid that means nothing here: the
    result then reads ``"NAME (another boot)"`` / ``"NAME (pid namespace N)"``,
    which is not this host's name, so :func:`alive` says unknown and the lock is
    judged by its age.  A record without ``pidns=`` (older versions, hand-made)
    is taken as made in the initial pid namespace.
    """
    if host is None or host != hostname():
        return host
    my_boot, my_pidns = place()
    if boot and my_boot and not my_boot.startswith(boot):
        return f"{host} (another boot)"
    theirs = pidns or INITIAL_PIDNS
    if my_pidns and theirs != my_pidns:
        return f"{host} (pid namespace {theirs})"
    return host


def unnamed_host() -> str | None:
    """The host of a holder known by a bare pid (a symlink lock): this one, in the initial
    pid namespace; named as elsewhere when this process is in another one."""
    return elsewhere(hostname(), None, None)


def judged(pid: int | None, host: str | None) -> str:
    """Say how a holder's liveness is judged: ``"pid"``, or ``"age only: <why>"``."""
    if pid is None:
        return "age only: no pid recorded"
    if host is not None and host != hostname():
        if host.startswith(hostname() + " (pid namespace"):
            return "age only: another pid namespace"
        if host.startswith(hostname() + " (another boot"):
            return "age only: another boot"
        return "age only: another host"
    if not _osapi.pids_known():
        return "age only: no process table"
    return "pid"
