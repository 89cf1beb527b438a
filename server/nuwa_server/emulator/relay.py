"""The real-time UDP relay: sockets and a precise event loop around the pure link models.

Clients send UDP to the listen socket; for each distinct client address the
relay opens its own UDP socket connected to the server and relays both ways,
so all clients share one downlink bottleneck.

    downlink: server -> DelayLine(delay_ms) -> TraceLink (logged) -> client
    uplink:   client -> DelayLine(uplink_delay_ms) -> RateLink | TraceLink -> server

Link time is ``time.monotonic() * 1000 - T0`` with ``T0 = floor(time.monotonic()
* 1000)`` at start (CLOCK_MONOTONIC, ms). Waiting uses ``select.select``
(microsecond timeouts, unlike epoll's milliseconds) until ``spin_us`` before
the next timed event, then polls; opportunities with nothing queued are not
waited for but are processed (and logged) at the next wake-up, at most
``max_block_ms`` later. ``select`` limits the relay to about 1000 clients.
"""

from __future__ import annotations

import math
import os
import random
import select
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .delay import DelayLine
from .link import Departure, QueueLimit, TraceLink
from .mmlog import MahimahiLogWriter, sidecar_path, write_sidecar
from .rate import RateLink
from .timing import LatenessHistogram, raise_priority, set_timer_slack_ns, udp_rcvbuf_errors
from .trace import Trace

Addr = tuple[Any, ...]
DownItem = tuple[bytes, Addr]
UpItem = tuple[bytes, socket.socket]

_MAX_DATAGRAM_BYTES = 65535
_READ_BURST = 256


class _UplinkModel(Protocol):
    @property
    def now_ms(self) -> float: ...

    def enqueue(self, now_ms: float, size_bytes: int, item: UpItem) -> bool: ...

    def service(self, now_ms: float) -> list[Departure[UpItem]]: ...

    def next_service_ms(self) -> float | None: ...


@dataclass
class RelayConfig:
    """Everything a relay run needs. Times in ms, rates in bit/s.

    ``server``/``listen``: (host, port); listen port 0 picks a free port.
    ``priority``: see :func:`~.timing.raise_priority` (``"auto"`` tries SCHED_FIFO).
    ``uplink_trace`` overrides ``uplink_rate_bps``. ``uplink_queue`` bounds the
    uplink queue (default 1000 packets). ``duration_s``: stop after this long
    (None: until :meth:`Relay.request_stop`).
    """

    server: tuple[str, int]
    trace: Trace
    log_path: Path
    listen: tuple[str, int] = ("127.0.0.1", 0)
    delay_ms: float = 25.0
    uplink_delay_ms: float = 25.0
    queue_limit: QueueLimit = field(default_factory=QueueLimit)
    loss_rate: float = 0.0
    seed: int = 0
    uplink_rate_bps: float = 50e6
    uplink_trace: Trace | None = None
    uplink_queue: QueueLimit = field(default_factory=QueueLimit)
    duration_s: float | None = None
    spin_us: float = 100.0
    max_block_ms: float = 10.0
    socket_buffer_bytes: int = 4 << 20
    timer_slack_ns: int = 10_000
    priority: str = "auto"


@dataclass
class RunStats:
    """What the relay measured about itself (for the summary)."""

    base_timestamp_ms: int = 0
    duration_s: float = 0.0
    cpu_s: float = 0.0
    cpu_user_s: float = 0.0
    cpu_sys_s: float = 0.0
    lateness: LatenessHistogram = field(default_factory=LatenessHistogram)
    clients: int = 0
    client_packets: int = 0
    server_packets: int = 0
    uplink_dropped: int = 0
    send_errors: int = 0
    udp_rcvbuf_errors: int | None = None
    priority: str = "none"
    link_counters: dict[str, int] = field(default_factory=dict)


def _resolve(host: str, port: int) -> tuple[int, Addr]:
    infos = socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM)
    if not infos:
        raise OSError(f"cannot resolve {host}")
    family, _, _, _, addr = infos[0]
    return int(family), tuple(addr)


