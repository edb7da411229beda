"""The TOP?LOCK lock (the TOP?LOCK article, Sajiro DATABASE): the first line's writer holds.

Every contender appends one line ``id<>time<>`` to the lock file (O_APPEND, so
lines never interleave) and reads the file back: if the first line is its own,
it holds the lock.  Release removes the file, and the next appender creates a
new one and comes first.  Our ids are
``<30 random digits>-<pid>-<start>-<boot id prefix>-<pid namespace>@<host>``,
Perl's are random numbers; both sides compare the first field as a string, so a
Perl script doing TOP?LOCK and Python processes exclude each other.  A line
with or without its newline (the article's last version omits it) is read alike.

A contender appends once per lock file (per inode): its line can never become
first in a file that already has a first line, so later tries only ``lstat``
until the file is replaced.  The lock file is opened with O_NOFOLLOW and
O_APPEND, never truncated.  Only a TOP?LOCK file is appended to: an empty
file, or one holding nothing but ``id<>time<>`` groups whose ids are TOP?LOCK's
(20 or more digits, or a decimal ``rand`` with 6 or more decimals) or ours and
whose times are 9 or 10 digit epoch seconds (:func:`is_toplock_data`).  Any
other file (a data file, even one of ``<>`` lines) or one with more than one
hard link is refused at once, untouched; so is, when we are root, an empty file
that belongs to another user (root would append to it and remove it).

A lock is stale when the time in its first line is older than ``stale``
seconds (the article uses 600), or at once when that line's id names a dead
process on this host.  That time is whole seconds, so the line was written up
to 1 s after it: the age counts from the end of that second, never early.
The remover (one at a time, ``locks.remover``) re-reads the first line and compares
the file's device and inode right before the unlink.

TOP?LOCK checks the lock again right before renaming its work file into place:
:func:`still_holding` is that check and :func:`rename_if_holding` does both.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import time

from ...perl.errno import fail
from ...perl.fsinfo import check_method
from ...perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from .. import osapi as _osapi, owner as _owner
from ..contract import register
from ..errors import perl_sub
from ..files import (
    OTHERS_EMPTY_GRACE,
    kind_error,
    links_error,
    lstat,
    not_a_lock,
    open_error,
    read_same,
    read_small,
    root_and_not_mine,
)
from ..guards import release_guard, unguard
from ..osapi import BUSY_PATIENCE, HOLD_OPEN, busy_create, open_file, pread, pwrite
from ..retry import deadline_after, tries
from ..stale import StaleBackend

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..api import Lock
    from ..files import Identity
    from ..stale import Owner

_APPEND = os.O_RDWR | os.O_APPEND | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK

#: how much of a lock file is checked to be TOP?LOCK lines before appending to it.
CHECK_LIMIT = 65536


def _is_id(item: bytes) -> bool:
    """TOP?LOCK's ids: 20 or more digits, ``rand()`` with 6 or more decimals; or one of ours."""
    if item.isdigit():
        return len(item) >= 20
    whole, dot, fraction = item.partition(b".")
    if dot:
        return whole.isdigit() and fraction.isdigit() and len(fraction) >= 6
    head, at, host = item.partition(b"@")
    parts = head.split(b"-")
    return (
        bool(at and host)
        and len(parts) in (3, 5)  # pid, start (older versions); boot id prefix, pid namespace
        and len(parts[0]) == 30
        and all(part.isdigit() for part in parts[:3])
        and all(part and part.isalnum() and part.isascii() for part in parts[3:])
        and not any(c in host for c in b" \t<>")
    )


def _groups(line: bytes, partial: bool) -> int:
    """How many ``id<>time<>`` groups *line* is (-1 if it is anything else).

    *partial*: the line may be cut short at its end (the head of a longer file).
    """
    if line.endswith(b"\r") and not partial:
        line = line[:-1]
    items = line.split(b"<>")
    tail = items.pop()
    if partial:
        if len(items) % 2:
            items.pop()  # an id whose time was cut off
    elif tail or not items:
        return -1
    if len(items) % 2:
        return -1
    for i in range(0, len(items), 2):
        stamp = items[i + 1]
        if not (_is_id(items[i]) and stamp.isdigit() and 9 <= len(stamp) <= 10):
            return -1
    return len(items) // 2


