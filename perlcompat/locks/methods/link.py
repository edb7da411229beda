"""The link() lock (NFS-safe): a unique temp file hard-linked to the lock name.

The classic NFS-safe lock of File::NFSLock (CPAN, 1.22 to 1.29), SpamAssassin's
``Mail::SpamAssassin::Locker::UnixNFSSafe`` and flufl.lock (Python), the rule the
open(2) man page gives for ``O_EXCL`` on NFS: write the holder's record into a
temp file of a unique name, ``link()`` it to the lock name, and hold the lock if
``link()`` succeeded or, when it reported a failure, if the temp file then has
two links (over NFS a ``link()`` whose reply was lost reports a failure although
it was made; the link count tells the truth).  That is SpamAssassin's rule and
flufl.lock's (its ``Lock.lock``: "If we got here, we know we got the lock");
File::NFSLock wants both, which never holds on sshfs (it reports one link
whatever the count).  The temp file is removed either way.  Release unlinks the
lock file only while it is still the one this holder linked (same inode, and
unchanged or still holding our bytes).

``record=`` declares what the Perl side writes, so that each side reads the
other's lock (``locks.record`` templates):

* File::NFSLock: lock ``FILE.NFSLock``, ``record="{host} {pid} {time} {rand}\\n"``.
  It recovers a lock whose line names a dead pid on its own host (``kill 0``)
  or, when given a ``stale_lock_timeout``, one older than that (mtime);
* SpamAssassin UnixNFSSafe: lock ``PATH.lock``, ``record="{host}.{pid}\\n"``,
  ``stale=600`` (its ``LOCK_MAX_AGE``, by ctime; it never looks at the pid).
  Its temp file gets one such line per retry, so the lock file may hold the
  same line more than once.

A lock file whose every line matches the declared template is a lock: busy
while present, stale when older than ``stale`` (mtime) or when its line names
a dead process on this host.  Without ``record=`` the holder writes its own
record (``perlcompat link pid=.. host=.. token=..``), and a lock file holding
anything else (a data file, an undeclared Perl format) is refused at once,
never removed, with an error naming the content and the ``record=`` that
declares it.  So is an empty file (a link lock's file always holds its
record: it is written before the link) and a file with more than two links.
File::NFSLock's shared locks (mode bit 01, one line per holder) are waited on
as a busy lock; this method takes exclusive locks only.
"""

from __future__ import annotations

import os
import stat as stat_module
from errno import EEXIST, ENOENT

from ...perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW
from .. import owner as _owner
from ..contract import register
from ..errors import not_a_lock_error
from ..files import (
    busy,
    is_record,
    kind_error,
    not_a_lock,
    read_same,
    read_small,
    rewrite_record,
    unlink_quietly,
)
from ..osapi import open_file
from ..record import foreign, template
from ..stale import StaleBackend

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..record import Template
    from ..stale import Owner

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
#: how much of a lock file is read to judge it.
READ_LIMIT = 65536


def temp_name(path: str) -> str:
    """A name beside the lock *path* that no other holder uses (pid, count and random bits)."""
    return f"{path}.{_owner.hostname()}.{_owner.nonce()}.linktmp"


