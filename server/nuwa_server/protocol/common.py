"""What every part of protocol v1 shares: the version, the sizes and limits of
PROTOCOL.md, the frame types, and the one error every decoder raises (``ProtocolError``
with an ``ErrorKind``)."""

from __future__ import annotations

from enum import IntEnum, StrEnum

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


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
