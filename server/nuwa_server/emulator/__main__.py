"""``python -m nuwa_server.emulator``: see :mod:`.cli`."""

import sys

from .cli import main

sys.exit(main())
