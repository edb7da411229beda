"""swallowed-flock: ``eval "flock(...)"`` or ``eval { flock(...) }``, its failure hidden.

Found during the walk (:mod:`..walker`, the ``flock`` handler inside an ignored ``eval``).
"""

from __future__ import annotations

from ..findings import Policy

POLICY = Policy("swallowed-flock", "warning", '``eval "flock(...)"``: failure hidden')