#: how much of a file ``detect`` reads.
DETECT_LIMIT = 65536


def is_toplock_data(data: bytes, complete: bool = True) -> bool:
    """True if *data* is nothing but TOP?LOCK request lines (``id<>time<>`` groups).

    With *complete* False, *data* is the head of a longer file and its last
    line may be cut short.  Empty data is not a TOP?LOCK file (the caller decides).
    """
    lines = data.split(b"\n")
    last = lines.pop()
    counts = [_groups(line, False) for line in lines]
    if last:
        counts.append(_groups(last, not complete))
    return bool(counts) and min(counts) >= 0 and sum(counts) > 0


def first_line(data: bytes | None) -> tuple[str, int | None] | None:
    """Return (id, time) of the first ``id<>time<>`` line of *data*; None if there is none."""
    if not data:
        return None
    line = data.split(b"\n", 1)[0].decode("utf-8", "replace")
    fields = line.split("<>")
    if not fields[0].strip() and len(fields) < 2:
        return None
    stamp = fields[1].strip() if len(fields) > 1 else ""
    return fields[0], int(stamp) if stamp.isdigit() else None


def make_id() -> str:
    """Return a new id: 30 random digits, pid, start time, boot id prefix, pid namespace, host."""
    pid, host, start = _owner.me()
    boot, pidns = _owner.place()
    digits = int.from_bytes(os.urandom(13), "big") % 10**30
    return f"{digits:030d}-{pid}-{start or 0}-{boot[:12] or 0}-{pidns or 0}@{host}"


def owner_of_id(ident: str) -> Owner:
    """Return (pid, host, start) encoded in one of our ids; Nones for a Perl id.

    Ids without the boot and pid namespace fields (older versions) are read too.
    """
    head, at, host = ident.partition("@")
    parts = head.split("-")
    if not at or len(parts) not in (3, 5) or not (parts[1].isdigit() and parts[2].isdigit()):
        return None, None, None
    start = int(parts[2]) or None
    boot, pidns = (parts[3], parts[4]) if len(parts) == 5 else ("", "")
    where = _owner.elsewhere(host or None, boot.strip("0") and boot, pidns.strip("0") and pidns)
    return int(parts[1]), where, start


def _look(path: str) -> tuple[os.stat_result | None, bytes | None]:
    """lstat and read the lock file at *path*.

    On Windows a file another process has open can answer a stat from its
    directory entry (no file id: ``st_ino`` 0) and refuse a read (sharing
    violation) for a moment: both are retried there for up to ``BUSY_PATIENCE``.
    """
    if not _osapi.looks_can_be_refused():
        return lstat(path), read_small(path)
    # one look inside a judgement: an ALRM handler must not cut it (alarm=False)
    for _ in tries(deadline_after(BUSY_PATIENCE), poll=0.005, alarm=False):
        st, data = lstat(path), read_small(path)
        if st is None or (st.st_ino != 0 and data is not None):
            break
    return st, data


def _read_head(fd: int, limit: int = 4096) -> bytes:
    return pread(fd, limit, 0)


def append_and_read(fd: int, line: bytes) -> bytes:
    """Append *line* to the lock file *fd* and read its head back, as one step among contenders."""
    _osapi.append_lock(fd)
    try:
        os.write(fd, line)
        return _read_head(fd)
    finally:
        _osapi.append_unlock(fd)


