"""Composition offsets without an edit list (params.CTS_OFFSETS ``negative``).

x264 with B-frames delays presentation behind decoding by the reordering delay D: ffmpeg 5.1
writes every sample's composition offset (PTS − DTS) as 0 … up, so the first frame shows at
DTS + D, and adds an edit list (``elst`` media_time = D) that shifts the presentation back to
the segment's nominal start (ISO/IEC 14496-12 §8.6.6). Chromium's MSE applies that edit list;
hls.js 1.7 does not (it reads the samples' own times), so every video fragment it has parsed
starts D late in its tables (…, 20.0833, 22.0833 s) while the buffer ends on the nominal times
(22.0000). On a switch to a level it had parsed before, hls.js looks up the buffer's end in
that level's table, finds it inside the fragment just buffered, and loads the same position
again (docs/BENCHMARKS.md, fifty-fifth session; hls.js issue #2468 describes the family).
ffmpeg 5.1's ``movflags negative_cts_offsets`` writes ``trun`` version 1 but keeps the offsets
from 0 up and drops the edit list's shift, so the whole presentation moves D late instead.

This module rewrites the fragments as CMAF writes them when it avoids edit lists: ``trun``
version 1, signed offsets, each decreased by D, and the edit list's media_time set to 0, so the
first frame's PTS equals its DTS (the segment's nominal start) in the samples themselves and
every player reads the same times. Sample sizes and data offsets do not move (version 1 has
the same field widths); ``sidx`` earliest_presentation_time already holds the nominal start.
Only video tracks (``hdlr`` ``vide``) are changed; audio keeps its priming edit list.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

from .boxes import iter_boxes

_CONTAINERS = frozenset({b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"moof", b"traf"})


def _boxes(buf: bytearray, start: int, end: int) -> Iterator[tuple[bytes, int, int, int]]:
    """:func:`.boxes.iter_boxes` through the containers this module reads."""
    return iter_boxes(buf, start, end, _CONTAINERS)


def video_edit_delay(init: bytes) -> int:
    """The edit list's media_time of the init segment's video track, in the track's timescale
    units (0 when the track has no edit list or is not video).

    Raises:
        ValueError: a malformed box tree, or an edit list with more than one entry (an edit
            list this module does not rewrite).
    """
    buf = bytearray(init)
    is_video = False
    media_time = 0
    for typ, _start, payload, end in _boxes(buf, 0, len(buf)):
        if typ == b"hdlr" and payload + 12 <= end:
            is_video = bytes(buf[payload + 8 : payload + 12]) == b"vide"
        elif typ == b"elst":
            version = buf[payload]
            (entries,) = struct.unpack_from(">I", buf, payload + 4)
            if entries != 1:
                raise ValueError(f"elst with {entries} entries")
            media_time = struct.unpack_from(">q" if version == 1 else ">i", buf,
                                            payload + (16 if version == 1 else 12))[0]
    return media_time if is_video else 0


def rebase_init(init: bytes) -> bytes:
    """The init segment with its (single-entry) edit list's media_time set to 0: the
    presentation is no longer shifted (the fragments carry the shift instead, rebase_fragment).

    Raises:
        ValueError: as :func:`video_edit_delay`.
    """
    buf = bytearray(init)
    for typ, _start, payload, _end in _boxes(buf, 0, len(buf)):
        if typ == b"elst":
            version = buf[payload]
            struct.pack_into(">q" if version == 1 else ">i", buf,
                             payload + (16 if version == 1 else 12), 0)
    return bytes(buf)


def _cto_fields(buf: bytearray) -> Iterator[tuple[int, bool]]:
    """(byte offset, signed) of every sample's composition offset in the segment's ``trun``
    boxes (ISO/IEC 14496-12 §8.8.8: version 1 signed, version 0 unsigned).

    Raises:
        ValueError: a malformed box tree, a ``trun`` without composition offsets, or one
            shorter than its sample count says.
    """
    for typ, _start, payload, end in _boxes(buf, 0, len(buf)):
        if typ != b"trun":
            continue
        flags = int.from_bytes(buf[payload + 1 : payload + 4], "big")
        if not flags & 0x800:
            raise ValueError("trun without composition offsets")
        (count,) = struct.unpack_from(">I", buf, payload + 4)
        p = payload + 8 + (4 if flags & 0x1 else 0) + (4 if flags & 0x4 else 0)
        per_sample = 4 * sum(1 for bit in (0x100, 0x200, 0x400, 0x800) if flags & bit)
        cto_at = 4 * sum(1 for bit in (0x100, 0x200, 0x400) if flags & bit)
        if p + count * per_sample > end:
            raise ValueError(f"trun of {count} samples runs past its box")
        signed = buf[payload] == 1
        for i in range(count):
            yield p + i * per_sample + cto_at, signed


def composition_offsets(segment: bytes) -> list[int]:
    """Every sample's composition offset (PTS − DTS, timescale units) in the segment's ``trun``
    boxes, in file order.

    Raises:
        ValueError: as :func:`_cto_fields`.
    """
    buf = bytearray(segment)
    return [struct.unpack_from(">i" if signed else ">I", buf, at)[0]
            for at, signed in _cto_fields(buf)]


def rebase_fragment(segment: bytes, delay: int) -> bytes:
    """A media segment whose ``trun`` composition offsets are lowered by ``delay`` (timescale
    units) and written signed (version 1, ISO/IEC 14496-12 §8.8.8.2).

    Raises:
        ValueError: as :func:`_cto_fields` (a ``trun`` without composition offsets only while
            ``delay`` > 0).
    """
    buf = bytearray(segment)
    if delay == 0:
        return bytes(buf)
    for at, signed in list(_cto_fields(buf)):
        cto = struct.unpack_from(">i" if signed else ">I", buf, at)[0]
        struct.pack_into(">i", buf, at, cto - delay)
    for typ, _start, payload, _end in _boxes(buf, 0, len(buf)):
        if typ == b"trun":
            buf[payload] = 1
    return bytes(buf)


def rebase_representation(init_path: Path, segment_paths: Iterable[Path]) -> int:
    """Rewrite one representation's files in place (module doc). Returns the delay removed,
    timescale units (0: not video or no edit delay, nothing written).

    Raises:
        ValueError: as :func:`video_edit_delay` and :func:`rebase_fragment`.
    """
    init = init_path.read_bytes()
    delay = video_edit_delay(init)
    if delay <= 0:
        return 0
    for seg in segment_paths:
        seg.write_bytes(rebase_fragment(seg.read_bytes(), delay))
    init_path.write_bytes(rebase_init(init))
    return delay
