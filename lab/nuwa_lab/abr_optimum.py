"""The offline optimum of a playback run (issue 15): the best QoE any ABR could have
reached on the capacity the run actually saw, with the real segment sizes and the run's
own start-up.

Model (the ceiling the players are measured against):

- capacity: the delivery opportunities the emulator logged during the run (one packet of
  ``PACKET_SIZE_BYTES`` each, ms), from the run's first sample on; past the log's end the
  logged opportunities repeat (mahimahi loops its trace);
- downloads are sequential, one chunk (video segment of the chosen rung plus the audio
  segment of the same position) at a time, as dash.js and Nuwa's rule request them: the
  request leaves at time t, the bytes can use the opportunities from t + one-way delay on,
  and the chunk is complete one one-way delay after its last packet left the bottleneck;
- playback starts at the run's start-up time; chunk k plays at start-up + k × segment
  duration + the stalls so far; a chunk not complete by then stalls playback until it is;
- no buffer cap (a ceiling: a real player stops at its buffer target);
- QoE: Pensieve's linear QoE (Mao et al., SIGCOMM 2017, §5.1, QoE_lin), exactly as
  play_metrics.qoe: Σ bitrate (Mbit/s, the rung's nominal bitrate) − 4.3 × stall (s) −
  Σ |Δ bitrate|, divided by the number of chunks.

The dynamic programme is exact: after chunk k a state is (rung, completion time F ms,
stall so far S ms, QoE so far Q); a state is dropped only when another with the same rung
has F' ≤ F, S' ≥ S and Q' ≥ Q (earlier completion and later deadlines never hurt the
future: downloads end no later when they start earlier, stalls are max(0, F − deadline)).
``brute_force_qoe`` enumerates every rung sequence and is what the tests check it against.
"""

from __future__ import annotations

import bisect
import itertools
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .emulator.trace import PACKET_SIZE_BYTES

REBUFFER_PENALTY = 4.3  # Pensieve's linear QoE, per second of stall (same as play_metrics)
RUN_RESOLUTION_MS = 100.0
"""Time resolution of the DP on a whole run, ms (``_pareto``): exact runs took minutes."""


@dataclass(frozen=True)
class Ladder:
    """Video rungs and real segment sizes.

    ``bitrates_kbps[r]``: nominal bitrate of rung r (ascending), kbit/s;
    ``video_bytes[r][k]``: bytes of rung r's segment k (0-based media position);
    ``audio_bytes[k]``: bytes of the audio segment k (0 when there is no audio);
    ``segment_s``: segment duration, s.
    """

    bitrates_kbps: tuple[float, ...]
    video_bytes: tuple[tuple[int, ...], ...]
    audio_bytes: tuple[int, ...]
    segment_s: float

    @property
    def chunks(self) -> int:
        return min(len(v) for v in self.video_bytes)


def load_ladder(content_dir: Path) -> Ladder:
    """Read ``manifest.mpd`` and the segment files of a dashgen content directory.

    Segments are ``seg-<RepresentationID>-<Number %05d>.m4s`` from startNumber 1 (the
    SegmentTemplate dashgen writes). Raises FileNotFoundError / ValueError on other content.
    """
    root = ET.parse(content_dir / "manifest.mpd").getroot()
    ns = {"m": "urn:mpeg:dash:schema:mpd:2011"}
    video: list[tuple[float, str]] = []
    audio: list[str] = []
    seg_s = None
    for aset in root.iterfind(".//m:AdaptationSet", ns):
        kind = aset.get("contentType", "")
        for rep in aset.iterfind("m:Representation", ns):
            tpl = rep.find("m:SegmentTemplate", ns)
            if tpl is None:
                raise ValueError("load_ladder: a Representation without SegmentTemplate")
            seg_s = int(tpl.get("duration", "0")) / int(tpl.get("timescale", "1"))
            if kind == "video":
                video.append((float(rep.get("bandwidth", "0")) / 1000.0, rep.get("id", "")))
            elif kind == "audio":
                audio.append(rep.get("id", ""))
    if not video or not seg_s:
        raise ValueError(f"load_ladder: no video representation in {content_dir}")

    def sizes(rid: str) -> tuple[int, ...]:
        files = sorted(content_dir.glob(f"seg-{rid}-*.m4s"),
                       key=lambda p: int(re.findall(r"(\d+)\.m4s$", p.name)[0]))
        return tuple(p.stat().st_size for p in files)

    video.sort()
    vb = tuple(sizes(rid) for _, rid in video)
    n = min(len(v) for v in vb)
    ab = sizes(audio[0]) if audio else tuple(0 for _ in range(n))
    return Ladder(tuple(b for b, _ in video), vb, ab, seg_s)


