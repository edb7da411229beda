"""The scripts ``perlcompat serve`` may run, and their compiled code.

A request names its script in ``SCRIPT_FILENAME``; :meth:`Scripts.resolve` allows
only an absolute path that resolves (symbolic links followed) to a regular file
inside ``--root`` with an allowed extension.  :meth:`Scripts.compiled` compiles each
script once, in the parent, so every forked child starts from the code.
"""

from __future__ import annotations

import os
import stat
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


class Scripts:
    """The scripts under *root* with one of *extensions*; what is refused goes to *log*."""

    def __init__(self, root: str, extensions: tuple[str, ...], log: Callable[[str], None]):
        self.root = os.path.realpath(root).rstrip(os.sep) + os.sep
        self.extensions = extensions
        self.log = log
        self.cache: OrderedDict[str, tuple[tuple[int, ...], types.CodeType | BaseException]]
        self.cache = OrderedDict()

    def resolve(self, name: str) -> str | int:
        """The real path of *name* if it may run, else the HTTP status to answer (403, 404)."""
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
        try:
            info = os.stat(real)
        except OSError:
            self.log(f"SCRIPT_FILENAME {name!r} does not exist: 404")
            return 404
        if not stat.S_ISREG(info.st_mode):
            self.log(f"SCRIPT_FILENAME {name!r} is not a file: 403")
            return 403
        return real

    def compiled(self, path: str) -> types.CodeType | BaseException:
        """The code of the script at *path*, compiled once per path, mtime, ctime, size, inode.

        ctime counts because a copy that keeps the mtime (``cp -p``, ``tar x``) still
        changes it.  A file changed less than :data:`SETTLE` seconds ago is compiled
        afresh every time: file times tick coarsely, so a same-size edit within one tick
        of the last would look unchanged ("racy" timestamps, as git calls them).
        """
        try:
            info = os.stat(path)
            stamp: tuple[int, ...] = (
                info.st_mtime_ns,
                info.st_ctime_ns,
                info.st_size,
                info.st_ino,
                info.st_dev,
            )
        except OSError as exc:
            return exc
        cached = self.cache.get(path)
        if cached is not None and cached[0] == stamp:
            self.cache.move_to_end(path)
            return cached[1]
        settled = time.time() - max(info.st_mtime, info.st_ctime) > SETTLE
        code: types.CodeType | BaseException
        try:
            with open(path, "rb") as script:
                source = script.read()
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
