"""``python -m nuwa_lab.load``: see :mod:`nuwa_lab.load`."""

import sys

from .cli import main

sys.exit(main())
