"""``python -m nuwa_lab.mix`` (:mod:`nuwa_lab.mix.cli`)."""

import sys

from .cli import main

sys.exit(main())
