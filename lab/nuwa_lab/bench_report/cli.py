"""``python -m nuwa_lab.bench_report``: write a bench directory's report (and its docs copy)."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from .report import build_report


def main(argv: list[str] | None = None) -> None:
    """CLI entry: ``--bench-dir DIR [--docs-md FILE --docs-assets DIR] [--notes FILE]`` writes
    ``DIR/report.md`` and ``DIR/plots/*.png`` and, with ``--docs-md``, the same report whose
    images point to copies in ``--docs-assets`` (default: ``bench/`` beside FILE). Exits with a
    message when ``DIR/bench-index.json`` is missing."""
    p = argparse.ArgumentParser(description="benchmark report (issue 5)")
    p.add_argument("--bench-dir", required=True, type=Path)
    p.add_argument("--docs-md", type=Path, help="also write the report here")
    p.add_argument("--docs-assets", type=Path, help="copy the plots here (with --docs-md)")
    p.add_argument("--notes", type=Path,
                   help="hand-written Markdown appended to the closing note (why a target was "
                   "missed, what was tried)")
    a = p.parse_args(argv)
    if not (a.bench_dir / "bench-index.json").exists():
        raise SystemExit(f"{a.bench_dir}/bench-index.json not found: run ./nuwa bench first")
    text, plots = build_report(a.bench_dir, notes=a.notes)
    (a.bench_dir / "report.md").write_text(text)
    print(f"wrote {a.bench_dir / 'report.md'} and {len(plots)} plots")
    if a.docs_md:
        assets = a.docs_assets or a.docs_md.parent / "bench"
        assets.mkdir(parents=True, exist_ok=True)
        for f in plots:
            shutil.copy(f, assets / f.name)
        rel = assets.resolve().relative_to(a.docs_md.resolve().parent)
        docs_text, _ = build_report(a.bench_dir, img_prefix=f"{rel}/", notes=a.notes)
        a.docs_md.write_text(docs_text)
        print(f"wrote {a.docs_md} (plots in {assets})")

