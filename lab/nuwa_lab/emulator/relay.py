"""The real-time UDP relay: sockets and a precise event loop around the pure link models.

Clients send UDP to the listen socket; for each distinct client address the
relay opens its own UDP socket connected to the server and relays both ways,
so all clients share one downlink bottleneck. Extra ``routes`` (listen address →
server) put more servers behind the same bottleneck: a client is relayed to the
server of the listen socket it sent to, and every route's downlink packets share
the one delay line, queue and trace (mixed-flow and competitor experiments: a
``--cc cubic`` server beside a nuwa server).

    downlink: server -> DelayLine(delay_ms) -> TraceLink (logged) -> client
    uplink:   client -> RateLink(uplink_delay_ms, rate)           -> server
              client -> DelayLine(uplink_delay_ms) -> TraceLink    -> server (--uplink-trace)

Link time is ``time.monotonic() * 1000 - T0`` with ``T0 = floor(time.monotonic()
* 1000)`` at start (CLOCK_MONOTONIC, ms). Arrival times are the kernel's
receive stamps (:mod:`.rxtime`). The loop wakes only for timed events: an
opportunity while the queue is backlogged, the first opportunity after a
delayed packet reaches the queue, an uplink departure. It sleeps with
``select.select`` (microsecond timeouts, unlike epoll's milliseconds) until
``spin_us`` before the event, then polls. While the next event is less than
``read_lag_ms`` away it leaves new datagrams in the socket buffers (their
kernel stamps keep their arrival times exact); otherwise it also wakes on
them. Idle opportunities are processed and logged at the next wake-up, at
most ``max_block_ms`` later. ``select`` limits the relay to about 1000 clients.
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
from typing import Any

from .delay import DelayLine
from .link import QueueLimit, TraceLink
from .mmlog import MahimahiLogWriter, sidecar_path, write_sidecar
from .oracle import ORACLE_MAX_FLOWS, CapacityCounter, FlowBytes, OracleReport, encode_report
from .rate import RateLink
from .rxtime import ANC_BYTES, RxClock, enable_rx_timestamps
from .timing import (
    LatenessHistogram,
    lower_priority,
    raise_priority,
    set_timer_slack_ns,
    udp_rcvbuf_errors,
)
from .trace import Trace

Addr = tuple[Any, ...]
ClientKey = tuple[int, Addr]
"""A client flow: (index of the route whose listen socket it sent to, its address)."""
DownItem = tuple[bytes, ClientKey]
UpItem = tuple[bytes, socket.socket]

_MAX_DATAGRAM_BYTES = 65535
_READ_BURST = 256


@dataclass
class RelayConfig:
    """Everything a relay run needs. Times in ms, rates in bit/s.

    ``server``/``listen``: (host, port); listen port 0 picks a free port.
    ``priority``: see :func:`~.timing.raise_priority` (``"auto"`` tries SCHED_FIFO).
    ``uplink_trace`` overrides ``uplink_rate_bps``. ``uplink_queue`` bounds the
    uplink queue (default 1000 packets). ``duration_s``: stop after this long
    (None: until :meth:`Relay.request_stop`).
    ``oracle_to``: (host, port) of the server's oracle socket; when set, every
    ``oracle_interval_ms`` the capacity offered over the last
    ``oracle_window_ms`` (default: delay_ms + uplink_delay_ms, the base RTT)
    is sent there ``uplink_delay_ms`` late, with each client flow's
    delivered and dropped bytes at the same link time (:mod:`.oracle`).
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
    spin_us: float = 0.0
    read_lag_ms: float = 2.0
    max_block_ms: float = 10.0
    socket_buffer_bytes: int = 4 << 20
    timer_slack_ns: int = 10_000
    priority: str = "auto"
    oracle_to: tuple[str, int] | None = None
    oracle_interval_ms: float = 10.0
    oracle_window_ms: float | None = None
    routes: tuple[tuple[tuple[str, int], tuple[str, int]], ...] = ()
    """Extra (listen, server) pairs behind the same bottleneck; route 0 is
    (``listen``, ``server``), these are routes 1, 2, ..."""
    flow_log_path: Path | None = None
    """When set, every downlink departure is kept per client flow (departure opportunity ms,
    UDP payload bytes, queuing delay ms = departure − arrival at the queue) and written here
    as JSON at the end (:func:`write_flow_log`): the per-flow view of the log, for
    mixed-flow runs (``./nuwa mix``)."""


