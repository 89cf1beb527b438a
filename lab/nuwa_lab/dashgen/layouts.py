"""DASH VOD content in the layouts other packagers produce (issue 19 item 2), for
``./nuwa play --content DIR`` and its tests: tiny presentations (a few seconds of ``testsrc2``,
two video renditions, separate AAC audio) packaged by ffmpeg's DASH muxer, cached like the
ladder (``content.py``).

Layouts (one directory each under ``<cache_root>/<key>/``, each holding ``manifest.mpd``):

- ``number``: SegmentTemplate with ``$Number$`` and ``@duration`` (our own layout).
- ``timeline``: SegmentTemplate with ``$Time$`` and a SegmentTimeline (``-use_timeline 1``;
  the media template is rewritten from ffmpeg's ``$Number$`` to ``$Time$``, which ffmpeg 5.1
  cannot write itself; the files are renamed to match).
- ``segmentlist``: one file per representation, SegmentList with a ``mediaRange`` per segment
  (``-single_file 1``, as ffmpeg writes it).
- ``segmentbase``: one file per representation, SegmentBase with ``indexRange`` pointing at
  the file's global ``sidx`` (``-single_file 1 -global_sidx 1``; ffmpeg 5.1 writes a
  SegmentList beside it, replaced here by the SegmentBase the DASH-IF on-demand profile uses):
  the player learns the segments' byte ranges and real sizes from the sidx.
- ``multiperiod``: two Periods of ``period_s`` each over the ``number`` files (the same media
  twice, as an ad break would splice it), SegmentTemplate ``$Number$`` in each.

Every layout has audio in its own AdaptationSet.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .boxes import iter_boxes
from .content import _locked
from .ffmpeg import ffmpeg_version, find_ffmpeg, run_ffmpeg
from .params import DashGenError

#: The layouts :func:`ensure_layouts` builds, in that order.
LAYOUTS: tuple[str, ...] = ("number", "timeline", "segmentlist", "segmentbase", "multiperiod")
#: Bump when the post-processing changes for the same ffmpeg arguments.
LAYOUTS_VERSION = 1
MPD_NS = "urn:mpeg:dash:schema:mpd:2011"
_NS = {"d": MPD_NS}


def layout_params(duration_s: int = 8, period_s: int = 4) -> dict[str, Any]:
    """The canonical parameters of the layout set (the cache key's input).

    Args:
        duration_s: media length of each layout, s; a multiple of the 2 s segment and of
            ``period_s``.
        period_s: length of each of the two periods of ``multiperiod``, s
            (2·period_s ≤ duration_s).

    Raises:
        DashGenError: durations that do not fit (not positive, not multiples of 2 s).
    """
    if not (duration_s > 0 and duration_s % 2 == 0 and period_s > 0 and period_s % 2 == 0
            and 2 * period_s <= duration_s):
        raise DashGenError(f"layouts: duration_s {duration_s} and period_s {period_s} must be "
                           "positive multiples of 2 with 2·period_s ≤ duration_s")
    return {
        "version": LAYOUTS_VERSION,
        "duration_s": duration_s,
        "period_s": period_s,
        "segment_s": 2,
        "fps": 24,
        # (bit/s, width, height): two renditions, low resolution (issue 19: keep encodes tiny).
        "video": [[250_000, 320, 180], [700_000, 640, 360]],
        "audio_bps": 64_000,
    }


def _encode_args(p: dict[str, Any], dash: list[str]) -> list[str]:
    """ffmpeg arguments encoding the test source with the DASH muxer options ``dash``."""
    d = p["duration_s"]
    (b0, w0, h0), (b1, w1, h1) = p["video"]
    gop = p["fps"] * p["segment_s"]
    return [
        "-hide_banner", "-nostdin", "-loglevel", "error", "-nostats", "-progress", "pipe:1",
        "-f", "lavfi", "-i", f"testsrc2=s={w1}x{h1}:r={p['fps']}:d={d}",
        "-f", "lavfi", "-i", f"sine=f=440:beep_factor=4:r=48000:d={d}",
        "-filter_complex", f"[0:v]format=yuv420p,split=2[hi][x];[x]scale={w0}:{h0}[lo]",
        "-map", "[lo]", "-map", "[hi]", "-map", "1:a",
        "-b:v:0", str(b0), "-b:v:1", str(b1),
        "-c:v", "libx264", "-preset", "ultrafast", "-profile:v", "high", "-threads", "1",
        "-g", str(gop), "-keyint_min", str(gop), "-sc_threshold", "0",
        "-force_key_frames", f"expr:eq(mod(n,{gop}),0)",
        "-c:a", "aac", "-b:a", str(p["audio_bps"]), "-ar", "48000", "-ac", "2",
        "-f", "dash", "-seg_duration", str(p["segment_s"]),
        "-adaptation_sets", "id=0,streams=v id=1,streams=a",
        *dash, "manifest.mpd",
    ]


#: Each ffmpeg-made layout's DASH muxer options (``multiperiod`` is made from ``number``).
_MUXER: dict[str, list[str]] = {
    "number": ["-use_template", "1", "-use_timeline", "0"],
    "timeline": ["-use_template", "1", "-use_timeline", "1"],
    "segmentlist": ["-single_file", "1"],
    "segmentbase": ["-single_file", "1", "-global_sidx", "1"],
}


def layouts_key(params: dict[str, Any], version_text: str) -> str:
    """Cache key: 16 hex digits of SHA-256 over the parameters, every ffmpeg argument and
    the ffmpeg version."""
    blob = json.dumps({"params": params, "ffmpeg": version_text,
                       "args": {k: _encode_args(params, v) for k, v in _MUXER.items()}},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def top_level_boxes(data: bytes) -> list[tuple[str, int, int]]:
    """ISO BMFF top-level boxes of ``data`` as (type, offset, size) (ISO/IEC 14496-12 §4.2:
    32-bit size, or 1 then a 64-bit size; 0 = to the end; :func:`.boxes.iter_boxes`).

    Raises:
        DashGenError: a box that runs past the end or is shorter than its header.
    """
    try:
        return [(typ.decode("latin-1"), off, box_end - off)
                for typ, off, _payload, box_end in iter_boxes(data)]
    except ValueError as exc:
        raise DashGenError(str(exc)) from exc


def parse_sidx(box: bytes) -> dict[str, Any]:
    """A ``sidx`` box (ISO/IEC 14496-12 §8.16.3): timescale, earliest presentation time,
    first offset and each reference's (referenced_size bytes, subsegment_duration ticks).

    Raises:
        DashGenError: not a sidx box, or truncated.
    """
    try:
        size, typ = struct.unpack(">I4s", box[:8])
        if typ != b"sidx":
            raise DashGenError(f"not a sidx box: {typ!r}")
        version = box[8]
        timescale = struct.unpack(">I", box[16:20])[0]
        if version == 0:
            ept, first_offset = struct.unpack(">II", box[20:28])
            pos = 28
        else:
            ept, first_offset = struct.unpack(">QQ", box[20:36])
            pos = 36
        count = struct.unpack(">H", box[pos + 2:pos + 4])[0]
        pos += 4
        refs = []
        for _ in range(count):
            word, duration, _sap = struct.unpack(">III", box[pos:pos + 12])
            refs.append({"size_bytes": word & 0x7FFFFFFF, "duration": duration,
                         "is_index": bool(word >> 31)})
            pos += 12
    except struct.error as exc:
        raise DashGenError(f"truncated sidx box: {exc}") from exc
    return {"timescale": timescale, "earliest_presentation_time": ept,
            "first_offset": first_offset, "references": refs, "size": size}


def _ns_tag(name: str) -> str:
    return f"{{{MPD_NS}}}{name}"


def _write(root: ET.Element, path: Path) -> None:
    ET.register_namespace("", MPD_NS)
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    ET.register_namespace("xsi", "http://www.w3.org/2001/XMLSchema-instance")
    ET.indent(root)
    path.write_bytes(b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root))


def _to_time_template(d: Path) -> None:
    """``timeline``: ``$Number%05d$`` → ``$Time$`` in the media template, files renamed to the
    start time each SegmentTimeline entry gives them (ISO/IEC 23009-1 §5.3.9.4.4, §5.3.9.6)."""
    root = ET.parse(d / "manifest.mpd").getroot()
    for rep in root.iterfind(".//d:Representation", _NS):
        st = rep.find("d:SegmentTemplate", _NS)
        if st is None or st.find("d:SegmentTimeline", _NS) is None:
            raise DashGenError("timeline: ffmpeg wrote no SegmentTimeline")
        media = st.get("media", "")
        number = int(st.get("startNumber", "1"))
        t = 0
        times: list[int] = []
        for s in st.iterfind("d:SegmentTimeline/d:S", _NS):
            t = int(s.get("t", t))
            for _ in range(int(s.get("r", "0")) + 1):
                times.append(t)
                t += int(s.get("d", "0"))
        for i, start in enumerate(times):
            old = re.sub(r"\$Number%05d\$", f"{number + i:05d}", media)
            old = old.replace("$RepresentationID$", rep.get("id", ""))
            new = media.replace("$Number%05d$", str(start)).replace("$RepresentationID$",
                                                                    rep.get("id", ""))
            os.rename(d / old, d / new)
        st.set("media", media.replace("$Number%05d$", "$Time$"))
    _write(root, d / "manifest.mpd")


def _to_segment_base(d: Path) -> None:
    """``segmentbase``: each representation's SegmentList → SegmentBase with ``indexRange`` at
    its file's global sidx and ``Initialization`` = the bytes before it (ftyp + moov)."""
    root = ET.parse(d / "manifest.mpd").getroot()
    for rep in root.iterfind(".//d:Representation", _NS):
        base = rep.find("d:BaseURL", _NS)
        sl = rep.find("d:SegmentList", _NS)
        if base is None or sl is None or not base.text:
            raise DashGenError("segmentbase: ffmpeg wrote no BaseURL/SegmentList")
        data = (d / base.text).read_bytes()
        boxes = top_level_boxes(data)
        sidx = next(((o, s) for t, o, s in boxes if t == "sidx"), None)
        if sidx is None:
            raise DashGenError(f"segmentbase: no sidx in {base.text}")
        off, size = sidx
        refs = parse_sidx(data[off:off + size])["references"]
        media_bytes = sum(r["size_bytes"] for r in refs)
        if off + size + media_bytes != len(data):
            raise DashGenError(f"segmentbase: sidx of {base.text} covers {media_bytes} bytes, "
                               f"file has {len(data) - off - size} after it")
        rep.remove(sl)
        sb = ET.SubElement(rep, _ns_tag("SegmentBase"),
                           {"indexRange": f"{off}-{off + size - 1}", "indexRangeExact": "true"})
        ET.SubElement(sb, _ns_tag("Initialization"), {"range": f"0-{off - 1}"})
    _write(root, d / "manifest.mpd")


def _to_multiperiod(src: Path, d: Path, period_s: int) -> None:
    """``multiperiod``: ``number``'s files, and an MPD of two Periods of ``period_s`` each,
    both starting at the media's first segment."""
    for f in src.iterdir():
        if f.name != "manifest.mpd" and f.is_file():
            os.link(f, d / f.name)
    root = ET.parse(src / "manifest.mpd").getroot()
    period = root.find("d:Period", _NS)
    if period is None:
        raise DashGenError("multiperiod: no Period in number's MPD")
    root.remove(period)
    for i in range(2):
        p = ET.fromstring(ET.tostring(period))
        p.set("id", str(i))
        p.set("start", f"PT{i * period_s}.0S")
        p.set("duration", f"PT{period_s}.0S")
        root.append(p)
    root.set("mediaPresentationDuration", f"PT{2 * period_s}.0S")
    _write(root, d / "manifest.mpd")


def ensure_layouts(cache_root: Path, duration_s: int = 8, period_s: int = 4,
                   ffmpeg: str | None = None) -> dict[str, Path]:
    """Build (or find) every layout of :data:`LAYOUTS`; returns layout → its directory.

    Built once per key under ``<cache_root>/<key>/`` (atomically, under a lock, like
    ``ensure_content``); about 1 s of ffmpeg per layout here.

    Raises:
        DashGenError: ffmpeg missing or failing, or its output not in the expected shape.
    """
    params = layout_params(duration_s, period_s)
    exe = find_ffmpeg(ffmpeg)
    key = layouts_key(params, ffmpeg_version(exe))
    cache_root = Path(cache_root)
    final = cache_root / key
    done = final / "layouts.json"
    if not done.is_file():
        cache_root.mkdir(parents=True, exist_ok=True)
        with _locked(cache_root / f".lock-{key}"):
            if not done.is_file():
                for stale in cache_root.glob(f".tmp-{key}-*"):
                    shutil.rmtree(stale, ignore_errors=True)
                if final.exists():
                    shutil.rmtree(final)
                tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=cache_root))
                try:
                    for name, muxer in _MUXER.items():
                        (tmp / name).mkdir()
                        run_ffmpeg(exe, _encode_args(params, muxer), tmp / name, duration_s, None)
                        (tmp / name / "ffmpeg.log").unlink(missing_ok=True)
                    _to_time_template(tmp / "timeline")
                    _to_segment_base(tmp / "segmentbase")
                    (tmp / "multiperiod").mkdir()
                    _to_multiperiod(tmp / "number", tmp / "multiperiod", period_s)
                    (tmp / "layouts.json").write_text(json.dumps(
                        {"key": key, "params": params, "layouts": list(LAYOUTS)}, indent=2) + "\n")
                    for p in [tmp, *tmp.iterdir()]:
                        if p.is_dir():
                            os.chmod(p, 0o755)
                    os.rename(tmp, final)
                except BaseException:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise
    return {name: final / name for name in LAYOUTS}


def main(argv: list[str] | None = None) -> int:
    """``python -m nuwa_lab.dashgen.layouts --out CACHE_ROOT``: prints ``{layout: dir}`` as JSON."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m nuwa_lab.dashgen.layouts", description=__doc__)
    ap.add_argument("--out", type=Path, required=True, help="cache root")
    ap.add_argument("--duration", type=int, default=8, help="media seconds per layout")
    ap.add_argument("--period", type=int, default=4, help="seconds per period of multiperiod")
    a = ap.parse_args(argv)
    try:
        dirs = ensure_layouts(a.out, a.duration, a.period)
    except DashGenError as exc:
        print(f"layouts: {exc}", file=__import__("sys").stderr)
        return 1
    print(json.dumps({k: str(v.resolve()) for k, v in dirs.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
