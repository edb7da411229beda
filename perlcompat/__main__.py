"""``python -m perlcompat``: the same as the ``perlcompat`` command."""

import sys

from .tools.cli import main

sys.exit(main())