class Relay:
    """One emulated path between clients and one server.

    ``on_ready(info)`` is called once the link clock has started with a dict
    holding ``listen_port``, ``base_timestamp_ms`` and paths.
    Use :meth:`open` (optional, binds early), :meth:`run` (blocks, returns
    :class:`RunStats`) and :meth:`request_stop` (safe from a signal handler).
    """

    def __init__(
        self, config: RelayConfig, on_ready: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        self.config = config
        self._on_ready = on_ready
        self._stop = False
        self._listen: socket.socket | None = None
        self._server_family, self._server_addr = _resolve(*config.server)
        self._upstream: dict[Addr, socket.socket] = {}
        self._client_of: dict[socket.socket, Addr] = {}
        self._fds: list[socket.socket] = []
        self.stats = RunStats()

    def request_stop(self) -> None:
        """Ask :meth:`run` to finish (within ``max_block_ms``)."""
        self._stop = True

    def open(self) -> int:
        """Bind the listen socket; returns the listen port."""
        if self._listen is None:
            family, addr = _resolve(*self.config.listen)
            s = socket.socket(family, socket.SOCK_DGRAM)
            s.setblocking(False)
            self._tune(s)
            s.bind(addr)
            self._listen = s
            self._fds.append(s)
        return int(self._listen.getsockname()[1])

    def _tune(self, s: socket.socket) -> None:
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                s.setsockopt(socket.SOL_SOCKET, opt, self.config.socket_buffer_bytes)
            except OSError:
                pass

    def _new_upstream(self, client: Addr) -> socket.socket:
        s = socket.socket(self._server_family, socket.SOCK_DGRAM)
        s.setblocking(False)
        self._tune(s)
        s.connect(self._server_addr)
        self._upstream[client] = s
        self._client_of[s] = client
        self._fds.append(s)
        self.stats.clients += 1
        return s

    def run(self) -> RunStats:
        """Relay until stopped or ``duration_s``; writes the log and sidecar; returns stats."""
        cfg = self.config
        port = self.open()
        listen = self._listen
        assert listen is not None
        set_timer_slack_ns(cfg.timer_slack_ns)
        self.stats.priority = raise_priority(cfg.priority)
        mono = time.monotonic
        t0 = math.floor(mono() * 1000.0)
        st = self.stats
        st.base_timestamp_ms = t0
        writer = MahimahiLogWriter(
            cfg.log_path,
            t0,
            header=[
                f"mahimahi-format downlink log (nuwa emulator) [{cfg.trace.name}]",
                f"queue: {cfg.queue_limit.describe()}",
                f"delay: {cfg.delay_ms} ms before the queue; loss: {cfg.loss_rate}",
            ],
        )
        down: TraceLink[DownItem] = TraceLink(
            cfg.trace, cfg.queue_limit, writer, cfg.loss_rate, random.Random(cfg.seed)
        )
        down_delay: DelayLine[DownItem] = DelayLine(cfg.delay_ms)
        up: _UplinkModel
        if cfg.uplink_trace is not None:
            up = TraceLink(cfg.uplink_trace, cfg.uplink_queue)
        else:
            up = RateLink(cfg.uplink_rate_bps, cfg.uplink_queue)
        up_delay: DelayLine[UpItem] = DelayLine(cfg.uplink_delay_ms)
        info = {
            "listen_host": listen.getsockname()[0],
            "listen_port": port,
            "server": f"{cfg.server[0]}:{cfg.server[1]}",
            "base_timestamp_ms": t0,
            "log": str(cfg.log_path),
            "sidecar": str(sidecar_path(cfg.log_path)),
        }
        write_sidecar(cfg.log_path, self._meta(t0, port))
        rcv0 = udp_rcvbuf_errors()
        cpu0 = os.times()
        if self._on_ready is not None:
            self._on_ready(info)

        end_ms = cfg.duration_s * 1000.0 if cfg.duration_s is not None else math.inf
        spin_ms = cfg.spin_us / 1000.0
        block_ms = cfg.max_block_ms
        hist = st.lateness
        sel = select.select
        last_flush = 0.0
        now = mono() * 1000.0 - t0
        try:
            while not self._stop and now < end_ms:
                # 1. move everything due by `now`
                for rel, item in down_delay.pop_due(now):
                    down.enqueue(max(rel, down.now_ms), len(item[0]), item)
                deps = down.service(now)
                if deps:
                    send_ms = mono() * 1000.0 - t0
                    last_opp = -1.0
                    for d in deps:
                        if d.departure_ms != last_opp:
                            last_opp = d.departure_ms
                            hist.add(send_ms - last_opp)
                        try:
                            listen.sendto(d.item[0], d.item[1])
                        except OSError:
                            st.send_errors += 1
                for rel, uitem in up_delay.pop_due(now):
                    if not up.enqueue(max(rel, up.now_ms), len(uitem[0]), uitem):
                        st.uplink_dropped += 1
                for u in up.service(now):
                    try:
                        u.item[1].send(u.item[0])
                    except OSError:
                        st.send_errors += 1
                if now - last_flush > 1000.0:
                    writer.flush()
                    last_flush = now
                # 2. next timed event
                nxt = end_ms
                x: float | None = down.next_service_ms()
                if x is not None and x < nxt:
                    nxt = x
                x = down_delay.next_ms()
                if x is not None and x < nxt:
                    x = down.first_opportunity_after_ms(max(x, down.now_ms))
                    if x < nxt:
                        nxt = x
                for x in (up_delay.next_ms(), up.next_service_ms()):
                    if x is not None and x < nxt:
                        nxt = x
                # 3. wait for it or for packets
                wait = nxt - (mono() * 1000.0 - t0)
                timeout = min(wait - spin_ms, block_ms) / 1000.0 if wait > spin_ms else 0.0
                readable = sel(self._fds, [], [], timeout)[0]
                now = mono() * 1000.0 - t0
                for s in readable:
                    if s is listen:
                        self._read_clients(listen, now, up_delay)
                    else:
                        self._read_server(s, now, down_delay)
            final = min(now, end_ms)
            if final >= down.now_ms:
                for rel, item in down_delay.pop_due(final):
                    down.enqueue(max(rel, down.now_ms), len(item[0]), item)
                down.service(final)
        finally:
            writer.close()
            st.duration_s = (mono() * 1000.0 - t0) / 1000.0
            cpu1 = os.times()
            st.cpu_user_s = cpu1.user - cpu0.user
            st.cpu_sys_s = cpu1.system - cpu0.system
            st.cpu_s = st.cpu_user_s + st.cpu_sys_s
            rcv1 = udp_rcvbuf_errors()
            st.udp_rcvbuf_errors = None if rcv0 is None or rcv1 is None else rcv1 - rcv0
            st.link_counters = dict(vars(down.counters))
            self._close()
        return st

    def _read_clients(self, listen: socket.socket, now: float, up_delay: DelayLine[UpItem]) -> None:
        for _ in range(_READ_BURST):
            try:
                data, addr = listen.recvfrom(_MAX_DATAGRAM_BYTES)
            except BlockingIOError:
                return
            except OSError:
                continue
            addr = tuple(addr)
            up = self._upstream.get(addr)
            if up is None:
                up = self._new_upstream(addr)
            self.stats.client_packets += 1
            up_delay.push(now, (data, up))

    def _read_server(self, s: socket.socket, now: float, down_delay: DelayLine[DownItem]) -> None:
        client = self._client_of[s]
        for _ in range(_READ_BURST):
            try:
                data = s.recv(_MAX_DATAGRAM_BYTES)
            except BlockingIOError:
                return
            except OSError:  # e.g. ECONNREFUSED from an earlier send: nothing to read
                continue
            self.stats.server_packets += 1
            down_delay.push(now, (data, client))

    def _close(self) -> None:
        for s in self._fds:
            s.close()
        self._fds.clear()
        self._listen = None

    def _meta(self, t0: int, port: int) -> dict[str, Any]:
        cfg = self.config
        return {
            "base_timestamp_ms": t0,
            "clock": "CLOCK_MONOTONIC (python time.monotonic()), milliseconds",
            "log_time": "log_ms = monotonic_ms - base_timestamp_ms (floor for arrivals)",
            "server_send_to_queue_arrival": (
                "log_ms ~= send_time_us / 1000 + downlink_delay_ms - base_timestamp_ms"
            ),
            "downlink_delay_ms": cfg.delay_ms,
            "uplink_delay_ms": cfg.uplink_delay_ms,
            "trace": cfg.trace.name,
            "trace_period_ms": cfg.trace.period_ms,
            "trace_mean_mbps": round(cfg.trace.mean_rate_bps / 1e6, 4),
            "queue": cfg.queue_limit.describe(),
            "queue_packets": cfg.queue_limit.packets,
            "queue_bytes": cfg.queue_limit.bytes_,
            "loss_rate": cfg.loss_rate,
            "seed": cfg.seed,
            "uplink": (
                {"trace": cfg.uplink_trace.name}
                if cfg.uplink_trace is not None
                else {"rate_mbps": cfg.uplink_rate_bps / 1e6}
            ),
            "listen": f"{cfg.listen[0]}:{port}",
            "server": f"{cfg.server[0]}:{cfg.server[1]}",
            "started_unix_s": time.time(),
        }
