"""``./nuwa serve --content DIR`` serves packagers' one-file layouts byte-exactly (issue 19
items 1-2), without a browser: the real CLI (the ``./nuwa`` wrapper, then the server) on a
SegmentBase + sidx layout and a SegmentList byte-range layout made by ffmpeg
(``nuwa_lab.dashgen.layouts``), asked over WebTransport by aioquic's client
(``server/tests/wt_harness.py``) for every range a DASH player asks for: each
Initialization range, the sidx ``indexRange``, every media segment (SegmentList
``mediaRange``; for SegmentBase the sidx's references, ISO/IEC 14496-12 §8.16.3: the first
segment starts ``first_offset`` bytes after the sidx box, each then ``referenced_size``
bytes long), an open-ended ``bytes=first-`` range (dash.js's, sent as ``last`` = 2^53 − 1,
clamped to the end: docs/PROTOCOL.md "Requests"), the whole file, and a range past the end
(416). Each answer: status 206 (200 for the whole file), ``range`` and ``total_bytes`` in the
HEAD, and the body equal to the file's bytes there. A few seconds (files of 8 s of video)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from aioquic.asyncio.client import connect
from wt_harness import WtClient, client_configuration, run

from nuwa_lab.dashgen.layouts import ensure_layouts, parse_sidx

REPO = Path(__file__).resolve().parents[2]
NS = {"d": "urn:mpeg:dash:schema:mpd:2011"}
#: ``last`` of an open-ended range as the player's loader sends it (Number.MAX_SAFE_INTEGER).
OPEN_RANGE_LAST = 2**53 - 1


def _range(text: str | None) -> tuple[int, int]:
    """An MPD byte range ``"first-last"`` (inclusive)."""
    assert text, "missing byte range"
    first, last = text.split("-")
    return int(first), int(last)


def expected_ranges(layout: str, d: Path) -> list[tuple[str, int, int, str]]:
    """Every (path, first, last, what) a DASH player asks for in ``d``'s MPD, from the MPD
    and, for SegmentBase, from the sidx box in the file (read from disk here)."""
    out: list[tuple[str, int, int, str]] = []
    root = ET.parse(d / "manifest.mpd").getroot()
    for rep in root.iterfind(".//d:Representation", NS):
        base = rep.findtext("d:BaseURL", namespaces=NS)
        assert base, f"{layout}: representation {rep.get('id')} has no BaseURL"
        data = (d / base).read_bytes()
        if layout == "segmentbase":
            sb = rep.find("d:SegmentBase", NS)
            assert sb is not None
            init = sb.find("d:Initialization", NS)
            assert init is not None
            out.append((base, *_range(init.get("range")), "init"))
            i0, i1 = _range(sb.get("indexRange"))
            out.append((base, i0, i1, "sidx"))
            sidx = parse_sidx(data[i0:i1 + 1])
            pos = i1 + 1 + sidx["first_offset"]
            for n, ref in enumerate(sidx["references"]):
                assert not ref["is_index"]
                out.append((base, pos, pos + ref["size_bytes"] - 1, f"segment {n}"))
                pos += ref["size_bytes"]
            assert pos == len(data), f"{layout}/{base}: the sidx covers {pos} of {len(data)} bytes"
        else:
            sl = rep.find("d:SegmentList", NS)
            assert sl is not None
            init = sl.find("d:Initialization", NS)
            assert init is not None
            out.append((base, *_range(init.get("range")), "init"))
            for n, su in enumerate(sl.iterfind("d:SegmentURL", NS)):
                out.append((base, *_range(su.get("mediaRange")), f"segment {n}"))
    return out


def start_serve(content: Path, tmp_path: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """``./nuwa serve --content DIR`` on free ports (cubic: ranges, not grants, are tested
    here), with a stand-in page so no site build runs; returns the process and its ready line."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<!doctype html><title>page</title>")
    proc = subprocess.Popen(
        [str(REPO / "nuwa"), "serve", "--content", str(content), "--host", "127.0.0.1",
         "--port", "0", "--cc", "cubic", "--site", str(site),
         "--state-dir", str(tmp_path / "state"), "--log-dir", str(tmp_path / "logs")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{"):
            ready = json.loads(line)
            if ready.get("event") == "ready":
                return proc, ready
    proc.wait(10)
    raise AssertionError(f"./nuwa serve exited {proc.returncode} without a ready line: "
                         f"{proc.stderr.read()[-2000:] if proc.stderr else ''}")


async def fetch_all(port: int,
                    requests: list[dict[str, Any]]) -> list[tuple[dict[str, Any], bytes]]:
    """Open one session and send every request at once (as a player's parallel loads);
    each answer's HEAD (or ERROR) payload and body."""
    async with connect("127.0.0.1", port, configuration=client_configuration(),
                       create_protocol=WtClient) as client:
        assert isinstance(client, WtClient)
        assert await client.open_session() == 200
        sids = [client.request({"v": 1, "op": "get", **r}) for r in requests]
        out = []
        for sid in sids:
            res = await client.wait(sid, timeout_s=20)
            assert res.ended and not res.reset
            head = res.head if res.frames[0].header.frame_type.name == "HEAD" else res.error
            out.append((head, res.body))
        return out


@pytest.mark.parametrize("layout", ["segmentbase", "segmentlist"])
def test_serve_content_serves_one_file_layouts_byte_exactly(layout: str, tmp_path: Path) -> None:
    d = ensure_layouts(REPO / ".cache" / "layouts")[layout]
    ranges = expected_ranges(layout, d)
    assert sum(1 for r in ranges if r[3].startswith("segment")) >= 4 * 3  # 4 segments × 3 reps
    files = sorted({p for p, *_ in ranges})
    data = {p: (d / p).read_bytes() for p in files}
    first_seg = next(r for r in ranges if r[3] == "segment 1")
    requests = (
        [{"path": f"/{p}", "range": [a, b]} for p, a, b, _ in ranges]
        + [{"path": f"/{first_seg[0]}", "range": [first_seg[1], OPEN_RANGE_LAST]}]  # bytes=first-
        + [{"path": f"/{p}"} for p in files]  # whole files
        + [{"path": f"/{files[0]}", "range": [len(data[files[0]]), len(data[files[0]]) + 10]}]
        + [{"path": "/manifest.mpd"}]
    )
    proc, ready = start_serve(d, tmp_path)
    try:
        answers = run(fetch_all(int(ready["port"]), requests))
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err[-2000:]

    k = 0
    for p, a, b, what in ranges:
        head, body = answers[k]
        k += 1
        where = f"{layout} {p} {what} bytes={a}-{b}"
        assert head["status"] == 206, (where, head)
        assert head["range"] == [a, b], (where, head)
        assert head["total_bytes"] == len(data[p]), (where, head)
        assert len(body) == b - a + 1 and body == data[p][a:b + 1], where
        if what.startswith("segment"):
            assert body[4:8] in (b"moof", b"styp", b"sidx"), (where, body[4:8])  # starts at a box
        elif what == "sidx":
            assert body[4:8] == b"sidx", where
    head, body = answers[k]  # open-ended: clamped to the end of the file
    p, a = first_seg[0], first_seg[1]
    assert head["status"] == 206 and head["range"] == [a, len(data[p]) - 1], head
    assert body == data[p][a:]
    k += 1
    for p in files:
        head, body = answers[k]
        k += 1
        assert head["status"] == 200 and head["total_bytes"] == len(data[p]) and body == data[p]
    head, body = answers[k]  # past the end
    assert head["status"] == 416 and body == b"", head
    head, body = answers[k + 1]
    assert head["status"] == 200 and body == (d / "manifest.mpd").read_bytes()
