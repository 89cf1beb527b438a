"""Protocol v1 encoding against the shared vectors (spec/protocol_v1_vectors.json),
plus hypothesis fuzzing of every decoder: only ProtocolError may escape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nuwa_server.protocol import (
    FRAME_HEADER_BYTES,
    GRANT_BYTES,
    BulkRequest,
    ErrorKind,
    Frame,
    FrameReader,
    FrameType,
    GetRequest,
    Grant,
    ProtocolError,
    decode_frame,
    decode_frame_header,
    decode_grant,
    decode_json_payload,
    encode_frame,
    encode_grant,
    encode_request,
    parse_request,
    serial_newer,
)

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

VECTORS_PATH = Path(__file__).resolve().parents[2] / "spec" / "protocol_v1_vectors.json"
VECTORS: dict[str, Any] = json.loads(VECTORS_PATH.read_text())
FUZZ_EXAMPLES = 500


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["name"] for item in items]


# --------------------------------------------------------------------------- vectors


@pytest.mark.parametrize("vector", VECTORS["frames"], ids=_ids(VECTORS["frames"]))
def test_frame_vectors(vector: dict[str, Any]) -> None:
    """Each frame vector decodes to its fields (or its error kind) and re-encodes."""
    data = bytes.fromhex(vector["hex"])
    if not vector["valid"]:
        with pytest.raises(ProtocolError) as info:
            decode_frame(data)
        assert info.value.kind.value == vector["error"]
        return
    expected = vector["frame"]
    frame = decode_frame(data)
    assert int(frame.header.frame_type) == expected["type"]
    assert frame.header.frame_type.name == expected["type_name"]
    assert expected["reserved"] == 0
    assert frame.header.seq == expected["seq"]
    assert frame.header.send_time_us == int(expected["send_time_us"])
    assert frame.header.payload_len == expected["payload_len"]
    assert frame.payload.hex() == expected["payload_hex"]
    if "payload_json" in expected:
        assert decode_json_payload(frame.payload) == expected["payload_json"]
    assert encode_frame(expected["type"], expected["seq"], int(expected["send_time_us"]),
                        frame.payload).hex() == vector["hex"]


@pytest.mark.parametrize("vector", VECTORS["grants"], ids=_ids(VECTORS["grants"]))
def test_grant_vectors(vector: dict[str, Any]) -> None:
    """Each grant vector decodes to its fields (or its error kind) and re-encodes."""
    data = bytes.fromhex(vector["hex"])
    if not vector["valid"]:
        with pytest.raises(ProtocolError) as info:
            decode_grant(data)
        assert info.value.kind.value == vector["error"]
        return
    g = vector["grant"]
    expected = Grant(
        grant_seq=g["grant_seq"],
        receiver_time_us=int(g["receiver_time_us"]),
        cum_received_bytes=int(g["cum_received_bytes"]),
        window_bytes=int(g["window_bytes"]),
        echo_send_time_us=int(g["echo_send_time_us"]),
        echo_hold_us=g["echo_hold_us"],
    )
    assert g["flags"] == 0
    assert decode_grant(data) == expected
    assert encode_grant(expected).hex() == vector["hex"]


@pytest.mark.parametrize("vector", VECTORS["requests"], ids=_ids(VECTORS["requests"]))
def test_request_vectors(vector: dict[str, Any]) -> None:
    """Each request vector parses to its fields or fails with its error kind (status 400)."""
    data = vector["utf8"].encode() if "utf8" in vector else bytes.fromhex(vector["hex"])
    if not vector["valid"]:
        with pytest.raises(ProtocolError) as info:
            parse_request(data)
        assert info.value.kind.value == vector["error"]
        assert info.value.status == 400
        return
    expected = vector["request"]
    request = parse_request(data)
    if expected["op"] == "get":
        assert isinstance(request, GetRequest)
        assert request.path == expected["path"]
        rng = expected["range"]
        assert request.byte_range == (None if rng is None else tuple(rng))
        assert request.cmcd == expected.get("cmcd")
    else:
        assert request == BulkRequest(expected["size_bytes"])
    assert parse_request(encode_request(request)) == request


@pytest.mark.parametrize("case", VECTORS["serial_newer"])
def test_serial_vectors(case: dict[str, Any]) -> None:
    """RFC 1982 serial-number comparison on u32 grant_seq."""
    assert serial_newer(case["candidate"], case["reference"]) is case["newer"]


def test_error_kinds_in_vectors_are_declared() -> None:
    """Every error kind named in the vectors exists in ErrorKind (the TS side mirrors it)."""
    kinds = {v["error"] for key in ("frames", "grants", "requests") for v in VECTORS[key]
             if not v["valid"]}
    assert kinds <= {k.value for k in ErrorKind}


# --------------------------------------------------------------------------- units


def test_frame_reader_splits_and_joins() -> None:
    """FrameReader reassembles frames from arbitrary chunking."""
    frames = [encode_frame(FrameType.HEAD, 0, 10, b'{"status":200}'),
              encode_frame(FrameType.DATA, 1, 11, bytes(range(200))),
              encode_frame(FrameType.END, 2, 12)]
    stream = b"".join(frames)
    for chunk in (1, 7, 20, 21, len(stream)):
        reader = FrameReader()
        out: list[Frame] = []
        for i in range(0, len(stream), chunk):
            out += reader.feed(stream[i : i + chunk])
        assert [f.header.seq for f in out] == [0, 1, 2]
        assert out[1].payload == bytes(range(200))
        assert reader.pending_bytes == 0


def test_encoders_refuse_out_of_range() -> None:
    """Encoders raise ValueError (a caller bug), not ProtocolError."""
    with pytest.raises(ValueError):
        encode_frame(FrameType.DATA, 0, 0, bytes(65537))
    with pytest.raises(ValueError):
        encode_frame(9, 0, 0)
    with pytest.raises(ValueError):
        encode_frame(FrameType.DATA, 0, 1 << 64)
    with pytest.raises(ValueError):
        encode_grant(Grant(0, 0, 0, 1 << 64))
    with pytest.raises(ValueError):
        encode_grant(Grant(0, 0, 0, -1))
    assert decode_frame(encode_frame(FrameType.END, 1 << 32, 5)).header.seq == 0  # wraps


def test_request_float_version_refused() -> None:
    """v must be the integer 1 (1.0 and true are not)."""
    for text in ('{"v":1.0,"op":"bulk","size_bytes":1}', '{"v":true,"op":"bulk","size_bytes":1}'):
        with pytest.raises(ProtocolError) as info:
            parse_request(text.encode())
        assert info.value.kind == ErrorKind.REQUEST_VERSION
    with pytest.raises(ProtocolError) as info:
        parse_request(b'{"v":1,"op":"bulk","size_bytes":1.5}')
    assert info.value.kind == ErrorKind.REQUEST_SIZE
    with pytest.raises(ProtocolError) as info:
        parse_request(b"[" * 3000 + b"]" * 3000)  # 6000 bytes: refused before parsing
    assert info.value.kind == ErrorKind.REQUEST_TOO_LARGE
    with pytest.raises(ProtocolError) as info:
        parse_request(b"[" * 2000 + b"]" * 2000)  # deep nesting within 4096 bytes
    assert info.value.kind in (ErrorKind.REQUEST_JSON, ErrorKind.REQUEST_NOT_OBJECT)


# --------------------------------------------------------------------------- fuzz

_FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow])

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8),
                                                                       children, max_size=4),
    max_leaves=12,
)
_request_like = st.fixed_dictionaries(
    {},
    optional={
        "v": st.sampled_from([1, 1, 2, 0, "1", 1.0, True, None]),
        "op": st.sampled_from(["get", "bulk", "put", "", None, 1]),
        "path": st.one_of(st.text(max_size=40), st.integers(), st.none()),
        "range": st.one_of(st.lists(st.integers(-5, 2**65), max_size=3), _json_values),
        "size_bytes": st.one_of(st.integers(-5, 2**41), st.floats(), st.booleans(), st.text()),
    },
)


@_FUZZ
@given(st.one_of(
    st.binary(max_size=5000),
    _json_values.map(lambda v: json.dumps(v).encode()),
    _request_like.map(lambda v: json.dumps(v).encode()),
))
def test_fuzz_parse_request_500(data: bytes) -> None:
    """500 examples: parse_request returns a Request or raises ProtocolError, nothing else."""
    try:
        request = parse_request(data)
    except ProtocolError as exc:
        assert exc.status == 400 and isinstance(exc.kind, ErrorKind)
        return
    assert isinstance(request, GetRequest | BulkRequest)
    if isinstance(request, BulkRequest):
        assert 1 <= request.size_bytes <= 2**40


@_FUZZ
@given(st.one_of(
    st.binary(max_size=100),
    st.binary(min_size=GRANT_BYTES, max_size=GRANT_BYTES),
    st.binary(min_size=GRANT_BYTES - 2, max_size=GRANT_BYTES - 2).map(lambda b: b"\x01\x10" + b),
    st.binary(min_size=GRANT_BYTES - 4, max_size=GRANT_BYTES - 4).map(
        lambda b: b"\x01\x10\x00\x00" + b),
))
def test_fuzz_decode_grant_500(data: bytes) -> None:
    """500 examples: decode_grant returns a Grant with unsigned fields or raises ProtocolError."""
    try:
        grant = decode_grant(data)
    except ProtocolError as exc:
        assert exc.kind in (ErrorKind.GRANT_LENGTH, ErrorKind.GRANT_VERSION, ErrorKind.GRANT_TYPE,
                            ErrorKind.GRANT_FLAGS)
        return
    assert len(data) == GRANT_BYTES
    assert 0 <= grant.window_bytes < 2**64 and 0 <= grant.cum_received_bytes < 2**64
    assert encode_grant(grant) == data


@_FUZZ
@given(st.one_of(
    st.binary(max_size=200),
    st.binary(min_size=FRAME_HEADER_BYTES - 4, max_size=FRAME_HEADER_BYTES + 64).map(
        lambda b: b"\x01" + bytes([b[0] % 6]) + b"\x00\x00" + b[3:]),
), st.integers(1, 50))
def test_fuzz_decode_frame_500(data: bytes, chunk: int) -> None:
    """500 examples: decode_frame / FrameReader raise only ProtocolError."""
    try:
        frame = decode_frame(data)
        assert len(frame.payload) == frame.header.payload_len
    except ProtocolError:
        pass
    try:
        decode_frame_header(data)
    except ProtocolError:
        pass
    reader = FrameReader()
    try:
        for i in range(0, len(data), chunk):
            reader.feed(data[i : i + chunk])
    except ProtocolError:
        pass


@_FUZZ
@given(st.binary(max_size=300))
def test_fuzz_decode_json_payload_500(data: bytes) -> None:
    """500 examples: decode_json_payload raises only ProtocolError."""
    try:
        obj = decode_json_payload(data)
    except ProtocolError as exc:
        assert exc.kind == ErrorKind.PAYLOAD_JSON
        return
    assert isinstance(obj["status"], int)


def test_request_id_and_cancel() -> None:
    """``id`` is an optional u32 on get/bulk; ``cancel`` needs one (PROTOCOL.md, "Cancelling")."""
    from nuwa_server.protocol import BulkRequest, CancelRequest, GetRequest, encode_request

    assert parse_request(b'{"v":1,"op":"get","path":"/a","id":0}') == GetRequest("/a", None, 0)
    assert parse_request(b'{"v":1,"op":"bulk","size_bytes":3,"id":4294967295}') == BulkRequest(
        3, 2**32 - 1)
    assert parse_request(b'{"v":1,"op":"get","path":"/a"}') == GetRequest("/a", None, None)
    assert parse_request(b'{"v":1,"op":"cancel","id":5}') == CancelRequest(5)
    for req in (CancelRequest(5), GetRequest("/a", (1, 2), 3), BulkRequest(9, None)):
        assert parse_request(encode_request(req)) == req
    for bad in (b'{"v":1,"op":"cancel"}', b'{"v":1,"op":"cancel","id":null}',
                b'{"v":1,"op":"cancel","id":1.5}', b'{"v":1,"op":"cancel","id":true}',
                b'{"v":1,"op":"get","path":"/a","id":-1}',
                b'{"v":1,"op":"bulk","size_bytes":1,"id":4294967296}'):
        with pytest.raises(ProtocolError) as info:
            parse_request(bad)
        assert info.value.kind == ErrorKind.REQUEST_ID and info.value.status == 400, bad