@register
class ToplockBackend(StaleBackend):
    """A TOP?LOCK file at ``path``: held while our ``id<>time<>`` line is its first."""

    method = "toplock"

    def __init__(self, path: str, *, stale: float, shared: bool = False) -> None:
        super().__init__(path, stale=stale, shared=shared)
        self._id = ""
        self._appended: tuple[int, int] | None = None
        self._held_key: tuple[int, int] | None = None
        self._open: int | None = None  # the held file's descriptor, where HOLD_OPEN
        check_method(path, self.method, stacklevel=4)  # not safe across hosts: warn once

    # -- acquire / release -------------------------------------------------
    def try_acquire(self) -> bool:
        """Append our line (once per lock file) and check whether it is first."""
        if self._appended is not None:
            st = lstat(self.path)
            if st is not None and (st.st_dev, st.st_ino) == self._appended:
                return False  # our line waits in this file behind the holder's
        ident = make_id()
        line = f"{ident}<>{int(time.time())}<>\n".encode()
        try:
            fd = open_file(self.path, _APPEND, 0o666)
        except FileNotFoundError as exc:
            if os.path.isdir(os.path.dirname(self.path) or "."):
                return False  # removed between lookup and open (network file systems): retry
            raise open_error(self.path, exc, "regular file") from None
        except PermissionError as exc:
            if busy_create(self.path, exc):
                return False  # Windows: the last holder's file, deleted, still open somewhere
            raise open_error(self.path, exc, "regular file") from None
        except OSError as exc:
            raise open_error(self.path, exc, "regular file") from None
        held = False
        try:
            st = os.fstat(fd)
            # others may be appending: the last line read may be cut short
            try:
                self._judge(st, _read_head(fd, CHECK_LIMIT) if st.st_size else b"", complete=False)
            except BlockingIOError:
                return False  # another user's empty file, just made: wait for its line
            head = append_and_read(fd, line)
            key = (st.st_dev, st.st_ino)
            self._appended = key
            first = first_line(head)
            if first is None or first[0] != ident:
                return False
            # looked at while our descriptor keeps the file: its inode number is not reused
            now = lstat(self.path)
            if now is None or (now.st_dev, now.st_ino) != key:
                return False  # our file was removed under us: we hold nothing
            held = True
        except FileNotFoundError:
            return False  # unlinked after our open (sshfs asks by path): a new file comes
        finally:
            if held and HOLD_OPEN:
                self._open = fd
            else:
                os.close(fd)
        self._id = ident
        self._held_key = key
        return True

    def still_holding(self) -> bool:
        """TOP?LOCK's second check: the lock file is ours and our line is still first."""
        mine = self._held_key
        if mine is None:
            return False
        st, data = _look(self.path)
        if st is None or (st.st_dev, st.st_ino) != mine:
            return False
        first = first_line(data)
        return first is not None and first[0] == self._id

    def release(self) -> bool:
        """Remove the lock file if our line is still its first; False if it was broken."""
        if self._held_key is None:
            return False
        fd = release_guard(self.path)
        try:
            ours = self.still_holding()
            self._held_key = self._appended = None
            if not ours:
                return False
            _osapi.remove_file(self.path)
            return True
        finally:
            if self._open is not None:  # after the removal: see HOLD_OPEN
                os.close(self._open)
                self._open = None
            unguard(fd)

    def refresh(self) -> bool:
        """Rewrite our first line's time as now, in place; False (nothing written) if not ours.

        In a ``perlcompat.fork()`` child the id, which names the parent, becomes
        random digits of the same length (a TOP?LOCK id: its holder is then
        judged by age only).  Under the release guard, as a release.
        """
        if self._held_key is None:
            return False
        guard_fd = release_guard(self.path)
        try:
            if not self.still_holding():
                return False
            ident = self._id
            if owner_of_id(ident)[0] != os.getpid():
                ident = f"{int.from_bytes(os.urandom(32), 'big') % 10 ** len(ident):0{len(ident)}d}"
            fd = open_file(self.path, os.O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK)
            try:
                if (os.fstat(fd).st_dev, os.fstat(fd).st_ino) != self._held_key:
                    return False
                pwrite(fd, f"{ident}<>{int(time.time())}<>".encode(), 0)  # same length
            finally:
                os.close(fd)
            self._id = ident
            return True
        finally:
            unguard(guard_fd)

    # -- on disk -----------------------------------------------------------
    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """A regular file of nothing but ``id<>time<>`` lines is a TOP?LOCK file.

        TOP?LOCK's long numeric ids or ours, and epoch times (:func:`is_toplock_data`).
        """
        if st is None or not stat_module.S_ISREG(st.st_mode):
            return False
        data = read_small(path, DETECT_LIMIT)
        return bool(data) and is_toplock_data(data or b"", complete=st.st_size <= len(data or b""))

    # -- stale hooks -------------------------------------------------------
    def _glance(self, st: os.stat_result) -> tuple[float, Identity]:
        # the mtime: never more than the first line's age; appends change it, not the holder
        return time.time() - st.st_mtime, (st.st_dev, st.st_ino, 0, 0)

    def _judge(self, st: os.stat_result, data: bytes | None, complete: bool) -> None:
        """Raise OSError unless the file *st* (head *data*; None: unknown) is a TOP?LOCK file."""
        if not stat_module.S_ISREG(st.st_mode):
            raise kind_error(self.path, st, "regular file")
        problem = links_error(self.path, st, self.method)
        if problem is not None:
            raise problem
        if not st.st_size and root_and_not_mine(st):  # an empty file proves nothing
            if time.time() - st.st_mtime <= OTHERS_EMPTY_GRACE:
                raise BlockingIOError(errno.EAGAIN, "a lock being made, perhaps")
            raise not_a_lock(
                self.path,
                self.method,
                f"is empty, belongs to uid {st.st_uid}, and we are root",
                errno.EPERM,
            )
        if data and not is_toplock_data(data, complete):
            raise not_a_lock(
                self.path, self.method, f"holds {st.st_size} bytes that are not TOP?LOCK lines"
            )

    def _check(self, st: os.stat_result) -> None:
        data = read_same(self.path, st, CHECK_LIMIT) if st.st_size else b""
        if data is None:
            self._undecided = True  # changed as we read it: judged again, never removed
        try:  # noqa: SIM105
            self._judge(st, data, complete=data is not None and len(data) >= st.st_size)
        except BlockingIOError:
            pass  # another user's empty file, just made: judged again before any removal

    def _age(self, st: os.stat_result) -> float:
        first = first_line(read_small(self.path))
        if first is None or first[1] is None:
            return time.time() - st.st_mtime
        # whole seconds: the line was written before the next second began
        return max(0.0, time.time() - (first[1] + 1))

    def _owner(self, st: os.stat_result) -> Owner:
        first = first_line(read_small(self.path))
        return (None, None, None) if first is None else owner_of_id(first[0])

    def _stamp_ns(self, st: os.stat_result) -> int:
        # appends refresh the mtime: the first line's time, judged by the storage clock
        first = first_line(read_small(self.path))
        if first is None or first[1] is None:
            return st.st_mtime_ns
        return first[1] * 1_000_000_000

    def _fingerprint(self, path: str, st: os.stat_result) -> tuple[object, ...]:
        # contenders append their lines meanwhile: only the first line names the holder
        return (stat_module.S_IFMT(st.st_mode), first_line(read_small(path)))

    def _remove(self, st: os.stat_result) -> bool:
        judged = first_line(read_small(self.path))
        now = lstat(self.path)
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False
        if not self._is_stale(now) or first_line(read_small(self.path)) != judged:
            return False
        try:
            _osapi.remove_file(self.path)
        except OSError:
            return False
        return True


