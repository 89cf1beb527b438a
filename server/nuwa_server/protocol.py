"""Nuwa wire protocol v1: frames, grants and requests, encoded and decoded.

Pure functions only: no clock, no I/O. Every decoder either returns a value
or raises :class:`ProtocolError` with a ``kind`` from :class:`ErrorKind`; no
other exception escapes (checked by the hypothesis fuzz tests). Source of
truth: ``docs/PROTOCOL.md``; test vectors shared with the TypeScript side:
``spec/protocol_v1_vectors.json``.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

PROTOCOL_VERSION = 1
"""The only protocol version this module speaks (PROTOCOL.md, first line)."""

FRAME_HEADER_BYTES = 20
"""Frame header size (PROTOCOL.md "Responses")."""

MAX_FRAME_PAYLOAD_BYTES = 65536
"""Largest ``payload_len`` a frame may carry (PROTOCOL.md "Responses")."""

GRANT_BYTES = 44
"""Size of a GRANT datagram payload (PROTOCOL.md "Grants")."""

GRANT_TYPE = 0x10
"""``type`` byte of a GRANT datagram (PROTOCOL.md "Grants")."""

MAX_REQUEST_BYTES = 4096
"""Largest request JSON, in UTF-8 bytes (PROTOCOL.md "Requests")."""

MAX_BULK_SIZE_BYTES = 1 << 40
"""Largest ``size_bytes`` of a ``bulk`` request (PROTOCOL.md "Requests")."""

MAX_PATH_CHARS = 1024
"""Longest ``path`` accepted in a ``get`` request (this implementation's limit)."""

U32_MOD = 1 << 32
U64_MAX = (1 << 64) - 1

_FRAME_HEADER = struct.Struct(">BBHIQI")  # version, type, reserved, seq, send_time_us, len
_GRANT = struct.Struct(">BBHIQQQQI")  # version, type, flags, seq, t, cum, window, echo, hold
assert _FRAME_HEADER.size == FRAME_HEADER_BYTES
assert _GRANT.size == GRANT_BYTES


class FrameType(IntEnum):
    """Frame ``type`` byte (PROTOCOL.md "Responses")."""

    HEAD = 1
    DATA = 2
    END = 3
    ERROR = 4


class ErrorKind(StrEnum):
    """Why a decoder refused its input; the ``error`` of invalid test vectors."""

    FRAME_TRUNCATED = "frame_truncated"
    FRAME_LENGTH = "frame_length"
    FRAME_VERSION = "frame_version"
    FRAME_TYPE = "frame_type"
    FRAME_RESERVED = "frame_reserved"
    FRAME_PAYLOAD_TOO_LARGE = "frame_payload_too_large"
    GRANT_LENGTH = "grant_length"
    GRANT_VERSION = "grant_version"
    GRANT_TYPE = "grant_type"
    GRANT_FLAGS = "grant_flags"
    REQUEST_TOO_LARGE = "request_too_large"
    REQUEST_UTF8 = "request_utf8"
    REQUEST_JSON = "request_json"
    REQUEST_NOT_OBJECT = "request_not_object"
    REQUEST_VERSION = "request_version"
    REQUEST_OP = "request_op"
    REQUEST_PATH = "request_path"
    REQUEST_RANGE = "request_range"
    REQUEST_SIZE = "request_size"
    REQUEST_ID = "request_id"
    PAYLOAD_JSON = "payload_json"


class ProtocolError(ValueError):
    """Input that does not follow PROTOCOL.md.

    Attributes:
        kind: an :class:`ErrorKind` naming the rule that was broken.
        status: the HTTP-like status a server answers with (400 for request
            errors; informative only for frames and grants).
    """

    def __init__(self, kind: ErrorKind, message: str, status: int = 400) -> None:
        super().__init__(f"{kind.value}: {message}")
        self.kind = kind
        self.status = status


# --------------------------------------------------------------------------- frames


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


# --------------------------------------------------------------------------- grants


@dataclass(frozen=True, slots=True)
class Grant:
    """A decoded GRANT datagram (PROTOCOL.md "Grants").

    All fields are unsigned: ``grant_seq`` u32 (wraps), the four ``_us``/
    ``_bytes`` fields u64, ``echo_hold_us`` u32. (``flags`` is always 0 in v1.)
    """

    grant_seq: int
    receiver_time_us: int
    cum_received_bytes: int
    window_bytes: int
    echo_send_time_us: int = 0
    echo_hold_us: int = 0


def encode_grant(grant: Grant) -> bytes:
    """Encode ``grant`` as the 44-byte datagram payload (PROTOCOL.md "Grants").

    ``grant_seq`` is reduced modulo 2^32.

    Raises:
        ValueError: a u64/u32 field is out of range (``struct.error`` subclass
            turned into ValueError).
    """
    try:
        return _GRANT.pack(
            PROTOCOL_VERSION,
            GRANT_TYPE,
            0,
            grant.grant_seq % U32_MOD,
            grant.receiver_time_us,
            grant.cum_received_bytes,
            grant.window_bytes,
            grant.echo_send_time_us,
            grant.echo_hold_us,
        )
    except struct.error as exc:
        raise ValueError(f"grant field out of range: {exc}") from None


def decode_grant(data: bytes | bytearray | memoryview) -> Grant:
    """Decode one GRANT datagram payload (the bytes after the quarter stream id).

    Raises:
        ProtocolError: ``grant_length`` (not 44 bytes), ``grant_version``
            (≠ 1), ``grant_type`` (≠ 0x10), ``grant_flags`` (≠ 0), checked in
            that order.
    """
    if len(data) != GRANT_BYTES:
        raise ProtocolError(ErrorKind.GRANT_LENGTH, f"{len(data)} bytes != {GRANT_BYTES}")
    version, gtype, flags, seq, t_us, cum, window, echo, hold = _GRANT.unpack_from(data)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(ErrorKind.GRANT_VERSION, f"version {version} != {PROTOCOL_VERSION}")
    if gtype != GRANT_TYPE:
        raise ProtocolError(ErrorKind.GRANT_TYPE, f"type 0x{gtype:02x} != 0x{GRANT_TYPE:02x}")
    if flags != 0:
        raise ProtocolError(ErrorKind.GRANT_FLAGS, f"flags are 0x{flags:04x}")
    return Grant(seq, t_us, cum, window, echo, hold)


def serial_newer(candidate: int, reference: int) -> bool:
    """True when u32 ``candidate`` is newer than ``reference`` (RFC 1982 §3.2, SERIAL_BITS=32).

    Equal values and values exactly 2^31 apart (undefined in RFC 1982) are
    not newer.
    """
    candidate %= U32_MOD
    reference %= U32_MOD
    half = 1 << 31
    return (reference < candidate and candidate - reference < half) or (
        reference > candidate and reference - candidate > half
    )


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class GetRequest:
    """``{"v":1,"op":"get","path":...,"range":[first,last]?}`` (PROTOCOL.md "Requests").

    ``path`` is the URL path as sent (not yet percent-decoded or checked
    against the content root; see :mod:`nuwa_server.content`). ``byte_range``
    is inclusive, ``0 ≤ first ≤ last``.
    """

    path: str
    byte_range: tuple[int, int] | None = None
    request_id: int | None = None


@dataclass(frozen=True, slots=True)
class BulkRequest:
    """``{"v":1,"op":"bulk","size_bytes":N}``, 1 ≤ N ≤ 2^40 (PROTOCOL.md "Requests")."""

    size_bytes: int
    request_id: int | None = None


@dataclass(frozen=True, slots=True)
class CancelRequest:
    """``{"v":1,"op":"cancel","id":N}``: stop answering the request that carried ``"id": N``
    on this session (PROTOCOL.md "Cancelling a request")."""

    request_id: int


Request = GetRequest | BulkRequest | CancelRequest


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_request(data: bytes | bytearray | memoryview) -> Request:
    """Parse the request a client wrote on a bidirectional stream.

    Unknown fields are ignored (forward compatibility). ``NaN``/``Infinity``
    and floats are refused where integers are expected.

    Raises:
        ProtocolError: (status 400) ``request_too_large`` (> 4096 bytes),
            ``request_utf8``, ``request_json``, ``request_not_object``,
            ``request_version`` (``v`` ≠ 1), ``request_op``, ``request_path``
            (missing, not a string, empty, too long), ``request_range``,
            ``request_size``, ``request_id`` (an ``id`` that is not a u32, or a cancel without one).
    """
    if len(data) > MAX_REQUEST_BYTES:
        raise ProtocolError(
            ErrorKind.REQUEST_TOO_LARGE, f"{len(data)} bytes > {MAX_REQUEST_BYTES}"
        )
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(ErrorKind.REQUEST_UTF8, f"not UTF-8: {exc.reason}") from None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(ErrorKind.REQUEST_JSON, f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorKind.REQUEST_NOT_OBJECT, "request is not a JSON object")
    version = obj.get("v")
    if not _is_int(version) or version != PROTOCOL_VERSION:
        raise ProtocolError(ErrorKind.REQUEST_VERSION, f"v must be {PROTOCOL_VERSION}")
    op = obj.get("op")
    if op == "cancel":
        request_id = _parse_id(obj)
        if request_id is None:
            raise ProtocolError(ErrorKind.REQUEST_ID, "cancel needs an id")
        return CancelRequest(request_id)
    if op == "get":
        return GetRequest(_parse_path(obj.get("path")), _parse_range(obj), _parse_id(obj))
    if op == "bulk":
        size = obj.get("size_bytes")
        if not isinstance(size, int) or isinstance(size, bool) or not (
            1 <= size <= MAX_BULK_SIZE_BYTES
        ):
            raise ProtocolError(
                ErrorKind.REQUEST_SIZE, f"size_bytes must be an int in 1..{MAX_BULK_SIZE_BYTES}"
            )
        return BulkRequest(size, _parse_id(obj))
    raise ProtocolError(ErrorKind.REQUEST_OP, 'op must be "get", "bulk" or "cancel"')


def _parse_id(obj: dict[str, Any]) -> int | None:
    """The optional request ``id``: an integer in 0..2^32 − 1, or absent/null."""
    if "id" not in obj or obj["id"] is None:
        return None
    value = obj["id"]
    if not _is_int(value) or not 0 <= value < U32_MOD:
        raise ProtocolError(ErrorKind.REQUEST_ID, f"id must be an integer in 0..{U32_MOD - 1}")
    return int(value)


def _parse_path(path: object) -> str:
    if not isinstance(path, str) or not path:
        raise ProtocolError(ErrorKind.REQUEST_PATH, "path must be a non-empty string")
    if len(path) > MAX_PATH_CHARS:
        raise ProtocolError(ErrorKind.REQUEST_PATH, f"path longer than {MAX_PATH_CHARS}")
    return path


def _parse_range(obj: dict[str, Any]) -> tuple[int, int] | None:
    if "range" not in obj or obj["range"] is None:
        return None
    value = obj["range"]
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(_is_int(v) for v in value)
        or not 0 <= value[0] <= value[1] <= U64_MAX
    ):
        raise ProtocolError(
            ErrorKind.REQUEST_RANGE, "range must be [first, last], 0 <= first <= last"
        )
    return int(value[0]), int(value[1])


def encode_request(request: Request) -> bytes:
    """Encode a request as compact UTF-8 JSON (the client's side; used by tests)."""
    obj: dict[str, Any]
    if isinstance(request, CancelRequest):
        return json.dumps({"v": PROTOCOL_VERSION, "op": "cancel", "id": request.request_id},
                          separators=(",", ":")).encode()
    if isinstance(request, GetRequest):
        obj = {"v": PROTOCOL_VERSION, "op": "get", "path": request.path}
        if request.byte_range is not None:
            obj["range"] = list(request.byte_range)
    else:
        obj = {"v": PROTOCOL_VERSION, "op": "bulk", "size_bytes": request.size_bytes}
    if request.request_id is not None:
        obj["id"] = request.request_id
    return json.dumps(obj, separators=(",", ":")).encode()

