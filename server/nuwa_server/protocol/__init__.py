"""Nuwa wire protocol v1: frames, grants and requests, encoded and decoded.

Pure functions only: no clock, no I/O. Every decoder either returns a value
or raises :class:`ProtocolError` with a ``kind`` from :class:`ErrorKind`; no
other exception escapes (checked by the hypothesis fuzz tests). Source of
truth: ``docs/PROTOCOL.md``; test vectors shared with the TypeScript side:
``spec/protocol_v1_vectors.json``.

Modules, one part of PROTOCOL.md each (this package re-exports their public
names): ``common`` (version, sizes, limits, frame types, ``ProtocolError``),
``frames`` ("Responses": frame header, frames, ``FrameReader``, HEAD/ERROR
payloads), ``grant`` ("Grants": the GRANT datagram, ``serial_newer``),
``requests`` ("Requests": ``parse_request``, ``encode_request``).
"""

from __future__ import annotations

from .common import (
    FRAME_HEADER_BYTES,
    GRANT_BYTES,
    GRANT_TYPE,
    MAX_BULK_SIZE_BYTES,
    MAX_FRAME_PAYLOAD_BYTES,
    MAX_PATH_CHARS,
    MAX_REQUEST_BYTES,
    PROTOCOL_VERSION,
    U32_MOD,
    U64_MAX,
    ErrorKind,
    FrameType,
    ProtocolError,
)
from .frames import (
    Frame,
    FrameHeader,
    FrameReader,
    decode_frame,
    decode_frame_header,
    decode_json_payload,
    encode_error,
    encode_frame,
    encode_frame_header,
    encode_head,
)
from .grant import Grant, decode_grant, encode_grant, serial_newer
from .requests import (
    BulkRequest,
    CancelRequest,
    GetRequest,
    Request,
    encode_request,
    parse_request,
)

__all__ = [
    "FRAME_HEADER_BYTES", "GRANT_BYTES", "GRANT_TYPE", "MAX_BULK_SIZE_BYTES",
    "MAX_FRAME_PAYLOAD_BYTES", "MAX_PATH_CHARS", "MAX_REQUEST_BYTES", "PROTOCOL_VERSION",
    "U32_MOD", "U64_MAX", "BulkRequest", "CancelRequest", "ErrorKind", "Frame", "FrameHeader",
    "FrameReader", "FrameType", "GetRequest", "Grant", "ProtocolError", "Request",
    "decode_frame", "decode_frame_header", "decode_grant", "decode_json_payload", "encode_error",
    "encode_frame", "encode_frame_header", "encode_grant", "encode_head", "encode_request",
    "parse_request", "serial_newer",
]
