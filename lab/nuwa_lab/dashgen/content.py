"""The content cache: ``ensure_content`` finds or builds a presentation under
``<cache_root>/<key>/`` (key: every parameter, the ffmpeg arguments and version), atomically and
under a lock; ``load_content`` reads a built directory; ``ContentInfo`` describes one."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .cts import rebase_representation
from .ffmpeg import ffmpeg_args, ffmpeg_version, find_ffmpeg, run_ffmpeg
from .mpd import INIT_TEMPLATE, MEDIA_TEMPLATE, MPD_NAME, init_name, rewrite_mpd, segment_name
from .params import DEFAULT_LADDER, DashGenError, Rung, content_params
from .segments import Representation, check_representations, collect_representations

INFO_NAME = "content.json"
BUILD_NAME = "build.json"


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
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with`` body."""
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
    cts_offsets: str = "negative",
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
        cts_offsets: how the B-frame reordering delay is written
            (:data:`.params.CTS_OFFSETS`: ``negative``, the default, or ``edit_list``).
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
        cts_offsets=cts_offsets,
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
            run_ffmpeg(exe, args, tmp, params["duration_s"] + params["preroll_s"], progress)
            build_s = round(time.monotonic() - t0, 3)
            root = rewrite_mpd(tmp / MPD_NAME)
            reps = collect_representations(root, tmp, params)
            if params.get("cts_offsets", "edit_list") == "negative":
                for r in reps:  # cts.py: video only; sizes do not change
                    try:
                        rebase_representation(tmp / init_name(r.id), [
                            tmp / segment_name(r.id, n) for n in range(1, r.segment_count + 1)])
                    except ValueError as exc:
                        raise DashGenError(
                            f"representation {r.id}: composition offsets not rewritable: {exc}"
                        ) from exc
            check_representations(reps, params, bitrate_tolerance)
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
