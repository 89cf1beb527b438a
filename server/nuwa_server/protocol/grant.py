"""Grants (PROTOCOL.md "Grants"): the 44-byte GRANT datagram and the serial-number order of
its ``grant_seq``."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .common import GRANT_BYTES, GRANT_TYPE, PROTOCOL_VERSION, U32_MOD, ErrorKind, ProtocolError

_GRANT = struct.Struct(">BBHIQQQQI")  # version, type, flags, seq, t, cum, window, echo, hold
assert _GRANT.size == GRANT_BYTES


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
