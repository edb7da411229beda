"""The ``os.open`` flags perlcompat uses where the platform has them, 0 where it has not.

One definition for every module that opens files: a lock, slot or side file is
opened without following a symlink (``O_NOFOLLOW``), closed on exec
(``O_CLOEXEC``; ``O_NOINHERIT`` on Windows), in binary mode (``O_BINARY``,
Windows), and, where a FIFO may have been planted, without blocking
(``O_NONBLOCK``).  This module imports only ``os``.
"""

from __future__ import annotations

import os

O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NOINHERIT: int = getattr(os, "O_NOINHERIT", 0)
O_BINARY: int = getattr(os, "O_BINARY", 0)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
#: Linux: a descriptor that names a file without opening it for I/O (cheaper; no read
#: permission needed); 0 elsewhere, where a plain read-only open is made instead.
O_PATH: int = getattr(os, "O_PATH", 0)
