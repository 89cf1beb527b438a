"""The gap table: the sender-side simulator against end-to-end runs on the same traces.

``python -m nuwa_lab.sendersim.gap RUN_DIR... [--md OUT]``: for each end-to-end bulk run
directory of ``./nuwa bench`` (its ``bench.json``: scheme, trace, queue, and the metrics of
``bulk_metrics.py`` with their window), simulates the same scheme on the same trace and queue
(25 ms each way, as the bench) over the same stretch of the trace: the flow starts so that its
first frame reaches the queue when the run's did (window start − the 2 s warm-up), the
figures leave out the same warm-up and end where the run's window ends. Prints a Markdown
table of utilization, queuing delay mean / p50 / p95 (ms) and loss, end to end → simulated.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from nuwa_lab.emulator import load_trace

from .run import SimConfig, simulate

REPO_ROOT = Path(__file__).resolve().parents[3]
BENCH_DELAY_MS = 25.0
"""One-way delay of the bench's bulk runs, ms."""
BENCH_WARMUP_S = 2.0
"""bulk_metrics.py's warm-up after the first frame, s."""
FIRST_DATA_AFTER_START_S = 3 * BENCH_DELAY_MS / 1000
"""The simulated flow's first frame reaches the queue one handshake RTT + one one-way delay
after its start, s."""


def simulate_like(run: dict[str, Any]) -> dict[str, Any]:
    """Simulate one bench run's scheme, trace, queue and window (module doc)."""
    m = run["metrics"]
    a_s, b_s = m["window_s"]
    first_data_s = a_s - BENCH_WARMUP_S
    cfg = SimConfig(one_way_delay_ms=BENCH_DELAY_MS, queue_packets=run["queue_packets"],
                    duration_s=b_s, first_start_s=first_data_s - FIRST_DATA_AFTER_START_S,
                    warmup_s=BENCH_WARMUP_S + FIRST_DATA_AFTER_START_S)
    return simulate([run["scheme"]], load_trace(REPO_ROOT / run["trace"]["path"]), cfg)


def row(run: dict[str, Any], sim: dict[str, Any], bench: str = "") -> str:
    """One Markdown row: end-to-end → simulated for each figure; ``bench`` names the
    invocation the run belongs to (its output directory)."""
    m, f = run["metrics"], sim["flows"][0]
    e2e_qd, sim_qd = m["queuing_delay_ms"], sim["queuing_delay_ms"]
    cells = [f"{m['utilization']:.3f} → {sim['utilization']:.3f}"]
    cells += [f"{e2e_qd[k]:.0f} → {sim_qd[k]:.0f}" for k in ("mean", "p50", "p95")]
    cells.append(f"{100 * m['loss_rate']:.2f} → {100 * f['loss_rate']:.2f}")
    head = [run["trace"]["name"], run["scheme"], str(run["queue_packets"]), bench]
    return "| " + " | ".join(head + cells) + " |"


HEADER = ("| trace | scheme | queue | bench | utilization | Qd mean ms | Qd p50 ms | Qd p95 ms "
          "| loss % |\n|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    """Entry point: the table for the run directories given."""
    p = argparse.ArgumentParser(prog="python -m nuwa_lab.sendersim.gap", description=__doc__)
    p.add_argument("runs", nargs="+", type=Path, help="bench run directories (bench.json)")
    p.add_argument("--md", type=Path, help="also write the table here")
    a = p.parse_args(argv)
    lines = [HEADER]
    for d in a.runs:
        run = json.loads((d / "bench.json").read_text())
        lines.append(row(run, simulate_like(run), d.resolve().parent.parent.name))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.md:
        a.md.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
