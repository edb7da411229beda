"""The symlink lock, ``symlink($$, $lockfile)`` (the Perl locking article): held while it exists.

``symlink(2)`` fails if anything exists at the path, so exactly one process
makes the link.  Its target is the holder's pid, as in the Perl locking article, so a Perl
script doing ``symlink($$, $f)`` / ``$$ == readlink($f)`` / ``unlink($f)`` and
Python processes exclude each other.  Any symlink at the path is a lock (the
Perl locking article's first version links to ``"."``); its target is never
followed.

The target is only a pid, so the holder is assumed to be on this host, in the
initial pid namespace: a process in another pid namespace (a container) and
any process judging a link on shared storage (``perl.fsinfo.is_network``) judge it
by age only.  A lock is stale when its link is older than ``stale`` seconds,
or at once when that pid is dead, a zombie, or now a process that started
after the link was made (the pid was reused).  Stale links are removed by
``locks.remover`` (one remover at a time, identity re-checked right before the
``unlink``).  Release removes the
link only if it is exactly the one this holder made (device, inode, mtime,
ctime): the pid target cannot tell two threads of one process apart, and a
link remade after a break may reuse the inode.

**The Perl side's target** (``target=``, a ``locks.record`` template).  The
holder's link points at exactly ``target`` rendered: ``"."`` for daycount.cgi's
``symlink(".", $lock)``, ``"/{pid}"`` for ``symlink("/$$", $lock)``.  ``"."``
matters where the Perl code asks ``-e $lock`` or ``-M $lock``: Perl follows the
link, so a link to a pid that names no file reads as absent and Perl never sees
(nor breaks) a port's stale lock.  A target with ``{pid}`` is read back as the
holder's pid (``"/12345"`` and ``"12345"`` alike); one without (``"."``) is
judged by the link's age only, as the Perl script judges it.  Without
``target=`` a ``"/12345"`` target is read as a pid too; with it, a link to
anything the template does not match (``current -> data-2024.txt``) is refused, never
removed.  Release compares the link's identity, as without ``target=``.

On Windows the method refuses with ``ValueError`` when the lock is made: a
symlink there needs a privilege (or Developer Mode), Perl before 5.34 has no
``symlink`` at all, and under wine ``os.symlink`` reports success and creates
nothing.  Use the mkdir method (the mkdir lock sub) instead.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module

from ...perl.fsinfo import is_network
from .. import osapi as _osapi, owner as _owner
from ..contract import register
from ..errors import not_a_lock_error
from ..files import busy, kind_error, links_error, lstat
from ..stale import StaleBackend

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..record import Template
    from ..stale import Owner

#: the host named for a bare pid on shared storage: none can be assumed.
UNKNOWN_HOST = "(unknown host)"


def _target(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


@register
class SymlinkBackend(StaleBackend):
    """A symlink at ``path`` whose target is the holder's pid."""

    method = "symlink"
    options = ("target",)

    def __init__(
        self, path: str, *, stale: float, shared: bool = False, target: str | None = None
    ) -> None:
        if not _osapi.has_symlinks():
            raise ValueError(
                f"lock method 'symlink' does not work on Windows (lock {path!r}): symlinks "
                "need a privilege there; use method='mkdir', Perl's mkdir lock, instead"
            )
        super().__init__(path, stale=stale, shared=shared)
        self._mine: os.stat_result | None = None
        self._template: Template | None = None
        if target is not None:
            from ..record import template

            self._template = template(target)

    def try_acquire(self) -> bool:
        """Make the link; True if we made it."""
        if self._template is None:
            target = str(os.getpid())
        else:
            target = self._template.render(stale=self.stale)
            if not target or "\0" in target:
                raise ValueError(f"target={self._template.text!r} renders as {target!r}")
        try:
            os.symlink(target, self.path)
        except OSError as exc:
            if busy(exc, self.path):
                return False
            raise
        st = lstat(self.path)
        if st is None:
            return False  # removed at once by someone else
        self._mine = st
        return True

    # release: only the very link we made (identity), never "a link naming our pid":
    # another thread of ours (same pid) may have broken it and made its own.
    def _undo(self) -> None:
        os.unlink(self.path)

    def _touch(self, st: os.stat_result) -> os.stat_result | None:
        """Refresh: the link's mtime now (``(lstat $f)[9]``); a link to another target is remade.

        (A ``perlcompat.fork()`` child's: the link named the parent.)  The new
        link, to our pid, replaces ours by rename, the path never empty.
        """
        if self._template is None:
            target = str(os.getpid())
        else:  # the declared target again: "." stays "."; "{pid}" names this process
            target = self._template.render(stale=self.stale)
        if _target(self.path) == target:
            return super()._touch(st)
        temp = f"{self.path}.{_owner.nonce()}"
        os.symlink(target, temp)
        try:
            now = lstat(self.path)
            if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                return None
            os.replace(temp, self.path)
        finally:
            if os.path.lexists(temp):
                os.unlink(temp)
        return lstat(self.path)

    def _check(self, st: os.stat_result) -> None:
        if not stat_module.S_ISLNK(st.st_mode):
            raise kind_error(self.path, st, "symlink")
        problem = links_error(self.path, st, self.method)  # a hard link to a symlink: not ours
        if problem is not None:
            raise problem
        if self._template is not None:  # declared: a link to anything else is not a lock
            text = _target(self.path)
            if text is not None and self._template.fullmatch_name(text) is None:
                raise not_a_lock_error(
                    errno.EEXIST,
                    f"lock path {self.path!r} is a symlink to {text!r}, not the declared"
                    f" target={self._template.text!r}; refusing to touch it",
                    self.path,
                )

    def _owner(self, st: os.stat_result) -> Owner:
        text = _target(self.path)
        if self._template is not None and text is not None:
            fields = self._template.fullmatch_name(text)
            if fields is None or fields.pid is None:
                return None, None, None  # "." or another target: age only, as Perl judges it
            if fields.host is not None:
                return fields.pid, fields.host, None
            pid: int | None = fields.pid
        else:  # symlink($$, ...) or symlink("/$$", ...)
            pid = _owner.pid_of(text[1:] if text and text.startswith("/") else text)
        if pid is None:
            return None, None, None
        if is_network(st.st_dev):
            return pid, UNKNOWN_HOST, None  # any host may have made it: age only
        return pid, _owner.unnamed_host(), None

    @classmethod
    def detect(cls, path: str, st: os.stat_result | None) -> bool:
        """A symlink to a pid (or ``"/pid"``), ``"."`` or ``":"`` (the Perl locking article's
        forms) is a symlink lock."""
        if st is None or not stat_module.S_ISLNK(st.st_mode):
            return False
        target = _target(path)
        if target is None:
            return False
        return target.lstrip("/").isdigit() or target in (".", ":")
