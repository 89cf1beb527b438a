"""cts.py on hand-built boxes: the edit delay moved from the init's edit list into signed
composition offsets, video only, sizes unchanged, malformed input refused."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from nuwa_lab.dashgen.cts import (
    rebase_fragment,
    rebase_init,
    rebase_representation,
    video_edit_delay,
)


def box(typ: bytes, payload: bytes) -> bytes:
    return struct.pack(">I4s", 8 + len(payload), typ) + payload


def init_segment(handler: bytes, media_time: int) -> bytes:
    entry = struct.pack(">Ii", 0, media_time) + b"\x00\x01\x00\x00"
    elst = box(b"elst", struct.pack(">BxxxI", 0, 1) + entry)
    hdlr = box(b"hdlr", b"\x00" * 8 + handler + b"\x00" * 12)
    trak = box(b"trak", box(b"edts", elst) + box(b"mdia", hdlr))
    return box(b"ftyp", b"iso6\x00\x00\x00\x00") + box(b"moov", trak)


def fragment(ctos: list[int], version: int = 0, flags: int = 0xA05) -> bytes:
    head = struct.pack(">B", version) + flags.to_bytes(3, "big") + struct.pack(">I", len(ctos))
    head += struct.pack(">iI", 123, 0x02000000)  # data offset, first-sample flags
    cto_fmt = ">I" if version == 0 else ">i"
    samples = b"".join(struct.pack(">I", 1000 + i) + struct.pack(cto_fmt, c)
                       for i, c in enumerate(ctos))  # size, cto (flags 0x200 | 0x800)
    tfdt = box(b"tfdt", struct.pack(">BxxxQ", 1, 245760))
    traf = box(b"traf", tfdt + box(b"trun", head + samples))
    return box(b"styp", b"msdh\x00\x00\x00\x00") + box(b"moof", traf) + box(b"mdat", b"x" * 16)


def ctos_of(seg: bytes) -> tuple[int, list[int]]:
    i = seg.index(b"trun") + 4
    version = seg[i]
    (n,) = struct.unpack_from(">I", seg, i + 4)
    return version, [struct.unpack_from(">i", seg, i + 16 + 8 * k + 4)[0] for k in range(n)]


def test_video_delay_moves_from_the_edit_list_into_signed_offsets() -> None:
    init = init_segment(b"vide", 1024)
    assert video_edit_delay(init) == 1024
    seg = fragment([1024, 2560, 1024, 0, 512])
    out = rebase_fragment(seg, 1024)
    assert len(out) == len(seg)
    assert ctos_of(out) == (1, [0, 1536, 0, -1024, -512])  # keyframe PTS = DTS: the nominal start
    assert out[: seg.index(b"trun")] == seg[: seg.index(b"trun")]  # tfdt and the rest untouched
    new_init = rebase_init(init)
    assert len(new_init) == len(init) and video_edit_delay(new_init) == 0


def test_audio_and_undelayed_tracks_are_left_alone(tmp_path: Path) -> None:
    assert video_edit_delay(init_segment(b"soun", 1024)) == 0  # AAC priming stays
    seg = fragment([0, 512])
    assert rebase_fragment(seg, 0) == seg
    init_path = tmp_path / "init.m4s"
    init_path.write_bytes(init_segment(b"soun", 1024))
    seg_path = tmp_path / "seg.m4s"
    seg_path.write_bytes(seg)
    assert rebase_representation(init_path, [seg_path]) == 0
    assert seg_path.read_bytes() == seg and init_path.read_bytes() == init_segment(b"soun", 1024)


def test_representation_rewritten_in_place(tmp_path: Path) -> None:
    init_path = tmp_path / "init-0.m4s"
    init_path.write_bytes(init_segment(b"vide", 1024))
    segs = []
    for n in range(3):
        p = tmp_path / f"seg-0-{n}.m4s"
        p.write_bytes(fragment([1024, 0]))
        segs.append(p)
    assert rebase_representation(init_path, segs) == 1024
    assert all(ctos_of(p.read_bytes()) == (1, [0, -1024]) for p in segs)
    assert video_edit_delay(init_path.read_bytes()) == 0


def test_malformed_input_is_refused() -> None:
    with pytest.raises(ValueError, match="outside its parent"):
        video_edit_delay(struct.pack(">I4s", 4096, b"moov") + b"\x00" * 8)
    with pytest.raises(ValueError, match="without composition offsets"):
        rebase_fragment(fragment([0, 1], flags=0x205), 1024)
    truncated = bytearray(fragment([1024, 0]))
    i = truncated.index(b"trun") + 4
    struct.pack_into(">I", truncated, i + 4, 50)  # sample count beyond the box
    with pytest.raises(ValueError, match="runs past its box"):
        rebase_fragment(bytes(truncated), 1024)
    one, two_entries = struct.pack(">BxxxI", 0, 1), struct.pack(">BxxxI", 0, 2)
    two = init_segment(b"vide", 1024).replace(one, two_entries)
    with pytest.raises(ValueError, match="2 entries"):
        video_edit_delay(two)
