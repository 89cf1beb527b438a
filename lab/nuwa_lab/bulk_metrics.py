"""Metrics of one end-to-end bulk run, from the logs of the emulator (truth), the
server and the page (docs/DESIGN.md §6 "How it is measured").

- utilization: delivered bytes ÷ trace capacity bytes over the download's active
  period after a warm-up (``utilization`` of the emulator log over that
  window: the bulk sender always has data, so idle capacity counts against it).
- queuing delay: per packet, departure − arrival at the emulator queue.
- Qd error: the page's Qd for a frame against the emulator's queuing delay of the
  packets that entered the queue when that frame did. Packets are encrypted, so
  the match is by time: the frame's server send time (CLOCK_MONOTONIC µs, shared
  with the emulator on this host) plus the propagation delay stage gives its
  queue-arrival time in the log's time base.
- grant violations: recomputed from the server's frame and grant logs, not taken
  from its own counter: a frame write after which written − cum_received of the
  newest accepted grant exceeds that grant's window plus one frame.

- disconnections (issue 13 item 5): the page reconnects when its session dies
  and records each gap (``e2e/pages/disconnections.ts``); ``reconnects`` counts
  the gaps that ended with frames on a new session, ``disconnected_s`` sums
  them from the last frame before to the first frame after (server send
  stamps, so on the emulator's clock). The utilization window spans the gaps
  (capacity the link offered while the page was reconnecting counts against
  it) and, when the run ends disconnected, runs on to the page's end.

CLI: ``python -m nuwa_lab.bulk_metrics --run-dir DIR --trace FILE --delay-ms 25
--warmup-s 2`` prints one JSON object; the window starts ``warmup_s`` after the
first frame entered the queue and ends when the last one did.
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
from pathlib import Path
from typing import Any

from .emulator.analysis import analyze_log, packet_records
from .emulator.mmlog import read_sidecar, server_send_us_to_log_ms

INITIAL_WINDOW_BYTES = 12_000  # PROTOCOL.md: window before the first grant
MIN_WINDOW_BYTES = 1200
MAX_WINDOW_BYTES = 64 * 1024 * 1024


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    with path.open() as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def qd_error(
    log_path: Path, page: dict[str, Any], delay_ms: float, start_ms: float, end_ms: float
) -> dict[str, Any]:
    """Median and p95 |page Qd − emulator queuing delay| in ms, frames in [start_ms, end_ms).

    Returns ``{"median", "p95", "frames", "raw": {...}, "kalman": {...}}``; the
    top-level pair is for the raw Eq. 1 Qd.
    """
    meta = read_sidecar(log_path)
    t0 = float(meta["base_timestamp_ms"])
    recs = packet_records(log_path)
    arr = [r.arrival_ms for r in recs]
    errs_raw: list[float] = []
    errs_kal: list[float] = []
    for send_us, raw, kal in zip(
        page["send_us"], page["raw_qd_ms"], page["kalman_qd_ms"], strict=False
    ):
        a_ms = server_send_us_to_log_ms(int(send_us), int(t0), delay_ms)
        if not (start_ms <= a_ms < end_ms):
            continue
        # packets that entered the queue in the same log millisecond as the frame
        i = bisect.bisect_left(arr, int(a_ms))
        j = bisect.bisect_right(arr, int(a_ms) + 1)
        if i >= len(recs):
            continue
        window = [recs[k].delay_ms for k in range(i, max(j, i + 1))]
        truth = statistics.median(window)
        errs_raw.append(abs(raw - truth))
        errs_kal.append(abs(kal - truth))
    return {
        "median": _pct(errs_raw, 50),
        "p95": _pct(errs_raw, 95),
        "frames": len(errs_raw),
        "kalman": {"median": _pct(errs_kal, 50), "p95": _pct(errs_kal, 95)},
    }


def grant_violations(server_log_dir: Path) -> dict[str, Any]:
    """Recompute grant obedience from each session's ``frames.jsonl`` and ``grants.jsonl``.

    Per session (a page that reconnected has several; each session's grants
    count its own bytes): a frame violates when written − cum received −
    window exceeds one frame, with the grant in force at its send time.
    A frame sent ``n ≥ 1`` whole grant timeouts after the last accepted grant
    (the session's ``grant_timeout_us``, from its ``config`` event in
    ``events.jsonl``) is checked as the server's documented fallback
    (server/nuwa_server/grants.py, PROTOCOL.md "Grant timeout"): window
    max(initial window, last window >> n) against QUIC's bytes in flight
    logged with the frame, plus the frame. (A page that stopped granting on a
    session it was leaving during an outage flagged a frame sent 1.002 s after
    its last grant in a CI run; the server had logged ``grant_fallback``.)
    Sessions in ``oracle`` mode (their ``summary.json`` says so) take no
    window from grants: they are checked against the oracle's window and
    delivered-clock outstanding bytes logged with each frame instead.
    Returns ``{"violations", "frames", "max_excess_bytes"}``.
    """
    violations = 0
    n_frames = 0
    max_excess = 0
    for frames_path in sorted(server_log_dir.glob("**/frames.jsonl")):
        d = frames_path.parent
        frames = sorted(_jsonl(frames_path), key=lambda f: (f["send_time_us"], f["seq"]))
        n_frames += len(frames)
        max_frame = max((f["bytes"] for f in frames), default=0)
        summary = json.loads((d / "summary.json").read_text()) if (
            d / "summary.json").exists() else {}
        if summary.get("cc") == "oracle":
            for f in frames:
                window = f.get("grant_window_bytes")
                if window is None:
                    continue
                excess = f["outstanding_bytes"] - window
                if excess > max_frame:
                    violations += 1
                    max_excess = max(max_excess, excess)
            continue
        grants_path = d / "grants.jsonl"
        grants = [g for g in _jsonl(grants_path) if g.get("accepted")] if (
            grants_path.exists()) else []
        grants.sort(key=lambda g: g["recv_time_us"])
        g_times = [g["recv_time_us"] for g in grants]
        timeout_us = _grant_timeout_us(d)
        cum_max: list[int] = []
        for g in grants:
            cum_max.append(max(g["cum_received_bytes"], cum_max[-1] if cum_max else 0))
        written = 0
        for f in frames:
            written += f["bytes"]
            k = bisect.bisect_right(g_times, f["send_time_us"]) - 1
            if k < 0:
                cum, window = 0, INITIAL_WINDOW_BYTES
            else:
                # PROTOCOL.md: cum never goes backwards (the previous value is kept)
                cum = min(cum_max[k], written)
                window = min(max(grants[k]["window_bytes"], MIN_WINDOW_BYTES), MAX_WINDOW_BYTES)
                level = ((f["send_time_us"] - g_times[k]) // timeout_us
                         if timeout_us and "bytes_in_flight" in f else 0)
                if level >= 1:  # grants.py: the fallback's window over QUIC's bytes in flight
                    window = max(INITIAL_WINDOW_BYTES, window >> min(level, 62))
                    cum = written - f["bytes_in_flight"] - f["bytes"]
            excess = written - cum - window
            if excess > max_frame:
                violations += 1
                max_excess = max(max_excess, excess)
    return {"violations": violations, "frames": n_frames, "max_excess_bytes": max_excess}


def _grant_timeout_us(session_dir: Path) -> int | None:
    """The session's grant timeout, µs, from the ``config`` event that opens its
    ``events.jsonl`` (None: no such event or field, as in logs from before the fallback)."""
    events = session_dir / "events.jsonl"
    if not events.exists():
        return None
    with events.open() as fh:
        for line in fh:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("event") == "config":
                value = event.get("grant_timeout_us")
                return int(value) if isinstance(value, int) and value > 0 else None
    return None


def disconnection_gaps(page: dict[str, Any], base_timestamp_ms: int,
                       delay_ms: float) -> list[dict[str, Any]]:
    """The page's disconnections as gaps on the emulator log's time base.

    ``page``: the bulk page's log (``send_us``/``recv_us`` per frame, server
    and page µs; ``disconnections`` as ``e2e/pages/disconnections.ts`` writes
    them; ``ended_us``, page µs). Each gap runs from the queue arrival of the
    last frame before the loss to that of the first frame after
    (:func:`server_send_us_to_log_ms`); a loss before any frame starts at the
    first frame's, and one still open at the end ends at the page's end
    mapped onto the server's clock by the smallest ``recv_us − send_us``
    (page time of a frame that arrived at the least delay). Returns
    ``[{"start_ms", "end_ms", "resumed", "reason", "sessions_lost"}]``, log ms.
    """
    entries = page.get("disconnections") or []
    send, recv = page.get("send_us") or [], page.get("recv_us") or []
    if not entries or not send:
        return []
    offset_us = min(r - s for s, r in zip(send, recv, strict=False))
    end_send_us = max(float(page.get("ended_us") or 0) - offset_us, float(max(send)))
    out = []
    for e in entries:
        start_us = e.get("last_send_us") if e.get("last_send_us") is not None else send[0]
        resumed = e.get("first_send_us") is not None
        stop_us = e["first_send_us"] if resumed else end_send_us
        out.append({
            "start_ms": server_send_us_to_log_ms(int(start_us), base_timestamp_ms, delay_ms),
            "end_ms": server_send_us_to_log_ms(int(stop_us), base_timestamp_ms, delay_ms),
            "resumed": resumed,
            "reason": str(e.get("reason", "")),
            "sessions_lost": int(e.get("sessions_lost", 1)),
        })
    return out


def bulk_metrics(run_dir: Path, trace: Path, delay_ms: float, warmup_s: float) -> dict[str, Any]:
    """All metrics of a run directory holding ``emulator.log`` (+ sidecar and
    ``emulator-summary.json``), ``server/`` logs and ``page.json``.

    The window runs from ``warmup_s`` after the first frame the page received
    entered the queue to when the last one did (log time base).
    Raises ``ValueError`` if the page received no frame.
    """
    log = run_dir / "emulator.log"
    page = json.loads((run_dir / "page.json").read_text())
    if not page.get("send_us"):
        raise ValueError(f"{run_dir}: the page received no frame ({page.get('error')})")
    t0 = int(read_sidecar(log)["base_timestamp_ms"])
    first_ms = server_send_us_to_log_ms(int(page["send_us"][0]), t0, delay_ms)
    last_ms = server_send_us_to_log_ms(int(max(page["send_us"])), t0, delay_ms)
    start_ms = first_ms + warmup_s * 1000.0
    end_ms = last_ms
    gaps = disconnection_gaps(page, t0, delay_ms)
    if gaps and not gaps[-1]["resumed"]:
        end_ms = max(end_ms, gaps[-1]["end_ms"])  # the dark tail counts too
    m = analyze_log(log, trace, start_ms=int(start_ms), end_ms=int(end_ms))
    summary_path = run_dir / "emulator-summary.json"
    emu = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    qd = qd_error(log, page, delay_ms, start_ms, end_ms)
    gv = grant_violations(run_dir / "server")
    return {
        "utilization": m.utilization,
        "utilization_busy": m.utilization_busy,
        "queuing_delay_ms": {
            k: m.queuing_delay_ms.get(k) for k in ("mean", "p50", "p95", "p99", "max")
        },
        "queuing_delay_data_ms": {
            k: m.queuing_delay_data_ms.get(k) for k in ("mean", "p50", "p95", "p99", "max")
        },
        "loss_rate": m.loss_rate,
        "delivered_bytes": m.delivered_bytes,
        "capacity_bytes": m.capacity_bytes,
        "window_s": [round(start_ms / 1000.0, 3), round(end_ms / 1000.0, 3)],
        "sessions": int(page.get("sessions") or 1),
        "reconnects": sum(1 for g in gaps if g["resumed"]),
        "disconnected_s": round(sum(g["end_ms"] - g["start_ms"] for g in gaps) / 1000.0, 3),
        "disconnections": [
            {**g, "start_ms": round(g["start_ms"], 1), "end_ms": round(g["end_ms"], 1)}
            for g in gaps
        ],
        "qd_error_ms": qd,
        "grant_violations": gv["violations"],
        "grant_check": gv,
        "emulator": {
            "valid": bool(emu.get("valid", False)),
            # why it is invalid (summary.py: p99 lateness over the bound, a failed log check)
            "invalid_reasons": emu.get("invalid_reasons"),
            "lateness_ms": emu.get("lateness_ms"),
            "cpu_s": emu.get("cpu_s"),
            "log_checks": {
                "replay_mismatches": m.replay_mismatches,
                "delay_mismatches": m.delay_mismatches,
                "schedule_mismatches": m.schedule_mismatches,
            },
        },
    }


def main(argv: list[str] | None = None) -> None:
    """CLI entry: print the metrics of a run directory as JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--trace", required=True, type=Path)
    p.add_argument("--delay-ms", type=float, default=25.0)
    p.add_argument("--warmup-s", type=float, default=2.0)
    a = p.parse_args(argv)
    print(json.dumps(bulk_metrics(a.run_dir, a.trace, a.delay_ms, a.warmup_s)))


if __name__ == "__main__":
    main()
