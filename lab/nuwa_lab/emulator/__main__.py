"""``python -m nuwa_lab.emulator``: see :mod:`.cli`."""

import sys

from .cli import main

sys.exit(main())
