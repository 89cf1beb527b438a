"""Metrics and report of one playback run (issue 4), from the emulator's log
(truth: capacity and queuing delay) and the page's log (dash.js events, Nuwa's
and dash.js's estimates). docs/DESIGN.md §6 "How it is measured":

- estimate error: |estimate − capacity| ÷ capacity in 1 s bins while
  downloading (a bin counts when the player had a request in flight for at
  least 75% of its samples); median over bins, for Nuwa's and dash.js's own.
  Both come from the same run: the page reads the two estimates at the same
  instants (every 250 ms), and only samples where both exist are scored, so
  both medians are over the same bins against the same capacity;
- QoE per chunk (Pensieve's linear QoE, Mao et al. SIGCOMM 2017 §5.1, QoE_lin):
  Σ bitrate (Mbit/s) − 4.3 × rebuffer (s) − Σ |Δ bitrate| (Mbit/s), divided by
  the number of video chunks played: one per media position (segment index)
  that playback reached. The bitrate of a position is what the viewer saw: the
  rung of the frames presented over its media time (the page logs each change of
  the displayed frame size; every rung has its own), and Σ |Δ bitrate| is taken
  over those changes (all three pages log it; a page without the log credits a
  position with its last download). The two differ when dash.js's fast switching fetches
  the segment that is playing: its frames were already queued, so the copy is not
  shown (a 5G run: segment 0 fetched at 750, 6000 and 8000 kbit/s, shown at 750).
  Re-downloads and abandoned requests are not chunks; their bytes are reported
  beside the QoE (``redownloaded_bytes``: downloads of a position superseded by a
  later one; ``abandoned_requests`` / ``abandoned_bytes``: requests dash.js cut off).
  Rebuffering is the player's declared stalls plus the time the picture stood
  frozen while audio carried the clock on (Chromium waits up to 3 s after
  the video runs dry before it reports waiting; ``frozen_picture``);
- queuing delay p50/p95 per packet at the emulator; utilization = delivered ÷
  capacity bytes over the downloading bins.

The page's clock is mapped onto the log's time base with the frames: a frame the
server stamped at ``send_us`` entered the queue at a known log time and left it
``Qd`` later, when the page read it; the median difference is the offset.

CLI: ``python -m nuwa_lab.play_metrics --run-dir DIR --trace FILE --scheme S
[--delay-ms 25] [--td-ms 20]`` writes ``summary.json`` and ``report.png`` there
and prints the summary.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import statistics
from pathlib import Path
from typing import Any

from .bulk_metrics import grant_violations
from .emulator.analysis import packet_records, parse_log
from .emulator.mmlog import read_sidecar, server_send_us_to_log_ms
from .emulator.trace import PACKET_SIZE_BYTES

REBUFFER_PENALTY = 4.3  # Pensieve's linear QoE, per second of rebuffering


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def browser_to_log_offset_ms(page: dict[str, Any], t0_ms: int, delay_ms: float) -> float:
    """Offset such that log_ms = browser_ms − offset. Raises ValueError without frames."""
    fr = page["frames"]
    if not fr["send_us"]:
        raise ValueError("the page received no frame")
    diffs = []
    step = max(1, len(fr["send_us"]) // 5000)
    for i in range(0, len(fr["send_us"]), step):
        depart_log_ms = (
            server_send_us_to_log_ms(int(fr["send_us"][i]), t0_ms, delay_ms) + fr["raw_qd_ms"][i]
        )
        diffs.append(fr["recv_us"][i] / 1000.0 - depart_log_ms)
    return statistics.median(diffs)


def played_chunks(page: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The video chunks played, one per media position, and the waste around them.

    ``page["chunks"]``: completed video segment downloads in completion order, each
    ``{t_us, bitrate_kbps, index, start_s?, bytes?}`` (a position downloaded again
    appears again). A position counts as played when playback reached it
    (``start_s`` < the furthest media time sampled; without ``start_s`` it counts);
    it carries the last download of that position. Returns (played chunks in media
    order, ``{"chunks_downloaded", "redownloaded_chunks", "redownloaded_bytes",
    "redownloaded_lower_chunks", "redownloaded_lower_bytes", "abandoned_requests",
    "abandoned_bytes"}``). ``redownloaded_lower_*``: the re-downloads at a lower rung than
    the copy they replace, and those copies' bytes: dash.js's fast switching replaces the
    buffer from 1.5 segments past the playhead after an up-switch (StreamProcessor
    ``_prepareForFastQualitySwitch``, ``setExplicitBufferingTime``), and when its
    AbandonRequestsRule then abandons the first replacement the player goes on from there
    at the abandonment's lower rung, over the better copies already buffered.
    """
    chunks = page.get("chunks") or []
    played_to_s = max((float(s["media_s"]) for s in page.get("samples") or []), default=None)
    last: dict[int, dict[str, Any]] = {}
    redl_chunks = 0
    redl_bytes = 0
    lower_chunks = 0
    lower_bytes = 0
    for c in chunks:
        i = int(c["index"])
        if i in last:
            redl_chunks += 1
            redl_bytes += int(last[i].get("bytes") or 0)  # the superseded download was wasted
            # a missing rate compares as NaN: not counted as lower
            if float(c.get("bitrate_kbps", "nan")) < float(last[i].get("bitrate_kbps", "nan")):
                lower_chunks += 1
                lower_bytes += int(last[i].get("bytes") or 0)
        last[i] = c
    played = [
        c for i, c in sorted(last.items())
        if played_to_s is None or c.get("start_s") is None or float(c["start_s"]) < played_to_s
    ]
    abandoned = page.get("abandoned") or []
    return played, {
        "chunks_downloaded": len(chunks),
        "redownloaded_chunks": redl_chunks,
        "redownloaded_bytes": redl_bytes,
        "redownloaded_lower_chunks": lower_chunks,
        "redownloaded_lower_bytes": lower_bytes,
        "abandoned_requests": len(abandoned),
        "abandoned_bytes": sum(int(a.get("bytes") or 0) for a in abandoned),
    }