@dataclass
class FlowStats:
    """One client flow's downlink bytes at the bottleneck (UDP payload bytes)."""

    route: int
    listen_port: int
    server: str
    client: str
    delivered_bytes: int
    dropped_bytes: int
    upstream_port: int = 0
    """Port of the relay's socket toward the server: the flow's peer port as the server
    sees it (how a server's session log is matched to a flow)."""


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
    wakeups: int = 0
    rx_timestamps: bool = False
    rx_fallbacks: int = 0
    client_packets: int = 0
    server_packets: int = 0
    uplink_dropped: int = 0
    send_errors: int = 0
    udp_rcvbuf_errors: int | None = None
    priority: str = "none"
    link_counters: dict[str, int] = field(default_factory=dict)
    oracle_reports: int = 0
    flows: list[FlowStats] = field(default_factory=list)


def write_flow_log(path: Path, flows: list[FlowStats],
                   departures: list[tuple[list[float], list[int], list[float]]]) -> None:
    """Write the per-flow departures as JSON: ``{"flows": [{route, listen_port, server,
    client, delivered_bytes, dropped_bytes, depart_ms: [...], size_bytes: [...],
    queue_delay_ms: [...]}, ...]}``, times on the log's clock (ms since
    ``base_timestamp_ms``), queuing delay = departure opportunity − arrival at the queue
    (the log's definition, :mod:`.analysis`), sizes in UDP payload bytes. ``departures[i]``
    belongs to ``flows[i]``. Raises ``OSError`` if it cannot be written."""
    import json

    out = []
    for f, (dep, size, qd) in zip(flows, departures, strict=True):
        out.append({**vars(f), "depart_ms": [round(x, 3) for x in dep], "size_bytes": size,
                    "queue_delay_ms": [round(x, 3) for x in qd]})
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"flows": out}, separators=(",", ":")))
    tmp.replace(path)


