"""The whole report: the header (command, code, settings, schemes), the targets, the invalid
runs, then the bulk, video, SIMULATED and mixed-flow sections and the closing note with the
targets again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .bulk import bulk_section, ratchet_section, signal_section, td_section
from .frontier import load_frontier
from .issue14 import issue14_section
from .markdown import table
from .metrics import Cells
from .mix import mix_section
from .runs import load_bench
from .series import run_series
from .simulated import fairness_section, sim_section, sweeps_section
from .targets import Target, compute_targets
from .video import video_section


def _end_commit(index: dict[str, Any]) -> str:
    """The commit at the end of the run, when it differs from the start (older reports: unknown)."""
    start = index.get("git", {}).get("commit")
    end = index.get("git_at_end", {}).get("commit")
    if end is None:
        return ""
    if end == start:
        return "; the same at the end"
    return f"; {end} at the end (each run uses the code at its own start)"


def _rel(p: Path) -> str:
    """``p`` relative to the working directory when it lies below it."""
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def header(index: dict[str, Any], bench_dir: Path, delay_ms: float) -> list[str]:
    """The report's title and opening paragraphs: how it was produced (command, times, code),
    what the runs are, the controller's settings and the schemes."""
    cfg = index.get("config", {})
    return [
        "# Benchmarks",
        "",
        f"Produced by `{index.get('command', '?')}` from {index.get('started_utc', '?')} to "
        f"{index.get('ended_utc', '?')} (UTC) on a {index.get('host', {}).get('cpus', '?')}-core "
        "machine. Regenerate the report alone with "
        f"`.venv/bin/python -m nuwa_lab.bench_report --bench-dir {_rel(bench_dir)}`. Code: "
        f"commit {index.get('git', {}).get('commit', '?')}"
        + (f" with uncommitted changes in {', '.join(index['git']['dirty_files'])}"
           if index.get("git", {}).get("dirty_files") else "")
        + " at the start"
        + _end_commit(index) + ".",
        "",
        "End-to-end runs: aioquic server → trace-driven emulator (25 ms one-way each way, "
        "drop-tail queue) → headless Chromium; metrics from the emulator's log (truth) as "
        "docs/DESIGN.md defines them. Simulated results (in-process `@nuwa/cc` simulator, "
        "simulated clock) are in their own sections and labelled SIMULATED.",
        "",
        "Controller settings of this run (`NuwaConfig`): "
        + ", ".join(f"{k}={v}" for k, v in cfg.items()
                    if k in ("target_delay_ms", "sensitivity_ms", "aggressiveness_mss",
                             "multiplicative_gain", "additive_increase_mss", "step",
                             "qd_source", "rate_cap", "rate_filter_ms",
                             "rate_cap_filter_ms")),
        "",
        "Schemes: `nuwa` (grants obeyed), `cubic`/`reno` (aioquic's own controller, grants "
        "ignored), `oracle` (window = capacity the emulator offered over the last "
        f"{index.get('options', {}).get('oracle_window_ms') or 2 * delay_ms:g} ms (base RTT "
        f"{2 * delay_ms:g} ms), reported to the server one uplink delay late, scaled to cover "
        "the report interval, the server's reading lag and 20 ms of standing queue; "
        "outstanding bytes on the emulator's delivered-bytes clock, not the page's grants; "
        "no loss-based ceiling; docs/DESIGN.md §7); "
        "video, the ladder (each one factor from its neighbour): `dashjs` (dash.js 5.2.1 as "
        "shipped, every setting untouched, only its loader over the session, server cubic), "
        "`dashjs_grants` (the same over Nuwa's grants), `dashjs_nuwa_estimate` (dash.js's rules "
        "fed Nuwa's estimate, grants), `nuwa` (Nuwa ABR, grants), `nuwa_cubic` (Nuwa ABR on "
        "Nuwa's estimate, server cubic, no grants; old name `observe`; `cubic` is the old name "
        "of `dashjs`).",
        "",
    ]


def closing(targets: list[Target], notes: Path | None) -> list[str]:
    """The closing note: the targets met, missed and not measured, their table again, and the
    hand-written ``notes`` when given."""
    md: list[str] = []
    met = sum(t.met is True for t in targets)
    missed = sum(t.met is False for t in targets)
    md += ["## Closing note", "",
           f"{met} targets met, {missed} missed, {len(targets) - met - missed} not measured in "
           "this invocation (computed from the runs above; the verdicts are not edited by hand):",
           ""]
    md += table(["target", "measured", "verdict"], [t.row() for t in targets])
    if notes is not None and notes.exists():
        md += [f"Notes (hand-written, from `{_rel(notes)}`):", "", notes.read_text().strip(), ""]
    return md


def build_report(bench_dir: Path, img_prefix: str = "plots/",
                 notes: Path | None = None) -> tuple[str, list[Path]]:
    """Make the plots under ``bench_dir/plots`` and return (Markdown, plot paths).

    ``notes``: a hand-written Markdown file (why a target was missed, what was
    tried) appended to the closing note under the computed target table.
    """
    index, runs = load_bench(bench_dir)
    delay_ms = float(index.get("options", {}).get("delay_ms", 25))
    plots_dir = bench_dir / "plots"
    plots_dir.mkdir(exist_ok=True)
    cells = Cells([r for r in runs if r.rec["kind"] != "ratchet"])
    ratchet = [r for r in runs if r.rec["kind"] == "ratchet"]
    plots: list[Path] = []
    md = header(index, bench_dir, delay_ms)
    series: dict[str, dict[str, Any]] = {}
    for r in runs:
        if r.valid and r.rec["kind"] == "bulk":
            try:
                series[r.rec["id"]] = run_series(r, delay_ms)
            except (OSError, ValueError) as exc:
                md.append(f"(series of {r.rec['id']} unavailable: {exc})")
    # targets first: the point of the exercise
    frontier = load_frontier(bench_dir)
    targets = compute_targets(cells, index, ratchet, frontier)
    md += ["## Targets (issue 5), computed from this run", ""]
    md += table(["target", "measured", "verdict"], [t.row() for t in targets])
    md += issue14_section(cells)
    invalid = [r for r in runs if not r.valid]
    md += ["## Invalid or failed runs (left out of every table and target)", ""]
    if invalid:
        md += table(["run", "why"], [[r.rec["id"], "; ".join(r.rec.get("invalid_reasons") or
                                                            ["?"])] for r in invalid])
    else:
        md += ["None.", ""]
    for q in cells.queues("bulk"):
        m, p = bulk_section(cells, q, series, frontier, plots_dir, img_prefix)
        md += m
        plots += p
    for section in (td_section, signal_section):
        m, p = section(cells, plots_dir, img_prefix)
        md += m
        plots += p
    md += ratchet_section(ratchet)
    for q in cells.queues("play"):
        md += video_section(cells, q)
    md += sim_section(index.get("sim") or [], cells)
    m, p = sweeps_section(index.get("sweeps") or [], plots_dir, img_prefix)
    md += m
    plots += p
    md += fairness_section(index.get("fairness") or [])
    m, p = mix_section(index.get("mix") or [], bench_dir, plots_dir, img_prefix)
    md += m
    plots += p
    if index.get("missing_traces"):
        md += ["Traces listed in traces/index.json but not found (not run): "
               + ", ".join(index["missing_traces"]), ""]
    md += closing(targets, notes)
    return "\n".join(md) + "\n", plots
