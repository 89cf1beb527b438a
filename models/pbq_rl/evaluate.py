"""PBQ against BBR (and Cubic) in the sender-side simulator, with the exported model run by the
server's own agent (``nuwa_lab.sendersim.agents``: onnxruntime every 100 ms).

Two settings (issue 17's targets, simulated here; the end-to-end figures come from
``./nuwa bench``):

* every held-out trace (:func:`.env.split_traces`), one flow, 25 ms one-way delay, a deep
  (1000 packets) and a shallow (50 packets) queue: utilization and p95 queuing delay;
* the paper's Fig. 9–10 setting: a constant 10 Mbit/s link, 25 ms one-way delay, a 100-packet
  queue, 1 % and 2.5 % random loss, two flows of the same scheme: their total goodput.

``python -m pbq_rl.evaluate [--model models/pbq.onnx] [--duration 30] --json OUT``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from nuwa_lab.emulator import constant_rate_trace, load_trace
from nuwa_lab.sendersim import SimConfig, simulate

from .scenario import REPO_ROOT, split_traces

QUEUES = (1000, 50)
LOSSES = (0.01, 0.025)


def _flow_figures(out: dict[str, Any]) -> dict[str, Any]:
    f = out["flows"][0]
    return {"utilization": round(out["utilization"], 4),
            "p95_queuing_ms": f["queuing_delay_ms"]["p95"],
            "goodput_mbps": round(sum(x["goodput_bps"] for x in out["flows"]) / 1e6, 3),
            "loss_rate": round(f["loss_rate"], 4)}


def evaluate(model: Path, duration_s: float = 30.0, schemes: tuple[str, ...] = ("pbq", "bbr")
             ) -> dict[str, Any]:
    """The two settings of the module doc; returns rows and a summary of the targets."""
    _, held = split_traces()
    rows: list[dict[str, Any]] = []
    for p in held:
        trace = load_trace(p)
        for q in QUEUES:
            row: dict[str, Any] = {"trace": str(p.relative_to(REPO_ROOT)), "queue_packets": q}
            for s in schemes:
                cfg = SimConfig(duration_s=duration_s, queue_packets=q, warmup_s=2.0, pbq_model=str(model))
                row[s] = _flow_figures(simulate([s], trace, cfg))
            rows.append(row)
            print(json.dumps(row), flush=True)
    loss_rows: list[dict[str, Any]] = []
    for loss in LOSSES:
        row = {"link_mbps": 10, "loss": loss, "flows": 2}
        for s in (*schemes, "cubic"):
            cfg = SimConfig(duration_s=duration_s, queue_packets=100, loss_rate=loss, start_gap_s=0.0,
                            pbq_model=str(model))
            row[s] = _flow_figures(simulate([s, s], constant_rate_trace(10e6), cfg))
        loss_rows.append(row)
        print(json.dumps(row), flush=True)
    wins = [r for r in rows if r["pbq"]["utilization"] >= r["bbr"]["utilization"]
            and r["pbq"]["p95_queuing_ms"] <= r["bbr"]["p95_queuing_ms"]]
    summary = {
        "traces_pbq_util_ge_bbr_and_p95_le": f"{len(wins)}/{len(rows)}",
        "loss_pbq_ge_bbr": [r["pbq"]["goodput_mbps"] >= r["bbr"]["goodput_mbps"] for r in loss_rows],
        "loss_pbq_ge_2x_cubic": [r["pbq"]["goodput_mbps"] >= 2 * r["cubic"]["goodput_mbps"] for r in loss_rows],
    }
    return {"model": str(model), "duration_s": duration_s, "simulated": True, "traces": rows,
            "random_loss": loss_rows, "summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=REPO_ROOT / "models" / "pbq.onnx")
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()
    ev = evaluate(a.model, a.duration)
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(ev, indent=1) + "\n")
    print(json.dumps(ev["summary"]))


if __name__ == "__main__":
    main()
