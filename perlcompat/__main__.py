"""``python -m perlcompat``: the same as the ``perlcompat`` command."""

import sys

from ._cli import main

sys.exit(main())
