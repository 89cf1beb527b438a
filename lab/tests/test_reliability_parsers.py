"""Issue 7 item 2: the request and grant parsers fuzzed (hypothesis, derandomized), and
malformed request streams on a real session next to good ones.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_helpers import (
    FRAME_BYTES,
    keep_granting,
)
from wt_harness import (
    bulk_bytes,
    read_jsonl,
    run,
    running_server,
    session_logs,
    wt_client,
)

from nuwa_server.grants import (
    GrantConfig,
    GrantState,
)
from nuwa_server.protocol import (
    GRANT_BYTES,
    BulkRequest,
    CancelRequest,
    ErrorKind,
    FrameType,
    GetRequest,
    Grant,
    ProtocolError,
    encode_grant,
    parse_request,
)

FUZZ_CASES = 2000
"""Hypothesis examples per parser fuzz test (fixed, derandomized: reported in RELIABILITY.md)."""
SESSION_FUZZ_STREAMS = 300
"""Malformed request streams sent on one real session next to good ones."""


# --------------------------------------------------------------------------- parsers (item 2)

_FUZZ = settings(max_examples=FUZZ_CASES, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_VALID_REQUESTS = [
    b'{"v":1,"op":"get","path":"/video/seg-1.m4s","range":[0,999],"id":7}',
    b'{"v":1,"op":"bulk","size_bytes":1000,"id":4294967295}',
    b'{"v":1,"op":"cancel","id":3}',
    b'{"v":1,"op":"get","path":"/%2e%2e/x"}',
]


@st.composite
def _mutated_request(draw: st.DrawFn) -> bytes:
    """A valid request with byte-level damage: flips, cuts, insertions, duplications."""
    data = bytearray(draw(st.sampled_from(_VALID_REQUESTS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "dup", "splice"]))
        i = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "cut":
            del data[i:]
        elif kind == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8) | st.sampled_from(
                [b"\x00", b'"', b"\\u0000", b"1e400", b"-0", b"NaN", b"[", b"{", b"\xff"]))
        elif kind == "dup":
            data[i:i] = data[i:]
        else:
            data += draw(st.sampled_from([b',"v":2}', b',"id":-1}', b',"path":null}', b"x" * 4100]))
    return bytes(data)


@pytest.mark.cpu  # computation only (conftest)
@_FUZZ
@given(st.one_of(_mutated_request(), st.binary(max_size=4200),
                 st.text(max_size=300).map(str.encode)))
def test_fuzz_parse_request_2000(data: bytes) -> None:
    """2000 cases (mutated valid requests, raw bytes, text): a Request or ProtocolError 400."""
    try:
        request = parse_request(data)
    except ProtocolError as exc:
        assert exc.status == 400 and isinstance(exc.kind, ErrorKind)
        assert str(exc).startswith(exc.kind.value + ":")
        return
    assert isinstance(request, GetRequest | BulkRequest | CancelRequest)
    if isinstance(request, BulkRequest):
        assert 1 <= request.size_bytes <= 2**40
    if isinstance(request, GetRequest) and request.byte_range is not None:
        assert 0 <= request.byte_range[0] <= request.byte_range[1]


_grant_fields = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1),
                          st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
                          st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1))
_datagram = st.one_of(
    _grant_fields.map(lambda f: encode_grant(Grant(*f))),
    st.binary(max_size=80),
    st.tuples(_grant_fields, st.integers(0, GRANT_BYTES - 1), st.integers(1, 255)).map(
        lambda t: bytes(b ^ (t[2] if i == t[1] else 0)
                        for i, b in enumerate(encode_grant(Grant(*t[0]))))),
)


@pytest.mark.cpu  # computation only (conftest)
@_FUZZ
@given(st.lists(st.tuples(_datagram, st.integers(0, 5_000), st.integers(0, 50_000)),
                max_size=40))
def test_fuzz_grant_datagrams_2000(ops: list[tuple[bytes, int, int]]) -> None:
    """2000 sequences of up to 40 datagrams (valid grants with any field values, raw bytes,
    grants with one corrupted byte) interleaved with frames written and time steps, through
    the server's grant path (GrantState.on_datagram): never raises, a dropped datagram
    names a grant ErrorKind or replay, and the invariants hold after every step."""
    g = GrantState(GrantConfig(), start_time_us=1_000)
    t_us = 1_000
    kinds = {k.value for k in ErrorKind if k.value.startswith("grant_")} | {"replay"}
    for data, dt_us, written in ops:
        t_us += dt_us
        budget = g.budget(t_us, bytes_in_flight=written // 2)
        if budget.allows(FRAME_BYTES, ceiling_bytes=200_000):
            g.on_frame_written(FRAME_BYTES, budget)
        d = g.on_datagram(data, t_us)
        if not d.accepted:
            assert d.reason in kinds, d
        assert 0 <= g.cum_received_bytes <= g.bytes_written
        assert 1200 <= g.window_bytes <= 64 << 20
        assert d.rtt_us is None or 0 <= d.rtt_us <= t_us
        b = g.budget(t_us, 0)
        assert b.window_bytes is not None and 12_000 <= b.window_bytes or b.fallback_level == 0


def _malformed_bodies(n: int, seed: int) -> list[bytes]:
    """``n`` damaged requests (seeded), each one that parse_request refuses."""
    rng = random.Random(seed)
    out: list[bytes] = []
    while len(out) < n:
        data = bytearray(rng.choice(_VALID_REQUESTS))
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(data)) if data else 0
            op = rng.randrange(4)
            if op == 0 and data:
                data[i] ^= 1 << rng.randrange(8)
            elif op == 1:
                del data[i:]
            elif op == 2:
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
            else:
                data += rng.choice([b',"v":2}', b"}", b"\xc3\x28", b"x" * 4100])
        try:
            parse_request(bytes(data))
        except ProtocolError:
            out.append(bytes(data))
    return out


def test_malformed_streams_leave_the_session_and_other_streams_intact(tmp_path: Path) -> None:
    """One real session: 300 malformed request streams (seeded damage, each refused by the
    parser), a stream reset half-way through its request, a stream that never ends its
    request, and malformed datagrams, interleaved with 10 good downloads: each malformed
    stream gets exactly one ERROR 400 frame and FIN, every good download is intact, and
    the session's grants still work afterwards."""
    bodies = _malformed_bodies(SESSION_FUZZ_STREAMS, seed=7)

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa", grant_timeout_us=30_000_000) as server, \
                wt_client(server) as client:
            assert await client.open_session() == 200
            granter = asyncio.create_task(keep_granting(client, 1 << 20))
            open_forever = client.request(b'{"v":1,"op":"bulk",', fin=False)
            half = client.request(b'{"v":1,"op":"bu', fin=False)
            client._quic.reset_stream(half, 0)
            good: list[tuple[int, int]] = []
            bad: list[int] = []
            for i, body in enumerate(bodies):
                bad.append(client.request(body))
                client.send_raw_datagram(body[:GRANT_BYTES])  # garbage datagrams too
                if i % 30 == 0:
                    size = 1000 + i
                    good.append((client.request({"v": 1, "op": "bulk", "size_bytes": size}),
                                 size))
                await asyncio.sleep(0)
            for sid in bad:
                r = await client.wait(sid)
                assert r.ended and not r.reset and len(r.frames) == 1, (sid, r.frames)
                assert r.frames[0].header.frame_type == FrameType.ERROR
                assert r.error["status"] == 400
            for sid, size in good:
                r = await client.wait(sid)
                assert r.body == bulk_bytes(size)
            session = server.context.recent_sessions()[0]
            assert not session.closed and not session.flooded
            assert session.statuses[400] == len(bad)
            assert not client.results[open_forever].frames  # waits for its FIN, harmlessly
            r = await client.wait(client.request({"v": 1, "op": "bulk", "size_bytes": 300_000}))
            assert r.body == bulk_bytes(300_000)
            granter.cancel()
            assert session.grants.grants_accepted >= len(good) + 1
        events = read_jsonl(session_logs(session) / "events.jsonl")
        errors = [e for e in events if e["event"] == "error_response"]
        assert len(errors) == len(bad)
        assert {e["kind"] for e in errors} <= {k.value for k in ErrorKind}

    run(main())
