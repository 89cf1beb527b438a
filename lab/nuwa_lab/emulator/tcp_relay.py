"""TCP relay mode of the emulator (``--tcp``): a byte stream through the same trace link.

For the WebSocket fallback (``nuwa_server.websocket``), which runs over TCP.
Each client connection accepted on the listen port gets its own TCP
connection to the server; bytes are relayed both ways:

    downlink: server -> read in units of ≤ 1504 bytes -> DelayLine(delay_ms)
              -> TraceLink (mahimahi opportunities, logged) -> client
    uplink:   client -> DelayLine(uplink_delay_ms) -> server

Link time, the log format (``mm-link --downlink-log``) and its sidecar are
those of the UDP relay (:mod:`.relay`), so :mod:`.analysis`, the summary and
the metrics that map ``send_time_us`` to queue arrivals work unchanged. A
"packet" in the log is one unit of ≤ 1504 TCP payload bytes read from the
server (no TCP/IP headers are counted; an opportunity carries 1504 payload
bytes, several units may share one).

**The semantic difference from the UDP relay: nothing is dropped.** TCP bytes
cannot be lost here without breaking the stream (and TCP would retransmit
them anyway), so the drop-tail bound becomes backpressure: the relay reads
from the server only while the bytes it holds for the downlink (in the
delay stage plus queued or in transit in the link) plus one unit fit the
byte limit (``--queue-bytes``, or ``--queue-packets`` × 1504). When the
queue is full it stops reading; the server's socket buffers fill and the
server's writes block (TCP's own flow control). The byte limit covers the
propagation stage and the queue together. Bytes waiting in the kernel's
socket buffers before the relay reads them (the server's send buffer, the
relay's receive buffer: default sizes, autotuned, up to a few hundred kB on
loopback) are outside the emulated queue and not in the log; the server's
stamps see them as queuing delay. (Shrinking the relay's receive buffer to
16 kB instead stalled the stream for 200 ms at a time: loopback's MSS is
64 kB, so the receiver never reopens a window smaller than that and the
sender waits for its persist timer.) There are no ``d`` (drop) lines
and loss (``--loss``) is refused. The uplink has a fixed delay only (no rate
or trace: it carries requests and 44-byte grants). Delivery to the client is
written when the opportunity is processed; the asyncio loop wakes with about
1 ms granularity, so deliveries are up to about 1-2 ms late (measured and
reported as lateness, as in the UDP relay); the log holds the scheduled
times.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .delay import DelayLine
from .link import QueueLimit, TraceLink
from .mmlog import MahimahiLogWriter, write_sidecar
from .relay import RunStats, format_hostport
from .trace import PACKET_SIZE_BYTES, Trace

UNIT_BYTES = PACKET_SIZE_BYTES
"""Bytes read from the server per link "packet" (one mahimahi opportunity's worth)."""



@dataclass
class TcpRelayConfig:
    """A TCP relay run. Times in ms.

    ``limit_bytes``: downlink bytes held by the relay at most (delay stage +
    queue, see module doc). ``max_block_ms``: longest sleep while idle (idle
    opportunities are logged at the next wake). Raises ValueError on a
    limit < one unit or a negative delay.
    """

    server: tuple[str, int]
    trace: Trace
    log_path: Path
    listen: tuple[str, int] = ("127.0.0.1", 0)
    delay_ms: float = 25.0
    uplink_delay_ms: float = 25.0
    limit_bytes: int = 1000 * UNIT_BYTES
    duration_s: float | None = None
    max_block_ms: float = 10.0

    def __post_init__(self) -> None:
        if self.limit_bytes < UNIT_BYTES:
            raise ValueError(
                f"TCP relay byte limit must be >= {UNIT_BYTES}, got {self.limit_bytes}")
        if not (self.delay_ms >= 0 and self.uplink_delay_ms >= 0):
            raise ValueError("delays must be >= 0 ms")


@dataclass(eq=False)
class _Conn:
    index: int
    client_w: asyncio.StreamWriter
    server_r: asyncio.StreamReader
    server_w: asyncio.StreamWriter
    up: DelayLine[bytes]
    down_held_bytes: int = 0
    server_eof: bool = False
    client_eof: bool = False
    closed: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class TcpRelay:
    """The TCP relay (module doc). :meth:`run` serves until :meth:`request_stop` or
    ``duration_s``; ``on_ready`` gets ``{"listen_port", "log", "mode": "tcp", ...}``."""

    def __init__(self, config: TcpRelayConfig,
                 on_ready: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.config = config
        self._on_ready = on_ready
        self._stop = asyncio.Event()
        self._kick = asyncio.Event()
        self._room = asyncio.Event()
        self._conns: list[_Conn] = []
        self._held_bytes = 0
        self._t0_ms = 0
        self._down: DelayLine[tuple[_Conn, bytes]] = DelayLine(config.delay_ms)
        self._link: TraceLink[tuple[_Conn, bytes]] | None = None
        self.stats = RunStats()
        self.max_held_bytes = 0
        self.backpressure_waits = 0

    def request_stop(self) -> None:
        """Make :meth:`run` return soon (signal handlers call this)."""
        self._stop.set()

    def _now_ms(self) -> float:
        return time.monotonic() * 1000.0 - self._t0_ms

    async def run(self) -> RunStats:
        """Listen, relay, and return the run's stats when stopped (log closed)."""
        cfg = self.config
        self._t0_ms = math.floor(time.monotonic() * 1000.0)
        cpu0 = os.times()
        wall0 = time.monotonic()
        log = MahimahiLogWriter(cfg.log_path, self._t0_ms, header=[
            f"mm-link-compatible log from nuwa_lab.emulator --tcp: trace {cfg.trace.name}",
            f"queue: tcp backpressure [bytes={cfg.limit_bytes}]",
        ])
        self._link = TraceLink(cfg.trace, QueueLimit(packets=None, bytes_=None), recorder=log)
        server = await asyncio.start_server(self._on_client, cfg.listen[0], cfg.listen[1])
        port = int(server.sockets[0].getsockname()[1])
        meta = self._meta(port)
        write_sidecar(cfg.log_path, meta)
        self.stats.base_timestamp_ms = self._t0_ms
        if self._on_ready is not None:
            self._on_ready({"listen_port": port, "log": str(cfg.log_path), "mode": "tcp",
                            "base_timestamp_ms": self._t0_ms, "limit_bytes": cfg.limit_bytes})
        try:
            await self._schedule(log)
        finally:
            server.close()
            for conn in list(self._conns):
                self._close_conn(conn)
            self._link.service(self._now_ms())
            log.close()
            cpu1 = os.times()
            st = self.stats
            st.duration_s = time.monotonic() - wall0
            st.cpu_user_s = cpu1.user - cpu0.user
            st.cpu_sys_s = cpu1.system - cpu0.system
            st.cpu_s = st.cpu_user_s + st.cpu_sys_s
            st.link_counters = dict(vars(self._link.counters))
        return self.stats

    # ------------------------------------------------------------------ connections

    async def _on_client(self, client_r: asyncio.StreamReader,
                         client_w: asyncio.StreamWriter) -> None:
        cfg = self.config
        try:
            server_r, server_w = await asyncio.open_connection(cfg.server[0], cfg.server[1])
        except OSError:
            client_w.close()
            return
        sock = server_w.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        csock = client_w.get_extra_info("socket")
        if csock is not None:
            with contextlib.suppress(OSError):
                csock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.stats.clients += 1
        conn = _Conn(self.stats.clients, client_w, server_r, server_w,
                     DelayLine(cfg.uplink_delay_ms))
        self._conns.append(conn)
        conn.tasks = [asyncio.create_task(self._read_server(conn)),
                      asyncio.create_task(self._read_client(conn, client_r))]

    async def _read_server(self, conn: _Conn) -> None:
        limit = self.config.limit_bytes
        while not conn.closed:
            while self._held_bytes + UNIT_BYTES > limit:  # backpressure: queue full
                self.backpressure_waits += 1
                self._room.clear()
                await self._room.wait()
            try:
                data = await conn.server_r.read(UNIT_BYTES)
            except OSError:
                data = b""
            if not data:
                conn.server_eof = True
                self._kick.set()
                return
            self._held_bytes += len(data)
            self.max_held_bytes = max(self.max_held_bytes, self._held_bytes)
            conn.down_held_bytes += len(data)
            self.stats.server_packets += 1
            self._down.push(self._now_ms(), (conn, data))
            self._kick.set()

    async def _read_client(self, conn: _Conn, client_r: asyncio.StreamReader) -> None:
        while not conn.closed:
            try:
                data = await client_r.read(1 << 16)
            except OSError:
                data = b""
            if not data:
                conn.client_eof = True
                self._kick.set()
                return
            self.stats.client_packets += 1
            conn.up.push(self._now_ms(), data)
            self._kick.set()

    def _close_conn(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        for t in conn.tasks:
            t.cancel()
        for w in (conn.client_w, conn.server_w):
            with contextlib.suppress(Exception):
                w.close()
        self._held_bytes -= conn.down_held_bytes
        conn.down_held_bytes = 0
        self._room.set()
        if conn in self._conns:
            self._conns.remove(conn)

    # ------------------------------------------------------------------ the clock

    async def _schedule(self, log: MahimahiLogWriter) -> None:
        cfg = self.config
        link = self._link
        assert link is not None
        deadline = None if cfg.duration_s is None else self._now_ms() + cfg.duration_s * 1000
        last_flush = 0.0
        while not self._stop.is_set():
            now = self._now_ms()
            if deadline is not None and now >= deadline:
                break
            # delay stage -> queue, each unit at its own release time
            for rel_ms, item in self._down.pop_due(now):
                link.enqueue(max(rel_ms, link.now_ms), len(item[1]), item)
            freed = False
            for dep in link.service(now):
                conn, data = dep.item
                self.stats.lateness.add(max(0.0, now - dep.departure_ms))
                self._held_bytes -= len(data)
                freed = True
                if conn.closed:
                    continue
                conn.down_held_bytes -= len(data)
                conn.client_w.write(data)
            for conn in list(self._conns):
                for _, data in conn.up.pop_due(now):
                    if not conn.closed:
                        conn.server_w.write(data)
                # a side that ended, once everything it sent went through: end the other
                if conn.server_eof and conn.down_held_bytes == 0:
                    self._close_conn(conn)
                elif conn.client_eof and len(conn.up) == 0:
                    self._close_conn(conn)
            if freed:
                self._room.set()
            if now - last_flush > 200:
                log.flush()
                last_flush = now
            nxt = now + cfg.max_block_ms
            svc = link.next_service_ms()
            if svc is not None:
                nxt = min(nxt, svc)
            d = self._down.next_ms()
            if d is not None:
                nxt = min(nxt, d)
            for conn in self._conns:
                u = conn.up.next_ms()
                if u is not None:
                    nxt = min(nxt, u)
            if deadline is not None:
                nxt = min(nxt, deadline)
            self.stats.wakeups += 1
            self._kick.clear()
            timeout_s = max(0.0, (nxt - self._now_ms()) / 1000.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), timeout_s)

    def _meta(self, port: int) -> dict[str, Any]:
        cfg = self.config
        return {
            "base_timestamp_ms": self._t0_ms,
            "mode": "tcp",
            "clock": "CLOCK_MONOTONIC (python time.monotonic()), milliseconds",
            "log_time": "log_ms = monotonic_ms - base_timestamp_ms (floor for arrivals)",
            "server_send_to_queue_arrival": (
                "log_ms ~= send_time_us / 1000 + downlink_delay_ms - base_timestamp_ms "
                "(plus any wait in the server's and the relay's socket buffers)"
            ),
            "downlink_delay_ms": cfg.delay_ms,
            "uplink_delay_ms": cfg.uplink_delay_ms,
            "trace": cfg.trace.name,
            "trace_period_ms": cfg.trace.period_ms,
            "trace_mean_mbps": round(cfg.trace.mean_rate_bps / 1e6, 4),
            "queue": f"tcp backpressure [bytes={cfg.limit_bytes}] (delay stage + queue)",
            "queue_packets": None,
            "queue_bytes": cfg.limit_bytes,
            "loss_rate": 0.0,
            "uplink": {"delay_only": True},
            "listen": format_hostport(cfg.listen[0], port),
            "server": format_hostport(*cfg.server),
            "started_unix_s": time.time(),
        }
