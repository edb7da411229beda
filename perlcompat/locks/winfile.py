"""The Windows file calls the lock methods import from here: now the platform seam's.

``open_file`` (delete-sharing opens), ``retry_busy``, ``busy_create``, ``change_time``
and ``BUSY_PATIENCE`` are ``locks.osapi``'s (``oswindows`` on Windows, ``osposix``
elsewhere); this module only names them for the modules that still import them here.
"""

from __future__ import annotations

from .osapi import (
    BUSY_PATIENCE as BUSY_PATIENCE,
    busy_create as busy_create,
    change_time as change_time,
    open_file as open_file,
    retry_busy as retry_busy,
)
