"""What to encode: the video ladder (``Rung``, ``DEFAULT_LADDER``) and the validated,
canonical parameters of a presentation (``content_params``, the cache key's input)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Bump when the output changes for the same ffmpeg arguments (e.g. MPD
#: post-processing); argument changes alter the key by themselves.
GENERATOR_VERSION = 1


@dataclass(frozen=True, slots=True)
class Rung:
    """One video representation to encode: nominal bitrate and frame size in pixels."""

    bandwidth_bps: int
    width: int
    height: int


#: Pensieve's ladder (300…4300 kbps) plus 6000 and 8000 kbps for LTE/5G;
#: 16:9 frame sizes rising with the bitrate, 180p … 720p.
DEFAULT_LADDER: tuple[Rung, ...] = (
    Rung(300_000, 320, 180),
    Rung(750_000, 480, 270),
    Rung(1_200_000, 640, 360),
    Rung(1_850_000, 768, 432),
    Rung(2_850_000, 960, 540),
    Rung(4_300_000, 1024, 576),
    Rung(6_000_000, 1152, 648),
    Rung(8_000_000, 1280, 720),
)


CTS_OFFSETS: dict[str, str] = {
    "negative": (
        "composition offsets signed (trun version 1) and lowered by the reordering delay, "
        "the edit list's shift set to 0 (cts.py, after ffmpeg): every player reads the same "
        "presentation times from the samples themselves"
    ),
    "edit_list": (
        "ffmpeg's default: offsets from 0 up and an edit list (elst media_time = the "
        "reordering delay) that shifts the presentation back; Chromium applies it, hls.js "
        "1.7 does not (its fragment times run one delay late, and on a switch to a level it "
        "had loaded before it can ask again for the position just buffered); the content "
        "before the fifty-fifth session"
    ),
}
"""How the video's B-frame reordering delay is written into the fMP4 segments (content_params's
``cts_offsets``); the default is ``negative`` (docs/CONTENT.md "Composition offsets")."""


class DashGenError(RuntimeError):
    """Content could not be generated: ffmpeg missing or failing, bad parameters,
    or output that fails the checks (missing segments, bitrate off nominal)."""


def content_params(
    duration_s: int = 120,
    *,
    ladder: Sequence[Rung] = DEFAULT_LADDER,
    segment_duration_s: int = 2,
    fps: int = 24,
    audio_bitrate_bps: int = 96_000,
    preset: str = "superfast",
    x264_threads: int = 2,
    noise_strength: int = 18,
    vbv: bool = False,
    preroll_s: int = 4,
    cts_offsets: str = "negative",
) -> dict[str, Any]:
    """Validated, canonical parameter dict (the cache key input, minus ffmpeg).

    Shapes and units: ``duration_s`` and ``segment_duration_s`` whole
    seconds, ``duration_s`` a positive multiple of ``segment_duration_s``;
    ``ladder`` 1+ rungs with unique bandwidths, even frame sizes, sorted by
    bandwidth; ``fps`` frames per second; ``audio_bitrate_bps`` bits per
    second; ``preset`` an x264 preset; ``x264_threads`` threads per encoder
    (pinned: x264 output depends on it); ``noise_strength`` 0…100
    (ffmpeg ``noise`` filter); ``vbv`` adds ``maxrate`` 1.5× / ``bufsize`` 2×
    nominal (not bit-exact with ``x264_threads > 1``); ``preroll_s`` seconds
    encoded and dropped before the kept part, a multiple of
    ``segment_duration_s`` (0 = none); ``cts_offsets`` how the video's
    B-frame reordering delay is written (:data:`CTS_OFFSETS`).

    Raises:
        DashGenError: a parameter out of range.
    """
    if segment_duration_s < 1:
        raise DashGenError(f"segment_duration_s must be >= 1, got {segment_duration_s}")
    if duration_s < segment_duration_s or duration_s % segment_duration_s:
        raise DashGenError(
            f"duration_s must be a positive multiple of segment_duration_s="
            f"{segment_duration_s}, got {duration_s}"
        )
    if not 1 <= fps <= 120:
        raise DashGenError(f"fps must be in 1..120, got {fps}")
    if not ladder:
        raise DashGenError("ladder must have at least one rung")
    rungs = list(ladder)
    for r in rungs:
        if r.bandwidth_bps <= 0 or r.width <= 0 or r.height <= 0:
            raise DashGenError(f"bad rung {r}")
        if r.width % 2 or r.height % 2:
            raise DashGenError(f"rung {r}: width and height must be even (yuv420p)")
    bws = [r.bandwidth_bps for r in rungs]
    if bws != sorted(bws) or len(set(bws)) != len(bws):
        raise DashGenError("ladder bandwidths must be unique and ascending")
    if audio_bitrate_bps < 8_000:
        raise DashGenError(f"audio_bitrate_bps too low: {audio_bitrate_bps}")
    if x264_threads < 1:
        raise DashGenError(f"x264_threads must be >= 1, got {x264_threads}")
    if preroll_s < 0 or preroll_s % segment_duration_s:
        raise DashGenError(f"preroll_s must be a multiple of segment_duration_s, got {preroll_s}")
    if not 0 <= noise_strength <= 100:
        raise DashGenError(f"noise_strength must be in 0..100, got {noise_strength}")
    if cts_offsets not in CTS_OFFSETS:
        raise DashGenError(f"cts_offsets must be one of {sorted(CTS_OFFSETS)}, got {cts_offsets!r}")
    params: dict[str, Any] = {
        "generator_version": GENERATOR_VERSION,
        "duration_s": int(duration_s),
        "segment_duration_s": int(segment_duration_s),
        "fps": int(fps),
        "ladder": [[r.bandwidth_bps, r.width, r.height] for r in rungs],
        "audio_bitrate_bps": int(audio_bitrate_bps),
        "preset": preset,
        "x264_threads": int(x264_threads),
        "noise_strength": int(noise_strength),
        "vbv": bool(vbv),
        "preroll_s": int(preroll_s),
    }
    if cts_offsets != "edit_list":
        # absent for "edit_list", so that content made before the choice existed keeps its key
        params["cts_offsets"] = cts_offsets
    return params
