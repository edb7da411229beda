"""A lock directory opened without following anyone else's symlink, and who else can change it.

``perlcompat locks --break-stale`` runs as root on directories other users can
reach.  A path is looked up again on every call, so a user who can rename the
directory or one of its parents can swap it for a symlink to another directory
between root's last look and its ``unlink`` (``renameat2(RENAME_EXCHANGE)``).
:func:`open_dir` opens a directory one component at a time from ``/`` with
``O_DIRECTORY|O_NOFOLLOW`` (``shutil.rmtree``'s fd-based walk), following a
symlink only when root or the caller placed it in a directory only root or the
caller can write (systemd's ``CHASE_SAFE`` rule, stricter).  :func:`pinned`
names the open directory as ``/proc/self/fd/N``: the kernel resolves that to
the directory the descriptor holds, never by name again, so every later
``lstat``/``unlink``/``rmdir`` made by the path-based lock methods stays inside
it whatever is renamed meanwhile (systemd and runc name descriptors the same
way).  :class:`Opened` also tells who else could write or rename the directory
(:meth:`Opened.others`): as root, ``perlcompat locks`` refuses such a directory
or drops to its owner, as logrotate does without its ``su`` line, and
:func:`refuse_as_root` keeps root's own stale breaks (``lock()``, and
``replace_file``'s removal of dead writers' temp files) out of such a
directory.  POSIX only;
imports the standard library and ``perl.osflags``.
"""

from __future__ import annotations

import errno
import os
import stat

from ..perl.osflags import O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW

#: symlinks followed in one walk, as the kernel's MAXSYMLINKS.
MAX_LINKS = 40

_OPEN_DIR = os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC


class Opened:
    """A directory opened by :func:`open_dir`: its descriptor and what was seen on the way."""

    __slots__ = ("fd", "path", "renamable", "st")

    def __init__(self, fd: int, path: str, st: os.stat_result, renamable: str) -> None:
        self.fd = fd
        self.path = path
        self.st = st
        #: why a user other than root and the caller could rename it or a parent; "" if none
        self.renamable = renamable

    def writable(self) -> str:
        """Why a user other than root and the caller can add or remove entries; "" if none."""
        return _writable(self.path, self.st)

    def others(self) -> str:
        """Why another user can change the directory (write it, rename it or a parent); ""."""
        return self.writable() or self.renamable

    def close(self) -> None:
        """Close the descriptor."""
        os.close(self.fd)


def _trusted(uid: int) -> bool:
    geteuid = getattr(os, "geteuid", None)
    return uid == 0 or (geteuid is not None and uid == geteuid())


def _writable(path: str, st: os.stat_result) -> str:
    if not _trusted(st.st_uid):
        return f"{path!r} belongs to uid {st.st_uid}"
    if st.st_mode & 0o022:
        return f"{path!r} is writable by its group or by everyone (mode {st.st_mode & 0o7777:04o})"
    return ""


def _renamable(parent: str, pst: os.stat_result, child: str, cst: os.stat_result) -> str:
    """Why a user other than root and the caller can rename *child* in *parent*; "" if none."""
    why = _writable(parent, pst)
    if not why:
        return ""
    if pst.st_mode & stat.S_ISVTX and _trusted(pst.st_uid) and _trusted(cst.st_uid):
        return ""  # sticky: only the entry's owner, the directory's owner and root rename it
    return f"{child!r} can be renamed by another user: {why}"


def open_dir(path: str) -> Opened:
    """Open the directory *path* component by component, never through an untrusted symlink.

    Raises OSError: ELOOP naming the symlink that was refused, ENOTDIR, ENOENT
    or EACCES naming the component.
    """
    want = os.path.abspath(path)
    names = [part for part in want.split("/") if part]
    links = 0
    fd = os.open("/", _OPEN_DIR)
    here = "/"
    st = os.fstat(fd)
    renamable = ""
    try:
        while names:
            name = names.pop(0)
            child = os.path.join(here, name)
            try:
                nfd = os.open(name, _OPEN_DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise OSError(exc.errno, f"{child!r}: {exc.strerror}") from None
                lst = os.lstat(name, dir_fd=fd)
                links += 1
                if stat.S_ISDIR(lst.st_mode) and links <= MAX_LINKS:
                    names.insert(0, name)  # a symlink a moment ago (swapped back): look again
                    continue
                if not stat.S_ISLNK(lst.st_mode):
                    raise OSError(errno.ENOTDIR, f"{child!r} is not a directory") from None
                why = _writable(here, st) or ("" if _trusted(lst.st_uid) else "its owner")
                if why or links > MAX_LINKS:
                    raise OSError(
                        errno.ELOOP,
                        f"{child!r} is a symlink another user could have placed"
                        f" ({why or 'too many links'}); refusing to follow it",
                    ) from None
                # walk again from / (``here`` has no symlink in it, so ".." is lexical)
                rest = os.path.normpath(os.path.join(here, os.readlink(name, dir_fd=fd)))
                names = [part for part in rest.split("/") if part] + names
                os.close(fd)
                fd = os.open("/", _OPEN_DIR)
                here, st, renamable = "/", os.fstat(fd), ""
                continue
            nst = os.fstat(nfd)
            renamable = renamable or _renamable(here, st, child, nst)
            os.close(fd)
            fd, here, st = nfd, child, nst
    except BaseException:
        os.close(fd)
        raise
    return Opened(fd, want, st, renamable)


def pinned(fd: int) -> str | None:
    """``/proc/self/fd/N``: a path the kernel resolves to the directory *fd* holds; None if absent.

    Needs Linux's /proc (absent in some chroots and on other systems).
    """
    name = f"/proc/self/fd/{fd}"
    try:
        if os.path.samestat(os.stat(name), os.fstat(fd)):
            return name
    except OSError:
        pass
    return None


def refuse_as_root(path: str) -> None:
    """As root, raise OSError (EPERM) unless only root can change the lock's directory.

    A path is looked up again by every removal: a user who can write the
    directory, or rename it or a parent, could swap it for a symlink between
    root's look and its removal.  ``perlcompat locks`` holds
    its directory by descriptor (``/proc/self/fd/N``) and drops to its owner.
    """
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None or geteuid() != 0 or path.startswith("/proc/self/fd/"):
        return
    try:
        opened = open_dir(os.path.dirname(path))
    except OSError as exc:
        why = str(exc.strerror)
    else:
        why = opened.others()
        opened.close()
    if why:
        raise OSError(
            errno.EPERM,
            f"refusing to break the stale lock {path!r} as root: {why}; break it as the"
            " directory's owner (perlcompat locks DIR --break-stale drops to it)",
        )
