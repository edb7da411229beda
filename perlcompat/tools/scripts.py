"""The scripts ``perlcompat serve`` may run, and their compiled code.

A request names its script in ``SCRIPT_FILENAME``; :meth:`Scripts.load` allows only
an absolute path that resolves (symbolic links followed) inside ``--root`` with an
allowed extension, then opens it once, by its resolved path, with ``O_NOFOLLOW`` and
``O_NONBLOCK``, and checks the descriptor itself: a regular file whose path (from
``/proc/self/fd``) is inside ``--root``.  The code is read from that descriptor, at
most :data:`MAX_SCRIPT` bytes, and compiled once per file version, in the parent, so
every forked child starts from it.  A directory swapped for a symlink, a FIFO or a
device swapped in after the path check is refused, never opened by name again.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
import types
from collections import OrderedDict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: compiled scripts kept.
CACHE_SIZE = 256
#: seconds after its last change before a script's compiled code is cached.
SETTLE = 2.0
#: the largest script read, in bytes; a larger one is a 403.
MAX_SCRIPT = 16 * 1024 * 1024
#: how a script is opened: a symlink is refused, a FIFO or device never blocks.
_OPEN_FLAGS = os.O_RDONLY
for _flag in ("O_NONBLOCK", "O_NOFOLLOW", "O_NOCTTY"):
    _OPEN_FLAGS |= getattr(os, _flag, 0)


def _fd_path(fd: int, fallback: str) -> str:
    """The path of the file open on *fd*: from /proc/self/fd (Linux), F_GETPATH (macOS)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    if sys.platform == "darwin":  # pragma: no cover - not Linux
        import fcntl

        raw = fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", 50), bytes(1024))
        return os.fsdecode(raw.split(b"\0", 1)[0])
    return fallback  # pragma: no cover - no /proc: the path check alone


class Scripts:
    """The scripts under *root* with one of *extensions*; what is refused goes to *log*."""

    def __init__(self, root: str, extensions: tuple[str, ...], log: Callable[[str], None]):
        self.root = os.path.realpath(root).rstrip(os.sep) + os.sep
        self.extensions = extensions
        self.log = log
        self.cache: OrderedDict[str, tuple[tuple[int, ...], types.CodeType | BaseException]]
        self.cache = OrderedDict()

    def resolve(self, name: str) -> str | int:
        """The real path of *name* if its path may run, else the HTTP status to answer (403)."""
        if not name or "\0" in name or not os.path.isabs(name):
            self.log(f"SCRIPT_FILENAME {name!r} is not an absolute path: 403")
            return 403
        real = os.path.realpath(name)
        if not real.startswith(self.root):
            self.log(f"SCRIPT_FILENAME {name!r} is outside --root {self.root}: 403")
            return 403
        if os.path.splitext(real)[1] not in self.extensions:
            self.log(f"SCRIPT_FILENAME {name!r} has no allowed extension: 403")
            return 403
        return real

    def load(self, name: str) -> tuple[str, types.CodeType | BaseException] | int:
        """(the path opened, its code or compile error) if *name* may run, else 403 or 404
        (503 when out of descriptors).

        The file is opened once and everything is checked on the descriptor; the path
        returned is where that file is, which the child's ``__file__`` and directory use.
        """
        real = self.resolve(name)
        if isinstance(real, int):
            return real
        try:
            fd = os.open(real, _OPEN_FLAGS)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                self.log(f"SCRIPT_FILENAME {name!r} does not exist: 404")
                return 404
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
                self.log(f"SCRIPT_FILENAME {name!r}: {exc.strerror}: 503")
                return 503
            self.log(f"SCRIPT_FILENAME {name!r} cannot be opened ({exc.strerror}): 403")
            return 403
        try:
            return self._checked(name, fd, real)
        finally:
            os.close(fd)

    def _checked(
        self, name: str, fd: int, real: str
    ) -> tuple[str, types.CodeType | BaseException] | int:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            self.log(f"SCRIPT_FILENAME {name!r} is not a file: 403")
            return 403
        path = _fd_path(fd, real)
        if not path.startswith(self.root) or os.path.splitext(path)[1] not in self.extensions:
            self.log(f"SCRIPT_FILENAME {name!r} opened {path!r}, outside --root {self.root}: 403")
            return 403
        if info.st_size > MAX_SCRIPT:
            self.log(f"SCRIPT_FILENAME {name!r} is over {MAX_SCRIPT} bytes: 403")
            return 403
        return path, self._compiled(path, fd, info)

    def _compiled(self, path: str, fd: int, info: os.stat_result) -> types.CodeType | BaseException:
        """The code of the file open on *fd*, compiled once per path, mtime, ctime, size, inode.

        ctime counts because a copy that keeps the mtime (``cp -p``, ``tar x``) still
        changes it.  A file changed less than :data:`SETTLE` seconds ago is compiled
        afresh every time: file times tick coarsely, so a same-size edit within one tick
        of the last would look unchanged ("racy" timestamps, as git calls them).
        """
        stamp = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev)
        cached = self.cache.get(path)
        if cached is not None and cached[0] == stamp:
            self.cache.move_to_end(path)
            return cached[1]
        settled = time.time() - max(info.st_mtime, info.st_ctime) > SETTLE
        code: types.CodeType | BaseException
        try:
            source = _read_capped(fd, MAX_SCRIPT)
            code = compile(source, path, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError) as exc:
            code = exc
        if not settled:
            self.cache.pop(path, None)
            return code
        self.cache[path] = (stamp, code)
        while len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)
        return code


def _read_capped(fd: int, limit: int) -> bytes:
    """All of *fd* from its start, at most *limit* bytes (OSError if there is more)."""
    chunks: list[bytes] = []
    size = 0
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise OSError(errno.EFBIG, f"script over {limit} bytes")
