"""The run summary: log-derived metrics (truth) plus the relay's own timing self-check."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .analysis import analyze_log
from .relay import RunStats
from .timing import MAX_VALID_P99_LATENESS_MS
from .trace import Trace


def build_summary(log_path: str | Path, trace: Trace | None, stats: RunStats) -> dict[str, Any]:
    """Summary dict of a finished run.

    Fields: ``valid`` (False if p99 lateness > 2 ms or the log fails its own
    consistency checks; ``invalid_reasons`` says why), ``lateness_ms``
    {p50, p99, max, mean, count} over opportunities that served packets,
    ``packets`` {arrived, departed, dropped}, ``loss_rate``,
    ``queuing_delay_ms`` {mean, p50, p95, p99, max}, ``utilization``
    (delivered ÷ capacity over the whole run, idle opportunities counted:
    DESIGN.md's definition, though over the run rather than a download's
    backlogged part), ``utilization_busy`` (over backlogged opportunities only,
    see :class:`~.analysis.LogMetrics`), ``capacity_bytes``, ``delivered_bytes``,
    ``duration_s`` (wall), ``cpu_s`` (process CPU time), ``cpu_fraction``,
    ``warnings`` (e.g. host UDP receive-buffer drops during the run),
    ``flows`` (one per client flow: ``route``, ``listen_port``, ``server``,
    ``client``, ``delivered_bytes`` and ``dropped_bytes`` at the bottleneck, UDP
    payload bytes; each flow's share of the link).
    """
    m = analyze_log(log_path, trace)
    lat = stats.lateness.summary()
    reasons: list[str] = []
    p99 = lat["p99"]
    if p99 is not None and p99 > MAX_VALID_P99_LATENESS_MS:
        reasons.append(f"p99 lateness {p99} ms > {MAX_VALID_P99_LATENESS_MS} ms")
    checks = {
        "replay_mismatches": m.replay_mismatches,
        "delay_mismatches": m.delay_mismatches,
        "schedule_mismatches": m.schedule_mismatches,
        "unmatched_departures": m.unmatched_departures,
    }
    for k, v in checks.items():
        if v:
            reasons.append(f"log check {k} = {v}")
    warnings: list[str] = []
    if stats.udp_rcvbuf_errors:
        warnings.append(f"host UDP RcvbufErrors rose by {stats.udp_rcvbuf_errors} during the run")
    if stats.send_errors:
        warnings.append(f"{stats.send_errors} datagrams could not be sent")
    return {
        "valid": not reasons,
        "invalid_reasons": reasons,
        "warnings": warnings,
        "lateness_ms": lat,
        "packets": m.packets,
        "loss_rate": m.loss_rate,
        "queuing_delay_ms": m.queuing_delay_ms,
        "utilization": m.utilization,
        "utilization_busy": m.utilization_busy,
        "capacity_bytes": m.capacity_bytes,
        "delivered_bytes": m.delivered_bytes,
        "backlogged_capacity_bytes": m.backlogged_capacity_bytes,
        "backlogged_served_bytes": m.backlogged_served_bytes,
        "duration_s": round(stats.duration_s, 3),
        "cpu_s": round(stats.cpu_s, 3),
        "cpu_user_s": round(stats.cpu_user_s, 3),
        "cpu_sys_s": round(stats.cpu_sys_s, 3),
        "cpu_fraction": round(stats.cpu_s / stats.duration_s, 4) if stats.duration_s else None,
        "base_timestamp_ms": stats.base_timestamp_ms,
        "log": str(log_path),
        "trace": trace.name if trace is not None else None,
        "priority": stats.priority,
        "wakeups": stats.wakeups,
        "rx_timestamps": stats.rx_timestamps,
        "rx_fallbacks": stats.rx_fallbacks,
        "clients": stats.clients,
        "client_packets": stats.client_packets,
        "server_packets": stats.server_packets,
        "uplink_dropped": stats.uplink_dropped,
        "send_errors": stats.send_errors,
        "udp_rcvbuf_errors": stats.udp_rcvbuf_errors,
        "log_checks": checks,
        "link_counters": stats.link_counters,
        "oracle_reports": stats.oracle_reports,
        "flows": [asdict(f) for f in stats.flows],
    }


def write_summary(path: str | Path, summary: dict[str, Any]) -> None:
    """Write the summary as indented JSON (atomically: temp file then rename)."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=1) + "\n")
    tmp.replace(p)
