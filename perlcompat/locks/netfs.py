"""Stale-lock removal on shared storage (NFS, SMB, sshfs/FUSE), safe across hosts.

On storage that other hosts use, two things ``locks.remover`` relies on locally do not
hold: a ``flock`` on the lock's directory excludes only removers of this host
(each host's mount has its own), and ``lstat`` may answer from the client's
cache, seconds old, so a remover can judge a lock that is gone and act on the
fresh one that replaced it.  And hosts' clocks differ.  So there
(``perl.fsinfo.is_network``) a remover:

1. **Takes the remover lock on the storage itself**: ``<lock>.breaking``,
   created with O_EXCL (the server lets one creator win, whatever the clients
   cached), holding ``perlcompat breaking token=<random>``.  Its mtime, stamped
   by the storage as it is created, is the **storage clock** for this removal.
   A remover that finds it busy gives up this round, unless it is older than
   :data:`BREAKER_STALE` by the storage clock (read from a probe file it creates
   and removes, ``<lock>.breaking.<token>``): its remover died, and it is
   unlinked.  Unlinking a busy one by mistake (a cached look) is harmless:
   every remover checks that ``<lock>.breaking`` still carries its own token
   right before it moves anything, and stops if not.
2. **Judges the lock by the storage clock**: its age is the remover lock's
   mtime minus the lock's time stamp, less one second where the storage keeps
   whole seconds (sshfs), and never more than the local clock says, so neither
   a skewed clock nor a coarse time stamp can make a live lock look stale.
   Owner liveness counts only for a holder on this host, boot and pid namespace
   (``locks.owner``).
3. **Judges twice**: a lock is removed only if it was judged stale, unchanged
   (same :func:`fingerprint`), on two looks ``locks.remover.SETTLE`` seconds apart: a
   rename lock's marker keeps its old mtime from the holder's rename until it
   writes its record (sshfs reports no ctime), and a look may come from a cache.
4. **Moves the lock away before removing it** (a rename handshake): the server
   renames whatever is at the name *now* to ``<lock>.breaking.<token>``, a name
   no client has cached; the remover looks at it there and compares it with
   what it judged (:func:`fingerprint`: type, mtime, size, contents or link
   target, owner record).  The same: it is removed.  Different (a fresh lock
   was taken after the look, which came from a stale cache): it is put back
   under its name if that is still free (``link(2)`` for files and symlinks,
   which never overwrites) and nothing is removed.
5. **A holder releases a lock held past half its stale age under the remover
   lock** (waiting for it at most ``RELEASE_WAIT``), so no remover can judge it
   stale, see it released and replaced, and move the replacement.

What remains: a remover stalled between its token check and its rename for
longer than it takes another remover to find its remover lock
:data:`BREAKER_STALE` old, and a fresh lock displaced by a stale-cache judgement
whose name was taken again before it could be put back (both need two faults at
once within milliseconds).  Without caches (NFS ``noac,lookupcache=none``,
sshfs ``cache=no,entry_timeout=0,attr_timeout=0``) the second cannot happen.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import time

from ..perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW
from .files import busy, lstat, read_small, unlink_quietly
from .guards import RemoverGuard

#: suffix of the remover lock (and, with a token after it, of probes and moved locks).
BREAKING = ".breaking"
#: a remover lock older than this (s, by the storage clock) belongs to a dead remover.
BREAKER_STALE = 10.0
#: a releasing holder waits at most this long (s) for the remover lock.
RELEASE_WAIT = 2.0

#: errors of a create that say "not now" rather than "never here".
_TRANSIENT = frozenset({errno.ESTALE, errno.EAGAIN, errno.EINTR})

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY


def _token() -> str:
    return os.urandom(8).hex()  # pids repeat across hosts; this does not


def grain(stamp_ns: int) -> float:
    """The uncertainty (s) of a storage time stamp: 1 where the storage keeps whole seconds."""
    return 1.0 if stamp_ns % 1_000_000_000 == 0 else 0.0


def storage_age(clock_ns: int, stamp_ns: int, local_age: float) -> float:
    """Age of a time stamp *stamp_ns* at storage time *clock_ns*, capped by *local_age*."""
    age = (clock_ns - stamp_ns) / 1e9 - max(grain(clock_ns), grain(stamp_ns))
    return min(age, local_age)


def _create(path: str, token: str) -> os.stat_result:
    fd = os.open(path, _CREATE, 0o644)
    try:
        os.write(fd, f"perlcompat breaking token={token}\n".encode())
        return os.fstat(fd)
    finally:
        os.close(fd)


def storage_clock(path: str) -> int | None:
    """Return the storage's time now (ns), from a probe file created beside *path*."""
    probe = f"{path}{BREAKING}.{_token()}"
    try:
        st = _create(probe, "clock")
    except OSError:
        return None
    unlink_quietly(probe)
    return st.st_mtime_ns


