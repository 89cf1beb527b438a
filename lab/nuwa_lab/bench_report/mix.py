"""The report's "Sharing a bottleneck" section (issue 18 item 4): the bench's mixed-flow runs
(``bench-index.json``'s ``mix`` list, written by e2e/src/cli-bench.ts from e2e/src/bench-mix.ts),
each a ``./nuwa mix`` JSON with its figure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .markdown import fmt, table


def _link(spec: dict[str, Any]) -> str:
    link = spec.get("link") or {}
    return f"constant {link['mbps']:g} Mbit/s" if "mbps" in link else str(link.get("name", "?"))


def _flows_cell(result: dict[str, Any]) -> str:
    """Per flow: scheme, share, p95 queuing delay, switches, seconds starved."""
    parts = []
    for f in result.get("flows", []):
        qd = (f.get("queuing_delay_ms") or {}).get("p95")
        parts.append(f"{f.get('scheme', '?')} {fmt(f.get('share'), 2)} / {fmt(qd)} ms / "
                     f"{f.get('switches', 0)} sw / {fmt(f.get('starved_s'))} s")
    return "; ".join(parts)


def mix_section(mix: list[dict[str, Any]], bench_dir: Path, plots_dir: Path,
                img_prefix: str) -> tuple[list[str], list[Path]]:
    """Markdown lines and plot paths of the mixed-flow runs.

    ``mix``: the records of bench-index.json (``{spec, json, plot, error, wall_s}``, paths
    relative to ``bench_dir``). Each run's figure is copied into ``plots_dir`` as
    ``<id>.png``. A run that failed, or whose JSON is missing or unreadable, is listed with
    why; nothing is computed from it. Returns ``([], [])`` without runs."""
    if not mix:
        return [], []
    md = ["## Sharing a bottleneck (issue 18; end to end, `./nuwa mix` per row)", "",
          "Per flow: scheme, share of the goodput, p95 queuing delay at the bottleneck, "
          "switches, seconds starved (below 20 % of the fair share); Jain's index over the "
          "last 20 s; from the emulator's per-flow log (lab/nuwa_lab/mix/run.py).", ""]
    rows: list[list[str]] = []
    figures: list[tuple[str, Path]] = []
    plots: list[Path] = []
    for rec in mix:
        spec = rec.get("spec") or {}
        run_id = str(spec.get("id", "?"))
        head = [run_id, _link(spec), str(spec.get("queue_packets", "?")),
                str(spec.get("switch", "?"))]
        result: dict[str, Any] | None = None
        why = rec.get("error")
        if not why:
            try:
                result = json.loads((bench_dir / rec["json"]).read_text())
            except (OSError, ValueError, KeyError) as exc:
                why = f"result unreadable: {exc}"
        if result is None:
            rows.append(head + [f"FAILED: {why}", "–", "–", "–"])
            continue
        emu = result.get("emulator") or {}
        valid = emu.get("valid") if isinstance(emu, dict) else None
        why_invalid = "; ".join(emu.get("invalid_reasons") or []) if isinstance(emu, dict) else ""
        rows.append(head + [_flows_cell(result), fmt(result.get("jain_index"), 3),
                            fmt(result.get("utilization"), 3),
                            "yes" if valid else f"no: {why_invalid}"])
        if rec.get("plot") and (bench_dir / rec["plot"]).is_file():
            dst = plots_dir / f"{run_id}.png"
            shutil.copyfile(bench_dir / rec["plot"], dst)
            plots.append(dst)
            figures.append((run_id, dst))
    md += table(["run", "link", "queue (packets)", "switch",
                 "per flow: share / p95 / switches / starved", "Jain", "utilization",
                 "emulator valid"], rows)
    for run_id, dst in figures:
        md += [f"![{run_id}: throughput per flow over time, switches marked; Jain's index over "
               f"time]({img_prefix}{dst.name})", ""]
    return md, plots
