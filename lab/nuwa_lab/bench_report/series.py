"""Time series of a run, for the plots: capacity, delivery, queuing delay and the window in
force per 100 ms bin and the delay quantiles (from the emulator log and the server's
``frames.jsonl``, cached in the run's ``series.json``); the Td in force and, per second, the delay
the rule read against the raw Qd (from the page log)."""

from __future__ import annotations

import json
import math
from typing import Any

from ..emulator.analysis import parse_log
from ..emulator.mmlog import read_sidecar, server_send_us_to_log_ms
from .runs import Run

BIN_MS = 100
"""Time-series bin, ms."""
CDF_POINTS = 200
"""Quantiles kept per run for the queuing-delay CDFs."""


def run_series(run: Run, delay_ms: float) -> dict[str, Any]:
    """Time series and delay quantiles of one run, cached in ``series.json``.

    Returns ``{"t_s", "capacity_mbps", "delivered_mbps", "qd_ms" (mean per bin, None
    when nothing left), "window_mbps" (window in force ÷ base RTT: the grant, the
    oracle's window, or QUIC's cwnd when grants are ignored), "window_kind",
    "qd_quantiles" (CDF_POINTS+1 quantiles of per-packet queuing delay in the
    metrics window)}``.
    """
    cache = run.dir / "series.json"
    if cache.exists():
        cached: dict[str, Any] = json.loads(cache.read_text())
        return cached
    log_path = run.dir / "emulator.log"
    log = parse_log(log_path)
    t0 = int(read_sidecar(log_path)["base_timestamp_ms"])
    w = run.m.get("window_s") or [0.0, 1e12]
    lo_ms, hi_ms = 1000.0 * w[0], 1000.0 * w[1]
    end_ms = max([d[0] for d in log.departures] + log.opportunities[-1:] + [0])
    nb = int(end_ms // BIN_MS) + 1
    cap = [0] * nb
    dlv = [0] * nb
    qsum = [0.0] * nb
    qn = [0] * nb
    for t in log.opportunities:
        cap[t // BIN_MS] += 1504
    delays: list[int] = []
    for (a_t, _s), (d_t, d_size, _x) in zip(log.arrivals, log.departures, strict=False):
        b = d_t // BIN_MS
        dlv[b] += d_size
        qsum[b] += d_t - a_t
        qn[b] += 1
        if lo_ms <= a_t < hi_ms:
            delays.append(d_t - a_t)
    delays.sort()
    quant = (
        [float(delays[min(len(delays) - 1, round(i / CDF_POINTS * (len(delays) - 1)))])
         for i in range(CDF_POINTS + 1)]
        if delays else []
    )
    win: list[float | None] = [None] * nb
    kind = "none"
    rtt_s = 2 * delay_ms / 1000.0
    for fpath in sorted((run.dir / "server").glob("**/frames.jsonl")):
        with fpath.open() as fh:
            for line in fh:
                row = json.loads(line)
                gw = row.get("grant_window_bytes")
                val = gw if gw is not None else row.get("ceiling_bytes")
                kind = "grant window" if gw is not None else "QUIC cwnd"
                t_log = server_send_us_to_log_ms(int(row["send_time_us"]), t0, delay_ms)
                b = int((t_log - delay_ms) // BIN_MS)
                if 0 <= b < nb and val is not None:
                    win[b] = float(val) * 8 / rtt_s / 1e6
    scale = 8 / (BIN_MS / 1000.0) / 1e6
    out = {
        "t_s": [i * BIN_MS / 1000.0 for i in range(nb)],
        "capacity_mbps": [c * scale for c in cap],
        "delivered_mbps": [d * scale for d in dlv],
        "qd_ms": [qsum[i] / qn[i] if qn[i] else None for i in range(nb)],
        "window_mbps": win,
        "window_kind": kind,
        "qd_quantiles": quant,
        "window_s": [w[0], w[1]],
    }
    cache.write_text(json.dumps(out))
    return out


def td_series(run: Run) -> tuple[list[float], list[float]] | None:
    """The Td in force over time of a run, from its page log (``target_delay_ms``:
    [receiver µs, ms] at each change): (seconds since the first frame, ms), or None."""
    page_path = run.dir / "page.json"
    if not page_path.exists():
        return None
    page = json.loads(page_path.read_text())
    pts = page.get("target_delay_ms") or []
    if not pts or not page.get("recv_us"):
        return None
    t0 = float(page["recv_us"][0])
    return [(float(t) - t0) / 1e6 for t, _ in pts], [float(v) for _, v in pts]


def _p95(xs: list[float]) -> float:
    """Nearest-rank 95th percentile of a non-empty list."""
    ys = sorted(xs)
    return ys[min(len(ys) - 1, math.ceil(0.95 * len(ys)) - 1)]


def signal_series(run: Run, bin_s: float = 1.0) -> dict[str, list[float]] | None:
    """What the rule read against the raw queuing delay, per ``bin_s`` of a run (issue 14).

    From the page log's per-frame ``raw_qd_ms`` (Eq. 1) and ``rule_qd_ms`` (the delay
    the rule read: min(Qd, service delay) under the default ``qd_source: "service"``, DESIGN.md §3)
    and the Td in force. Returns {"t_s", "raw_p95_ms", "rule_p95_ms", "td_ms"} with one
    entry per bin that holds frames (t_s: bin start, s since the first frame), or None
    when the log has no ``rule_qd_ms`` (runs before it was logged)."""
    page_path = run.dir / "page.json"
    if not page_path.exists():
        return None
    page = json.loads(page_path.read_text())
    recv = page.get("recv_us") or []
    raw, rule = page.get("raw_qd_ms") or [], page.get("rule_qd_ms") or []
    if not recv or len(rule) != len(recv) or len(raw) != len(recv):
        return None
    t0 = float(recv[0])
    tds = [(float(t), float(v)) for t, v in page.get("target_delay_ms") or []]
    bins: dict[int, tuple[list[float], list[float]]] = {}
    for t, a, b in zip(recv, raw, rule, strict=True):
        k = int((float(t) - t0) / 1e6 / bin_s)
        bins.setdefault(k, ([], []))[0].append(float(a))
        bins[k][1].append(float(b))
    out: dict[str, list[float]] = {"t_s": [], "raw_p95_ms": [], "rule_p95_ms": [], "td_ms": []}
    for k in sorted(bins):
        start_us = t0 + k * bin_s * 1e6
        td = [v for t, v in tds if t <= start_us]  # in force at the bin's start
        out["t_s"].append(k * bin_s)
        out["raw_p95_ms"].append(_p95(bins[k][0]))
        out["rule_p95_ms"].append(_p95(bins[k][1]))
        out["td_ms"].append(td[-1] if td else float("nan"))
    return out
