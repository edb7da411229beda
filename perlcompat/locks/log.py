"""The ``perlcompat`` logger, imported only when there is something to log.

``import logging`` costs milliseconds, so neither ``import perlcompat`` nor a
normal lock cycle imports it: the lock code calls :func:`warning` or
:func:`info` only for rare events (a stale lock removed, a lock expired while
held, a redis hold-off); :func:`debug` (each acquire and release) logs only when
the program has imported ``logging`` itself.  The library configures no handlers, as filelock and
portalocker do: without logging configured, Python's last-resort handler
shows WARNING records on stderr and drops INFO.
"""

from __future__ import annotations

import sys

NAME = "perlcompat"


def debug(message: str, *args: object) -> None:
    """Log *message* % *args* at DEBUG, only if the program has imported ``logging``.

    A program that never imported ``logging`` cannot have enabled DEBUG, so a
    lock cycle there neither imports it nor formats anything.
    """
    logging = sys.modules.get("logging")
    if logging is None or getattr(logging.__spec__, "_initializing", False):
        return  # (another thread still importing it cannot have enabled DEBUG yet)
    logger = logging.getLogger(NAME)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(message, *args)


def info(message: str, *args: object) -> None:
    """Log *message* % *args* at INFO on the ``perlcompat`` logger."""
    import logging

    logging.getLogger(NAME).info(message, *args)


def warning(message: str, *args: object) -> None:
    """Log *message* % *args* at WARNING on the ``perlcompat`` logger."""
    import logging

    logging.getLogger(NAME).warning(message, *args)