def format_hostport(host: str, port: int) -> str:
    """``host:port``, with IPv6 literals in brackets (``[::1]:4433``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


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
        self._routes = ((config.listen, config.server), *config.routes)
        self._servers = [_resolve(*server) for _, server in self._routes]
        self._listens: list[socket.socket] = []
        self._route_of: dict[socket.socket, int] = {}
        self._upstream: dict[ClientKey, socket.socket] = {}
        self._client_of: dict[socket.socket, ClientKey] = {}
        self._fds: list[socket.socket] = []
        self.stats = RunStats()
        self._rx = RxClock(0)
        self._down_delay: DelayLine[DownItem] = DelayLine(0.0)
        self._up_delay: DelayLine[UpItem] | None = None
        self._up_rate: RateLink[UpItem] = RateLink(1.0)
        self._last_up_ms = float("-inf")
        self._last_down_ms = float("-inf")
        # the oracle's delivered-bytes clocks, per client: cumulative UDP payload bytes
        # that left the bottleneck toward it / that the queue dropped (issue 13 item 3)
        self._delivered_bytes: dict[ClientKey, int] = {}
        self._dropped_bytes: dict[ClientKey, int] = {}
        # per-flow departures (flow_log_path): client -> ([depart ms], [bytes], [queue ms])
        self._departures: dict[ClientKey, tuple[list[float], list[int], list[float]]] = {}

    def request_stop(self) -> None:
        """Ask :meth:`run` to finish (within ``max_block_ms``)."""
        self._stop = True

    def open(self) -> int:
        """Bind every route's listen socket; returns route 0's listen port
        (:meth:`listen_ports` has all). Raises ``OSError`` if one cannot be bound."""
        if self._listen is None:
            for i, (listen, _) in enumerate(self._routes):
                family, addr = _resolve(*listen)
                s = socket.socket(family, socket.SOCK_DGRAM)
                s.setblocking(False)
                self._tune(s)
                try:
                    s.bind(addr)
                except OSError:
                    s.close()
                    self._close()
                    raise
                self._listens.append(s)
                self._route_of[s] = i
                self._fds.append(s)
            self._listen = self._listens[0]
        return int(self._listen.getsockname()[1])

    def listen_ports(self) -> list[int]:
        """Each route's bound listen port, in route order (after :meth:`open`)."""
        return [int(s.getsockname()[1]) for s in self._listens]

    def _tune(self, s: socket.socket) -> None:
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                s.setsockopt(socket.SOL_SOCKET, opt, self.config.socket_buffer_bytes)
            except OSError:
                pass

    def _new_upstream(self, client: ClientKey) -> socket.socket:
        family, server_addr = self._servers[client[0]]
        s = socket.socket(family, socket.SOCK_DGRAM)
        s.setblocking(False)
        self._tune(s)
        s.connect(server_addr)
        enable_rx_timestamps(s)
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
        st = self.stats
        set_timer_slack_ns(cfg.timer_slack_ns)
        st.priority = raise_priority(cfg.priority)
        st.rx_timestamps = all([enable_rx_timestamps(ls) for ls in self._listens])
        mono = time.monotonic
        t0 = math.floor(mono() * 1000.0)
        st.base_timestamp_ms = t0
        self._rx = RxClock(t0)
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
        self._down_delay = down_delay
        up_trace: TraceLink[UpItem] | None = None
        up_delay: DelayLine[UpItem] = DelayLine(cfg.uplink_delay_ms)
        up_rate: RateLink[UpItem] = RateLink(
            cfg.uplink_rate_bps, cfg.uplink_queue, cfg.uplink_delay_ms
        )
        if cfg.uplink_trace is not None:
            up_trace = TraceLink(cfg.uplink_trace, cfg.uplink_queue)
        self._up_delay = up_delay if up_trace is not None else None
        self._up_rate = up_rate
        # causal oracle (issue 5): capacity over the last base RTT, one uplink delay late
        oracle_sock: socket.socket | None = None
        oracle_delay: DelayLine[bytes] = DelayLine(cfg.uplink_delay_ms)
        oracle_next_ms = math.inf
        oracle_window_ms = 0
        oracle_counter = CapacityCounter(cfg.trace)
        if cfg.oracle_to is not None:
            o_family, o_addr = _resolve(*cfg.oracle_to)
            oracle_sock = socket.socket(o_family, socket.SOCK_DGRAM)
            oracle_sock.setblocking(False)
            oracle_sock.connect(o_addr)
            oracle_next_ms = cfg.oracle_interval_ms
            w = cfg.oracle_window_ms
            oracle_window_ms = max(1, round(w if w is not None
                                            else cfg.delay_ms + cfg.uplink_delay_ms))
        info = {
            "listen_host": listen.getsockname()[0],
            "listen_port": port,
            "server": format_hostport(*cfg.server),
            "listen_ports": self.listen_ports(),
            "servers": [format_hostport(*server) for _, server in self._routes],
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
        # reading late is harmless while a packet's release is still in the future
        lag_ms = min(cfg.read_lag_ms, cfg.delay_ms / 4.0, cfg.uplink_delay_ms / 4.0)
        if not st.rx_timestamps:
            lag_ms = 0.0
        hist = st.lateness
        listens = self._listens
        route_of = self._route_of
        delivered = self._delivered_bytes
        dropped = self._dropped_bytes
        record = cfg.flow_log_path is not None
        departures = self._departures
        sel = select.select
        fds = self._fds
        no_fds: list[socket.socket] = []
        last_flush = 0.0
        now = mono() * 1000.0 - t0
        try:
            while not self._stop and now < end_ms:
                # 1. move everything due by `now`
                for rel, item in down_delay.pop_due(now):
                    if not down.enqueue(max(rel, down.now_ms), len(item[0]), item):
                        dropped[item[1]] = dropped.get(item[1], 0) + len(item[0])
                deps = down.service(now)
                if deps:
                    send_ms = mono() * 1000.0 - t0
                    last_opp = -1.0
                    for d in deps:
                        if d.departure_ms != last_opp:
                            last_opp = d.departure_ms
                            hist.add(send_ms - last_opp)
                        delivered[d.item[1]] = delivered.get(d.item[1], 0) + len(d.item[0])
                        if record:
                            rec = departures.get(d.item[1])
                            if rec is None:
                                rec = departures[d.item[1]] = ([], [], [])
                            rec[0].append(d.departure_ms)
                            rec[1].append(d.size_bytes)
                            rec[2].append(d.departure_ms - d.arrival_ms)
                        try:
                            listens[d.item[1][0]].sendto(d.item[0], d.item[1][1])
                        except OSError:
                            st.send_errors += 1
                if up_trace is not None:
                    for rel, uitem in up_delay.pop_due(now):
                        if not up_trace.enqueue(max(rel, up_trace.now_ms), len(uitem[0]), uitem):
                            st.uplink_dropped += 1
                    ups = up_trace.service(now)
                else:
                    ups = up_rate.service(now)
                for u in ups:
                    try:
                        u.item[1].send(u.item[0])
                    except OSError:
                        st.send_errors += 1
                if oracle_sock is not None:
                    while oracle_next_ms <= now:
                        cap = oracle_counter.capacity_bytes(
                            oracle_next_ms - oracle_window_ms, oracle_next_ms
                        )
                        # departures up to `now` (≤ a wake-up's lateness past t) are counted
                        msg = encode_report(OracleReport(oracle_next_ms, oracle_window_ms, cap,
                                                         st.oracle_reports,
                                                         cfg.oracle_interval_ms,
                                                         self._flow_clocks(),
                                                         t0 + oracle_next_ms
                                                         + cfg.uplink_delay_ms))
                        st.oracle_reports += 1
                        oracle_delay.push(oracle_next_ms, msg)
                        oracle_next_ms += cfg.oracle_interval_ms
                    for _, omsg in oracle_delay.pop_due(now):
                        try:
                            oracle_sock.send(omsg)
                        except OSError:
                            st.send_errors += 1
                if now - last_flush > 1000.0:
                    writer.flush()
                    self._rx.maybe_refresh(now)
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
                if oracle_next_ms < nxt:
                    nxt = oracle_next_ms
                x = oracle_delay.next_ms()
                if x is not None and x < nxt:
                    nxt = x
                if up_trace is not None:
                    x = up_trace.next_service_ms()
                    if x is not None and x < nxt:
                        nxt = x
                    x = up_delay.next_ms()
                    if x is not None and x < nxt:
                        x = up_trace.first_opportunity_after_ms(max(x, up_trace.now_ms))
                        if x < nxt:
                            nxt = x
                else:
                    x = up_rate.next_service_ms()
                    if x is not None and x < nxt:
                        nxt = x
                # 3. sleep towards it; watch the sockets only if it is far away
                wait = nxt - (mono() * 1000.0 - t0)
                timeout = min(wait - spin_ms, block_ms) / 1000.0 if wait > spin_ms else 0.0
                if wait > lag_ms:
                    readable = sel(fds, no_fds, no_fds, timeout)[0]
                else:
                    if timeout > 0.0:
                        sel(no_fds, no_fds, no_fds, timeout)
                    readable = sel(fds, no_fds, no_fds, 0.0)[0]
                st.wakeups += 1
                now = mono() * 1000.0 - t0
                for s in readable:
                    if s in route_of:
                        self._read_clients(s, now)
                    else:
                        self._read_server(s, now)
            final = min(now, end_ms)
            if final >= down.now_ms:
                for rel, item in down_delay.pop_due(final):
                    down.enqueue(max(rel, down.now_ms), len(item[0]), item)
                down.service(final)
        finally:
            lower_priority()
            writer.close()
            st.duration_s = (mono() * 1000.0 - t0) / 1000.0
            cpu1 = os.times()
            st.cpu_user_s = cpu1.user - cpu0.user
            st.cpu_sys_s = cpu1.system - cpu0.system
            st.cpu_s = st.cpu_user_s + st.cpu_sys_s
            rcv1 = udp_rcvbuf_errors()
            st.udp_rcvbuf_errors = None if rcv0 is None or rcv1 is None else rcv1 - rcv0
            st.link_counters = dict(vars(down.counters))
            st.rx_fallbacks = self._rx.fallbacks
            st.flows = self._flow_stats()
            if cfg.flow_log_path is not None:
                write_flow_log(cfg.flow_log_path, st.flows, [
                    self._departures.get(key, ([], [], [])) for key in self._upstream])
            if oracle_sock is not None:
                oracle_sock.close()
            self._close()
        return st

    def _flow_clocks(self) -> tuple[FlowBytes, ...]:
        """Each client's delivered and dropped downlink bytes so far, keyed by the port of
        the relay's socket toward the server (what the server sees as the peer port)."""
        out: list[FlowBytes] = []
        for client, up in list(self._upstream.items())[-ORACLE_MAX_FLOWS:]:
            out.append(FlowBytes(int(up.getsockname()[1]), self._delivered_bytes.get(client, 0),
                                 self._dropped_bytes.get(client, 0)))
        return tuple(out)

    def _flow_stats(self) -> list[FlowStats]:
        out: list[FlowStats] = []
        for key in self._upstream:
            route, addr = key
            out.append(FlowStats(route, int(self._listens[route].getsockname()[1]),
                                 format_hostport(*self._routes[route][1]),
                                 format_hostport(str(addr[0]), int(addr[1])),
                                 self._delivered_bytes.get(key, 0),
                                 self._dropped_bytes.get(key, 0),
                                 int(self._upstream[key].getsockname()[1])))
        return out

    def _read_clients(self, listen: socket.socket, now: float) -> None:
        route = self._route_of[listen]
        rx = self._rx
        last = self._last_up_ms
        for _ in range(_READ_BURST):
            try:
                data, anc, _flags, addr = listen.recvmsg(_MAX_DATAGRAM_BYTES, ANC_BYTES)
            except BlockingIOError:
                break
            except OSError:
                continue
            t = rx.arrival_ms(anc, now)
            if t < last:
                t = last
            last = t
            key = (route, tuple(addr))
            up = self._upstream.get(key)
            if up is None:
                up = self._new_upstream(key)
            self.stats.client_packets += 1
            if self._up_delay is not None:
                self._up_delay.push(t, (data, up))
            elif not self._up_rate.enqueue(t, len(data), (data, up)):
                self.stats.uplink_dropped += 1
        self._last_up_ms = last

    def _read_server(self, s: socket.socket, now: float) -> None:
        client = self._client_of[s]
        rx = self._rx
        last = self._last_down_ms
        for _ in range(_READ_BURST):
            try:
                data, anc, _flags, _addr = s.recvmsg(_MAX_DATAGRAM_BYTES, ANC_BYTES)
            except BlockingIOError:
                break
            except OSError:  # e.g. ECONNREFUSED from an earlier send: nothing to read
                continue
            t = rx.arrival_ms(anc, now)
            if t < last:  # keep the delay line in order across sockets
                t = last
            last = t
            self.stats.server_packets += 1
            self._down_delay.push(t, (data, client))
        self._last_down_ms = last

    def _close(self) -> None:
        for s in self._fds:
            s.close()
        self._fds.clear()
        self._listens.clear()
        self._route_of.clear()
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
            "listen": format_hostport(cfg.listen[0], port),
            "server": format_hostport(*cfg.server),
            "routes": [{"listen": format_hostport(listen[0], p), "server": format_hostport(*srv)}
                       for (listen, srv), p in zip(self._routes, self.listen_ports(),
                                                   strict=True)],
            "started_unix_s": time.time(),
        }
