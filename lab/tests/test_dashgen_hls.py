"""HLS playlists over the DASH segments (dashgen/hls.py, issue 19 item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nuwa_lab.dashgen import ContentInfo, Representation
from nuwa_lab.dashgen.hls import MASTER_NAME, media_playlist, write_hls

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)


def _rep(rid: str, bps: int, kind: str = "video", n: int = 3) -> Representation:
    w, h = (320, 180) if kind == "video" else (0, 0)
    codecs = "avc1.64000d" if kind == "video" else "mp4a.40.2"
    return Representation(rid, kind, codecs, bps, w, h, bps, n, 1000)


def _info(tmp: Path, n: int = 3) -> ContentInfo:
    reps = [_rep("1", 750_000, n=n), _rep("0", 300_000, n=n)]
    audio = _rep("2", 96_000, "audio", n)
    return ContentInfo("k", tmp, tmp / "manifest.mpd", reps, audio, 2, 5, 24, 0.0, True)


def test_playlists_list_every_segment_once_with_the_init_map(tmp_path: Path) -> None:
    master = write_hls(_info(tmp_path))
    assert master == tmp_path / MASTER_NAME
    m = master.read_text()
    # Variants in ascending bandwidth, the MPD's nominal @bandwidth, one audio group.
    assert m.index("BANDWIDTH=300000") < m.index("BANDWIDTH=750000")
    assert 'CODECS="avc1.64000d,mp4a.40.2"' in m and "RESOLUTION=320x180" in m
    assert '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud"' in m and 'URI="hls-2.m3u8"' in m
    v = (tmp_path / "hls-1.m3u8").read_text().splitlines()
    assert '#EXT-X-MAP:URI="init-1.m4s"' in v
    segs = [x for x in v if x.endswith(".m4s") and not x.startswith("#")]
    assert segs == ["seg-1-00001.m4s", "seg-1-00002.m4s", "seg-1-00003.m4s"]
    # 5 s in 2 s segments: the last one is cut at the presentation's end.
    extinf = [x for x in v if x.startswith("#EXTINF")]
    assert extinf == ["#EXTINF:2.000,", "#EXTINF:2.000,", "#EXTINF:1.000,"]
    assert v[-1] == "#EXT-X-ENDLIST" and "#EXT-X-PLAYLIST-TYPE:VOD" in v


def test_rewrite_is_byte_identical_and_leaves_dash_files_alone(tmp_path: Path) -> None:
    (tmp_path / "content.json").write_text(json.dumps({"key": "k"}))
    write_hls(_info(tmp_path))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    write_hls(_info(tmp_path))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert json.loads((tmp_path / "content.json").read_text()) == {"key": "k"}


def test_too_few_segments_is_refused() -> None:
    with pytest.raises(ValueError, match="do not cover"):
        media_playlist(_rep("0", 300_000, n=2), 2, 5)
