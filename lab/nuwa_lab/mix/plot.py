"""The mix's figure (issue 18 item 4, the DRL-switching paper's Fig. 6–8 kind): per-flow
throughput over time with each controller switch marked, and Jain's index over time among the
flows present, from a ``./nuwa mix`` JSON (end to end or ``--sim``: the same fields).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..sendersim.metrics import jain_index

JAIN_WINDOW_S = 5
"""Jain's index over time: each point is the index of the flows' mean rates over this many
1 s bins (the flows present for all of them)."""


def leave_times_s(result: dict[str, Any]) -> dict[int, float]:
    """Flow index → the time it left (``after_leave[].leave_s``), for flows that left early."""
    return {int(x["i"]): float(x["leave_s"]) for x in result.get("after_leave", [])}


def jain_over_time(result: dict[str, Any], window_s: int = JAIN_WINDOW_S
                   ) -> list[tuple[float, float]]:
    """(end of the window s, Jain's index) for every window of ``window_s`` whole 1 s bins
    (``flows[].throughput_bps_1s``) in which at least two flows are present throughout
    (started by the window's start, not left before its end) and one delivered something.

    Raises:
        ValueError: ``window_s`` < 1.
    """
    if window_s < 1:
        raise ValueError(f"window_s must be >= 1, got {window_s}")
    flows = result["flows"]
    left = leave_times_s(result)
    n_bins = min((len(f["throughput_bps_1s"]) for f in flows), default=0)
    out = []
    for end in range(window_s, n_bins + 1):
        start = end - window_s
        present = [i for i, f in enumerate(flows)
                   if f["start_s"] <= start and left.get(i, float("inf")) >= end]
        if len(present) < 2:
            continue
        rates = [sum(flows[i]["throughput_bps_1s"][start:end]) / window_s for i in present]
        if sum(rates) > 0:
            out.append((float(end), jain_index(rates)))
    return out


def plot_mix(result: dict[str, Any], path: Path) -> Path:
    """Write the figure (PNG, matplotlib Agg) to ``path``: top, each flow's throughput per
    1 s (Mbit/s; the link's capacity in grey when the result has it) with its switches as
    vertical lines (solid: to sender-driven, dashed: back to receiver-driven) and its leave
    as a dotted one; bottom, :func:`jain_over_time`.
    Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flows = result["flows"]
    left = leave_times_s(result)
    fig, (ax, axj) = plt.subplots(2, 1, figsize=(10, 6), sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
    cap = result.get("capacity_bps_1s") or []
    if cap:
        ax.plot([k + 0.5 for k in range(len(cap))], [c / 1e6 for c in cap], color="grey",
                lw=0.8, label="link capacity")
    for i, f in enumerate(flows):
        ys = [b / 1e6 for b in f["throughput_bps_1s"]]
        (line,) = ax.plot([k + 0.5 for k in range(len(ys))], ys,
                          label=f"flow {i} {f['scheme']} (share {f['share']:.2f}, "
                          f"{f.get('switches', 0)} switches)")
        for t, mode in f.get("switch_log", []):
            if t is not None:
                ax.axvline(t, color=line.get_color(), lw=1,
                           ls="-" if mode == "sender" else "--")
        if i in left:
            ax.axvline(left[i], color=line.get_color(), lw=1, ls=":")
    ax.set_ylabel("throughput, Mbit/s (1 s)")
    ax.set_title(f"{result.get('trace', '')}, {result.get('queue_packets', '?')} packets, "
                 f"switch {result.get('switch', 'none')} ({result.get('mode', '')})")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    jt = jain_over_time(result)
    axj.plot([t for t, _ in jt], [j for _, j in jt], color="black")
    axj.axhline(0.9, color="grey", lw=0.8, ls="--")
    axj.set_ylim(0, 1.05)
    axj.set_ylabel(f"Jain ({JAIN_WINDOW_S} s)")
    axj.set_xlabel("time, s (the run's clock)")
    axj.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