def _fetch_ahead(events: list[dict[str, Any]]) -> dict[str, int]:
    """Counts of the page's ``fetch_ahead`` events (loader.ts FetchAheadEvent: outcome used,
    discarded or failed, bytes it had then); the discarded and failed bytes were wasted."""
    out = {"used": 0, "discarded": 0, "failed": 0, "wasted_bytes": 0}
    for e in events:
        k = str(e.get("outcome"))
        if k in out:
            out[k] += 1
        if k != "used":
            out["wasted_bytes"] += int(e.get("bytes") or 0)
    return out


def rendered_rates(
    page: dict[str, Any], played: list[dict[str, Any]]
) -> tuple[list[float], float, int] | None:
    """The bitrate the viewer saw over each played chunk, from the frames presented.

    ``page["rendered"]``: ``{media_s, bitrate_kbps}`` each time the displayed frame's size
    changed (e2e/pages/rendered.ts ``watchRendered``; every rung has its own frame size). The
    rendered bitrate at media time x is that of the last change at or before x (before the
    first change: the first). ``played``: ``played_chunks``'s chunks, each with ``start_s`` and
    ``duration_s`` (s). Returns (per chunk, the bitrate in Mbit/s averaged over the part of its
    media interval that was played, the whole interval for a chunk not reached; the total
    variation of the rendered bitrate over the played media, Mbit/s; the number of rendered
    changes within it), or None when the page has no such log or a frame size names no rung or a
    chunk has no interval: then the downloads are the record (``qoe``).

    Why: a segment downloaded again while it plays (dash.js's fast switching) is not shown from
    where the playhead was, and with one GOP per segment it is not shown at all (seen in a 5G
    run: segment 0 downloaded at 750, 6000 and 8000 kbit/s, its frames all 480x270).
    """
    marks = [r for r in page.get("rendered") or [] if r.get("media_s") is not None]
    if not marks or not played or any(r.get("bitrate_kbps") is None for r in marks):
        return None
    if any(c.get("start_s") is None or not c.get("duration_s") for c in played):
        return None
    marks = sorted(marks, key=lambda r: float(r["media_s"]))
    at = [float(r["media_s"]) for r in marks]
    mbps = [float(r["bitrate_kbps"]) / 1000.0 for r in marks]
    played_to_s = max((float(s["media_s"]) for s in page.get("samples") or []), default=0.0)

    def mean_over(a: float, b: float) -> float:
        """Media-time-weighted rendered bitrate over [a, b); the rate at a when b <= a."""
        i = max(0, bisect.bisect_right(at, a) - 1)
        if b <= a:
            return mbps[i]
        total = 0.0
        x = a
        while x < b:
            nxt = at[i + 1] if i + 1 < len(at) and at[i + 1] < b else b
            total += mbps[i] * (nxt - x)
            x = nxt
            i += 1
        return total / (b - a)

    rates = []
    for c in played:
        a = float(c["start_s"])
        rates.append(mean_over(a, min(a + float(c["duration_s"]), max(a, played_to_s))))
    lo = float(played[0]["start_s"])
    changes = [j for j in range(1, len(at)) if lo < at[j] <= played_to_s]
    tv = sum(abs(mbps[j] - mbps[j - 1]) for j in changes)
    return rates, tv, len(changes)


