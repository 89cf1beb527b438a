"""The segment index of a built presentation: each representation as the MPD lists it,
measured from its files (achieved bitrate, largest segment), checked against the ladder."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .mpd import init_name, mpd_tag, segment_name
from .params import DashGenError


@dataclass(frozen=True, slots=True)
class Representation:
    """One representation as generated.

    ``id`` is the MPD ``Representation@id`` (also in the segment file names);
    ``bandwidth_bps`` the nominal rate written to ``@bandwidth``;
    ``measured_bps`` the achieved mean over all media segments (init segments
    excluded): ``8 · Σ bytes / duration_s``; ``max_segment_bytes`` the largest
    media segment. ``width``/``height`` are 0 for audio.
    """

    id: str
    content_type: str
    codecs: str
    bandwidth_bps: int
    width: int
    height: int
    measured_bps: int
    segment_count: int
    max_segment_bytes: int


def collect_representations(
    root: ET.Element, out_dir: Path, params: dict[str, Any]
) -> list[Representation]:
    """Representations from the MPD, measured from the files; checks that every
    file the template implies exists."""
    duration_s = params["duration_s"]
    count = duration_s // params["segment_duration_s"]
    reps: list[Representation] = []
    for aset in root.iter(mpd_tag("AdaptationSet")):
        ctype = aset.get("contentType", "")
        for rep in aset.findall(mpd_tag("Representation")):
            rid = rep.get("id", "")
            names = [init_name(rid)] + [segment_name(rid, n) for n in range(1, count + 1)]
            missing = [n for n in names if not (out_dir / n).is_file()]
            if missing:
                raise DashGenError(f"representation {rid}: missing files {missing[:5]}")
            # Files past the template's count (ffmpeg may cut a last, tiny audio
            # segment out of the AAC priming tail) are never requested: drop them.
            extra = count + 1
            while (out_dir / segment_name(rid, extra)).is_file():
                (out_dir / segment_name(rid, extra)).unlink()
                extra += 1
            sizes = [(out_dir / n).stat().st_size for n in names[1:]]
            reps.append(
                Representation(
                    id=rid,
                    content_type=ctype,
                    codecs=rep.get("codecs", ""),
                    bandwidth_bps=int(rep.get("bandwidth", "0")),
                    width=int(rep.get("width", "0")),
                    height=int(rep.get("height", "0")),
                    measured_bps=round(8 * sum(sizes) / duration_s),
                    segment_count=count,
                    max_segment_bytes=max(sizes),
                )
            )
    return reps


def check_representations(
    reps: list[Representation], params: dict[str, Any], tolerance: float | None
) -> None:
    """Check the representations against the ladder of ``params`` (one video representation
    per rung, in order, and one audio) and, unless ``tolerance`` is None, each video
    representation's achieved mean bitrate within ``tolerance`` (a fraction) of its nominal one.

    Raises:
        DashGenError: a mismatch, naming what differs.
    """
    videos = [r for r in reps if r.content_type == "video"]
    audios = [r for r in reps if r.content_type == "audio"]
    want = [tuple(r) for r in params["ladder"]]
    got = [(r.bandwidth_bps, r.width, r.height) for r in videos]
    if got != want or len(audios) != 1:
        raise DashGenError(f"MPD does not match the ladder: got {got} + {len(audios)} audio")
    if tolerance is None:
        return
    off = [
        f"{r.id}: {r.measured_bps} bps vs nominal {r.bandwidth_bps}"
        for r in videos
        if abs(r.measured_bps - r.bandwidth_bps) > tolerance * r.bandwidth_bps
    ]
    if off:
        raise DashGenError(f"achieved bitrate off nominal by more than {tolerance:.0%}: {off}")
