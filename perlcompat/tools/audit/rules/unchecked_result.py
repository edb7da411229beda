"""unchecked-result: an ``open``, ``flock`` or lock-sub call whose failure is not tested.

Found during the walk, where whether a result is used is known: :mod:`..handlers` for
``open``/``sysopen``/``flock``, :mod:`..walker` for a call of a lock sub that may return 0.
"""

from __future__ import annotations

from ..findings import Policy

POLICY = Policy("unchecked-result", "warning", "``open``/``flock``/lock sub result ignored")
