"""The server under grants, with aioquic's own client on loopback (in-process server on port
0): Nuwa mode obeys the grant window, drops absurd, replayed and malformed grants, falls
back after the grant timeout; cubic mode ignores grants."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from wt_harness import (
    _wait_stall,
    bulk_bytes,
    read_jsonl,
    run,
    running_server,
    session_logs,
    wt_client,
)

from nuwa_server.protocol import (
    FRAME_HEADER_BYTES,
    Grant,
    encode_grant,
)
from nuwa_server.session import NuwaSession


def test_nuwa_obeys_grants(tmp_path: Path) -> None:
    """nuwa mode: initial window 12000 B, then exactly the granted window; violations 0."""
    frame = FRAME_HEADER_BYTES + 1200

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa", grant_timeout_us=30_000_000) as server, \
                wt_client(server) as client:
            await client.open_session()
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 2_000_000})
            got = await _wait_stall(client)
            assert 12000 - frame < got <= 12000, got  # before the first grant
            # a window under the ceiling's initial 13 500 B, which never shrinks without loss: with
            # 30 kB the server also waits on the Cubic ceiling, whose growth on loopback ACKs
            # (RTT samples over its threshold) can pause it past the 150 ms stall detection while
            # this test sends no grant (a real receiver re-grants as frames arrive)
            client.send_grant(Grant(1, 1, got, 12_000, 0, 0))
            got2 = await _wait_stall(client)
            assert got + 12_000 - frame < got2 <= got + 12_000, (got, got2)
            # a window smaller than a frame still lets one frame go at a time
            client.send_grant(Grant(2, 2, got2, 100, 0, 0))
            got3 = await _wait_stall(client)
            assert got3 - got2 <= frame
            # a big grant resumes; keep granting as bytes arrive
            seq = 3
            while not client.results[sid].done.is_set():
                client.send_grant(Grant(seq, seq, client.frame_bytes_received, 200_000,
                                        client.all_frames[-1][1].header.send_time_us, 0))
                seq += 1
                await asyncio.sleep(0.002)
            result = await client.wait(sid)
            assert result.body == bulk_bytes(2_000_000)
            session = server.context.recent_sessions()[0]
            assert session.grants.grant_violations == 0
        rows = read_jsonl(session_logs(session) / "frames.jsonl")
        assert all(r["outstanding_bytes"] <= max(r["grant_window_bytes"], r["bytes"])
                   for r in rows)
        assert all(r["grant_window_bytes"] is not None for r in rows)
        grants = read_jsonl(session_logs(session) / "grants.jsonl")
        assert grants[0]["accepted"] and grants[0]["window_in_force_bytes"] == 12_000
        assert grants[1]["reason"] == "window_clamped_low"
        assert grants[1]["window_in_force_bytes"] == 1200
        assert any(g["rtt_us"] is not None and g["rtt_us"] >= 0 for g in grants)
        summary = json.loads((session_logs(session) / "summary.json").read_text())
        assert summary["grant_violations"] == 0 and summary["grants_accepted"] == seq - 1
        assert isinstance(summary["frames_paced"], int)  # the grant pacer (grants.py)

    run(main())


def test_absurd_replayed_and_malformed_grants(tmp_path: Path) -> None:
    """Clamps (2^64−1, 2^63), replays dropped, malformed datagrams dropped; no crash."""
    u64_max = (1 << 64) - 1

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa", grant_timeout_us=30_000_000) as server, \
                wt_client(server) as client:
            await client.open_session()
            # (20 kB: this client never reports what it received after the absurd grant, so
            # what follows the first 12 kB window must fit the Cubic ceiling's initial 13,500 B,
            # which never shrinks without loss; with 30 kB it also needed the ceiling to grow,
            # which depends on the host's RTT samples: on the CI host it stopped at 16,008 B and
            # the stream at 26,955 of about 31,000 bytes)
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 20_000})
            await _wait_stall(client)
            session = server.context.recent_sessions()[0]
            client.send_raw_datagram(b"")
            client.send_raw_datagram(b"\x01\x10" + bytes(41))
            client.send_raw_datagram(b"\x02" + encode_grant(Grant(1, 0, 0, 0))[1:])
            client.send_raw_datagram(b"\x01\x11" + encode_grant(Grant(1, 0, 0, 0))[2:])
            # cum beyond what was written, window absurd: clamped, accepted
            client.send_grant(Grant(7, u64_max, 1 << 63, u64_max, u64_max, 2**32 - 1))
            await client.wait(sid)  # the 64 MiB window lets everything through
            client.send_grant(Grant(7, 0, 0, 1200))  # replay
            client.send_grant(Grant(3, 0, 0, 1200))  # older
            client.send_grant(Grant(7 + 2**31, 0, 0, 1200))  # exactly half-way: not newer
            client.send_grant(Grant(8, 0, 0, 0))  # newer, cum backwards, window 0
            await asyncio.sleep(0.1)
            g = session.grants
            assert g.grants_dropped["grant_length"] == 2
            assert g.grants_dropped["grant_version"] == 1
            assert g.grants_dropped["grant_type"] == 1
            assert g.grants_dropped["replay"] == 3
            assert g.grants_accepted == 2
            assert g.window_bytes == 1200
            assert g.cum_received_bytes <= g.bytes_written
            assert g.grants_clamped["window_clamped_high"] == 1
            assert g.grants_clamped["cum_clamped_to_written"] == 1
            assert g.grants_clamped["cum_backwards"] == 1
            # blocked now (outstanding ≫ 1200) until a grant reports what arrived
            sid2 = client.request({"v": 1, "op": "bulk", "size_bytes": 10})
            await asyncio.sleep(0.1)
            assert not client.results[sid2].frames
            client.send_grant(Grant(9, 0, client.frame_bytes_received, 1200))
            r = await client.wait(sid2)
            assert r.body == bulk_bytes(10)
        rows = read_jsonl(session_logs(session) / "grants.jsonl")
        assert [r["accepted"] for r in rows] == [False] * 4 + [True] + [False] * 3 + [True] * 2
        assert rows[4]["window_in_force_bytes"] == 64 << 20
        assert rows[4]["rtt_us"] is None  # echo from the future is no sample
        summary = json.loads((session_logs(session) / "summary.json").read_text())
        assert summary["grants_dropped"] == {"grant_length": 2, "grant_version": 1,
                                             "grant_type": 1, "replay": 3}

    run(main())


def test_grant_timeout_fallback(tmp_path: Path) -> None:
    """No grant for grant_timeout: fall back to the ceiling, window halves to the initial."""

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa", grant_timeout_us=200_000) as server, \
                wt_client(server) as client:
            await client.open_session()
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 400_000})
            first = await _wait_stall(client, quiet_s=0.1)
            assert first <= 12000
            result = await client.wait(sid, timeout_s=10)  # completes without any grant
            assert result.body == bulk_bytes(400_000)
            session = server.context.recent_sessions()[0]
            assert session.grants.fallback_entries == 1
        events = read_jsonl(session_logs(session) / "events.jsonl")
        fallbacks = [e for e in events if e["event"] == "grant_fallback"]
        assert fallbacks and fallbacks[0]["level"] == 1 and fallbacks[0]["window_bytes"] == 12000

    run(main())


def test_cubic_mode_ignores_grants(tmp_path: Path) -> None:
    """cubic mode: a tiny grant is logged (accepted) but does not limit the sender."""

    async def main() -> None:
        async with running_server(tmp_path, cc="cubic") as server, wt_client(server) as client:
            await client.open_session()
            client.send_grant(Grant(1, 1, 0, 1200))
            await asyncio.sleep(0.05)
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 500_000})
            result = await client.wait(sid)
            assert result.body == bulk_bytes(500_000)
            session = server.context.recent_sessions()[0]
            assert session.grants.grants_accepted == 1
            assert session.grants.window_bytes == 1200
            assert max_outstanding(session) > 100_000 or session.grants.bytes_written > 500_000

    def max_outstanding(session: NuwaSession) -> int:
        return session.grants.bytes_written - session.grants.cum_received_bytes

    run(main())


def test_a_session_opens_with_pbq_and_its_agent_decides(tmp_path: Path) -> None:
    """/nuwa?cc=pbq on a nuwa server: the connection's controller becomes PBQ, its agent
    starts (the checkout's models/pbq.onnx) and sets the window every 100 ms while a bulk
    body is served in full; grants do not bind a pbq session."""
    from nuwa_server.cc.pbq import PbqCongestionControl

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa") as server:
            async with wt_client(server) as client:
                assert await client.open_session("/nuwa?cc=pbq") == 200
                client.send_grant(Grant(1, 1, 0, 1200))
                sid = client.request({"v": 1, "op": "bulk", "size_bytes": 2_000_000})
                result = await client.wait(sid)
                assert result.body == bulk_bytes(2_000_000)
                await asyncio.sleep(0.35)
                session = server.context.sessions[-1]
                assert session.config.cc == "pbq" and not session.grants.config.enforce
                proto = server.context.protocols[-1]
                cc = proto._quic._loss._cc
                assert isinstance(cc, PbqCongestionControl)
                assert proto.pbq_agent is not None and proto.pbq_agent.cc is cc
                assert cc.agent_active and cc.decisions >= 2, cc.decisions

    run(main())


def test_a_session_opens_with_its_own_scheme(tmp_path: Path) -> None:
    """/nuwa?cc=cubic on a nuwa server: the session runs aioquic Cubic and ignores a tiny
    grant; an unknown scheme is refused with 400; a second session of another scheme on the
    same connection too (one controller per connection)."""
    from aioquic.quic.congestion.cubic import CubicCongestionControl

    async def main() -> None:
        async with running_server(tmp_path, cc="nuwa") as server:
            async with wt_client(server) as bad:
                assert await bad.open_session("/nuwa?cc=vegas") == 400
            async with wt_client(server) as client:
                assert await client.open_session("/nuwa?cc=cubic") == 200
                client.send_grant(Grant(1, 1, 0, 1200))
                await asyncio.sleep(0.05)
                sid = client.request({"v": 1, "op": "bulk", "size_bytes": 300_000})
                result = await client.wait(sid)
                assert result.body == bulk_bytes(300_000)
                session = server.context.sessions[-1]
                assert session.config.cc == "cubic" and not session.grants.config.enforce
                proto = server.context.protocols[-1]
                assert type(proto._quic._loss._cc) is CubicCongestionControl
                client._connect_done.clear()
                assert await client.open_session("/nuwa?cc=nuwa") == 400

    run(main())


def test_the_ack_of_a_grant_rides_on_the_data_it_releases(tmp_path: Path) -> None:
    """Every grant is an ack-eliciting packet. aioquic acknowledges 1 ms after arrival and
    writes ACK frames only once that time has come, so the frames a grant released left at
    once and an ACK-only packet followed: one per grant (issue 14: on the T-Mobile UMTS
    trace 2,522 of the downlink's 8,282 packets). The server now makes an owed ACK ride on
    the next data packet (connection.piggyback_ack) and holds it up to LOCAL_ACK_DELAY_S
    for one: here the ACK-only datagrams from the server are under a fifth of the grants
    (one per grant before: this test fails without piggyback_ack)."""
    small_bytes = 80  # an ACK-only 1-RTT packet: short header + ACK frame + AEAD tag

    async def main() -> tuple[int, int]:
        async with running_server(tmp_path, cc="nuwa", grant_timeout_us=30_000_000) as server, \
                wt_client(server) as client:
            await client.open_session()
            small = [0]
            receive = client.datagram_received

            def counting(data: bytes, addr: object) -> None:
                if len(data) <= small_bytes:
                    small[0] += 1
                receive(data, addr)  # type: ignore[arg-type]

            client.datagram_received = counting  # type: ignore[method-assign]
            sid = client.request({"v": 1, "op": "bulk", "size_bytes": 1_500_000})
            await _wait_stall(client)
            seq, grants = 1, 0
            while not client.results[sid].done.is_set():
                # a small window: each grant releases a few frames, as on a slow link
                client.send_grant(Grant(seq, seq, client.frame_bytes_received, 8_000,
                                        client.all_frames[-1][1].header.send_time_us, 0))
                seq += 1
                grants += 1
                await asyncio.sleep(0.004)
            result = await client.wait(sid)
            assert result.body == bulk_bytes(1_500_000)
            return small[0], grants

    small, grants = run(main())
    assert grants >= 100, grants
    assert small <= grants / 5, (small, grants)