class RemoverLock(RemoverGuard):
    """``<lock>.breaking``: one remover at a time among all hosts (rule 1).

    The remover guard on shared storage (``locks.remover.remover_guard``).
    """

    __slots__ = ("clock_ns", "path", "token")
    cached = True

    def __init__(self, lock_path: str) -> None:
        self.path = lock_path + BREAKING
        self.token = ""
        #: the storage clock when the remover lock was taken (its mtime), in ns
        self.clock_ns: int | None = 0

    def acquire(self) -> bool:
        """Take the remover lock (breaking a dead remover's); False if another remover has it.

        Raises OSError (errno kept, naming the path) if it cannot be created at all.
        """
        for _ in range(2):
            token = _token()
            try:
                st = _create(self.path, token)
            except OSError as exc:
                if exc.errno in _TRANSIENT:
                    return False  # try again on the next wait
                if not busy(exc, self.path):
                    raise OSError(
                        exc.errno,
                        f"cannot create the remover lock {self.path!r}: {exc.strerror};"
                        " its stale lock cannot be broken safely here",
                    ) from None
                if not self._break_dead():
                    return False
                continue
            self.token = token
            self.clock_ns = st.st_mtime_ns
            return True
        return False

    def _break_dead(self) -> bool:
        """Unlink the remover lock if it is older than BREAKER_STALE by the storage clock."""
        st = lstat(self.path)
        if st is None:
            return True
        now = storage_clock(self.path)
        if now is None:
            return False
        age = storage_age(now, st.st_mtime_ns, time.time() - st.st_mtime)
        if age <= BREAKER_STALE:
            return False
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        return True

    def still_mine(self) -> bool:
        """True if the remover lock on the storage still carries our token."""
        data = read_small(self.path) or b""
        return bool(self.token) and data.split(b"token=", 1)[-1].strip() == self.token.encode()

    def wait(self, patience: float) -> bool:
        """Take the remover lock, trying for up to *patience* seconds; False if still busy."""
        from .retry import deadline_after, tries

        try:
            # a release's wait: an ALRM handler must not cut it (alarm=False)
            for _ in tries(deadline_after(patience), first=0.001, growth=2, cap=0.05, alarm=False):
                if self.acquire():
                    return True
        except OSError:
            pass  # refused: the caller decides by the lock's age (rule 5)
        return False

    def release(self) -> None:
        """Remove the remover lock if it is still ours."""
        if self.still_mine():
            unlink_quietly(self.path)
        self.token = ""


def fingerprint(path: str, st: os.stat_result, extra: bytes = b"") -> tuple[object, ...]:
    """What a remover compares before and after moving a lock: type, mtime, size, contents."""
    kind = stat_module.S_IFMT(st.st_mode)
    if stat_module.S_ISREG(kind):
        body: object = read_small(path, 65536)
        size: int = st.st_size
    elif stat_module.S_ISLNK(kind):
        try:
            body = os.readlink(path)
        except OSError:
            body = None
        size = 0
    else:
        body, size = None, 0
    return (kind, st.st_mtime_ns, size, body, extra)


def moved_name(path: str) -> str:
    """A fresh name beside *path* to move a lock to while it is judged (never cached)."""
    return f"{path}{BREAKING}.{_token()}"


def _free(path: str) -> bool:
    """True if nothing is at *path*; False also when the look fails (ESTALE)."""
    try:
        return lstat(path) is None
    except OSError:
        return False


def put_back(moved: str, path: str, st: os.stat_result) -> bool:
    """Give the lock at *moved* its name *path* back, never replacing anything there."""
    if stat_module.S_ISDIR(st.st_mode):
        if not _free(path):
            return False
        try:
            os.rename(moved, path)
        except OSError:
            return False
        return True
    try:
        os.link(moved, path, follow_symlinks=False)
    except OSError:
        if not _free(path):
            return False
        try:
            os.rename(moved, path)  # no hard links here (SMB): the name was free a moment ago
        except OSError:
            return False
        return True
    unlink_quietly(moved)
    return True
