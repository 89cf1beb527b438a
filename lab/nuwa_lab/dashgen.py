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
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: Bump when the output changes for the same ffmpeg arguments (e.g. MPD
#: post-processing); argument changes alter the key by themselves.
GENERATOR_VERSION = 1

MPD_NAME = "manifest.mpd"
INFO_NAME = "content.json"
BUILD_NAME = "build.json"
INIT_TEMPLATE = "init-$RepresentationID$.m4s"
MEDIA_TEMPLATE = "seg-$RepresentationID$-$Number%05d$.m4s"

MPD_NS = "urn:mpeg:dash:schema:mpd:2011"
_XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
_XLINK_NS = "http://www.w3.org/1999/xlink"

_INSTALL_HINT = "install it with `sudo apt-get install ffmpeg` (or run `./nuwa setup`)"
_STDERR_TAIL_BYTES = 4000


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


@dataclass(slots=True)
class ContentInfo:
    """A generated presentation.

    Attributes:
        key: cache key (hex), also the directory name under the cache root.
        dir: the content directory, ``<cache_root>/<key>``.
        mpd_path: ``dir / "manifest.mpd"``. Segment URLs in the MPD are
            relative to it (same directory).
        representations: the video representations, ascending bandwidth.
        audio: the audio representation.
        segment_duration_s: nominal media segment duration (every segment of
            a presentation whose duration is a multiple of it).
        duration_s: presentation duration.
        fps: video frame rate (frames per second, integer).
        build_s: wall time of the ffmpeg build that made the directory
            (recorded at build time; also reported for cached results).
        cached: True when this call found the directory already built.
        params: the canonical parameters (:func:`content_params`).
    """

    key: str
    dir: Path
    mpd_path: Path
    representations: list[Representation]
    audio: Representation
    segment_duration_s: int
    duration_s: int
    fps: int
    build_s: float
    cached: bool
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (paths as strings)."""
        return {
            "key": self.key,
            "dir": str(self.dir),
            "mpd_path": str(self.mpd_path),
            "representations": [asdict(r) for r in self.representations],
            "audio": asdict(self.audio),
            "segment_duration_s": self.segment_duration_s,
            "duration_s": self.duration_s,
            "fps": self.fps,
            "build_s": self.build_s,
            "cached": self.cached,
            "params": self.params,
        }


class DashGenError(RuntimeError):
    """Content could not be generated: ffmpeg missing or failing, bad parameters,
    or output that fails the checks (missing segments, bitrate off nominal)."""


# ---------------------------------------------------------------------------
# ffmpeg discovery


def find_ffmpeg(ffmpeg: str | None = None) -> str:
    """Path of the ffmpeg executable.

    Args:
        ffmpeg: explicit path or name; default ``$NUWA_FFMPEG`` or ``ffmpeg``
            on ``PATH``.

    Raises:
        DashGenError: not found (the message says how to install it).
    """
    name = ffmpeg or os.environ.get("NUWA_FFMPEG") or "ffmpeg"
    found = shutil.which(name)
    if found is None:
        raise DashGenError(f"ffmpeg not found (looked for {name!r}); {_INSTALL_HINT}")
    return found


def ffmpeg_version(ffmpeg: str) -> str:
    """Full ``ffmpeg -version`` text (version, build configuration, library
    versions); part of the cache key.

    Raises:
        DashGenError: the executable cannot be run.
    """
    try:
        out = subprocess.run(
            [ffmpeg, "-hide_banner", "-version"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise DashGenError(f"cannot run {ffmpeg} -version: {exc}; {_INSTALL_HINT}") from exc
    return out.stdout.strip()


# ---------------------------------------------------------------------------
# parameters, key, command


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
    ``segment_duration_s`` (0 = none).

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
    return {
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


def content_key(params: dict[str, Any], ffmpeg_version_text: str) -> str:
    """Cache key: first 16 hex digits of SHA-256 over the canonical JSON of
    ``params``, the exact ffmpeg arguments they produce (so any change to the
    filter graph or encoder options makes a new key) and the ffmpeg version
    text."""
    blob = json.dumps(
        {"params": params, "args": ffmpeg_args(params), "ffmpeg": ffmpeg_version_text},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _filtergraph(params: dict[str, Any]) -> str:
    """The lavfi graph: source at the largest rung's size, one scaled output
    ``[v<i>]`` per rung and ``[aud]``."""
    d = params["duration_s"]
    fps = params["fps"]
    rungs = params["ladder"]
    src_w = max(r[1] for r in rungs)
    src_h = max(r[2] for r in rungs)
    n = len(rungs)
    pre = params["preroll_s"]
    # Background: moving shapes + clock, temporal uniform noise (fixed seed).
    # A pre-roll (clock 0…pre) runs first so that x264's one-pass ABR has
    # settled when the kept part (clock restarting at 0) begins; the encoded
    # pre-roll is dropped by a bitstream filter (see ffmpeg_args).
    src = f"testsrc2=s={src_w}x{src_h}:r={fps}"
    parts = [
        (
            f"{src}:d={pre}[pre];{src}:d={d}[main];[pre][main]concat=n=2:v=1:a=0,"
            if pre
            else f"{src}:d={d},"
        )
        + f"format=yuv420p,noise=all_seed=4242:alls={params['noise_strength']}:allf=t+u[bg]",
        # A flat panel, half the frame wide and 3/4 high (the clock stays
        # visible), sweeping in and out every 37 s from off-screen at the
        # kept start: 0…37 % of the picture becomes cheap, so segment sizes vary.
        f"color=c=0x2050a0:s={src_w // 2}x{(src_h * 3 // 4) & ~1}:r={fps}:d={d + pre}[panel]",
        f"[bg][panel]overlay=x='-w+(W+w)*(0.5-0.5*cos(2*PI*(t-{pre})/37))':y=H-h:eval=frame"
        + (f",split={n}" + "".join(f"[s{i}]" for i in range(n)) if n > 1 else "[s0]"),
    ]
    for i, (_, w, h) in enumerate(rungs):
        if (w, h) == (src_w, src_h):
            parts.append(f"[s{i}]null[v{i}]")
        else:
            parts.append(f"[s{i}]scale={w}:{h}:flags=bicubic[v{i}]")
    # Audio: a beeping 440 Hz tone plus quiet pink noise (fixed seed), stereo.
    parts.append(
        f"sine=f=440:beep_factor=4:r=48000:d={d}[tone];"
        f"anoisesrc=c=pink:r=48000:a=0.05:seed=7:d={d}[hiss];"
        "[tone][hiss]amix=inputs=2:normalize=0,aformat=channel_layouts=stereo[aud]"
    )
    return ";".join(parts)


def ffmpeg_args(params: dict[str, Any]) -> list[str]:
    """ffmpeg arguments (without the executable) that write the presentation
    into the current directory as ``manifest.mpd``; paths are relative, so
    the bytes do not depend on where the build runs."""
    fps = params["fps"]
    gop = fps * params["segment_duration_s"]
    args = [
        "-hide_banner",
        "-nostdin",
        "-loglevel",
        "error",
        "-nostats",
        "-progress",
        "pipe:1",
        "-filter_complex_threads",
        "2",
        "-filter_complex",
        _filtergraph(params),
    ]
    for i, (bw, _, _) in enumerate(params["ladder"]):
        args += ["-map", f"[v{i}]", f"-b:v:{i}", str(bw)]
        if params["vbv"]:
            args += [f"-maxrate:v:{i}", str(bw * 3 // 2), f"-bufsize:v:{i}", str(bw * 2)]
    args += ["-map", "[aud]"]
    if params["preroll_s"]:
        # Drop the encoded pre-roll: its frames are exactly the first
        # fps·preroll_s packets in decode order (closed GOPs, IDR at the cut);
        # then shift what is left back to start at 0. No commas in the
        # expressions: the argument is a comma-separated bitstream-filter list.
        pre_frames = params["preroll_s"] * fps
        args += [
            "-bsf:v",
            f"noise=drop=not(floor(n/{pre_frames})),setts=pts=PTS-STARTPTS:dts=DTS-STARTPTS",
        ]
    args += [
        "-c:v",
        "libx264",
        "-preset",
        params["preset"],
        "-profile:v",
        "high",
        "-pix_fmt",
        "yuv420p",
        "-threads",
        str(params["x264_threads"]),
        "-g",
        str(gop),
        "-keyint_min",
        str(gop),
        "-sc_threshold",
        "0",
        "-x264-params",
        "scenecut=0:open-gop=0",
        "-force_key_frames",
        f"expr:eq(mod(n,{gop}),0)",
        "-c:a",
        "aac",
        "-b:a",
        str(params["audio_bitrate_bps"]),
        "-ar",
        "48000",
        "-ac",
        "2",
        "-f",
        "dash",
        "-seg_duration",
        str(params["segment_duration_s"]),
        "-use_template",
        "1",
        "-use_timeline",
        "0",
        "-init_seg_name",
        INIT_TEMPLATE,
        "-media_seg_name",
        MEDIA_TEMPLATE,
        "-adaptation_sets",
        "id=0,streams=v id=1,streams=a",
        MPD_NAME,
    ]
    return args


# ---------------------------------------------------------------------------
# build


def _run_ffmpeg(
    ffmpeg: str,
    args: list[str],
    cwd: Path,
    duration_s: int,
    progress: Callable[[float, float], None] | None,
) -> None:
    """Run ffmpeg in ``cwd``; stderr goes to a file whose tail is reported on
    failure. ``progress`` gets (encoded time, ``duration_s``), in seconds."""
    log_path = cwd / "ffmpeg.log"
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.Popen(
                [ffmpeg, *args],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        except OSError as exc:
            raise DashGenError(f"cannot start {ffmpeg}: {exc}; {_INSTALL_HINT}") from exc
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if progress is None:
                    continue
                if line.startswith("out_time_us="):
                    with contextlib.suppress(ValueError):
                        done_s = int(line.split("=", 1)[1]) / 1e6
                        progress(min(float(duration_s), done_s), float(duration_s))
                elif line.strip() == "progress=end":
                    progress(float(duration_s), float(duration_s))
            rc = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    if rc != 0:
        tail = log_path.read_bytes()[-_STDERR_TAIL_BYTES:].decode("utf-8", "replace")
        raise DashGenError(f"ffmpeg failed (exit {rc}); stderr tail:\n{tail.strip()}")
    log_path.unlink()


def _qn(tag: str) -> str:
    return f"{{{MPD_NS}}}{tag}"


def _rewrite_mpd(mpd_path: Path) -> ET.Element:
    """Normalise ffmpeg's MPD in place (see module docstring); returns its root."""
    ET.register_namespace("", MPD_NS)
    ET.register_namespace("xsi", _XSI_NS)
    ET.register_namespace("xlink", _XLINK_NS)
    tree = ET.parse(mpd_path)
    root = tree.getroot()
    if root.get("type") != "static":
        raise DashGenError(f"ffmpeg wrote a non-static MPD (type={root.get('type')!r})")
    for attr in ("availabilityStartTime", "publishTime"):
        root.attrib.pop(attr, None)
    for sd in root.findall(_qn("ServiceDescription")):
        if len(sd) == 0:
            root.remove(sd)
    for pi in root.findall(_qn("ProgramInformation")):
        if len(pi) == 0:
            ET.SubElement(pi, _qn("Title")).text = "Nuwa synthetic test content"
    for aset in root.iter(_qn("AdaptationSet")):
        aset.attrib.pop("bitstreamSwitching", None)
    for el in root.iter():
        if len(el) == 0 and el.text is not None and not el.text.strip():
            el.text = None  # ffmpeg's "<SegmentTemplate ...>\n\t\t</SegmentTemplate>"
    ET.indent(tree, space="  ")
    text = ET.tostring(root, encoding="unicode", short_empty_elements=True)
    mpd_path.write_text('<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n", encoding="utf-8")
    return root


def segment_name(rep_id: str, number: int) -> str:
    """Media segment file name for ``$RepresentationID$`` and ``$Number$`` (1-based)."""
    return f"seg-{rep_id}-{number:05d}.m4s"


def init_name(rep_id: str) -> str:
    """Init segment file name for a representation id."""
    return f"init-{rep_id}.m4s"


def _collect(root: ET.Element, out_dir: Path, params: dict[str, Any]) -> list[Representation]:
    """Representations from the MPD, measured from the files; checks that every
    file the template implies exists."""
    duration_s = params["duration_s"]
    count = duration_s // params["segment_duration_s"]
    reps: list[Representation] = []
    for aset in root.iter(_qn("AdaptationSet")):
        ctype = aset.get("contentType", "")
        for rep in aset.findall(_qn("Representation")):
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


def _check(reps: list[Representation], params: dict[str, Any], tolerance: float | None) -> None:
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


def _info_from_json(
    data: dict[str, Any], content_dir: Path, build_s: float, cached: bool
) -> ContentInfo:
    reps = [Representation(**r) for r in data["representations"]]
    return ContentInfo(
        key=data["key"],
        dir=content_dir,
        mpd_path=content_dir / MPD_NAME,
        representations=[r for r in reps if r.content_type == "video"],
        audio=next(r for r in reps if r.content_type == "audio"),
        segment_duration_s=data["params"]["segment_duration_s"],
        duration_s=data["params"]["duration_s"],
        fps=data["params"]["fps"],
        build_s=build_s,
        cached=cached,
        params=data["params"],
    )


def load_content(content_dir: Path, cached: bool = True) -> ContentInfo:
    """Read a built content directory (``content.json`` and ``build.json``).

    Raises:
        DashGenError: not a complete content directory.
    """
    try:
        data = json.loads((content_dir / INFO_NAME).read_text())
    except (OSError, ValueError) as exc:
        raise DashGenError(f"{content_dir} is not a built content directory: {exc}") from exc
    try:
        build_s = float(json.loads((content_dir / BUILD_NAME).read_text())["build_s"])
    except (OSError, ValueError, KeyError):
        build_s = 0.0
    return _info_from_json(data, content_dir, build_s, cached)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_content(
    cache_root: Path,
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
    bitrate_tolerance: float | None = 0.25,
    ffmpeg: str | None = None,
    progress: Callable[[float, float], None] | None = None,
) -> ContentInfo:
    """Return the DASH presentation for these parameters, building it if needed.

    Looks for ``<cache_root>/<key>/`` (key: :func:`content_key` of the
    parameters and ``ffmpeg -version``); if absent, encodes it with one
    ffmpeg process (all representations through a ``split`` filter), checks
    it and renames it into place atomically. A cached result returns at once
    (it costs one ``ffmpeg -version`` call).

    Args:
        cache_root: cache directory (created if missing).
        duration_s: presentation length in seconds; a multiple of
            ``segment_duration_s``. 120 for real runs; 8–12 for tests.
        ladder: video rungs, ascending bandwidth (default :data:`DEFAULT_LADDER`).
        segment_duration_s: media segment (and GOP) duration in seconds.
        fps: frame rate; the GOP is ``fps · segment_duration_s`` frames.
        audio_bitrate_bps: AAC bitrate.
        preset: x264 preset (``superfast`` by default: about 2× cheaper than
            ``veryfast`` on this content, same achieved bitrates).
        x264_threads: threads per x264 encoder (part of the key).
        noise_strength: temporal noise strength, 0…100.
        vbv: cap the rate with VBV (``maxrate`` 1.5×, ``bufsize`` 2× nominal);
            not bit-exact run to run unless ``x264_threads=1``.
        preroll_s: seconds encoded first and dropped, so ABR has settled
            when the presentation starts; a multiple of ``segment_duration_s``.
        bitrate_tolerance: fail a fresh build when a video representation's
            achieved mean bitrate is off its nominal one by more than this
            fraction; None skips the check.
        ffmpeg: ffmpeg executable (default ``$NUWA_FFMPEG`` or ``ffmpeg``).
        progress: called while building with (encoded_s, total_s), the
            encoded time and its final value ``preroll_s + duration_s``.

    Returns:
        ContentInfo; ``cached`` tells whether this call found it built.

    Raises:
        DashGenError: ffmpeg missing (message says ``apt-get install
            ffmpeg``), ffmpeg failing (message holds its stderr tail), bad
            parameters, or output failing the checks (no cache is left).
    """
    params = content_params(
        duration_s,
        ladder=ladder,
        segment_duration_s=segment_duration_s,
        fps=fps,
        audio_bitrate_bps=audio_bitrate_bps,
        preset=preset,
        x264_threads=x264_threads,
        noise_strength=noise_strength,
        vbv=vbv,
        preroll_s=preroll_s,
    )
    exe = find_ffmpeg(ffmpeg)
    version = ffmpeg_version(exe)
    key = content_key(params, version)
    cache_root = Path(cache_root)
    final = cache_root / key
    if (final / INFO_NAME).is_file():
        return load_content(final, cached=True)

    cache_root.mkdir(parents=True, exist_ok=True)
    with _locked(cache_root / f".lock-{key}"):
        if (final / INFO_NAME).is_file():  # built by another process meanwhile
            return load_content(final, cached=True)
        # We hold the lock: any temp dir for this key is left over from a killed run.
        for stale in cache_root.glob(f".tmp-{key}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if final.exists():  # no content.json: not ours / incomplete; never serve it
            shutil.rmtree(final)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=cache_root))
        try:
            t0 = time.monotonic()
            args = ffmpeg_args(params)
            _run_ffmpeg(exe, args, tmp, params["duration_s"] + params["preroll_s"], progress)
            build_s = round(time.monotonic() - t0, 3)
            root = _rewrite_mpd(tmp / MPD_NAME)
            reps = _collect(root, tmp, params)
            _check(reps, params, bitrate_tolerance)
            data = {
                "key": key,
                "params": params,
                "mpd": MPD_NAME,
                "init_template": INIT_TEMPLATE,
                "media_template": MEDIA_TEMPLATE,
                "representations": [asdict(r) for r in reps],
                "ffmpeg_args": args,
            }
            (tmp / INFO_NAME).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
            (tmp / BUILD_NAME).write_text(
                json.dumps({"build_s": build_s, "ffmpeg_version": version}, indent=2) + "\n"
            )
            os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return _info_from_json(data, final, build_s, cached=False)


# ---------------------------------------------------------------------------
# CLI


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints the content dir and MPD path (or JSON). Returns
    the exit status: 0 ok, 1 generation failed, 2 usage."""
    ap = argparse.ArgumentParser(
        prog="python -m nuwa_lab.dashgen",
        description="Build (or find in the cache) the synthetic DASH VOD ladder.",
    )
    ap.add_argument("--out", required=True, type=Path, help="cache root directory")
    ap.add_argument("--duration", type=int, default=120, help="seconds (multiple of 2)")
    ap.add_argument("--json", action="store_true", help="print ContentInfo as JSON")
    ap.add_argument("--ffmpeg", default=None, help="ffmpeg executable")
    ap.add_argument("--preset", default="superfast", help="x264 preset")
    ap.add_argument(
        "--ladder-bps",
        default=None,
        help="comma-separated subset of the default ladder's bandwidths, e.g. 300000,1200000",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ns = ap.parse_args(argv)

    ladder: tuple[Rung, ...] = DEFAULT_LADDER
    if ns.ladder_bps:
        by_bps = {r.bandwidth_bps: r for r in DEFAULT_LADDER}
        try:
            ladder = tuple(by_bps[int(b)] for b in ns.ladder_bps.split(","))
        except (KeyError, ValueError):
            ap.error(f"--ladder-bps: pick from {sorted(by_bps)}")

    last = [-10.0]

    def report(done_s: float, total_s: float) -> None:
        if done_s - last[0] >= 10 or done_s >= total_s:
            last[0] = done_s
            print(f"dashgen: encoded {done_s:.0f}/{total_s:.0f} s", file=sys.stderr, flush=True)

    try:
        info = ensure_content(
            ns.out,
            ns.duration,
            ladder=ladder,
            preset=ns.preset,
            ffmpeg=ns.ffmpeg,
            progress=None if ns.quiet else report,
        )
    except DashGenError as exc:
        print(f"dashgen: error: {exc}", file=sys.stderr)
        return 1
    if ns.json:
        print(json.dumps(info.to_json(), indent=2))
    else:
        state = "cached" if info.cached else f"built in {info.build_s:.1f} s"
        print(f"content dir: {info.dir}  ({state})")
        print(f"mpd: {info.mpd_path}")
        for r in [*info.representations, info.audio]:
            size = f"{r.width}x{r.height}" if r.width else "audio"
            print(
                f"  rep {r.id:>2} {size:>9} {r.codecs:<12} nominal {r.bandwidth_bps / 1e3:7.0f} "
                f"kbps  measured {r.measured_bps / 1e3:7.0f} kbps"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
