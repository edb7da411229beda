"""The exclusive-create lock, ``(set -C; : > f)`` (the shell locks article): held while it exists.

``open(O_CREAT | O_EXCL | O_NOFOLLOW)`` fails if anything exists at the path
(a planted symlink included, whose target is never touched), so exactly one
process creates the file.  The holder writes one line into it:
``perlcompat excl pid=.. host=.. start=.. token=..``.  An empty file, as a shell
script's ``set -C`` makes, is a lock with an unknown owner.  Nothing else is a
lock: a file holding anything but one such record (a data file, however old;
read twice, alike: sshfs gives every file at a name one inode number, and a
client's page cache can show one file's bytes under the next one's size),
or with more than one hard link, is refused at once and never removed; so is,
when we are root, an empty file that belongs to another user (it may be theirs,
not a lock: root would remove it; a record proves a lock whoever owns it).

A lock is stale when the file is older than ``stale`` seconds (mtime), or at
once when its record names a dead process on this host (ESRCH, a zombie, or a
pid reused by a process with another start time).  Stale files are removed by
``locks.remover`` (one remover at a time, identity re-checked right before the
``unlink``).  Release removes the file only if it is still the one this holder
made.

**The Perl side's format** (``record=``, a ``locks.record`` template).  Perl lock
code usually writes into its lock file: lockrun's ``print L "$$\n"`` after an
``O_CREAT|O_EXCL`` sysopen, SUSE SMT's ``print LOCK "$pid"``, File::NFSLock's
``"HOST pid time rand"``.  With ``record=`` the holder writes exactly
``record.render()`` and nothing else (the Perl code reading the lock, such as
Proc::PID::File's ``/^(\\d+)/`` and ``kill 0`` or SMT's ``/proc/$pid/cmdline``,
finds our pid); content matching the template (or empty: a Perl holder between
its sysopen and its print) is a lock, busy while present and stale when its pid
is dead on this host (a template without ``{host}`` names this host; on shared
storage it is judged by age only), when its ``{expires}`` has passed, or when
the file is older than ``stale``.  Our own token and start time then stay in
memory: release compares the file's device and inode, its inode generation where
the file system has one, and its whole content with what we wrote (the content
only where the generation proves the inode ours, or on shared storage: a successor
may write the same record into a file that reuses our inode number).  A file
longer than 4 KiB is never a lock: only its start could be read.  Without
``record=``, content that is not our own record is refused with an error that
names the content and the ``record=`` that declares it; with ``record=``, the start
of a record (a Perl holder that writes it in pieces) is waited on while the file is
younger than :data:`WRITING_GRACE`, other content is refused at once.  ``mode=`` is the new
file's mode (default 0644; LockFile::Simple makes its lock files 0444, so that
its own ``open(FILE, ">$lockfile")`` cannot truncate a lock another one holds).
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import time
from errno import EPERM

from ...perl.fsinfo import is_network
from ...perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW
from .. import owner as _owner
from ..contract import register
from ..errors import NotALockError, not_a_lock_error
from ..files import (
    OTHERS_EMPTY_GRACE,
    busy,
    identity,
    is_record,
    kind_error,
    links_error,
    not_a_lock,
    read_same,
    read_small,
    rewrite_record,
    root_and_not_mine,
)
from ..osapi import busy_create, generation, open_file, retry_busy
from ..stale import StaleBackend

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..record import Fields, Template
    from ..stale import Owner

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY


#: seconds a lock file whose content the declared record does not match may be a Perl
#: holder's record half written (``syswrite($l, $$); syswrite($l, "\n$host\n...")``).
WRITING_GRACE = 0.25
#: the longest lock file read as a record (``read_same``'s limit); a longer one is refused.
RECORD_LIMIT = 4096
#: how much of a file ``detect`` reads for a record.
DETECT_LIMIT = 65536


@register
class ExclBackend(StaleBackend):
    """A file created with O_EXCL at ``path``, the holder's record inside."""

    method = "excl"
    options = ("record", "mode")

    def __init__(
        self,
        path: str,
        *,
        stale: float,
        shared: bool = False,
        record: str | None = None,
        mode: int = 0o644,
    ) -> None:
        super().__init__(path, stale=stale, shared=shared)
        self.mode = mode
        self._mine: os.stat_result | None = None
        self._token = ""
        self._template: Template | None = None
        if record is not None:
            from ..record import template

            self._template = template(record)
        self._written = b""
        self._generation: int | None = None
        self._writing = False

    def try_acquire(self) -> bool:
        """Create the file exclusively; True if we created it."""
        # the record first: a holder killed (or failing) between the create and the write
        # leaves an empty file, which only ages out
        token = _owner.nonce()
        if self._template is None:
            data = _owner.record(self.method, token=token).encode()
        else:  # exactly what the Perl sibling writes; our token stays in memory
            data = self._template.render(stale=self.stale).encode("utf-8", "surrogateescape")
        try:
            fd = open_file(self.path, _CREATE, self.mode)
        except OSError as exc:
            if busy(exc, self.path):
                return False  # EEXIST, or a network file system's EPERM/EACCES collision
            if isinstance(exc, PermissionError) and busy_create(self.path, exc):
                return False  # Windows: the last holder's file, deleted, still open somewhere
            raise
        try:
            os.write(fd, data)
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            os.unlink(self.path)
            raise
        os.close(fd)
        self._mine = st
        self._token = token
        self._written = data
        if self._template is not None:
            self._generation = generation(self.path)
        return True

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        if self._template is None:
            return self._record_is_ours(st, mine, self.path, self.method)
        # The Perl format carries no token, and another holder may write the very same
        # record (a thread of ours, a template without {pid}) into a file that reuses our
        # inode number (ext4; overlayfs at once, and it has no generation).  So on local
        # storage the content counts only where the generation proves the inode is ours.
        if is_network(st.st_dev):  # inode numbers are not stable there: the content decides
            return identity(st) == identity(mine) or read_small(self.path) == self._written
        if (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
            return False
        now = None if self._generation is None else generation(self.path)
        if now is not None and now != self._generation:
            return False
        if identity(st) == identity(mine):
            return True  # (a generation that cannot be read now, EMFILE: the identity decides)
        return now is not None and read_small(self.path) == self._written

    def _undo(self) -> None:
        retry_busy(os.unlink, self.path)

    def _touch(self, st: os.stat_result) -> os.stat_result | None:
        """Refresh: the file's mtime now; its record rewritten if it names another process.

        (A ``perlcompat.fork()`` child's: the record named the parent.)  A declared
        ``record=`` is rendered again, its time and expiry fields renewed.
        """
        if self._template is None:
            data = _owner.record(self.method, token=self._token).encode()
        else:
            data = self._template.render(stale=self.stale).encode("utf-8", "surrogateescape")
        if not rewrite_record(self.path, st, data):
            return None
        self._written = data
        return super()._touch(st)

    def _check(self, st: os.stat_result) -> None:
        if not stat_module.S_ISREG(st.st_mode):
            raise kind_error(self.path, st, "regular file")
        problem = links_error(self.path, st, self.method)
        if problem is not None:
            raise problem
        if (  # an empty file proves nothing once its maker had time to write its record
            not st.st_size
            and root_and_not_mine(st)
            and time.time() - st.st_mtime > OTHERS_EMPTY_GRACE
        ):
            raise not_a_lock(
                self.path,
                self.method,
                f"is empty, belongs to uid {st.st_uid}, and we are root",
                EPERM,
            )
        if st.st_size > RECORD_LIMIT:  # only its start could be read: never a lock for it
            raise not_a_lock(
                self.path, self.method, f"holds {st.st_size} bytes, more than any lock record"
            )
        if st.st_size:
            data = read_same(self.path, st)
            if data is None or (not self._is_lock(data) and read_same(self.path, st) != data):
                self._undecided = True  # changed as we read it: judged again, never removed
                return
            if not self._is_lock(data):  # (a second read agreed: see above)
                if (
                    self._template is not None
                    and time.time() - st.st_mtime < WRITING_GRACE
                    and self._template.prefix(data)
                ):
                    self._writing = True  # a Perl holder's record half written: look again
                    return
                raise self._foreign(data)

    def _check_once(self, st: os.stat_result) -> bool:
        """As ``StaleBackend``'s, but a record still being written passes only this look."""
        self._writing = False
        judged = super()._check_once(st)
        if self._writing:
            self._passed = None
        return judged

    def _is_lock(self, data: bytes) -> bool:
        """True if *data* (the whole file) is a lock: our record, or the declared format."""
        if is_record(data, self.method):
            return True
        return self._template is not None and self._template.match(data) is not None

    def _foreign(self, data: bytes) -> NotALockError:
        """The refusal of a file holding *data*: it names the content and ``record=``."""
        from .. import record as _record

        if self._template is None:
            message = _record.foreign(self.path, data, method=self.method)
        else:
            message = (
                f"{self.path} holds {_record.shown(data)}, which is not the declared"
                f" record={self._template.text!r}"
            )
        return not_a_lock_error(errno.EEXIST, f"{message}; refusing to touch it", self.path)

    def _fields(self) -> Fields | None:
        """The declared format's fields of the file now at the path (None if none match)."""
        if self._template is None:
            return None
        return self._template.match(read_small(self.path) or b"")

    def _owner(self, st: os.stat_result) -> Owner:
        fields = self._fields()
        if fields is None:
            return _owner.owner_of(_owner.parse(read_small(self.path) or b"", self.method))
        if fields.host is None and is_network(st.st_dev):
            from .symlink import UNKNOWN_HOST

            return fields.pid, UNKNOWN_HOST, None  # any host may have written it: age only
        return fields.pid, fields.holder_host(), None

    def _is_stale(self, st: os.stat_result, clock_ns: int | None = None) -> bool:
        if super()._is_stale(st, clock_ns):
            return True
        fields = self._fields()
        return fields is not None and fields.expires is not None and fields.expires < time.time()

    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """A regular file holding an excl owner record is an excl lock."""
        if st is None or not stat_module.S_ISREG(st.st_mode):
            return False
        return _owner.parse(read_small(path, DETECT_LIMIT) or b"", cls.method) is not None
