"""The mkdir lock (the mkdir lock sub, the default method): a directory held while it exists.

``mkdir(2)`` checks and creates in one step, so of any number of processes
exactly one creates the directory and holds the lock; ``rmdir`` releases it.
The directory stays **empty**, so a Perl script running the mkdir lock sub's
``sub lock``/``sub unlock`` on the same path excludes us and is excluded by
us, and its bare ``rmdir`` unlock still works.

Only an *empty* directory is a lock: a non-empty one at the path (``.``,
``/tmp``, a data directory) is refused at once with ENOTEMPTY, never waited on
nor removed.

Who holds it is written *beside* the directory, never inside: the file
``<lock>.owner`` holds ``perlcompat mkdir pid=.. host=.. start=.. dir=DEV:INO:MTIME
token=..``.  It is rewritten in place by each holder (no create/unlink per
hold: on a disk those cost as much as the mkdir itself), blanked at release,
and left there.  Only an owner file is written: something else at that path
(a data file, a FIFO, a symlink, a hard link to another file) is left alone and
the hold keeps no record (it then recovers by age, like a Perl-made lock).
A record counts only while it names the directory that is there (device,
inode and mtime), so a record left by an earlier holder is ignored; a
directory made by Perl has none.

A lock is stale when its mtime is older than ``stale`` (the mkdir lock column's
``(stat($dir))[9] < time - 180``), or at once when its record names a dead
process on this host.  Stale locks are removed by ``locks.remover``: one remover at a
time, identity re-checked right before the ``rmdir``.  Release removes the
directory only if it is still the one this holder made: on local storage the
holder keeps its directory open (so its inode number cannot be reused) and
compares device and inode; where it cannot be opened, the inode generation where
the file system has one (ext4, XFS, btrfs), else its unchanged identity.  So a
Perl lock that reused the inode number after breaking ours is never removed.  On Windows a release
whose ``rmdir`` meets a sharing violation (another process looking at the
directory at that instant) retries it for a moment (``locks.osapi.remove_directory``).

**A pid file inside** (``pidfile=``: the "mkdir + pid file inside" recipe,
``mkdir $d and print {open ">$d/pid"} "$$\n"``, stale when ``kill 0`` says the pid
is gone).  The holder writes ``record=`` (default ``"{pid}\n"``) into
``<lock>/<pidfile>`` right after its mkdir, and nothing else (no ``.owner`` file:
our token stays in memory); the directory may then hold that one file.  A pid
file matching the template names the holder (stale at once when that pid is dead
on this host); a directory without it yet (a Perl holder between its mkdir and
its write), or with it still empty, is judged by age.  A pid file the template does
not match (other content, not a plain file, a second name of another file, more
than 4 KiB) is refused, never unlinked.  Release and stale removal unlink the pid file, then
``rmdir``.  Without ``pidfile=`` a non-empty directory is refused, and the error
names the ``pidfile=`` that declares a pid file found inside.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import time

from ...perl.fsinfo import is_network
from ...perl.osflags import O_BINARY, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_PATH
from .. import osapi as _osapi, owner as _owner
from ..contract import register
from ..files import (
    busy,
    identity,
    is_record,
    kind_error,
    lstat,
    not_a_lock,
    read_fd,
    read_same,
    read_small,
    remove_same,
    same,
    unlink_quietly,
)
from ..osapi import generation, pread, pwrite, remove_directory, retry_busy
from ..stale import StaleBackend, on_network

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..record import Template
    from ..stale import Owner

#: suffix of the owner file kept beside the lock directory.
OWNER_SUFFIX = ".owner"
#: seconds the start of a pid file's record may be a Perl holder still writing it.
WRITING_GRACE = 0.25
#: the longest pid file (``pidfile=``) read as a record; a longer one is refused.
RECORD_LIMIT = 4096
#: the owner record is padded to this size, so rewriting it never truncates.
RECORD_SIZE = _owner.RECORD_SIZE

#: O_NONBLOCK: a FIFO planted at the owner path must not hang us (a stopping signal waits).
_OPEN_OWNER = os.O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
_CREATE_OWNER = _OPEN_OWNER | os.O_CREAT | os.O_EXCL
_BLANK = _owner.padded()
#: our directory, held while we hold the lock (``_pin``)
_OPEN_PIN = os.O_RDONLY | O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC


def _tag(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}"


def is_owner_file(data: bytes | None) -> bool:
    """True if *data* (a whole file) is what an mkdir owner file holds: empty, blank or a record."""
    return data == b"" or is_record(data, MkdirBackend.method, blank=True)


def _entries(path: str) -> list[str] | None:
    """The names in the directory *path*; None if it cannot be read."""
    try:
        return os.listdir(path)
    except OSError:
        return None


def _empty_dir(path: str) -> bool:
    """False if the directory *path* has an entry (True if it is empty or cannot be read)."""
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return True  # unreadable (mode 0733): only rmdir can tell, and it refuses a full one


@register
class MkdirBackend(StaleBackend):
    """A lock directory at ``path`` (mode 0755 like the mkdir lock sub), owner file beside it."""

    method = "mkdir"
    options = ("mode", "pidfile", "record")

    def __init__(
        self,
        path: str,
        *,
        stale: float,
        shared: bool = False,
        mode: int = 0o755,
        pidfile: str | None = None,
        record: str | None = None,
    ) -> None:
        super().__init__(path, stale=stale, shared=shared)
        if record is not None and pidfile is None:
            raise ValueError(
                f"record={record!r} for method 'mkdir' is the content of a pid file inside"
                f" the lock directory: give pidfile= too (lock {path!r})"
            )
        self.mode = mode
        self.owner_path = path + OWNER_SUFFIX
        self._mine: os.stat_result | None = None
        self._token = ""
        self._record = ""
        self._owner_fd = -1
        #: our directory, held open while we hold it (its inode cannot be reused meanwhile)
        self._pin = -1
        self._netfs = False
        self._generation: int | None = None
        self.pidfile = pidfile
        self.pid_path = os.path.join(path, pidfile) if pidfile else ""
        self._template: Template | None = None
        if pidfile is not None:
            from ..record import template

            self._template = template("{pid}\n" if record is None else record)
        self._written = b""

    # -- acquire / release -------------------------------------------------
    def try_acquire(self) -> bool:
        """Make the directory; True if we made it (it is then ours)."""
        data = b""  # the pid file's content first: a failure after the mkdir would leave it
        if self._template is not None:
            data = self._template.render(stale=self.stale).encode("utf-8", "surrogateescape")
        try:
            os.mkdir(self.path, self.mode)
        except OSError as exc:
            if busy(exc, self.path):
                return False
            raise
        if self._template is not None and not self._write_pidfile(data):
            return False
        self._pin, st = _pin(self.path)
        if st is None:
            return False  # removed at once by someone else (the mkdir lock sub's racy stale check)
        self._netfs = on_network(st.st_dev)
        if self._template is None:
            tag = f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}"  # (``_tag``)
            self._record, self._token = _owner.signed(self.method, dir=tag)
            self._sign(self._record, st.st_uid)
        else:
            self._token = _owner.nonce()
        if self._pin < 0:
            self._generation = generation(self.path)
        self._mine = st
        return True

    def _write_pidfile(self, data: bytes) -> bool:
        """Write *data* as the pid file into the directory we just made; False if it went."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
        try:
            fd = os.open(self.pid_path, flags, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False  # removed at once (a Perl recipe found it without a pid)
            unlink_quietly(self.pid_path)
            _rmdir_quietly(self.path)
            raise
        self._written = data
        return True

    def _rewrite_pidfile(self) -> bool:
        """Render the pid file again if it changed (a fork, a time field), else set its times
        to now (a Perl rule may read its age: ``-M "$dir/pid"``); False if it went."""
        assert self._template is not None
        data = self._template.render(stale=self.stale).encode("utf-8", "surrogateescape")
        try:
            fd = os.open(self.pid_path, os.O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_BINARY)
        except FileNotFoundError:
            return False  # removed by someone else: the lock is no longer ours as made
        try:
            if not stat_module.S_ISREG(os.fstat(fd).st_mode):
                return False
            if data == self._written:
                _osapi.utime_open(fd, self.pid_path)  # (by path on Windows)
                return True
            os.ftruncate(fd, 0)
            pwrite(fd, data, 0)
        finally:
            os.close(fd)
        self._written = data
        return True

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        """The very directory we made: never one that reuses its inode number.

        A Perl ``sub lock`` that broke our lock (held past its stale time) and made its
        own directory often gets the same inode (ext4 reuses it at once), and our
        ``.owner`` record, which Perl never touches, still names us.  So on local storage
        we hold our directory open while we hold the lock: its inode cannot be freed, so
        its number names no other directory, and the same device and inode at the path
        is ours.  Where it could not be opened (Windows, a mode without read
        permission, no descriptor left), the inode generation decides where the file
        system has one (ext4, XFS, btrfs), else the directory's identity (device, inode,
        mtime, ctime) unchanged; only on shared storage, where inode numbers are not
        stable, does our record's token.
        """
        if self._netfs:
            if self._template is not None:
                return read_small(self.pid_path) == self._written
            return self._record_is_ours(st, mine, self.owner_path, self.method)
        if (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
            return False
        if self._pin >= 0:
            return True
        if self._generation is not None:
            now = generation(self.path)
            if now is not None:  # (None: it cannot be read now, EMFILE: the identity decides)
                return now == self._generation
        return identity(st) == identity(mine)

    def _undo(self) -> None:
        # Our directory, found ours (``_still_mine``) while held open, is closed before its
        # rmdir: the rmdir is by name either way, and the name of a directory removed while
        # open leaves the kernel's name cache, which makes the next mkdir of it slower.
        pin, self._pin = self._pin, -1
        if pin >= 0:
            os.close(pin)
        if self._owner_fd >= 0:  # our record blanked: it cannot name a later directory
            try:  # noqa: SIM105 - advisory, as at acquire
                pwrite(self._owner_fd, _BLANK, 0)
            except OSError:
                pass
        if self.pid_path:
            _unlink_if_there(self.pid_path)
        try:
            remove_directory(self.path)  # Windows: retried while a waiter lists it for a moment
        except OSError:
            if pin >= 0:
                self._repin()
            self._resign()  # still held (ENOTEMPTY ...): the record must name us again
            raise

    def _repin(self) -> None:
        """After a failed rmdir: hold our directory open again (if the path still holds it)."""
        mine = self._mine
        fd, st = _pin(self.path)
        if fd < 0:
            return
        if mine is None or st is None or (st.st_dev, st.st_ino) != (mine.st_dev, mine.st_ino):
            os.close(fd)
            return
        self._pin = fd

    def _after_release(self) -> None:
        fd, self._owner_fd = self._owner_fd, -1
        if fd >= 0:
            os.close(fd)
        self._unpin()

    def _unpin(self) -> None:
        fd, self._pin = self._pin, -1
        if fd >= 0:
            os.close(fd)

    def _touch(self, st: os.stat_result) -> os.stat_result | None:
        """Refresh: the directory's mtime now (the sub's age rule), our record naming it again.

        A declared pid file is rendered again (this process, renewed time fields).
        """
        if self._template is not None and not self._rewrite_pidfile():
            return None
        fresh = super()._touch(st)
        if fresh is not None and self._owner_fd >= 0:
            record = _owner.record(self.method, dir=_tag(fresh), token=self._token)
            try:  # noqa: SIM105 - advisory, as at acquire: the lock then recovers by age
                pwrite(self._owner_fd, _owner.padded(record), 0)  # this process, after a fork
            except OSError:
                pass
        return fresh

    def forget(self) -> None:
        """In a forked child: drop the parent's hold without touching the directory."""
        self._mine = None
        self._close_owner()
        self._unpin()

    # -- on disk -----------------------------------------------------------
    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """An *empty* directory is an mkdir lock (a lock directory stays empty)."""
        if st is None or not stat_module.S_ISDIR(st.st_mode):
            return False
        try:
            return not os.listdir(path)
        except OSError:
            return False

    @classmethod
    def part_of(cls, path: str) -> str | None:
        """The lock whose owner file *path* is (blank or an mkdir record), else None."""
        if not path.endswith(OWNER_SUFFIX) or len(path) == len(OWNER_SUFFIX):
            return None
        st = lstat(path)
        if st is None or not stat_module.S_ISREG(st.st_mode) or not st.st_size:
            return None  # an empty file is anybody's (a flock lock file, perhaps)
        if not is_owner_file(read_small(path)):
            return None
        return path[: -len(OWNER_SUFFIX)]

    @classmethod
    def parts(cls, path: str) -> tuple[str, ...]:
        """The owner file and the breaker file beside the lock *path*."""
        return (path + OWNER_SUFFIX, *super().parts(path))

    # -- owner file --------------------------------------------------------
    def _sign(self, text: str, uid: int) -> None:
        """Write our record into the owner file beside the directory (advisory: best effort).

        The file is rewritten in place (padded, never truncated on open) and kept
        open while held.  An owner file that is not a plain file of ours (owned by
        *uid*, the owner of the directory we just made) with one link is replaced
        instead of written through; anything that is not an owner file (empty, blank
        or an mkdir record) is left alone, unrecorded.
        """
        data = _owner.padded(text)
        try:
            fd = os.open(self.owner_path, _OPEN_OWNER)
        except FileNotFoundError:
            try:
                fd = os.open(self.owner_path, _CREATE_OWNER, 0o644)
            except OSError:
                return
        except OSError:  # not ours to write (another user's, a symlink): replace an owner file
            if is_owner_file(read_small(self.owner_path)):
                self._replace_owner(data)
            return
        try:
            st = os.fstat(fd)
            whole = pread(fd, RECORD_LIMIT + 1, 0)  # (``files.read_fd``; blank: as released)
            if not stat_module.S_ISREG(st.st_mode) or not (
                whole == _BLANK or (len(whole) <= RECORD_LIMIT and is_owner_file(whole))
            ):
                os.close(fd)
                return
            if st.st_nlink != 1 or st.st_uid != uid:
                os.close(fd)
                self._replace_owner(data)
                return
            pwrite(fd, data, 0)
            if st.st_size > len(data):
                os.ftruncate(fd, len(data))
        except OSError:
            os.close(fd)
            return
        self._owner_fd = fd

    def _replace_owner(self, data: bytes) -> None:
        temp = f"{self.owner_path}.{os.getpid()}.{_owner.nonce()}"
        try:
            fd = os.open(temp, _CREATE_OWNER, 0o644)
        except OSError:
            return
        try:
            os.write(fd, data)
            os.replace(temp, self.owner_path)
        except OSError:
            os.close(fd)
            unlink_quietly(temp)
            return
        self._owner_fd = fd

    def _resign(self) -> None:
        """Write our record back after a failed release blanked it (best effort)."""
        if self._owner_fd >= 0:
            try:
                pwrite(self._owner_fd, _owner.padded(self._record), 0)
            except OSError:
                return

    def _close_owner(self) -> None:
        fd, self._owner_fd = self._owner_fd, -1
        if fd >= 0:
            os.close(fd)

    # -- stale hooks -------------------------------------------------------
    def _check(self, st: os.stat_result) -> None:
        if not stat_module.S_ISDIR(st.st_mode):
            raise kind_error(self.path, st, "directory")
        if self.pidfile is not None:
            names = _entries(self.path)
            if names is None or set(names) <= {self.pidfile}:
                if names:
                    self._check_pidfile()
                return
            raise not_a_lock(
                self.path,
                self.method,
                f"is a directory holding {sorted(names)[:5]!r}, not only its pidfile="
                f"{self.pidfile!r}",
                errno.ENOTEMPTY,
            )
        if not _empty_dir(self.path):
            raise not_a_lock(
                self.path,
                self.method,
                "is a directory that is not empty" + self._pidfile_hint(),
                errno.ENOTEMPTY,
            )

    def _check_pidfile(self) -> None:
        """Raise if the entry named ``pidfile=`` is not a pid file in the declared format.

        Empty is fine (a Perl holder between its open and its print), and so is the start
        of a record written less than ``WRITING_GRACE`` s ago; anything else that
        the template does not match (read twice, alike), a directory, a second name of
        another file, or more than any record is refused: release and stale removal
        unlink it.
        """
        from .. import record as _record

        assert self._template is not None
        st = lstat(self.pid_path)
        if st is None or (stat_module.S_ISREG(st.st_mode) and not st.st_size):
            return
        if not stat_module.S_ISREG(st.st_mode):
            why = "is not a plain file"
        elif st.st_nlink > 1:
            why = f"has {st.st_nlink} hard links"
        elif st.st_size > RECORD_LIMIT:
            why = f"holds {st.st_size} bytes"
        else:
            data = read_same(self.pid_path, st)
            if data is not None and self._template.match(data) is not None:
                return
            if data is None or read_same(self.pid_path, st) != data:
                self._undecided = True  # changed as we looked: judged again, never removed
                return
            if time.time() - st.st_mtime < WRITING_GRACE and self._template.prefix(data):
                return  # a Perl holder writing its pid file in pieces
            why = f"holds {_record.shown(data)}"
        raise not_a_lock(
            self.path,
            self.method,
            f"is a directory whose {self.pidfile!r} {why}, not a pid file of the declared"
            f" record={self._template.text!r}",
            errno.ENOTEMPTY,
        )

    def _pidfile_hint(self) -> str:
        """For a directory holding one small file in a known Perl format: the pidfile= to give."""
        names = _entries(self.path)
        if not names or len(names) != 1:
            return ""
        data = read_small(os.path.join(self.path, names[0]), 256)
        if not data:
            return ""
        from .. import record as _record

        known = _record.guess(data)
        if known is None:
            return ""
        extra = "" if known == "{pid}\n" else f", record={known!r}"
        return (
            f" (it holds {names[0]!r} = {_record.shown(data)}; if a Perl script writes a pid"
            f" file inside its lock directory, declare it: lock({self.path!r}, method='mkdir',"
            f" pidfile={names[0]!r}{extra}))"
        )

    def _owner(self, st: os.stat_result) -> Owner:
        if self._template is not None:
            fields = self._template.match(read_small(self.pid_path) or b"")
            if fields is None:
                return None, None, None  # no pid file yet: age only
            if fields.host is None and is_network(st.st_dev):
                from .symlink import UNKNOWN_HOST

                return fields.pid, UNKNOWN_HOST, None
            return fields.pid, fields.holder_host(), None
        record = _owner.parse(read_small(self.owner_path) or b"", self.method)
        if record is None or record.get("dir") != _tag(st):
            return None, None, None
        return _owner.owner_of(record)

    def _remove(self, st: os.stat_result) -> bool:
        if not same(self.path, st):
            return False
        if self.pid_path:
            return self._remove_with_pidfile(st)
        self._blank_owner_file(st)
        return remove_same(self.path, st, os.rmdir)

    def _remove_with_pidfile(self, st: os.stat_result) -> bool:
        """Unlink the pid file of the stale directory *st*, then rmdir it (if still it)."""
        before = generation(self.path)
        _unlink_if_there(self.pid_path)
        now = lstat(self.path)
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False
        if before is not None and generation(self.path) != before:
            return False
        try:
            os.rmdir(self.path)
        except OSError:
            return False
        return True

    def _fingerprint(self, path: str, st: os.stat_result) -> tuple[object, ...]:
        # the owner data is kept beside the directory: the handshake compares it too
        from ..netfs import fingerprint

        record = read_small(self.pid_path or self.owner_path) or b""
        return fingerprint(path, st, record)

    def _discard(self, moved: str, st: os.stat_result) -> None:
        if self.pidfile is not None:
            _unlink_if_there(os.path.join(moved, self.pidfile))
        else:
            self._blank_owner_file(st)
        os.rmdir(moved)

    def _blank_owner_file(self, st: os.stat_result) -> None:
        """Blank the owner file if its record names the directory *st* (being removed)."""
        fields = _owner.parse(read_small(self.owner_path) or b"", self.method)
        if fields is None or fields.get("dir") != _tag(st):
            return
        try:
            fd = os.open(self.owner_path, _OPEN_OWNER)
        except OSError:
            return
        try:
            st = os.fstat(fd)
            if stat_module.S_ISREG(st.st_mode) and st.st_nlink == 1 and is_owner_file(read_fd(fd)):
                pwrite(fd, _BLANK, 0)
        except OSError:
            pass
        finally:
            os.close(fd)


def _unlink_if_there(path: str) -> None:
    """Unlink *path*; nothing there is fine (any other failure raises).

    On Windows retried for a moment while a reader holds it without FILE_SHARE_DELETE
    (a Perl waiter reading the pid file).
    """
    try:
        retry_busy(os.unlink, path)
    except FileNotFoundError:
        return


def _rmdir_quietly(path: str) -> None:
    """Remove the directory *path* if that can be done (undoing a failed hold)."""
    try:
        os.rmdir(path)
    except OSError:
        return


def _pin(path: str) -> tuple[int, os.stat_result | None]:
    """Open the directory just made at *path* (never through a symlink) and stat it.

    (descriptor, stat); (-1, its lstat) where it cannot be opened (Windows, a mode
    without read permission where there is no ``O_PATH``, no descriptor left); (-1,
    None) if it is gone already.  Linux opens it ``O_PATH``: it is only held, never read.
    """
    try:
        fd = os.open(path, _OPEN_PIN)
    except OSError:
        return -1, lstat(path)  # gone (None), or not to be opened: its lstat, judged as before
    try:
        return fd, os.fstat(fd)
    except OSError:  # (a kernel that cannot stat an ``O_PATH`` descriptor: judged as unopened)
        os.close(fd)
        return -1, lstat(path)
    except BaseException:
        os.close(fd)
        raise
