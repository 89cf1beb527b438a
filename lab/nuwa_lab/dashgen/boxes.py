"""ISO BMFF box headers (ISO/IEC 14496-12 §4.2), the one walker the generator's readers share
(cts.py, layouts.py)."""

from __future__ import annotations

import struct
from collections.abc import Iterator


def iter_boxes(buf: bytes | bytearray, start: int = 0, end: int | None = None,
               into: frozenset[bytes] = frozenset()) -> Iterator[tuple[bytes, int, int, int]]:
    """(type, box start, payload start, box end) of the boxes in ``buf[start:end]``, in file
    order, descending into the boxes whose type is in ``into`` (depth first). Sizes: 32-bit, or 1
    then a 64-bit size, or 0 = to the end of the parent (§4.2).

    Raises:
        ValueError: a box that runs past its parent, is shorter than its header, or has a
            truncated 64-bit size.
    """
    end = len(buf) if end is None else end
    off = start
    while off + 8 <= end:
        size, typ = struct.unpack_from(">I4s", buf, off)
        header = 8
        if size == 1:
            if off + 16 > end:
                raise ValueError(f"box at {off}: truncated 64-bit size")
            size = struct.unpack_from(">Q", buf, off + 8)[0]
            header = 16
        elif size == 0:
            size = end - off
        if size < header or off + size > end:
            raise ValueError(f"box {typ!r} at {off}: size {size} outside its parent")
        yield typ, off, off + header, off + size
        if typ in into:
            yield from iter_boxes(buf, off + header, off + size, into)
        off += size