@register
class LinkBackend(StaleBackend):
    """A lock file at ``path`` made by ``link()`` from a unique temp file (the NFS rule)."""

    method = "link"
    options = ("record",)

    def __init__(
        self, path: str, *, stale: float, shared: bool = False, record: str | None = None
    ) -> None:
        super().__init__(path, stale=stale, shared=shared)
        self.record: Template | None = None if record is None else template(record)
        self._mine: os.stat_result | None = None
        self._data = b""
        self._enoent = False  # the last link() said ENOENT: once is looked at again

    # -- acquire / release -------------------------------------------------
    def _content(self) -> bytes:
        if self.record is not None:
            return self.record.render(stale=self.stale).encode("utf-8", "surrogateescape")
        self._token = _owner.nonce()
        return _owner.record(self.method, token=self._token).encode()

    def try_acquire(self) -> bool:
        """Link a fresh temp file holding our record to the lock name; True if we hold it."""
        data = self._content()
        temp = temp_name(self.path)
        # mode bit 01 clear: File::NFSLock reads "exclusive"; opened so that it can be
        # removed while open on Windows too (``os.open``'s could not: a temp file per try)
        fd = open_file(temp, _CREATE, 0o644)
        try:
            try:
                os.write(fd, data)
                failed: OSError | None = None
                try:
                    os.link(temp, self.path)
                except OSError as exc:
                    failed = exc
                # link() made the name: ours (sshfs reports one link whatever the count).
                # It failed: the NFS rule, a lost reply may report failure for a link that
                # was made, and the temp file's two links tell the truth.
                held = failed is None or os.fstat(fd).st_nlink == 2
            finally:
                unlink_quietly(temp)
            if not held:
                if failed is None or busy(failed, self.path):
                    return False
                if failed.errno == ENOENT and not self._enoent:
                    # flufl.lock's rule (an NFS server that lost a name answers ENOENT
                    # where ESTALE is meant): one is tried again, two in a row raise
                    self._enoent = True
                    return False
                self._enoent = False
                raise failed
            self._enoent = False
            self._mine = os.fstat(fd)
            self._data = data
            return True
        finally:
            os.close(fd)

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        if (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
            from ...perl.fsinfo import is_network

            if not is_network(st.st_dev):
                return False  # client inode numbers are not stable on shared storage
        if (st.st_mtime_ns, st.st_size) == (mine.st_mtime_ns, mine.st_size):
            return True
        # File::NFSLock rewrites a lock file in place when it drops dead lines from it
        return read_small(self.path, READ_LIMIT) == self._data

    def _undo(self) -> None:
        os.unlink(self.path)

    def _touch(self, st: os.stat_result) -> os.stat_result | None:
        """Refresh: the file's mtime now; its record rendered again if it changed.

        (A ``perlcompat.fork()`` child's names the child, not the dead parent that a
        waiter would judge it by; a declared ``record=`` gets its time fields renewed.)
        Rewritten in place, empty first, as the excl method does.
        """
        if self.record is not None:
            data = self.record.render(stale=self.stale).encode("utf-8", "surrogateescape")
        else:
            data = _owner.record(self.method, token=self._token).encode()
        if not rewrite_record(self.path, st, data, READ_LIMIT):
            return None
        self._data = data
        return super()._touch(st)

    # -- what is at the path -----------------------------------------------
    def _holders(self, data: bytes) -> list[tuple[int | None, str | None]] | None:
        """(pid, host) of each holder the lock file *data* names; None if it is not a lock."""
        if self.record is None:
            if not is_record(data, self.method):
                return None
            pid, host, _start = _owner.owner_of(_owner.parse(data, self.method))
            return [(pid, host)]
        whole = self.record.match(data)
        if whole is not None:
            return [(whole.pid, whole.holder_host())]
        # one line per holder (File::NFSLock's shared lock) or per retry (UnixNFSSafe)
        lines = [line for line in data.splitlines(keepends=True) if line.strip()]
        found = [self.record.match(line) for line in lines]
        if not lines or any(fields is None for fields in found):
            return None
        return [(fields.pid, fields.holder_host()) for fields in found if fields is not None]

    def _check(self, st: os.stat_result) -> None:
        if not stat_module.S_ISREG(st.st_mode):
            raise kind_error(self.path, st, "regular file")
        if st.st_nlink > 2:  # 2 for a moment: the maker has not removed its temp file yet
            raise not_a_lock(self.path, self.method, f"has {st.st_nlink} hard links", EEXIST)
        data = read_same(self.path, st, READ_LIMIT)
        if data is not None and self._holders(data) is not None:
            return
        if data is None or read_same(self.path, st, READ_LIMIT) != data:
            # changed as we read it, or a second read disagrees (a client cache): judged
            # again on the next look, never removed meanwhile
            self._undecided = True
            return
        if not data:
            raise not_a_lock(self.path, self.method, "is empty (a link lock holds its record)")
        message = foreign(self.path, data, method=self.method) + self._hint()
        raise not_a_lock_error(EEXIST, message, self.path)

    def _hint(self) -> str:
        return "" if self.record is None else f" (the declared record= is {self.record.text!r})"

    def _owner(self, st: os.stat_result) -> Owner:
        holders = self._holders(read_small(self.path, READ_LIMIT) or b"") or []
        made = st.st_mtime
        for pid, host in holders:  # the first holder not provably dead names the lock
            if _owner.alive(pid, host, None, made) is not False:
                return pid, host, None
        if holders:
            return holders[0][0], holders[0][1], None
        return None, None, None

    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """A regular file holding a link owner record is a link lock."""
        if st is None or not stat_module.S_ISREG(st.st_mode):
            return False
        return is_record(read_small(path, READ_LIMIT) or b"", cls.method)
