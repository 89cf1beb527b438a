"""ffmpeg: finding it, its version (part of the cache key), the exact arguments of a build
(the lavfi source graph, x264/AAC settings, the DASH muxer) and running it with progress."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .mpd import INIT_TEMPLATE, MEDIA_TEMPLATE, MPD_NAME
from .params import DashGenError

_INSTALL_HINT = "install it with `sudo apt-get install ffmpeg` (or run `./nuwa setup`)"
_STDERR_TAIL_BYTES = 4000


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


def run_ffmpeg(
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
