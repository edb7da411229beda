"""check-then-create: a file tested absent (``-e``/``-f``), then created by an ``open``.

Found during the walk (:mod:`..handlers`, the ``open`` handler), which knows the paths
tested absent at each point.  An open that takes a lock (any creating mode) is an
error; a truncating ``>``/``+>`` open of a data file is a warning; a ``>>`` append
empties nothing and is not reported.
"""

from __future__ import annotations

from ..findings import Policy

POLICY = Policy(
    "check-then-create",
    "error",
    "``-e``/``-f`` test, then an ``open`` that takes a lock (any creating mode) or "
    "truncates (``>``/``+>``)",
)
