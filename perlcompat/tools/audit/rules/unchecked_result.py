"""unchecked-result: an ``open``, ``flock`` or lock-sub call whose failure is not tested.

Found during the walk (:mod:`..walker`: ``open``/``sysopen``/``flock`` and calls of lock
subs that may return 0), where whether a result is used is known.
"""

from __future__ import annotations

from ..findings import Policy

POLICY = Policy("unchecked-result", "warning", "``open``/``flock``/lock sub result ignored")
