"""Requests (PROTOCOL.md "Requests", "Cancelling a request"): the JSON a client writes on a
bidirectional stream, parsed with every rule checked, and encoded (the client's side)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .common import (
    MAX_BULK_SIZE_BYTES,
    MAX_PATH_CHARS,
    MAX_REQUEST_BYTES,
    PROTOCOL_VERSION,
    U32_MOD,
    U64_MAX,
    ErrorKind,
    ProtocolError,
    _is_int,
)


@dataclass(frozen=True, slots=True)
class GetRequest:
    """``{"v":1,"op":"get","path":...,"range":[first,last]?}`` (PROTOCOL.md "Requests").

    ``path`` is the URL path as sent (not yet percent-decoded or checked
    against the content root; see :mod:`nuwa_server.content`). ``byte_range``
    is inclusive, ``0 ≤ first ≤ last``. ``cmcd``: the optional CMCD payload the
    player attached (CTA-5004, PROTOCOL.md "CMCD"), recorded in the log only;
    a ``cmcd`` that is not a string is ignored like an unknown field.
    """

    path: str
    byte_range: tuple[int, int] | None = None
    request_id: int | None = None
    cmcd: str | None = None


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
        cmcd = obj.get("cmcd")
        return GetRequest(_parse_path(obj.get("path")), _parse_range(obj), _parse_id(obj),
                          cmcd if isinstance(cmcd, str) else None)
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
        if request.cmcd is not None:
            obj["cmcd"] = request.cmcd
    else:
        obj = {"v": PROTOCOL_VERSION, "op": "bulk", "size_bytes": request.size_bytes}
    if request.request_id is not None:
        obj["id"] = request.request_id
    return json.dumps(obj, separators=(",", ":")).encode()