def _toplock_backend(lock_: Lock) -> ToplockBackend:
    backend = lock_.backend
    if not isinstance(backend, ToplockBackend):
        raise TypeError(f"{lock_!r} is not a toplock lock (method={lock_.method!r})")
    return backend


def still_holding(lock_: Lock) -> bool:
    """True if the toplock *lock_* is held and its line is still the first (TOP?LOCK's re-check)."""
    backend = _toplock_backend(lock_)
    return lock_.is_locked and backend.still_holding()


@perl_sub()
def rename_if_holding(
    lock_: Lock, work: str | os.PathLike[str], data: str | os.PathLike[str]
) -> int:
    """TOP?LOCK's last step: rename *work* onto *data* only while *lock_* is ours (1, else 0).

    ``$!`` is ENOLCK when the lock was lost, EWOULDBLOCK when a remover (or
    another program's flock on the lock's directory) keeps the check out for
    ``RELEASE_WAIT`` seconds; the work file is then left in place.  No
    perlcompat remover can break the lock between the check and the rename.
    """
    backend = _toplock_backend(lock_)
    fd = release_guard(backend.path)
    try:
        if not (lock_.is_locked and backend.still_holding()):
            return fail(errno.ENOLCK)
        os.rename(work, data)
    finally:
        unguard(fd)
    return 1
