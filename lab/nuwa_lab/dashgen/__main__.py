"""``python -m nuwa_lab.dashgen --out CACHE_ROOT [...]`` (``cli.main``)."""

from .cli import main

raise SystemExit(main())
