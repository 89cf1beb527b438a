"""The ``@moq/web-transport-ws`` polyfill's framing: frames, varints, the grant stream.

The player falls back to the ``@moq/web-transport-ws`` polyfill, which
carries WebTransport streams over one WebSocket (subprotocol
``webtransport``, the page's ``https:`` URL rewritten to ``wss:``, same
path). Each binary message is one frame: a type byte, then QUIC variable-
length integers (RFC 9000 §16), with QUIC's frame numbers and stream-id
numbering (RFC 9000 §2.1: client bidi ``4n``, client uni ``4n + 2``):

====  =====================  =============================================
type  name                   body
====  =====================  =============================================
0x08  STREAM                 stream id, then the data to the end
0x09  STREAM + FIN           same, and the sender's side of the stream ends
0x04  RESET_STREAM           stream id, error code
0x05  STOP_SENDING           stream id, error code
0x1d  APPLICATION_CLOSE      error code, then a UTF-8 reason to the end
====  =====================  =============================================

The polyfill has no datagrams, so grants (PROTOCOL.md "Grants") travel on
the first client-opened unidirectional stream (id 2) as back-to-back 44-byte
grant records, each handled exactly as a grant datagram (same parser, same
flood guard, same acceptance rules). Requests and responses are unchanged:
one client bidirectional stream per request, the same stamped frames back.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

FRAME_STREAM = 0x08
FRAME_STREAM_FIN = 0x09
FRAME_RESET_STREAM = 0x04
FRAME_STOP_SENDING = 0x05
FRAME_APPLICATION_CLOSE = 0x1D

GRANT_STREAM_ID = 2
"""The first client-initiated unidirectional stream (RFC 9000 §2.1): the grant stream."""

GRANT_RECORD_BYTES = 44
"""One grant record on the grant stream: the 44-byte grant of PROTOCOL.md "Grants"."""

VARINT_MAX = (1 << 62) - 1
"""Largest QUIC variable-length integer (RFC 9000 §16)."""


class WsFrameError(ValueError):
    """A polyfill frame that breaks the framing (truncated, unknown type, bad id)."""


@dataclass(frozen=True, slots=True)
class WsFrame:
    """One decoded polyfill frame. ``kind``: ``stream`` | ``reset_stream`` |
    ``stop_sending`` | ``close``. ``stream_id`` is None for ``close``; ``code``
    is None for ``stream``."""

    kind: str
    stream_id: int | None = None
    data: bytes = b""
    fin: bool = False
    code: int | None = None
    reason: str = ""


def encode_varint(value: int) -> bytes:
    """QUIC variable-length integer (RFC 9000 §16), shortest form.

    Raises:
        ValueError: ``value`` outside 0 .. 2^62 − 1.
    """
    if value < 0 or value > VARINT_MAX:
        raise ValueError(f"varint out of range 0..2^62-1: {value}")
    if value < 1 << 6:
        return bytes((value,))
    if value < 1 << 14:
        return struct.pack("!H", 0x4000 | value)
    if value < 1 << 30:
        return struct.pack("!I", 0x8000_0000 | value)
    return struct.pack("!Q", 0xC000_0000_0000_0000 | value)


def decode_varint(buf: bytes, offset: int) -> tuple[int, int]:
    """Decode a QUIC varint at ``offset`` (RFC 9000 §16); returns (value, next offset).

    Raises:
        WsFrameError: the buffer ends inside the integer.
    """
    if offset >= len(buf):
        raise WsFrameError("frame truncated: varint expected")
    first = buf[offset]
    length = 1 << (first >> 6)
    if offset + length > len(buf):
        raise WsFrameError(f"frame truncated: {length}-byte varint, {len(buf) - offset} left")
    value = first & 0x3F
    for b in buf[offset + 1 : offset + length]:
        value = (value << 8) | b
    return value, offset + length


def decode_ws_frame(message: bytes) -> WsFrame:
    """Decode one polyfill frame (one binary WebSocket message).

    Raises:
        WsFrameError: empty message, unknown type, truncated varint, or a
            reason that is not UTF-8.
    """
    if not message:
        raise WsFrameError("empty frame")
    ftype = message[0]
    if ftype in (FRAME_STREAM, FRAME_STREAM_FIN):
        stream_id, off = decode_varint(message, 1)
        return WsFrame("stream", stream_id, bytes(message[off:]), ftype == FRAME_STREAM_FIN)
    if ftype in (FRAME_RESET_STREAM, FRAME_STOP_SENDING):
        stream_id, off = decode_varint(message, 1)
        code, off = decode_varint(message, off)
        return WsFrame("reset_stream" if ftype == FRAME_RESET_STREAM else "stop_sending",
                       stream_id, code=code)
    if ftype == FRAME_APPLICATION_CLOSE:
        code, off = decode_varint(message, 1)
        try:
            reason = bytes(message[off:]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WsFrameError("close reason is not UTF-8") from exc
        return WsFrame("close", code=code, reason=reason)
    raise WsFrameError(f"unknown frame type 0x{ftype:02x}")


def encode_stream_frame(stream_id: int, data: bytes, fin: bool) -> bytes:
    """STREAM (0x08) or STREAM+FIN (0x09) frame carrying ``data``."""
    return bytes((FRAME_STREAM_FIN if fin else FRAME_STREAM,)) + encode_varint(stream_id) + data


def encode_reset_stream(stream_id: int, code: int) -> bytes:
    """RESET_STREAM (0x04) frame."""
    return bytes((FRAME_RESET_STREAM,)) + encode_varint(stream_id) + encode_varint(code)


def encode_application_close(code: int, reason: str) -> bytes:
    """APPLICATION_CLOSE (0x1d) frame."""
    return bytes((FRAME_APPLICATION_CLOSE,)) + encode_varint(code) + reason.encode("utf-8")


def is_client_bidi(stream_id: int) -> bool:
    """Client-initiated bidirectional stream id (RFC 9000 §2.1: low bits 00)."""
    return stream_id & 0x3 == 0


class GrantStreamReader:
    """Cuts the grant stream's bytes into 44-byte records (a record may span messages)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def push(self, data: bytes) -> list[bytes]:
        """Add stream bytes; return the complete records, in order."""
        self._buf += data
        n = len(self._buf) // GRANT_RECORD_BYTES * GRANT_RECORD_BYTES
        out = [bytes(self._buf[i : i + GRANT_RECORD_BYTES])
               for i in range(0, n, GRANT_RECORD_BYTES)]
        del self._buf[:n]
        return out

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete record held back."""
        return len(self._buf)