#: A picture this far behind the media clock (s) with no video buffered ahead is frozen: one
#: sample interval (0.25 s) of slack for the frame callback and the sampler.
FROZEN_LAG_S = 0.25
#: Video buffered ahead of the playhead below which the player has run dry (s).
DRY_BUFFER_S = 0.1


def frozen_picture(page: dict[str, Any]) -> tuple[float, int] | None:
    """Time the picture stood still while the media clock ran, outside declared stalls.

    Chromium lets audio play on for up to 3 s after the video runs dry before the element reports
    waiting (a stall): media/renderers/renderer_impl.cc, ``kDefaultVideoUnderflowThresholdMs =
    3000``; in that time the picture is frozen and the clock advances. Each
    sample is frozen when the last presented frame (``frame_media_s``, e2e/pages/rendered.ts) is
    more than ``FROZEN_LAG_S`` behind the media clock (``media_s``) and the video buffered ahead
    is below ``DRY_BUFFER_S``, outside any stall; the interval to the next sample (250 ms) counts
    when either end is frozen and it starts outside a stall. The lag threshold makes the figure
    short of the truth by up to ``FROZEN_LAG_S`` per episode. An episode adjacent to a declared
    stall (running into it, or starting within one sample after it ends) is part of that stall's
    event, not an episode of its own. Returns (seconds, episodes), or None when the samples carry
    no frame times.
    """
    samples = page.get("samples") or []
    if not any(s.get("frame_media_s") is not None for s in samples):
        return None
    stalls = [(float(x["start_us"]), float(x["end_us"]) if x["end_us"] is not None else math.inf)
              for x in page.get("stalls") or []]

    def in_stall(s: dict[str, Any]) -> bool:
        return any(a <= float(s["t_us"]) <= b for a, b in stalls)

    def frozen_at(s: dict[str, Any]) -> bool:
        f = s.get("frame_media_s")
        if f is None or not math.isfinite(float(f)) or in_stall(s):
            return False
        return (float(s["media_s"]) - float(f) > FROZEN_LAG_S
                and float(s.get("buffer_s") or 0.0) < DRY_BUFFER_S)

    # An episode that runs into a declared stall is that stall's start, and one that begins within
    # a sample of a stall's end (the element resumed on audio while the video had not arrived yet)
    # is that stall's end: neither is another episode. The time counts either way.
    total_s = 0.0
    episodes = 0
    open_episode = False
    for i, (a, b) in enumerate(zip(samples, samples[1:], strict=False)):
        now = (frozen_at(a) or frozen_at(b)) and not in_stall(a)
        if now:
            total_s += (float(b["t_us"]) - float(a["t_us"])) / 1e6
            if not open_episode:
                episodes += 0 if i > 0 and in_stall(samples[i - 1]) else 1
                open_episode = True
            if in_stall(b):
                episodes -= 1
                open_episode = False
        else:
            open_episode = False
    return total_s, episodes


