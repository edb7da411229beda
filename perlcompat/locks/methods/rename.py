"""The rename lock (the inverse marker of the Perl locking article): held while it is moved away.

A marker file sits at ``path`` while the lock is free.  Taking the lock is
``rename(path, held)`` (``held`` defaults to ``path + ".locked"``, the Perl locking article's
``$lockfile2``); rename is atomic, so exactly one process moves it and the
others get ENOENT.  Release renames it back.  The holder writes its record into
the marker (``perlcompat rename pid=.. host=.. start=.. token=..``) and empties
it again before giving it back, so a free marker names nobody.

If neither name exists (first use), the marker is created already held, with
O_EXCL under the remover lock of ``locks.remover``, and only after one listing of
the directory shows it under neither name (a rename waits for a listing in
progress, so a marker on the move is seen under one of its names): a second
marker would let two processes hold.

A lock is stale when the held marker's ctime (set by the rename) is older than
``stale`` seconds, or at once when its record names a dead process on this
host; a record counts only if the marker was not renamed after it was written
(ctime not newer than mtime).  Breaking a stale lock renames the marker back
to ``path`` (one remover at a time, identity re-checked right before).
Release gives the marker back only if it still carries this holder's record.

On Windows a rename opens the source and then renames the open file: two
contenders that both opened the free marker both succeed (the second renames
it onto the name it already has; seen under wine).  There acquirers take the
remover lock of ``locks.remover`` exclusively around the rename, so they take turns;
a Windows Perl doing the Perl locking article's rename is not excluded by it.  Markers are
opened with FILE_SHARE_DELETE (``locks.osapi.open_file``) so a waiter reading one never
stops its holder renaming it back, and the age of a held marker is its NTFS
change time (``st_ctime`` is the creation time there).

**The data file as the lock** (``data=True``, docs/locks.md "The data file renamed as the
lock").  The rename idiom's most common form renames the data file itself away while it
works on it (``rename("data.txt", "data.lock")``, work on ``data.lock``, rename it back).
With ``data=True`` the free name ``path`` is that data file and ``held=`` is required: the
port renames it to the held name, works on the held name as the Perl script does, and the
release renames it back.  perlcompat only renames it: it never opens it for writing, writes
no record into it (the hold is remembered in memory), never removes it and never renames it
onto an existing name.  A held name older than ``stale`` (by its ctime, which the rename
sets: never sooner than a Perl ``-M`` rule on the same name) is renamed back to ``path``; if
``path`` exists too, that is an error naming both (EEXIST), never a replacement.  A missing
data file (neither name exists) is ENOENT: the mode never creates one.

**Per-holder held names** (``held=`` with fields, ``locks.record`` syntax).  A Japanese
"lock plugin" renames ``$lockfile`` to ``$lockfile . time . "_$$_$ENV{REMOTE_ADDR}"`` and
finds it again with ``opendir`` and ``/^lock(\\d+)/``.  Perl reads ``"_$$_"`` there as
``"_" . ${$_}``, so the names carry no pid: ``held="lock{time}_{addr}"`` (a script writing
``"_${$}_"`` gets ``"lock{time}_{pid}_{addr}"``) renders this process's name in the same
shape, and every entry of the lock's directory that matches the template is a held marker.
While one is there the lock is busy (no first-use marker is made beside it); it is stale
when its ``{pid}`` is provably dead on this host or its ``{time}`` (or, later, its ctime)
is older than ``stale``.  No record is written into such a marker: the name carries the
holder.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
import time

from ...perl.fsinfo import check_method
from ...perl.osflags import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from .. import osapi as _osapi, owner as _owner
from ..contract import register
from ..errors import not_a_lock_error
from ..files import (
    busy,
    identity,
    is_record,
    kind_error,
    links_error,
    lstat,
    not_a_lock,
    read_fd,
    read_same,
    read_small,
    remove_same,
    root_and_not_mine,
)
from ..guards import BREAKER_SUFFIX, guard, unguard
from ..osapi import busy_create, open_file, retry_busy
from ..stale import StaleBackend

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..record import Fields, Template
    from ..stale import Owner

#: default suffix of the marker's name while held.
HELD_SUFFIX = ".locked"

#: O_NONBLOCK: a FIFO planted as the marker must not hang us (a stopping signal waits).
_WRITE = os.O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_BINARY | O_NONBLOCK
_NOT_A_FILE = (errno.ELOOP, errno.EISDIR, errno.ENXIO)  # (a symlink, directory, FIFO: _WRITE)


#: looks at both names before a data file (``data=True``) is called missing, not in flight.
MISSING_LOOKS = 3


def _marker_problem(
    path: str, st: os.stat_result, *, free: bool, data: bool = False
) -> OSError | None:
    """Why the object *st* at *path* cannot be a rename marker (kind, links, owner), or None.

    A declared data file (*data*) need only be a regular file: it is renamed, never written.
    """
    if not stat_module.S_ISREG(st.st_mode):
        return kind_error(path, st, "regular file")
    if data:
        return None
    problem = links_error(path, st, RenameBackend.method)
    if problem is None and free and root_and_not_mine(st):
        problem = not_a_lock(
            path, RenameBackend.method, f"belongs to uid {st.st_uid}, and we are root", errno.EPERM
        )
    return problem


def _held_name(path: str, held: str) -> str:
    """The held name *held* of the lock *path*.

    A name is taken in the lock's directory; a path as a lock name is, as Perl's
    ``rename("./db/data.txt", "./db/data.lock")`` takes it (``Lock`` resolves it against
    ``root=`` first, and refuses one outside it: ``options.resolve_held``).
    """
    if os.path.dirname(held) or (os.altsep and os.altsep in held):
        return os.path.abspath(held)
    return os.path.join(os.path.dirname(path), held)


@register
class RenameBackend(StaleBackend):
    """A marker file at ``path``, renamed to ``held`` while the lock is held.

    ``held`` may be a template with fields (per-holder held names); with ``data=True`` the
    marker is the data file itself (see the module docstring).
    """

    method = "rename"
    options = ("held", "data")

    def __init__(
        self,
        path: str,
        *,
        stale: float,
        shared: bool = False,
        held: str | os.PathLike[str] | None = None,
        data: bool = False,
    ) -> None:
        super().__init__(path, stale=stale, shared=shared)
        if not isinstance(data, bool):
            raise TypeError(f"data= of the rename lock is True or False, not {data!r}")
        self.data = data
        text = os.fspath(held) if held else ""
        self._pattern: Template | None = None
        if "{" in text or "}" in text:
            from ..record import template

            if os.path.basename(text) != text or (os.altsep and os.altsep in text):
                raise ValueError(
                    f"held name template {text!r} of the rename lock {path!r} is a name in"
                    " the lock's directory, not a path"
                )
            self._pattern = template(text)
        if text:
            self.held = _held_name(path, text)
        elif data:
            raise ValueError(
                f"data=True needs held=: the name the Perl script renames the data file {path!r}"
                " to while it works on it (e.g. held='data.lock')"
            )
        else:
            self.held = path + HELD_SUFFIX
        if self.held == path:
            raise ValueError(f"held name of the rename lock {path!r} must differ from it")
        #: the held name last looked at (for a template, an entry found in the directory)
        self._seen = self.held
        #: where our marker (or the data file) is while we hold it, else ""
        self._taken = ""
        self._mine: os.stat_result | None = None
        self._token = ""
        check_method(path, self.method, stacklevel=4)  # not safe across hosts: warn once

    @property
    def held_path(self) -> str:
        """The name the marker (with ``data=True``, the data file) has while we hold it, else "".

        With a fixed ``held=`` it is that name; with a template, the name rendered for this
        hold (``lock1764090283_4242_192.0.2.1``): work on the data file under this name,
        and read it again after a ``refresh()`` (which renders the name anew).
        """
        return self._taken

    # -- names -------------------------------------------------------------
    def _find_held(self) -> tuple[str, os.stat_result] | None:
        """The held marker there is now (its path and lstat), or None.

        A fixed held name is looked at; a template is matched against the lock's directory,
        as the Perl side finds it again (``opendir`` and ``/^lock(\\d+)/``).
        """
        if self._pattern is None:
            st = lstat(self.held)
            return None if st is None else (self.held, st)
        entries = self._listing()
        return None if entries is None else self._held_among(entries)

    def _listing(self) -> list[str] | None:
        """The names in the lock's directory (one ``listdir``), None if it cannot be read."""
        try:
            return os.listdir(os.path.dirname(self.path) or ".")
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None

    def _held_names(self, entries: list[str]) -> list[str]:
        """The names among *entries* (of the lock's directory) a held marker has."""
        if self._pattern is None:
            held = os.path.basename(self.held)
            return [held] if held in entries else []
        free = os.path.basename(self.path)
        ours = (free, free + BREAKER_SUFFIX)  # the free name and perlcompat's files beside
        return [
            name
            for name, _fields in self._pattern.names(sorted(entries))
            if name not in ours and not name.startswith(free + ".breaking.")
        ]

    def _held_among(self, entries: list[str]) -> tuple[str, os.stat_result] | None:
        """The first of *entries* (names in the lock's directory) that is a held marker."""
        directory = os.path.dirname(self.path)
        if self._pattern is None and os.path.dirname(self.held) != directory:
            return self._find_held()
        for name in self._held_names(entries):
            where = os.path.join(directory, name)
            st = lstat(where)
            if st is not None:
                return where, st
        return None

    def _no_marker(self) -> bool:
        """True if the marker is under neither name: one listing of the directory shows both.

        A rename in a directory waits for a ``listdir`` of it in progress (one ``getdents``
        of a small directory), so the marker moving between its names is seen under one of
        them, never missed as two looks one after the other can miss it.  An unreadable
        directory is looked at name by name instead.
        """
        entries = self._listing()
        if entries is None or (
            self._pattern is None and os.path.dirname(self.held) != os.path.dirname(self.path)
        ):
            return lstat(self.path) is None and self._find_held() is None
        # the names alone decide: a held name in the listing may be gone by the time it is
        # looked at (moved back to the free name), but the marker was there
        return os.path.basename(self.path) not in entries and not self._held_names(entries)

    def _target(self) -> str:
        """The held name for this hold: the fixed one, or the template rendered now."""
        pattern = self._pattern
        if pattern is None:
            return self.held
        name = pattern.render(stale=self.stale)
        if name == os.path.basename(self.path):
            raise ValueError(
                f"held name template {pattern.text!r} renders the lock's own name {name!r}"
            )
        if (
            pattern.fullmatch_name(name) is None
            or os.path.basename(name) != name
            or name in ("", ".", "..", os.path.basename(self.path))
        ):
            raise ValueError(
                f"held name template {pattern.text!r} renders {name!r} here, which is not a"
                " name it matches (REMOTE_ADDR="
                f"{os.environ.get('REMOTE_ADDR', '')!r}?)"
            )
        return os.path.join(os.path.dirname(self.path), name)

    def _name_fields(self, path: str) -> Fields | None:
        """The fields of the per-holder held name *path* (None without a template)."""
        if self._pattern is None:
            return None
        return self._pattern.fullmatch_name(os.path.basename(path))

    def _name_of(self, st: os.stat_result) -> str:
        """The held name *st* was looked at under: ours while we hold it, else the one seen."""
        mine = self._mine
        if (
            mine is not None
            and self._taken
            and (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
        ):
            return self._taken
        return self._seen

    # -- acquire / release -------------------------------------------------
    def try_acquire(self) -> bool:
        """Rename the marker to the held name; True if we moved it (or made it held).

        The marker is judged before it is moved (and again, by descriptor, after):
        anything but a lock marker is refused there and never renamed away.
        Nothing is renamed onto an existing held name (rename would replace it):
        a marker at both names is busy until the held one is stale.
        """
        if _osapi.renames_by_handle():
            # Windows renames by handle: open the source, then rename the open file.  Two
            # contenders that both opened the marker both "succeed" (the second renames
            # the file onto the name it already has), so acquirers take turns there.
            fd = guard(self.path, exclusive=True)
            if fd is None:
                return False
            try:
                return self._rename_to_held(guarded=True)
            finally:
                unguard(fd)
        return self._rename_to_held(guarded=False)

    def _rename_to_held(self, guarded: bool) -> bool:
        st = lstat(self.path)
        if st is None:
            return self._first_use(guarded)
        if not self._judge(self.path, st, free=True):
            return False  # it changed while we looked: look again
        if self._find_held() is not None:
            return False  # only a rename of this very marker can make it appear now
        target = self._target()
        try:
            os.rename(self.path, target)
        except FileNotFoundError:
            return self._first_use(guarded)
        except PermissionError as exc:
            if busy_create(self.path, exc):
                return False  # Windows: someone has the free marker open for a moment
            raise
        if self.data:
            return self._claim_data(st, target)
        return self._claim(st, target)

    def _judge(self, path: str, st: os.stat_result, *, free: bool) -> bool:
        """Raise OSError if the marker *st* at *path* is not a lock marker; False if it changed.

        A marker is a regular file with one link holding nothing or one rename
        record.  A free one (which we are about to write into) must also be
        owned by root when we are root: root never writes into another user's file.
        A declared data file (``data=True``) need only be a regular file.
        """
        problem = _marker_problem(path, st, free=free, data=self.data)
        if problem is not None:
            raise problem
        if st.st_size and not self.data:
            data = read_same(path, st)
            if data is None:
                return False
            if not is_record(data, self.method):
                raise self._foreign(path, st)
        return True

    def _foreign(self, path: str, st: os.stat_result) -> OSError:
        """The refusal of a marker holding data, naming the option that declares a data file."""
        hint = ""
        if path == self.path:
            held = os.path.basename(self.held) if self.held != self.path + HELD_SUFFIX else "..."
            hint = (
                "; if a Perl script renames this data file itself as its lock, declare it:"
                f" lock({path!r}, method='rename', held={held!r}, data=True)"
            )
        return not_a_lock(
            path, self.method, f"holds {st.st_size} bytes that are not a lock record{hint}"
        )

    def _first_use(self, guarded: bool) -> bool:
        if self._find_held() is not None:
            return False  # held by someone
        directory = os.path.dirname(self.path) or "."
        if not os.path.isdir(directory):
            raise FileNotFoundError(
                errno.ENOENT, f"lock directory {directory!r} does not exist", self.path
            )
        if self.data:
            return self._data_missing()
        fd = None if guarded else guard(self.path, exclusive=True)
        if fd is None and not guarded:
            return False
        try:
            if not self._no_marker():
                return False  # held by someone, or free again: no second marker
            target = self._target()
            try:
                marker = open_file(target, _WRITE | os.O_CREAT | os.O_EXCL, 0o644)
            except OSError as exc:
                if busy(exc, target):
                    return False
                raise
            self._sign(marker, target)
            return True
        finally:
            unguard(fd)

    def _data_missing(self) -> bool:
        """Neither name holds the data file: False if it shows up again (it was in flight)."""
        for _ in range(MISSING_LOOKS):
            if not self._no_marker():
                return False
        raise FileNotFoundError(
            errno.ENOENT,
            f"data file {self.path!r} does not exist, nor does a held name"
            f" {os.path.basename(self.held)!r}: data=True renames an existing data file"
            " and never creates one",
            self.path,
        )

    def _claim_data(self, judged: os.stat_result, target: str) -> bool:
        """Hold the data file just renamed to *target*, if it is the file we judged.

        Nothing is opened or written: the hold is remembered in memory.  Something else
        (the data file replaced between our look and the rename) is given back untouched.
        """
        st = lstat(target)
        if (
            st is None
            or not stat_module.S_ISREG(st.st_mode)
            or (st.st_dev, st.st_ino) != (judged.st_dev, judged.st_ino)
        ):
            if st is not None and lstat(self.path) is None:
                retry_busy(os.rename, target, self.path)  # give back what we took, untouched
            return False
        self._took(target, st)
        return True

    def _claim(self, judged: os.stat_result, target: str) -> bool:
        """Sign the marker we just moved, if it is still the one we judged; else give it back."""
        try:
            marker = open_file(target, _WRITE)
        except OSError as exc:
            os.rename(target, self.path)
            if exc.errno not in _NOT_A_FILE:  # a marker we may not write (another user's)
                raise OSError(exc.errno, f"lock marker {self.path!r}: {exc.strerror}") from None
            why = f"lock marker {self.path!r} is not a regular file"
            raise not_a_lock_error(exc.errno, why, self.path) from None
        try:
            st = os.fstat(marker)
            data = read_fd(marker) if st.st_size else b""
            problem = _marker_problem(self.path, st, free=True)
            same_one = (st.st_dev, st.st_ino, st.st_size) == (
                judged.st_dev,
                judged.st_ino,
                judged.st_size,
            )
            if problem is None and not (data == b"" or is_record(data, self.method)):
                problem = self._foreign(self.path, st)
        except BaseException:
            os.close(marker)
            raise
        if problem is not None or not same_one:
            os.close(marker)
            os.rename(target, self.path)  # give back what we took, untouched
            if problem is not None:
                raise problem
            return False
        self._sign(marker, target)
        return True

    def _sign(self, marker: int, target: str) -> None:
        """Write our record into the held marker *marker* (then closed) and remember it.

        A per-holder held name carries the holder itself: nothing is written then.
        """
        if self._pattern is not None:
            try:
                st = os.fstat(marker)
            finally:
                os.close(marker)
            self._took(target, st)
            return
        token = _owner.nonce()
        data = _owner.record(self.method, token=token).encode()
        try:
            os.write(marker, data)
            os.ftruncate(marker, len(data))
            st = os.fstat(marker)
        finally:
            os.close(marker)
        self._took(target, st)
        self._token = token

    def _took(self, target: str, st: os.stat_result) -> None:
        self._mine = st
        self._taken = self._seen = target

    def _held_path(self) -> str:
        return self._taken or self._seen

    def _still_mine(self, st: os.stat_result, mine: os.stat_result) -> bool:
        if self.data:  # the data file: its content and times change as the port works on it
            return stat_module.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (
                mine.st_dev,
                mine.st_ino,
            )
        if self._pattern is not None:  # nothing writes into a per-holder marker
            return identity(st) == identity(mine)
        return self._record_is_ours(st, mine, self._taken, self.method)

    def _touch(self, st: os.stat_result) -> os.stat_result | None:
        """Refresh: our record written again into the held marker (its ctime and mtime now).

        The data file renamed as the lock (``data=True``) carries no record: only its
        times are set (never a byte written into data).  A per-holder held name carries
        the holder: the marker is renamed to the name rendered now (:meth:`_rename_held`).
        """
        if self._pattern is not None:
            return self._rename_held(st)
        if self.data:
            return super()._touch(st)
        marker = open_file(self._taken or self.held, _WRITE)
        try:
            now = os.fstat(marker)
        except BaseException:
            os.close(marker)
            raise
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            os.close(marker)
            return None
        try:  # a reader sees empty (an unknown owner) or a whole record, never a torn one
            os.ftruncate(marker, 0)
        except BaseException:
            os.close(marker)
            raise
        self._sign(
            marker, self._taken or self.held
        )  # closes it; names this process (a fork()'s child)
        return self._mine

    def _rename_held(self, st: os.stat_result) -> os.stat_result | None:
        """Rename our per-holder marker *st* to the held name rendered now; None if not ours.

        Its ``{time}`` is what the Perl side's age rule reads (``/^lock(\\d+)/``), and
        its ``{pid}`` names the holder (a ``perlcompat.fork()`` child after its parent):
        setting file times would not make it young there.  One rename, so a listing sees
        the marker under one of its names; a Perl remover that renames the old name back
        first makes ours fail (ENOENT: no longer ours).  Never onto an existing file: then
        (and for a name rendered as it was) only the times are set.
        """
        try:
            target = self._target()
        except ValueError:
            target = self._taken
        if target == self._taken or lstat(target) is not None:
            return super()._touch(st)
        try:
            retry_busy(os.rename, self._taken, target)  # Windows: a reader's open for a moment
        except FileNotFoundError:
            return None
        now = lstat(target)
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            if now is not None and lstat(self._taken) is None:  # not ours: put it back
                os.rename(target, self._taken)
            return None
        self._taken = self._seen = target
        return now

    def _undo(self) -> None:
        """Give the marker back: rename it to the free name (a marker emptied first)."""
        if self.data or self._pattern is not None:
            self._put_back(self._taken)
            return
        self._clear(self._taken)  # if that fails, the record is ignored anyway (ctime is newer)
        retry_busy(os.rename, self._taken, self.path)

    def _put_back(self, held: str) -> None:
        """Rename *held* to the free name, never onto a file there (EEXIST then)."""
        if lstat(self.path) is not None:
            raise OSError(
                errno.EEXIST,
                f"cannot rename {held!r} back to {self.path!r}: a file is there now;"
                " perlcompat never renames onto an existing file nor removes either",
            )
        retry_busy(os.rename, held, self.path)

    def _after_release(self) -> None:
        self._taken = ""

    def _clear(self, held: str) -> bool:
        """Empty the held marker, so a free marker names nobody; False if that failed.

        Only a marker that holds one rename record, has one link and (when we
        are root) is root's is written to; never a declared data file.
        """
        if self.data:
            return False
        try:
            marker = open_file(held, _WRITE)
        except OSError:
            return False
        try:
            st = os.fstat(marker)
            if (
                not st.st_size
                or _marker_problem(held, st, free=True) is not None
                or not is_record(read_fd(marker), self.method)
            ):
                return False
            os.ftruncate(marker, 0)
        except OSError:
            return False
        finally:
            os.close(marker)
        return True

    # -- on disk -----------------------------------------------------------
    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """A missing *path* whose ``<path>.locked`` is a marker (empty, or a record) is held."""
        if st is not None:
            return False  # a free marker is no lock
        held = path + HELD_SUFFIX
        twin = lstat(held)
        if twin is None or not stat_module.S_ISREG(twin.st_mode):
            return False
        return not twin.st_size or is_record(read_small(held), cls.method)

    @classmethod
    def part_of(cls, path: str) -> str | None:
        """The held rename lock whose marker *path* (``<lock>.locked``) is, else None."""
        if not path.endswith(HELD_SUFFIX) or len(path) == len(HELD_SUFFIX):
            return None
        lock = path[: -len(HELD_SUFFIX)]
        return lock if cls.detect(lock, lstat(lock)) else None

    @classmethod
    def parts(cls, path: str) -> tuple[str, ...]:
        """The held marker and the breaker file beside the lock *path*."""
        return (path + HELD_SUFFIX, *super().parts(path))

    # -- stale hooks -------------------------------------------------------
    def _lstat(self) -> os.stat_result | None:
        found = self._find_held()
        if found is None:
            return None
        self._seen = found[0]
        return found[1]

    def _check(self, st: os.stat_result) -> None:
        self._undecided = not self._judge(self._seen, st, free=False)  # (False: it changed)

    def _age(self, st: os.stat_result) -> float:
        """Seconds since the marker was renamed (its ctime), or since its name's ``{time}``.

        A whole-second ``{time}`` counts from the end of its second, and the later of the
        two is taken: a live holder is never broken before it is ``stale`` seconds old.
        """
        name = self._name_of(st)
        since = _osapi.changed_at(name, st)  # (st_ctime is the creation time on Windows)
        fields = self._name_fields(name)
        if fields is not None and fields.made is not None:
            made = fields.made + 1 if fields.made == int(fields.made) else fields.made
            since = max(since, made)
        return time.time() - since

    def _stamp_ns(self, st: os.stat_result) -> int:
        return st.st_ctime_ns

    def _move_target(self) -> str | None:
        # the free name: moving the marker there is the removal, in one step, so there is
        # never a moment with no marker under either name (a first use would make another);
        # its old record counts for nobody (see ``locks.owner``)
        if (self.data or self._pattern is not None) and lstat(self.path) is not None:
            return None  # never moved onto the free name (EEXIST for a data file)
        return self.path

    def _owner(self, st: os.stat_result) -> Owner:
        fields = self._name_fields(self._name_of(st))
        if fields is not None:
            return fields.pid, fields.holder_host(), None
        if self.data or self._pattern is not None:
            return None, None, None  # a data file carries no record: judged by age
        if st.st_ctime_ns > st.st_mtime_ns:
            return None, None, None  # renamed since the record was written: not this hold's
        return _owner.owner_of(_owner.parse(read_small(self._seen) or b"", self.method))

    def _remove(self, st: os.stat_result) -> bool:
        held = self._seen
        if lstat(self.path) is not None:  # a marker at the free name too: never rename onto it
            if self.data:
                raise OSError(
                    errno.EEXIST,
                    f"the stale held data file {held!r} cannot be renamed back: {self.path!r}"
                    " exists too; perlcompat never renames onto an existing file nor removes"
                    " either: keep the right one by hand",
                )
            return remove_same(held, st)
        return remove_same(held, st, self._give_back)

    def _give_back(self, held: str) -> None:
        """Empty the stale marker at *held* (never a data file) and rename it to the free name."""
        self._clear(held)
        self._put_back(held)
