"""Deterministic, cached DASH VOD content made with ffmpeg.

One call, :func:`ensure_content`, returns a directory holding a static DASH
presentation (``manifest.mpd`` plus init and media segments) that dash.js
plays in Chromium through MSE:

* video: H.264 (libx264, ``yuv420p``, High profile), one adaptation set with
  the Pensieve ladder 300/750/1200/1850/2850/4300 kbps plus 6000 and
  8000 kbps for LTE/5G (:data:`DEFAULT_LADDER`, 320x180 … 1280x720);
* audio: AAC-LC stereo 48 kHz, one representation in its own adaptation set;
* 2 s segments: fixed GOP of exactly one segment (``-g = -keyint_min =
  fps·segment_duration_s``, scene-cut off), so every video segment starts
  with an IDR frame and segments are aligned across representations;
* ``SegmentTemplate`` with ``$Number$`` (``duration``, no timeline), separate
  init files (``init-<id>.m4s``) and media files
  (``seg-<id>-<number, 5 digits, from 1>.m4s``), all flat in the content
  directory, with relative URLs in the MPD.

The source is synthetic but costly to encode: ``testsrc2`` (moving shapes and
a running clock) with temporal uniform noise from a fixed seed, and a flat
panel that sweeps across the frame, so the coding cost, and with it each
segment's size, varies over time (about 0.8…1.3× nominal per segment).
Audio is a beeping 440 Hz tone plus pink noise (fixed seed).

Rate control is one-pass ABR (``-b:v`` = nominal bitrate), no VBV by
default. Two measured reasons: (1) x264 with frame threads and VBV
(``-maxrate``/``-bufsize``) is not bit-exact run to run, while plain ABR is,
and one thread per encoder is about 1.5× slower here; (2) ABR's start-up
overshoot (first segment of the 8 Mbps rung at 1.7× nominal) is removed
instead by a pre-roll: ``preroll_s`` seconds are encoded first and dropped
with a bitstream filter, so rate control has settled when the kept part
starts (its clock shows 0). ``vbv=True`` adds ``maxrate = 1.5×`` and
``bufsize = 2×`` nominal; pair it with ``x264_threads=1`` if you need
bit-exact output. The achieved mean of every video representation is checked
against the nominal one (``bitrate_tolerance``, ±25 % by default).

Determinism: the same parameters and the same ffmpeg give byte-identical
files (checked by the tests). Encoder and filter threads are pinned, seeds
are fixed, ffmpeg runs with relative output paths, and the static MPD that
ffmpeg 5.1 writes holds nothing time-dependent (no ``availabilityStartTime``
or ``publishTime``; they would be removed if present). The MPD is rewritten
only to drop ``bitstreamSwitching="true"`` (our init segments differ per
representation), the empty ``ServiceDescription`` and ffmpeg's whitespace,
and to add a title. ``build.json`` (build wall time) is the one file that
differs between builds.

Cache: ``<cache_root>/<key>/`` where ``key`` is a hash of every parameter,
the generator version, the exact ffmpeg arguments and the full
``ffmpeg -version`` text. The directory is
built under ``<cache_root>/.tmp-<key>-…`` and renamed into place when
complete, so a killed build never leaves a half cache; a lock file
(``<cache_root>/.lock-<key>``) keeps two processes from encoding the same
content at once.

CLI: ``python -m nuwa_lab.dashgen --out CACHE_ROOT [--duration 120]
[--json]``.

Modules: ``params`` (the ladder and the validated parameters), ``ffmpeg``
(finding it, the exact arguments, running it), ``mpd`` (file names, templates,
the MPD's normalisation), ``segments`` (each representation measured from its
files and checked), ``content`` (the cache: ``ensure_content``,
``load_content``, ``ContentInfo``), ``cli`` (``main``). The package re-exports
their public names.
"""

from __future__ import annotations

from .cli import main
from .content import (
    BUILD_NAME,
    INFO_NAME,
    ContentInfo,
    content_key,
    ensure_content,
    load_content,
)
from .ffmpeg import ffmpeg_args, ffmpeg_version, find_ffmpeg, run_ffmpeg
from .mpd import (
    INIT_TEMPLATE,
    MEDIA_TEMPLATE,
    MPD_NAME,
    MPD_NS,
    init_name,
    mpd_tag,
    rewrite_mpd,
    segment_name,
)
from .params import DEFAULT_LADDER, GENERATOR_VERSION, DashGenError, Rung, content_params
from .segments import Representation, check_representations, collect_representations

__all__ = [
    "BUILD_NAME", "DEFAULT_LADDER", "GENERATOR_VERSION", "INFO_NAME", "INIT_TEMPLATE",
    "MEDIA_TEMPLATE", "MPD_NAME", "MPD_NS", "ContentInfo", "DashGenError", "Representation",
    "Rung", "check_representations", "collect_representations", "content_key", "content_params",
    "ensure_content", "ffmpeg_args", "ffmpeg_version", "find_ffmpeg", "init_name", "load_content",
    "main", "mpd_tag", "rewrite_mpd", "run_ffmpeg", "segment_name",
]