def qoe(page: dict[str, Any]) -> dict[str, Any]:
    """Bitrate, switches, rebuffering and Pensieve's QoE per played chunk from the page log.

    Pensieve's QoE_lin (Mao et al., SIGCOMM 2017, §5.1): per chunk n, q(R_n) − μ·T_n −
    |q(R_{n+1}) − q(R_n)| with q(R) = R in Mbit/s and μ = 4.3 per second of rebuffering,
    summed and divided by the number of chunks, here the chunks played (``played_chunks``).
    R_n is what the viewer saw (``rendered_rates``: the rendered bitrate averaged over chunk n's
    media, and the smoothness term the total variation of the rendered bitrate, equal to
    Pensieve's when every change falls on a chunk boundary); without a rendered-frame log, the
    chunk's last download (``quality_basis`` says which). Rebuffering is every stall after
    startup (PLAYBACK_WAITING to PLAYBACK_PLAYING, an open one until the last sample) plus the
    time the picture stood frozen while audio played on (``frozen_picture``; 0 for a page that
    logs no frame times). Returns ``chunks`` (played), ``bitrate_kbps_mean``, ``rebuffer_s``,
    ``rebuffer_count``, ``stall_s``, ``frozen_s`` (None without frame times), ``switches``,
    ``qoe_per_chunk`` (None without chunks), ``quality_basis`` ("rendered" | "downloaded") and
    the waste of ``played_chunks``.
    """
    played, waste = played_chunks(page)
    seen = rendered_rates(page, played)
    if seen is not None:
        rates, smooth, switches = seen
        basis = "rendered"
    else:
        rates = [c["bitrate_kbps"] / 1000.0 for c in played]
        switches = sum(1 for a, b in zip(rates, rates[1:], strict=False) if a != b)
        smooth = sum(abs(b - a) for a, b in zip(rates, rates[1:], strict=False))
        basis = "downloaded"
    stalls = page["stalls"]
    end_us = page["samples"][-1]["t_us"] if page["samples"] else 0
    stall_s = sum(((s["end_us"] or end_us) - s["start_us"]) / 1e6 for s in stalls)
    frozen = frozen_picture(page)
    rebuffer_s = stall_s + (frozen[0] if frozen else 0.0)
    n = len(rates)
    return {
        "chunks": n,
        "bitrate_kbps_mean": 1000.0 * sum(rates) / n if n else None,
        "rebuffer_s": rebuffer_s,
        "rebuffer_count": len(stalls) + (frozen[1] if frozen else 0),
        "stall_s": stall_s,
        "frozen_s": frozen[0] if frozen else None,
        "switches": switches,
        "qoe_per_chunk": (sum(rates) - REBUFFER_PENALTY * rebuffer_s - smooth) / n if n else None,
        "quality_basis": basis,
        **waste,
    }


def _finite_pos(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x) and x > 0


def estimate_error(
    bins: list[tuple[list[dict[str, Any]], float, bool]],
) -> tuple[dict[str, Any], list[tuple[float | None, float | None]]]:
    """Median relative error of Nuwa's and dash.js's estimates over the same bins.

    ``bins``: per 1 s bin, (the page's samples in it, capacity in bit/s, whether the
    player was downloading). Only samples holding both estimates (``nuwa_bps`` and
    ``dashjs_bps`` finite and > 0, read at the same instant) count; a bin is scored
    when it was downloading, had capacity and holds such a sample; there each
    estimate's mean over those samples is compared with the capacity:
    |estimate − capacity| ÷ capacity. Returns ({"nuwa", "dashjs" (medians, None
    without bins), "bins"}, per-bin (nuwa_bps, dashjs_bps) means or None).
    """
    err_nuwa: list[float] = []
    err_dash: list[float] = []
    means: list[tuple[float | None, float | None]] = []
    for ss, cap_bps, downloading in bins:
        both = [s for s in ss
                if _finite_pos(s.get("nuwa_bps")) and _finite_pos(s.get("dashjs_bps"))]
        if not both:
            means.append((None, None))
            continue
        n_bps = statistics.fmean(float(s["nuwa_bps"]) for s in both)
        d_bps = statistics.fmean(float(s["dashjs_bps"]) for s in both)
        means.append((n_bps, d_bps))
        if downloading and cap_bps > 0:
            err_nuwa.append(abs(n_bps - cap_bps) / cap_bps)
            err_dash.append(abs(d_bps - cap_bps) / cap_bps)
    return {"nuwa": _pct(err_nuwa, 50), "dashjs": _pct(err_dash, 50), "bins": len(err_nuwa)}, means


