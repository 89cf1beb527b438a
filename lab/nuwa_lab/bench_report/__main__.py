"""``python -m nuwa_lab.bench_report --bench-dir DIR [...]`` (``cli.main``)."""

from .cli import main

main()
