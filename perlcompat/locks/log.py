"""The ``perlcompat`` logger, imported only when there is something to log.

``import logging`` costs milliseconds, so neither ``import perlcompat`` nor a
normal lock cycle imports it: the lock code calls :func:`warning` or
:func:`info` only for rare events (a stale lock removed, a lock expired while
held, a redis hold-off).  The library configures no handlers, as filelock and
portalocker do: without logging configured, Python's last-resort handler
shows WARNING records on stderr and drops INFO.
"""

from __future__ import annotations

NAME = "perlcompat"


def info(message: str, *args: object) -> None:
    """Log *message* % *args* at INFO on the ``perlcompat`` logger."""
    import logging

    logging.getLogger(NAME).info(message, *args)


def warning(message: str, *args: object) -> None:
    """Log *message* % *args* at WARNING on the ``perlcompat`` logger."""
    import logging

    logging.getLogger(NAME).warning(message, *args)
