"""The packager layouts of issue 19 (nuwa_lab.dashgen.layouts): ffmpeg's output in five DASH
layouts, each MPD in the shape it claims and every byte it references present. Built into the
repository's cache (``.cache/layouts``), which the content e2e test then finds ready."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nuwa_lab.dashgen.layouts import LAYOUTS, ensure_layouts, parse_sidx, top_level_boxes
from nuwa_lab.dashgen.params import DashGenError

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

REPO = Path(__file__).resolve().parents[2]
NS = {"d": "urn:mpeg:dash:schema:mpd:2011"}


def _sidx(refs: list[tuple[int, int]], timescale: int = 1000, version: int = 0) -> bytes:
    body = struct.pack(">B3xII", version, 1, timescale)
    body += struct.pack(">II", 0, 0) if version == 0 else struct.pack(">QQ", 0, 0)
    body += struct.pack(">HH", 0, len(refs))
    for size, dur in refs:
        body += struct.pack(">III", size, dur, 0x90000000)
    return struct.pack(">I4s", 8 + len(body), b"sidx") + body


def test_parse_sidx_and_boxes() -> None:
    """A v0 and a v1 sidx; boxes walked with their offsets; truncation is an error."""
    for version in (0, 1):
        s = _sidx([(1000, 2000), (1500, 2000)], version=version)
        got = parse_sidx(s)
        assert [r["size_bytes"] for r in got["references"]] == [1000, 1500]
        assert got["timescale"] == 1000 and got["size"] == len(s)
    data = struct.pack(">I4s", 16, b"ftyp") + b"x" * 8 + _sidx([(5, 1)])
    assert [(t, o) for t, o, _ in top_level_boxes(data)] == [("ftyp", 0), ("sidx", 16)]
    with pytest.raises(DashGenError):
        top_level_boxes(data[:-3])
    with pytest.raises(DashGenError):
        parse_sidx(data[:16])


def test_layouts_are_what_they_claim() -> None:
    """Each layout's MPD: its addressing, separate audio, and the files/bytes it names."""
    dirs = ensure_layouts(REPO / ".cache" / "layouts")
    assert list(dirs) == list(LAYOUTS)
    for name, d in dirs.items():
        root = ET.parse(d / "manifest.mpd").getroot()
        assert root.get("type") == "static", name
        periods = root.findall("d:Period", NS)
        assert len(periods) == (2 if name == "multiperiod" else 1), name
        kinds = [a.get("contentType") for a in periods[0].findall("d:AdaptationSet", NS)]
        assert kinds == ["video", "audio"], name
        assert len(periods[0].findall("d:AdaptationSet/d:Representation", NS)) == 3, name
        for rep in periods[0].iterfind("d:AdaptationSet/d:Representation", NS):
            st = rep.find("d:SegmentTemplate", NS)
            if name in ("number", "multiperiod"):
                assert st is not None and "$Number" in st.get("media", "")
                assert (d / st.get("media", "").replace("$RepresentationID$", rep.get("id", ""))
                        .replace("$Number%05d$", "00001")).is_file()
            elif name == "timeline":
                assert st is not None and "$Time$" in st.get("media", "")
                assert st.find("d:SegmentTimeline", NS) is not None
                assert (d / st.get("media", "").replace("$RepresentationID$", rep.get("id", ""))
                        .replace("$Time$", "0")).is_file()
            elif name == "segmentlist":
                urls = rep.findall("d:SegmentList/d:SegmentURL", NS)
                size = (d / rep.findtext("d:BaseURL", "", NS)).stat().st_size
                assert urls and int(urls[-1].get("mediaRange", "").split("-")[1]) == size - 1
            else:  # segmentbase: indexRange is the file's sidx; its references cover the rest
                sb = rep.find("d:SegmentBase", NS)
                assert sb is not None and rep.find("d:SegmentList", NS) is None
                first, last = map(int, sb.get("indexRange", "").split("-"))
                data = (d / rep.findtext("d:BaseURL", "", NS)).read_bytes()
                refs = parse_sidx(data[first:last + 1])["references"]
                assert len(refs) == 4
                assert last + 1 + sum(r["size_bytes"] for r in refs) == len(data)
