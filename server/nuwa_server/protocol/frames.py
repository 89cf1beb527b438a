"""Responses (PROTOCOL.md "Responses"): the 20-byte frame header, whole frames, the incremental
reader of a response stream, and the JSON payloads of HEAD and ERROR frames."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

from .common import (
    FRAME_HEADER_BYTES,
    MAX_FRAME_PAYLOAD_BYTES,
    PROTOCOL_VERSION,
    U32_MOD,
    U64_MAX,
    ErrorKind,
    FrameType,
    ProtocolError,
    _is_int,
)

_FRAME_HEADER = struct.Struct(">BBHIQI")  # version, type, reserved, seq, send_time_us, len
assert _FRAME_HEADER.size == FRAME_HEADER_BYTES


@dataclass(frozen=True, slots=True)
class FrameHeader:
    """A decoded 20-byte frame header (PROTOCOL.md "Responses").

    ``seq`` is u32 (wraps at 2^32), ``send_time_us`` u64 on the server's clock,
    ``payload_len`` ≤ 65536 bytes.
    """

    frame_type: FrameType
    seq: int
    send_time_us: int
    payload_len: int

    @property
    def frame_bytes(self) -> int:
        """Header plus payload, in bytes."""
        return FRAME_HEADER_BYTES + self.payload_len


@dataclass(frozen=True, slots=True)
class Frame:
    """A whole frame: its header and ``payload`` (``len(payload) == header.payload_len``)."""

    header: FrameHeader
    payload: bytes


def encode_frame_header(
    frame_type: FrameType | int, seq: int, send_time_us: int, payload_len: int
) -> bytes:
    """Encode a frame header (PROTOCOL.md "Responses"); reserved is written as 0.

    Args:
        frame_type: one of :class:`FrameType`.
        seq: session-wide sequence number; reduced modulo 2^32.
        send_time_us: server monotonic time, µs, 0 ≤ t < 2^64.
        payload_len: payload bytes, 0 .. 65536.

    Raises:
        ValueError: an argument is out of range (a bug in the caller, not
            a peer's error, so not a :class:`ProtocolError`).
    """
    if int(frame_type) not in _FRAME_TYPES:
        raise ValueError(f"unknown frame type {frame_type}")
    if not 0 <= payload_len <= MAX_FRAME_PAYLOAD_BYTES:
        raise ValueError(f"payload_len {payload_len} outside 0..{MAX_FRAME_PAYLOAD_BYTES}")
    if not 0 <= send_time_us <= U64_MAX:
        raise ValueError(f"send_time_us {send_time_us} outside u64")
    return _FRAME_HEADER.pack(
        PROTOCOL_VERSION, int(frame_type), 0, seq % U32_MOD, send_time_us, payload_len
    )


def encode_frame(
    frame_type: FrameType | int, seq: int, send_time_us: int, payload: bytes = b""
) -> bytes:
    """Encode a whole frame: header then ``payload``. Raises ValueError like
    :func:`encode_frame_header`."""
    return encode_frame_header(frame_type, seq, send_time_us, len(payload)) + payload


_FRAME_TYPES = frozenset(int(t) for t in FrameType)


def decode_frame_header(data: bytes | bytearray | memoryview) -> FrameHeader:
    """Decode the first 20 bytes of ``data`` as a frame header.

    Bytes after the header are not looked at.

    Raises:
        ProtocolError: checked in this order: ``frame_truncated`` (< 20 bytes),
            ``frame_version``, ``frame_type``, ``frame_reserved`` (≠ 0),
            ``frame_payload_too_large`` (payload_len > 65536).
    """
    if len(data) < FRAME_HEADER_BYTES:
        raise ProtocolError(
            ErrorKind.FRAME_TRUNCATED, f"{len(data)} bytes < {FRAME_HEADER_BYTES}-byte header"
        )
    version, ftype, reserved, seq, send_time_us, payload_len = _FRAME_HEADER.unpack_from(data)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(ErrorKind.FRAME_VERSION, f"version {version} != {PROTOCOL_VERSION}")
    if ftype not in _FRAME_TYPES:
        raise ProtocolError(ErrorKind.FRAME_TYPE, f"unknown frame type {ftype}")
    if reserved != 0:
        raise ProtocolError(ErrorKind.FRAME_RESERVED, f"reserved field is 0x{reserved:04x}")
    if payload_len > MAX_FRAME_PAYLOAD_BYTES:
        raise ProtocolError(
            ErrorKind.FRAME_PAYLOAD_TOO_LARGE,
            f"payload_len {payload_len} > {MAX_FRAME_PAYLOAD_BYTES}",
        )
    return FrameHeader(FrameType(ftype), seq, send_time_us, payload_len)


def decode_frame(data: bytes | bytearray | memoryview) -> Frame:
    """Decode ``data`` as exactly one frame (the form of the test vectors).

    Raises:
        ProtocolError: as :func:`decode_frame_header`, plus ``frame_truncated``
            when the payload is short and ``frame_length`` when bytes follow it.
    """
    header = decode_frame_header(data)
    end = FRAME_HEADER_BYTES + header.payload_len
    if len(data) < end:
        raise ProtocolError(
            ErrorKind.FRAME_TRUNCATED, f"payload has {len(data) - FRAME_HEADER_BYTES} of "
            f"{header.payload_len} bytes"
        )
    if len(data) > end:
        raise ProtocolError(ErrorKind.FRAME_LENGTH, f"{len(data) - end} bytes after the frame")
    return Frame(header, bytes(data[FRAME_HEADER_BYTES:end]))


class FrameReader:
    """Incremental frame parser for one response stream (a client's view).

    Feed stream bytes as they arrive with :meth:`feed`; it returns the frames
    completed so far. After a :class:`ProtocolError` the reader is unusable.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        """Append ``data`` and return every complete frame, in order.

        Raises:
            ProtocolError: a header is malformed (see :func:`decode_frame_header`).
        """
        self._buffer += data
        frames: list[Frame] = []
        offset = 0
        buf = self._buffer
        while len(buf) - offset >= FRAME_HEADER_BYTES:
            header = decode_frame_header(memoryview(buf)[offset : offset + FRAME_HEADER_BYTES])
            end = offset + FRAME_HEADER_BYTES + header.payload_len
            if end > len(buf):
                break
            frames.append(Frame(header, bytes(buf[offset + FRAME_HEADER_BYTES : end])))
            offset = end
        if offset:
            del buf[:offset]
        return frames

    @property
    def pending_bytes(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer)


# --------------------------------------------------------------------------- HEAD / ERROR payloads


def encode_head(
    status: int,
    total_bytes: int,
    body_bytes: int,
    content_type: str,
    byte_range: tuple[int, int] | None = None,
) -> bytes:
    """JSON payload of a HEAD frame (PROTOCOL.md "Responses").

    Args:
        status: 200, or 206 for a range.
        total_bytes: size of the whole resource, bytes.
        body_bytes: DATA payload bytes that follow on this stream.
        content_type: MIME type.
        byte_range: inclusive ``(first, last)`` served, for 206.
    """
    head: dict[str, Any] = {
        "status": status,
        "total_bytes": total_bytes,
        "body_bytes": body_bytes,
        "content_type": content_type,
    }
    if byte_range is not None:
        head["range"] = [byte_range[0], byte_range[1]]
    return json.dumps(head, separators=(",", ":")).encode()


def encode_error(status: int, message: str) -> bytes:
    """JSON payload of an ERROR frame: ``{"status": 4xx|5xx, "error": message}``."""
    return json.dumps({"status": status, "error": message}, separators=(",", ":")).encode()


def decode_json_payload(payload: bytes) -> dict[str, Any]:
    """Decode a HEAD or ERROR payload into a dict with an int ``status``.

    Raises:
        ProtocolError: ``payload_json`` when it is not such a JSON object.
    """
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(ErrorKind.PAYLOAD_JSON, f"not JSON: {exc}") from None
    if not isinstance(obj, dict) or not _is_int(obj.get("status")):
        raise ProtocolError(ErrorKind.PAYLOAD_JSON, "not an object with an int status")
    return obj
