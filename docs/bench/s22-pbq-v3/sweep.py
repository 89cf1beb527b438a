"""PBQ action rule v3 (tried in the twenty-second session, not shipped) against the shipped v2
and BBR, in the sender simulator: every dev trace (3G/4G/5G) and the Mahimahi traces of an
optional folder that the repository does not hold (``*/*.mahi`` under it; the run below used
FCC MBA 2016 broadband units 812 and 8299, and T-Mobile 5G NSA walking r20069 and Verizon
mmWave driving t59 and t73 of the SIGCOMM'21 5G artifact), 1000 and 50 packets, one-way delay
10, 25 and 50 ms (mmWave at 25 ms only), 30 s. One process per core; a line of JSON per run, as
it ends.

    .venv/bin/python docs/bench/s22-pbq-v3/sweep.py OUT.jsonl [PROCS] [EXTRA_TRACES_DIR] [ONLY]

(ONLY: run only the traces whose path contains it.)

v2 is the checkout's code and ``models/pbq.onnx``; v3 is v2 with the floor changed (at least
BBRInflight(1.25) + extra_acked, then no higher than BBRBoundCwndForModel) and the model trained
for it at fa49ee0 (``pbq-v3.onnx`` here; its metadata in ``pbq-v3.json``). The run in
``sweep-device.jsonl`` was made on a 16-core device machine (401 s, cut at 400 s: 386 of 387
runs ended) from the tree of that commit, where v3 was the code and v2 was patched in; the
bounds below are the same two functions.
"""
import json
import sys
import time
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "lab"), str(ROOT / "models")]
import nuwa_server.cc.pbq as pbq  # noqa: E402
import nuwa_server.cc.pbq_agent as pa  # noqa: E402
from nuwa_lab.emulator import load_trace  # noqa: E402
from nuwa_lab.sendersim import SimConfig, simulate  # noqa: E402

V2_BOUNDS = pbq.PbqCongestionControl.cwnd_bounds_bytes
V2_VERSION = pa.ACTION_RULE_VERSION


def v3_bounds(self):
    floor = self._quantization_budget(self._bdp_multiple(max(self.pacing_gain, 1.25)) + self._extra_acked.best)
    cap = float("inf")  # BBRBoundCwndForModel
    if self.state.value.startswith("ProbeBW") and self.state.value != "ProbeBW_CRUISE":
        cap = self.inflight_hi_bytes
    elif self.state.value in ("ProbeRTT", "ProbeBW_CRUISE"):
        cap = self._inflight_with_headroom()
    cap = max(min(cap, self._inflight_lo), float(self._min_pipe_cwnd()))
    ceiling = self._max_inflight()
    return int(min(floor, cap, ceiling)), int(ceiling)


def run(task):
    scheme, trace, q, owd, dur = task
    model = None
    if scheme == "pbq-v3":
        pbq.PbqCongestionControl.cwnd_bounds_bytes = v3_bounds
        pa.ACTION_RULE_VERSION = "pbq-action-v3"
        model = str(HERE / "pbq-v3.onnx")
    else:
        pbq.PbqCongestionControl.cwnd_bounds_bytes = V2_BOUNDS
        pa.ACTION_RULE_VERSION = V2_VERSION
    t0 = time.time()
    out = simulate([scheme.split("-")[0]], load_trace(Path(trace)),
                   SimConfig(duration_s=dur, queue_packets=q, one_way_delay_ms=owd, warmup_s=2.0, pbq_model=model))
    f = out["flows"][0]
    return {"scheme": scheme, "trace": Path(trace).stem, "q": q, "owd": owd, "util": out["utilization"],
            "p95": f["queuing_delay_ms"]["p95"], "loss": f["loss_rate"], "wall_s": round(time.time() - t0, 1)}


if __name__ == "__main__":
    out_path = Path(sys.argv[1])
    procs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    repo = {p.name for p in (ROOT / "traces").glob("*/*.mahi")}
    traces = sorted(str(p) for p in (ROOT / "traces").glob("*/*.mahi"))
    if len(sys.argv) > 3:
        extra = Path(sys.argv[3])
        traces += sorted(str(p) for p in extra.glob("*/*.mahi") if p.name not in repo)
    traces = [t for t in traces if len(sys.argv) < 5 or sys.argv[4] in t]
    traces.sort(key=lambda t: 0 if "mmwave" in t else 1)  # the longest runs first
    tasks = [(s, t, q, owd, 30.0) for t in traces for q in (1000, 50) for owd in (10, 25, 50)
             for s in ("pbq-v3", "pbq-v2", "bbr") if owd == 25 or "mmwave" not in t]
    with Pool(procs) as pool, out_path.open("w") as fh:
        for r in pool.imap_unordered(run, tasks):
            fh.write(json.dumps(r) + "\n")
            fh.flush()
