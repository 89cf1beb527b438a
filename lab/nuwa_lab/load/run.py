"""The load test's orchestrator: server, emulator and workers started, results analysed
(:mod:`nuwa_lab.load`)."""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..emulator.trace import constant_rate_trace, load_trace
from .common import (
    BIN_MS,
    JAIN_TARGET,
    LATE_SEGMENT_LIMIT,
    REPO_ROOT,
    instrument_check,
    jain_index,
)
from .procs import (
    StartError,
    _child_pid,
    _cpu_s,
    _proc_status,
    _start_ready,
    _stop,
    server_session_summaries,
    summarize_profile,
    udp_counters,
    udp_socket_drops,
)
from .worker import _q


def analyze(
    a: argparse.Namespace, workers: list[dict[str, Any]], link_bps: float | None
) -> dict[str, Any]:
    """Fairness, goodput, deadlines and errors from the workers' reports."""
    sessions = [s for w in workers for s in w["sessions"]]
    errors = [e for w in workers for e in w["errors"]] + [
        f"session {s['id']}: {e}" for s in sessions for e in s["errors"]
    ]
    n_bins = int(a.duration * 1000 // BIN_MS)
    first_bin = int(a.fair_from_s * 1000 // BIN_MS)
    goodput_bps = []
    for s in sessions:
        b = sum(v for k, v in s["bins"].items() if first_bin <= int(k) < n_bins)
        goodput_bps.append(b * 8 / max(1e-9, (n_bins - first_bin) * BIN_MS / 1000))
    jain = jain_index(goodput_bps) if any(goodput_bps) else 0.0
    total_bps = sum(goodput_bps)
    out: dict[str, Any] = {
        "scheme": a.scheme,
        "sessions": len(sessions),
        "errors": errors,
        "goodput_bps": {
            "total": total_bps,
            "min": min(goodput_bps, default=0),
            "max": max(goodput_bps, default=0),
            "per_session": goodput_bps,
        },
        "jain_index": jain,
        "fair_from_s": a.fair_from_s,
        "bridge_lag_us": [w["bridge_lag_us"] for w in workers],
        "instrument": instrument_check([w["bridge_lag_us"] for w in workers]),
        "worker_cpu_s": [w["cpu_s"] for w in workers],
        # Base one-way delay each controller holds at the end (same clock on both sides here,
        # so it is the true propagation delay plus any standing queue it mistook for none).
        "base_owd_ms": [
            round(((s["final"] or {}).get("base_owd_us") or 0) / 1000, 1) for s in sessions
        ],
        "final_phases": collections.Counter((s["final"] or {}).get("phase", "?") for s in sessions),
    }
    if link_bps:
        out["link_bps"] = link_bps
        out["goodput_share_of_link"] = total_bps / link_bps
        fair = link_bps / len(sessions)
        out["sessions_below_90pct_fair_share"] = sum(1 for g in goodput_bps if g < 0.9 * fair)
    if a.mode == "paced":
        segs = [g for s in sessions for g in s["segments"]]
        late = [g for g in segs if g["late"]]
        dl = sorted(g["download_us"] / 1e6 for g in segs if g["download_us"] is not None)
        out["segments"] = {
            "count": len(segs),
            "late": len(late),
            "late_share": len(late) / len(segs) if segs else 1.0,
            "download_s": {"p50": _q(dl, 0.5), "p99": _q(dl, 0.99), "max": dl[-1] if dl else None},
            "segment_s": a.segment_s,
        }
    return out


def orchestrate(a: argparse.Namespace) -> dict[str, Any]:
    """Start server, emulator and workers; measure; stop everything (by PID)."""
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    if a.trace:
        trace_path = Path(a.trace).resolve()
        tr = load_trace(trace_path)
        link_bps: float | None = len(tr.opportunities_ms) * 1504 * 8 / (tr.period_ms / 1000)
    else:
        tr = constant_rate_trace(a.link_mbps * 1e6, 1000)
        trace_path = out / "link.mahi"
        trace_path.write_text("".join(f"{t}\n" for t in tr.opportunities_ms))
        link_bps = a.link_mbps * 1e6
    server_cmd = [
        py,
        "-m",
        "nuwa_server.server",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--cc",
        a.scheme,
        "--state-dir",
        str(REPO_ROOT / ".cache" / "dev-cert"),
    ]
    if a.server_logs:
        server_cmd += ["--log-dir", str(out / "server")]
    spy = REPO_ROOT / ".venv" / "bin" / "py-spy"
    profile_path = out / "server-profile.txt"
    if a.profile and spy.exists():
        server_cmd = [
            str(spy),
            "record",
            "-r",
            "100",
            "-f",
            "raw",
            "-o",
            str(profile_path),
            "--",
            *server_cmd,
        ]
    procs: list[subprocess.Popen[Any]] = []
    server_pid: int | None = None
    rss_samples: list[tuple[float, int]] = []
    cpu_samples: list[tuple[float, float]] = []
    try:
        server, ready = _start_ready(server_cmd, out / "server.stderr")
        procs.append(server)
        server_pid = _child_pid(server.pid) if server_cmd[0] == str(spy) else server.pid
        emu, emu_ready = _start_ready(
            [
                py,
                "-m",
                "nuwa_lab.emulator",
                "--listen",
                "127.0.0.1:0",
                "--server",
                f"127.0.0.1:{ready['port']}",
                "--trace",
                str(trace_path),
                "--delay-ms",
                str(a.delay_ms),
                "--uplink-delay-ms",
                str(a.delay_ms),
                "--queue-packets",
                str(a.queue_packets),
                "--log",
                str(out / "emulator.log"),
                "--summary-json",
                str(out / "emulator-summary.json"),
            ],
            out / "emulator.stderr",
        )
        procs.append(emu)
        per = [
            a.sessions // a.workers + (1 if i < a.sessions % a.workers else 0)
            for i in range(a.workers)
        ]
        start_at = time.monotonic() + 2.0 + 0.3 * a.sessions
        worker_procs = []
        base = 0
        for i, k in enumerate(per):
            if k == 0:
                continue
            wcmd = [
                py,
                "-m",
                "nuwa_lab.load",
                "--worker",
                "--connect",
                f"127.0.0.1:{emu_ready['listen_port']}",
                "--sessions",
                str(k),
                "--id-base",
                str(base),
                "--start-at",
                str(start_at),
                "--duration",
                str(a.duration),
                "--mode",
                a.mode,
                "--rate-mbps",
                str(a.rate_mbps),
                "--segment-s",
                str(a.segment_s),
                "--cc",
                a.cc,
                "--json",
                str(out / f"worker-{i}.json"),
            ]
            base += k
            wp = subprocess.Popen(
                wcmd,
                cwd=REPO_ROOT,
                stdout=subprocess.DEVNULL,
                stderr=(out / f"worker-{i}.stderr").open("w"),
            )
            worker_procs.append(wp)
            procs.append(wp)
        udp0 = udp_counters()
        t_start = time.monotonic()
        cpu0 = None
        while any(w.poll() is None for w in worker_procs):
            time.sleep(1.0)
            t = time.monotonic() - t_start
            st = _proc_status(server_pid)
            if "VmRSS" in st:
                rss_samples.append((round(t, 1), st["VmRSS"]))
            c = _cpu_s(server_pid)
            if c is not None:
                cpu_samples.append((round(t, 1), c))
                if cpu0 is None and time.monotonic() >= start_at:
                    cpu0 = (time.monotonic(), c)
            if t > a.duration + 120 + 0.5 * a.sessions:
                raise StartError("workers did not finish in time")
        cpu_load = None
        if cpu0 is not None and cpu_samples:
            cpu_load = (cpu_samples[-1][1] - cpu0[1]) / max(1e-9, time.monotonic() - cpu0[0])
        peak = _proc_status(server_pid).get("VmHWM")
        udp1 = udp_counters()
        sock_drops = udp_socket_drops()
        known = {int(ready["port"]): "server", int(emu_ready["listen_port"]): "emulator_listen"}
        drops_by_socket: dict[str, int] = collections.Counter()
        for port_, d in sock_drops.items():
            drops_by_socket[known.get(port_, "other (emulator upstream, clients)")] += d
        failed = [i for i, w in enumerate(worker_procs) if w.returncode != 0]
        if failed:
            tails = "\n".join((out / f"worker-{i}.stderr").read_text()[-1500:] for i in failed)
            raise StartError(f"worker(s) {failed} failed:\n{tails}")
        workers = [
            json.loads((out / f"worker-{i}.json").read_text()) for i in range(len(worker_procs))
        ]
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                _stop(p, server_pid if p is procs[0] and server_pid else None)
    result = analyze(a, workers, link_bps)
    emu_summary = (
        json.loads((out / "emulator-summary.json").read_text())
        if (out / "emulator-summary.json").exists()
        else {}
    )
    result.update(
        {
            "mode": a.mode,
            "duration_s": a.duration,
            "workers": a.workers,
            "trace": str(a.trace) if a.trace else f"constant {a.link_mbps} Mbps",
            "rate_mbps": a.rate_mbps if a.mode == "paced" else None,
            "server": {
                "peak_rss_kb": peak,
                "rss_kb_samples": rss_samples[:: max(1, len(rss_samples) // 30)],
                "cpu_share_of_one_core": cpu_load,
            },
            "emulator": {
                k: emu_summary.get(k)
                for k in (
                    "valid",
                    "lateness_ms",
                    "cpu_s",
                    "loss_rate",
                    "utilization",
                    "queuing_delay_ms",
                )
            },
            "host": {"cpus": os.cpu_count(), "loadavg": os.getloadavg()},
            "udp_kernel_drops": {
                k: udp1.get(k, 0) - udp0.get(k, 0)
                for k in ("RcvbufErrors", "SndbufErrors", "InErrors")
            },
            "server_sessions": server_session_summaries(out / "server.stderr"),
            "udp_drops_by_socket": drops_by_socket,
        }
    )
    if a.profile and profile_path.exists():
        result["server"]["profile"] = summarize_profile(profile_path)
    ok = not result["errors"]
    if a.mode == "bulk":
        ok = ok and result["jain_index"] >= JAIN_TARGET
    else:
        ok = ok and result["segments"]["late_share"] < LATE_SEGMENT_LIMIT
    result["ok"] = ok
    return result
