"""swallowed-flock: ``eval "flock(...)"`` or ``eval { flock(...) }``, its failure hidden.

Found during the walk (:mod:`..handlers`, ``flock`` inside an ``eval`` whose result is ignored).
"""

from __future__ import annotations

from ..findings import Policy

POLICY = Policy("swallowed-flock", "warning", '``eval "flock(...)"``: failure hidden')
