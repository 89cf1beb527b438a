"""``python -m nuwa_lab.sendersim`` (:mod:`.cli`)."""

import sys

from .cli import main

sys.exit(main())