class Capacity:
    """Delivery opportunities (ms, relative to the run's start), looped past their end."""

    def __init__(self, opportunities_ms: list[int], packet_bytes: int = PACKET_SIZE_BYTES) -> None:
        if not opportunities_ms:
            raise ValueError("Capacity: no delivery opportunity")
        self.opps = sorted(opportunities_ms)
        self.period_ms = self.opps[-1] + 1
        self.packet_bytes = packet_bytes

    def _nth_at_or_after(self, t_ms: float, n: int) -> int:
        """Time (ms) of the n-th opportunity (n ≥ 1) at or after ``t_ms``."""
        loops, rem = divmod(max(t_ms, 0.0), self.period_ms)
        i = bisect.bisect_left(self.opps, rem) + n - 1
        per = len(self.opps)
        loops += i // per
        return int(loops * self.period_ms + self.opps[i % per])

    def finish_ms(self, start_ms: float, size_bytes: int) -> int:
        """When the last packet of ``size_bytes`` leaves the bottleneck, sent from ``start_ms``."""
        n = max(1, -(-size_bytes // self.packet_bytes))
        return self._nth_at_or_after(start_ms, n)


def _chunk_bytes(ladder: Ladder, r: int, k: int) -> int:
    return ladder.video_bytes[r][k] + ladder.audio_bytes[k]


def _step(cap: Capacity, ladder: Ladder, r: int, k: int, f_ms: float, s_ms: float,
          startup_ms: float, delay_ms: float) -> tuple[float, float, float]:
    """Download chunk k at rung r after a chunk completed at ``f_ms``: (F, stall ms, S)."""
    done = cap.finish_ms(f_ms + delay_ms, _chunk_bytes(ladder, r, k)) + delay_ms
    deadline = startup_ms + k * ladder.segment_s * 1000.0 + s_ms
    stall = max(0.0, done - deadline)
    return done, stall, s_ms + stall


def _chunk_qoe(ladder: Ladder, prev: int | None, r: int, stall_ms: float) -> float:
    q = ladder.bitrates_kbps[r] / 1000.0 - REBUFFER_PENALTY * stall_ms / 1000.0
    if prev is not None:
        q -= abs(ladder.bitrates_kbps[r] - ladder.bitrates_kbps[prev]) / 1000.0
    return q


def optimum_qoe(cap: Capacity, ladder: Ladder, n_chunks: int, startup_s: float,
                delay_ms: float, resolution_ms: float = 0.0) -> tuple[float, list[int]]:
    """Best QoE per chunk over chunks 0..n_chunks−1 and the rung sequence reaching it.

    ``startup_s``: when playback starts, s after the first request may leave (the run's
    start-up); ``delay_ms``: one-way delay each way. Exact DP (module docstring) with
    ``resolution_ms`` 0; a coarser resolution keeps fewer states (``_pareto``).
    Raises ValueError when n_chunks is not in 1..ladder.chunks.
    """
    if not 1 <= n_chunks <= ladder.chunks:
        raise ValueError(f"optimum_qoe: n_chunks must be 1..{ladder.chunks}, got {n_chunks}")
    startup_ms = startup_s * 1000.0
    # state: rung -> list of (F, S, Q, path-id); paths kept in a parent table
    parents: list[tuple[int, int]] = []  # (parent path id, rung)
    states: dict[int | None, list[tuple[float, float, float, int]]] = {None: [(0.0, 0.0, 0.0, -1)]}
    for k in range(n_chunks):
        nxt: dict[int | None, list[tuple[float, float, float, int]]] = {}
        for prev, sts in states.items():
            for f, s, q, pid in sts:
                for r in range(len(ladder.bitrates_kbps)):
                    done, stall, s2 = _step(cap, ladder, r, k, f, s, startup_ms, delay_ms)
                    parents.append((pid, r))
                    nxt.setdefault(r, []).append(
                        (done, s2, q + _chunk_qoe(ladder, prev, r, stall), len(parents) - 1))
        states = {r: _pareto(v, resolution_ms) for r, v in nxt.items()}
    best = max((st for v in states.values() for st in v), key=lambda st: st[2])
    path = []
    pid = best[3]
    while pid >= 0:
        pid, r = parents[pid]
        path.append(r)
    path.reverse()
    return best[2] / n_chunks, path


def _pareto(sts: list[tuple[float, float, float, int]],
            resolution_ms: float = 0.0) -> list[tuple[float, float, float, int]]:
    """States worth keeping after one chunk, for one rung.

    ``resolution_ms`` 0 (exact): the states not dominated by another (F smaller or equal, S
    and Q larger or equal). ``resolution_ms`` > 0: one state per bucket of completion time
    (the best Q, then the largest S), and a bucket's state is dropped when an earlier bucket's
    best has Q and S at least as large. What is kept is always a real rung sequence, so the
    DP's result is then a lower bound on the exact optimum (tests bound the gap).
    """
    if resolution_ms > 0:
        best: dict[float, tuple[float, float, float, int]] = {}
        for st in sts:
            k = st[0] // resolution_ms
            o = best.get(k)
            if o is None or (st[2], st[1]) > (o[2], o[1]):
                best[k] = st
        kept_b: list[tuple[float, float, float, int]] = []
        lead: tuple[float, float, float, int] | None = None
        for k in sorted(best):
            st = best[k]
            if lead is not None and lead[2] >= st[2] and lead[1] >= st[1]:
                continue
            kept_b.append(st)
            if lead is None or st[2] > lead[2]:
                lead = st
        return kept_b
    sts.sort(key=lambda x: (x[0], -x[1], -x[2]))
    kept: list[tuple[float, float, float, int]] = []
    for st in sts:
        if not any(o[1] >= st[1] and o[2] >= st[2] for o in kept):
            kept.append(st)
    return kept


def brute_force_qoe(cap: Capacity, ladder: Ladder, n_chunks: int, startup_s: float,
                    delay_ms: float) -> tuple[float, list[int]]:
    """Every rung sequence simulated (len(ladder) ** n_chunks): the check of optimum_qoe."""
    best: tuple[float, list[int]] | None = None
    for seq in itertools.product(range(len(ladder.bitrates_kbps)), repeat=n_chunks):
        f = s = q = 0.0
        prev = None
        for k, r in enumerate(seq):
            f, stall, s = _step(cap, ladder, r, k, f, s, startup_s * 1000.0, delay_ms)
            q += _chunk_qoe(ladder, prev, r, stall)
            prev = r
        if best is None or q / n_chunks > best[0] + 1e-12:
            best = (q / n_chunks, list(seq))
    assert best is not None
    return best


def qoe_of_sequence(cap: Capacity, ladder: Ladder, seq: list[int], startup_s: float,
                    delay_ms: float) -> float:
    """QoE per chunk of one rung sequence under the model (for tests and the report)."""
    f = s = q = 0.0
    prev = None
    for k, r in enumerate(seq):
        f, stall, s = _step(cap, ladder, r, k, f, s, startup_s * 1000.0, delay_ms)
        q += _chunk_qoe(ladder, prev, r, stall)
        prev = r
    return q / len(seq)


def run_optimum(opportunities_log_ms: list[int], t0_log_ms: float, content_dir: Path,
                n_chunks: int, startup_s: float, delay_ms: float,
                resolution_ms: float = RUN_RESOLUTION_MS) -> dict[str, object]:
    """The optimum of one run: ``opportunities_log_ms`` from the emulator's log (log time),
    ``t0_log_ms`` the run's start in log time (the page's start, from which start-up counts).

    Returns ``{"qoe_per_chunk", "path_kbps", "chunks", "startup_s"}``. Raises ValueError
    without opportunities after t0 or with n_chunks out of range.
    """
    rel = [int(t - t0_log_ms) for t in opportunities_log_ms if t >= t0_log_ms]
    ladder = load_ladder(content_dir)
    q, path = optimum_qoe(Capacity(rel), ladder, min(n_chunks, ladder.chunks), startup_s, delay_ms,
                          resolution_ms)
    return {"qoe_per_chunk": q, "path_kbps": [ladder.bitrates_kbps[r] for r in path],
            "chunks": len(path), "startup_s": startup_s}