def play_metrics(run_dir: Path, trace: Path, scheme: str, delay_ms: float,
                 content_dir: Path | None = None) -> dict[str, Any]:
    """Summary of a playback run directory (``emulator.log`` + sidecar, ``page.json``).

    With ``content_dir`` (the DASH content played) the summary also holds ``qoe_optimum``
    (abr_optimum.run_optimum: the offline optimum on this run's capacity, sizes and start-up)
    and ``qoe_fraction`` (qoe_per_chunk ÷ that optimum).
    """
    log_path = run_dir / "emulator.log"
    page = json.loads((run_dir / "page.json").read_text())
    t0 = int(read_sidecar(log_path)["base_timestamp_ms"])
    off = browser_to_log_offset_ms(page, t0, delay_ms)
    log = parse_log(log_path)
    recs = packet_records(log_path)
    samples = page["samples"]
    start_ms = samples[0]["t_us"] / 1000.0 - off
    end_ms = samples[-1]["t_us"] / 1000.0 - off
    # capacity per 1 s bin (log time), from the logged opportunities
    nbins = max(1, int((end_ms - start_ms) // 1000))
    cap = [0] * nbins
    for t in log.opportunities:
        b = int((t - start_ms) // 1000)
        if 0 <= b < nbins:
            cap[b] += PACKET_SIZE_BYTES
    delivered = [0] * nbins
    for r in recs:
        b = int((r.departure_ms - start_ms) // 1000)
        if 0 <= b < nbins:
            delivered[b] += r.size_bytes
    per_bin: list[list[dict[str, Any]]] = [[] for _ in range(nbins)]
    for s in samples:
        b = int((s["t_us"] / 1000.0 - off - start_ms) // 1000)
        if 0 <= b < nbins:
            per_bin[b].append(s)
    dl_cap = dl_del = 0
    series = []
    scored: list[tuple[list[dict[str, Any]], float, bool]] = []
    for b in range(nbins):
        ss = per_bin[b]
        cap_bps = cap[b] * 8.0
        downloading = bool(ss) and sum(1 for s in ss if s["downloading"]) >= 0.75 * len(ss)
        scored.append((ss, cap_bps, downloading))
        if downloading and cap_bps > 0:
            dl_cap += cap[b]
            dl_del += delivered[b]
    est_err, est_means = estimate_error(scored)
    for b in range(nbins):
        series.append(
            {
                "t_s": b,
                "capacity_bps": scored[b][1],
                "nuwa_bps": est_means[b][0],
                "dashjs_bps": est_means[b][1],
                "downloading": scored[b][2],
            }
        )
    qd = [float(r.delay_ms) for r in recs if start_ms <= r.departure_ms < end_ms]
    q = qoe(page)
    # grants obeyed: recomputed from the server's logs (bulk_metrics.grant_violations)
    gv = grant_violations(run_dir / "server")
    media_played_s = max((s["media_s"] for s in samples), default=0.0)
    opt = _optimum(log.opportunities, page, off, content_dir, q, delay_ms)
    return {
        **opt,
        "scheme": scheme,
        "trace": str(trace),
        "media_played_s": media_played_s,
        "bitrate_kbps_mean": q["bitrate_kbps_mean"],
        "rebuffer_s": q["rebuffer_s"],
        "rebuffer_count": q["rebuffer_count"],
        "stall_s": q["stall_s"],
        "frozen_s": q["frozen_s"],
        "switches": q["switches"],
        "startup_s": page.get("startup_s"),
        "dashjs_settings": page.get("dashjs_settings"),
        "qoe_per_chunk": q["qoe_per_chunk"],
        "quality_basis": q["quality_basis"],
        "chunks": q["chunks"],
        "chunks_downloaded": q["chunks_downloaded"],
        "redownloaded_chunks": q["redownloaded_chunks"],
        "redownloaded_bytes": q["redownloaded_bytes"],
        "redownloaded_lower_chunks": q["redownloaded_lower_chunks"],
        "redownloaded_lower_bytes": q["redownloaded_lower_bytes"],
        "abandoned_requests": q["abandoned_requests"],
        "abandoned_bytes": q["abandoned_bytes"],
        # segments the loader fetched ahead (attachNuwa fetch_ahead): taken by dash.js, or wasted
        "fetch_ahead": _fetch_ahead(page.get("fetch_ahead") or []),
        "queuing_delay_ms": {
            "p50": _pct(qd, 50),
            "p95": _pct(qd, 95),
            "mean": statistics.mean(qd) if qd else None,
        },
        "utilization": dl_del / dl_cap if dl_cap else None,
        "estimate_error": est_err,
        "grant_violations": gv["violations"],
        "grant_check": gv,
        "series": series,
    }


def _optimum(opportunities: list[int], page: dict[str, Any], off: float,
             content_dir: Path | None, q: dict[str, Any], delay_ms: float) -> dict[str, Any]:
    """``qoe_optimum``, ``qoe_fraction``, ``optimum_path_kbps`` (none without content/chunks)."""
    if content_dir is None or not q["chunks"] or page.get("startup_s") is None:
        return {}
    from .abr_optimum import run_optimum

    o = run_optimum(opportunities, page["started_us"] / 1000.0 - off, content_dir, q["chunks"],
                    float(page["startup_s"]), delay_ms)
    best = float(o["qoe_per_chunk"])  # type: ignore[arg-type]
    frac = q["qoe_per_chunk"] / best if q["qoe_per_chunk"] is not None and best > 0 else None
    return {"qoe_optimum": best, "qoe_fraction": frac, "optimum_path_kbps": o["path_kbps"]}


def write_report(
    run_dir: Path, summary: dict[str, Any], page: dict[str, Any], td_ms: float
) -> Path:
    """Plot capacity and estimates, queuing delay against Td, window, buffer and
    bitrate into ``report.png``; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = page["samples"]
    t0 = s[0]["t_us"] if s else 0
    nan = float("nan")

    def v(x: Any, scale: float = 1.0) -> float:
        return nan if x is None else float(x) / scale

    ts = [(x["t_us"] - t0) / 1e6 for x in s]
    fig, ax = plt.subplots(4, 1, figsize=(10, 11), sharex=True)
    ser = summary["series"]
    ax[0].step(
        [b["t_s"] for b in ser],
        [b["capacity_bps"] / 1e6 for b in ser],
        where="post",
        label="capacity (emulator)",
        color="k",
    )
    ax[0].plot(ts, [v(x["nuwa_bps"], 1e6) for x in s], label="Nuwa estimate")
    ax[0].plot(ts, [v(x["dashjs_bps"], 1e6) for x in s], label="dash.js estimate")
    ax[0].set_ylabel("Mbit/s")
    ax[0].legend(loc="upper right")
    ax[0].set_title(
        f"{summary['scheme']} on {Path(summary['trace']).name}: "
        f"QoE/chunk {summary['qoe_per_chunk'] or float('nan'):.2f}"
    )
    ax[1].plot(ts, [v(x["qd_ms"]) for x in s], label="queuing delay (controller)")
    ax[1].axhline(td_ms, color="r", linestyle="--", label="Td")
    ax[1].set_ylabel("ms")
    ax[1].legend(loc="upper right")
    ax[2].plot(ts, [v(x["window_bytes"], 1000) for x in s], label="window (grant)")
    ax[2].set_ylabel("kB")
    ax[2].legend(loc="upper right")
    ax[3].plot(ts, [v(x["buffer_s"]) for x in s], label="buffer (s)")
    ax3b = ax[3].twinx()
    ax3b.step(
        ts, [v(x["bitrate_kbps"]) for x in s], where="post", color="g", label="bitrate (kbit/s)"
    )
    ax[3].set_xlabel("time (s)")
    ax[3].legend(loc="upper left")
    ax3b.legend(loc="upper right")
    fig.tight_layout()
    out = run_dir / "report.png"
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> None:
    """CLI entry: write summary.json and report.png into the run directory, print the summary."""
    p = argparse.ArgumentParser(description="metrics of a playback run")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--trace", required=True, type=Path)
    p.add_argument("--scheme", required=True)
    p.add_argument("--delay-ms", type=float, default=25.0)
    p.add_argument("--td-ms", type=float, default=20.0)
    p.add_argument("--content-dir", type=Path, default=None,
                   help="the DASH content played: adds the offline optimum (abr_optimum.py)")
    a = p.parse_args(argv)
    summary = play_metrics(a.run_dir, a.trace, a.scheme, a.delay_ms, a.content_dir)
    page = json.loads((a.run_dir / "page.json").read_text())
    write_report(a.run_dir, summary, page, a.td_ms)
    (a.run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "series"}))


if __name__ == "__main__":
    main()
