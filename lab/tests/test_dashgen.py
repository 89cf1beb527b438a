"""Tests for the DASH VOD generator (short content: 8 s, three rungs).

Two real builds (about 3–6 s each on two cores); skipped if ffmpeg is absent.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nuwa_lab import dashgen
from nuwa_lab.dashgen import (
    DEFAULT_LADDER,
    ContentInfo,
    DashGenError,
    content_key,
    content_params,
    ensure_content,
    ffmpeg_version,
    find_ffmpeg,
)
from nuwa_lab.dashgen.cts import video_edit_delay

NS = {"m": dashgen.MPD_NS}
DURATION_S = 8
LADDER = (DEFAULT_LADDER[0], DEFAULT_LADDER[2], DEFAULT_LADDER[4])  # 300k, 1.2M, 2.85M
HAVE_FFMPEG = shutil.which("ffmpeg") is not None
needs_ffmpeg = pytest.mark.skipif(not HAVE_FFMPEG, reason="ffmpeg not installed")


def _key() -> str:
    params = content_params(DURATION_S, ladder=LADDER)
    return content_key(params, ffmpeg_version(find_ffmpeg()))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> ContentInfo:
    if not HAVE_FFMPEG:
        pytest.skip("ffmpeg not installed")
    root = tmp_path_factory.mktemp("dash-a")
    return ensure_content(root, DURATION_S, ladder=LADDER)


def _expand(template: str, rep_id: str, number: int | None = None) -> str:
    out = template.replace("$RepresentationID$", rep_id)

    def num(m: re.Match[str]) -> str:
        assert number is not None
        width = m.group(1)
        return f"{number:0{int(width)}d}" if width else str(number)

    return re.sub(r"\$Number(?:%0(\d+)d)?\$", num, out)


@needs_ffmpeg
def test_mpd_structure(built: ContentInfo) -> None:
    assert not built.cached
    assert built.mpd_path == built.dir / "manifest.mpd"
    root = ET.parse(built.mpd_path).getroot()
    assert root.tag == f"{{{dashgen.MPD_NS}}}MPD"
    assert root.get("type") == "static"
    assert root.get("mediaPresentationDuration") == f"PT{DURATION_S}.0S"
    assert root.get("availabilityStartTime") is None
    asets = root.findall("m:Period/m:AdaptationSet", NS)
    assert [a.get("contentType") for a in asets] == ["video", "audio"]
    for a in asets:
        assert a.get("bitstreamSwitching") is None
        assert a.get("segmentAlignment") == "true"
        assert a.get("startWithSAP") == "1"

    video = asets[0].findall("m:Representation", NS)
    assert [
        (int(r.get("bandwidth", 0)), int(r.get("width", 0)), int(r.get("height", 0))) for r in video
    ] == [(r.bandwidth_bps, r.width, r.height) for r in LADDER]
    for r in video:
        assert r.get("mimeType") == "video/mp4"
        assert re.fullmatch(r"avc1\.64[0-9a-f]{4}", r.get("codecs", "")), r.get("codecs")
    (audio,) = asets[1].findall("m:Representation", NS)
    assert audio.get("mimeType") == "audio/mp4"
    assert audio.get("codecs") == "mp4a.40.2"
    assert audio.get("bandwidth") == "96000"

    for rep in root.iter(f"{{{dashgen.MPD_NS}}}Representation"):
        (tmpl,) = rep.findall("m:SegmentTemplate", NS)
        assert int(tmpl.get("duration", 0)) / int(tmpl.get("timescale", 1)) == 2.0
        assert tmpl.get("startNumber") == "1"
        assert "$Number" in tmpl.get("media", "")
        assert tmpl.find("m:SegmentTimeline", NS) is None

    # ContentInfo mirrors the MPD.
    assert [r.id for r in built.representations] == [r.get("id") for r in video]
    assert built.audio.id == audio.get("id")
    assert built.segment_duration_s == 2 and built.duration_s == DURATION_S


@needs_ffmpeg
def test_every_templated_file_exists_and_nothing_else(built: ContentInfo) -> None:
    root = ET.parse(built.mpd_path).getroot()
    count = DURATION_S // 2
    expected = {"manifest.mpd", "content.json", "build.json"}
    for rep in root.iter(f"{{{dashgen.MPD_NS}}}Representation"):
        rid = rep.get("id", "")
        tmpl = rep.find("m:SegmentTemplate", NS)
        assert tmpl is not None
        names = [_expand(tmpl.get("initialization", ""), rid)]
        names += [_expand(tmpl.get("media", ""), rid, n) for n in range(1, count + 1)]
        for name in names:
            assert (built.dir / name).stat().st_size > 0, name
        expected.update(names)
    assert {p.name for p in built.dir.iterdir()} == expected


@needs_ffmpeg
@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe not installed")
def test_video_segments_are_2s_and_start_with_keyframe(built: ContentInfo, tmp_path: Path) -> None:
    fps = built.fps
    for rep in built.representations:
        init = (built.dir / dashgen.init_name(rep.id)).read_bytes()
        for n in range(1, rep.segment_count + 1):
            probe_in = tmp_path / "x.mp4"
            probe_in.write_bytes(init + (built.dir / dashgen.segment_name(rep.id, n)).read_bytes())
            out = subprocess.run(
                ["ffprobe", "-v", "error", "-show_entries", "packet=pts_time,flags"]
                + ["-of", "csv=p=0", str(probe_in)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            packets = [line.split(",") for line in out]
            assert len(packets) == 2 * fps, (rep.id, n)
            assert packets[0][1].startswith("K"), (rep.id, n)
            assert sum(p[1].startswith("K") for p in packets) == 1
            # the keyframe presents at the nominal start in the samples themselves (tfdt, and a
            # composition offset of 0 after cts.py's rebase), as Chromium and hls.js read them;
            # ffprobe's own PTS adds back the B-frames' negative offsets (its dts_shift)
            seg = (built.dir / dashgen.segment_name(rep.id, n)).read_bytes()
            decode_start, first_cto, timescale = _first_sample_times(init, seg)
            assert decode_start / timescale == pytest.approx(2.0 * (n - 1), abs=1e-3)
            assert first_cto == 0, (rep.id, n)
        assert video_edit_delay(init) == 0  # no edit list shifting the presentation


def _first_sample_times(init: bytes, seg: bytes) -> tuple[int, int, int]:
    """(tfdt, the first sample's composition offset, the video timescale) of a segment."""
    import struct

    from nuwa_lab.dashgen.boxes import iter_boxes
    from nuwa_lab.dashgen.cts import composition_offsets

    into = frozenset({b"moov", b"trak", b"mdia", b"moof", b"traf"})
    timescale = next(struct.unpack_from(">I", init, p + 12)[0]
                     for t, _s, p, _e in iter_boxes(init, into=into) if t == b"mdhd")
    buf = bytearray(seg)
    tfdt = None
    for typ, _s, p, _e in iter_boxes(buf, into=into):
        if typ == b"tfdt":
            tfdt = int.from_bytes(buf[p + 4 : p + (12 if buf[p] == 1 else 8)], "big")
    cto = composition_offsets(seg)[0]
    assert tfdt is not None and cto is not None
    return tfdt, cto, timescale


@needs_ffmpeg
def test_achieved_bitrates_near_nominal(built: ContentInfo) -> None:
    for rep in built.representations:
        total_bytes = sum(
            (built.dir / dashgen.segment_name(rep.id, n)).stat().st_size
            for n in range(1, rep.segment_count + 1)
        )
        measured_bps = 8 * total_bytes / DURATION_S
        assert rep.measured_bps == round(measured_bps)
        assert abs(measured_bps - rep.bandwidth_bps) <= 0.25 * rep.bandwidth_bps, rep
    assert abs(built.audio.measured_bps - 96_000) <= 0.25 * 96_000


@needs_ffmpeg
def test_second_call_is_cached(built: ContentInfo) -> None:
    t0 = time.monotonic()
    again = ensure_content(built.dir.parent, DURATION_S, ladder=LADDER)
    assert time.monotonic() - t0 < 2.0
    assert again.cached
    assert again.key == built.key == built.dir.name == _key()
    assert again.representations == built.representations
    assert again.build_s == built.build_s


@needs_ffmpeg
def test_cli_json_uses_cache(built: ContentInfo, capsys: pytest.CaptureFixture[str]) -> None:
    rc = dashgen.main(
        ["--out", str(built.dir.parent), "--duration", str(DURATION_S), "--json"]
        + ["--ladder-bps", ",".join(str(r.bandwidth_bps) for r in LADDER)]
    )
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cached"] is True
    assert data["mpd_path"] == str(built.mpd_path)
    assert [r["bandwidth_bps"] for r in data["representations"]] == [
        r.bandwidth_bps for r in LADDER
    ]


@needs_ffmpeg
def test_deterministic_and_recovers_from_killed_run(
    built: ContentInfo, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("dash-b")
    # Leftovers of a killed build: a temp dir and a key dir without content.json.
    stale_tmp = root / f".tmp-{built.key}-dead"
    stale_tmp.mkdir()
    (stale_tmp / "seg-0-00001.m4s").write_bytes(b"junk")
    (root / built.key).mkdir()
    (root / built.key / "manifest.mpd").write_text("half")

    other = ensure_content(root, DURATION_S, ladder=LADDER)
    assert not other.cached
    assert not stale_tmp.exists()
    assert other.key == built.key
    assert not list(root.glob(".tmp-*"))

    names = sorted(p.name for p in built.dir.iterdir() if p.name != "build.json")
    assert names == sorted(p.name for p in other.dir.iterdir() if p.name != "build.json")
    for name in names:  # x264 with pinned threads is bit-exact run to run
        assert (built.dir / name).read_bytes() == (other.dir / name).read_bytes(), name


def test_ffmpeg_missing_says_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(DashGenError, match="apt-get install ffmpeg"):
        ensure_content(tmp_path, DURATION_S, ffmpeg="/nonexistent/ffmpeg")


def test_bad_parameters(tmp_path: Path) -> None:
    with pytest.raises(DashGenError, match="multiple"):
        content_params(7)
    with pytest.raises(DashGenError, match="even"):
        content_params(8, ladder=(dashgen.Rung(300_000, 321, 180),))
    with pytest.raises(DashGenError, match="ascending"):
        content_params(8, ladder=(DEFAULT_LADDER[1], DEFAULT_LADDER[0]))


@needs_ffmpeg
def test_ffmpeg_failure_reports_stderr_and_leaves_no_cache(tmp_path: Path) -> None:
    with pytest.raises(DashGenError, match="stderr tail") as err:
        ensure_content(tmp_path, DURATION_S, ladder=LADDER[:1], preset="no-such-preset")
    assert "no-such-preset" in str(err.value) or "preset" in str(err.value).lower()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".lock-")] == []
