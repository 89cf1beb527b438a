"""What every connection of one server shares: config, content root, sessions, the oracle."""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .config import PACKET_OVERHEAD_BYTES, SessionConfig, now_us
from .content import ContentRoot
from .monitor import FlowMonitor, MonitorReport
from .oracle_sender import (
    ORACLE_HEADROOM_MS,
    oracle_outstanding_wire_bytes,
    oracle_window_wire_bytes,
    report_late_ms,
    wire_to_frame_bytes,
)
from .protocol import FRAME_HEADER_BYTES
from .session import NuwaSession

if TYPE_CHECKING:
    from .connection import NuwaProtocol
    from .oracle_wire import OracleReport

logger = logging.getLogger("nuwa_server.context")

MONITOR_INTERVAL_US = 100_000
"""How often the server's flow monitor samples every open session, µs."""

CLOSED_SESSIONS_KEPT = 16
"""Closed sessions :class:`ServerContext` keeps for inspection (``recent_sessions``);
older ones are forgotten, so a long-running server's memory does not grow with churn."""


@dataclass
class ServerContext:
    """What every connection of one server shares: config, content root, sessions.

    ``sessions`` holds the open sessions only: a closed session moves to
    ``recently_closed`` (the last :data:`CLOSED_SESSIONS_KEPT`, for inspection) and is
    then forgotten, so memory stays flat under session churn (issue 13). Counters:
    ``sessions_opened``, ``sessions_closed``, ``sessions_refused`` (CONNECTs refused
    for :data:`MAX_SESSIONS_PER_CONNECTION`).
    """

    config: SessionConfig
    content_root: ContentRoot | None = None
    sessions: list[NuwaSession] = field(default_factory=list)
    recently_closed: deque[NuwaSession] = field(
        default_factory=lambda: deque(maxlen=CLOSED_SESSIONS_KEPT))
    sessions_opened: int = 0
    sessions_closed: int = 0
    sessions_refused: int = 0
    connections: int = 0
    on_session: Callable[[NuwaSession], None] | None = None
    protocols: list[NuwaProtocol] = field(default_factory=list)
    oracle_window_bytes: int | None = None
    oracle_reports: int = 0
    oracle_headroom_ms: float = ORACLE_HEADROOM_MS
    """Oracle mode: standing queue the window keeps, ms (:mod:`.oracle_sender`)."""
    oracle_sent_wire_bytes: dict[int, int] = field(default_factory=dict)
    """Oracle mode: UDP payload bytes sent to each peer port (server.py counts them)."""
    _oracle_log: IO[str] | None = None
    monitor: FlowMonitor = field(default_factory=FlowMonitor)
    """Every open session's flow (:mod:`.monitor`), keyed by ``NuwaSession.serial``."""
    monitor_report: MonitorReport | None = None
    """The monitor's latest report (every :data:`MONITOR_INTERVAL_US`)."""
    _monitor_next_us: int = 0
    _monitor_flags: tuple[bool, tuple[int, ...]] = (False, ())

    def add_session(self, session: NuwaSession) -> None:
        """Register a newly opened session; it is moved out of ``sessions`` when it closes."""
        self.sessions_opened += 1
        session.serial = self.sessions_opened
        session.on_closed = self._session_closed
        self.sessions.append(session)

    def _session_closed(self, session: NuwaSession) -> None:
        self.sessions_closed += 1
        try:
            self.sessions.remove(session)
        except ValueError:
            return
        self.recently_closed.append(session)

    def recent_sessions(self) -> list[NuwaSession]:
        """Open sessions and the last :data:`CLOSED_SESSIONS_KEPT` closed ones, in
        opening order."""
        return sorted([*self.recently_closed, *self.sessions], key=lambda s: s.serial)

    @classmethod
    def create(cls, config: SessionConfig) -> ServerContext:
        """Validate ``config`` and open the content root (ValueError if unusable)."""
        config.validate()
        root = ContentRoot(config.content_root) if config.content_root else None
        return cls(config, root)

    def on_oracle_report(self, report: OracleReport) -> int:
        """Apply one oracle report (``--cc oracle``, :mod:`.oracle_sender`).

        Window = the capacity offered over the last base RTT, scaled to the
        base RTT + the report interval + ``oracle_headroom_ms`` + how late this
        server reads the report (:func:`.oracle_sender.oracle_window_wire_bytes`,
        :func:`.oracle_sender.report_late_ms`);
        outstanding bytes of each session = bytes the server sent to its flow
        − the flow's delivered and dropped bytes in the report
        (:func:`.oracle_sender.oracle_outstanding_wire_bytes`; flows matched
        by the peer's UDP port, counted in ``oracle_sent_wire_bytes``). Both
        are wire bytes (UDP payloads), turned into frame bytes by frame ÷
        (frame + QUIC packet overhead). A session whose flow is not in the
        report keeps its outstanding count. Logs the report to
        ``<log_dir>/oracle.jsonl`` and wakes the senders. Returns the window,
        frame bytes. Raises ValueError when the server is not in oracle mode.
        """
        if self.config.cc != "oracle":
            raise ValueError(f"oracle report in cc={self.config.cc} mode")
        frame = FRAME_HEADER_BYTES + self.config.frame_payload_bytes
        late_ms = report_late_ms(report.due_monotonic_ms, now_us() / 1000.0)
        window = wire_to_frame_bytes(
            oracle_window_wire_bytes(report.capacity_bytes, report.window_ms, report.interval_ms,
                                     self.oracle_headroom_ms + late_ms),
            frame, PACKET_OVERHEAD_BYTES)
        self.oracle_window_bytes = window
        self.oracle_reports += 1
        flows = {f.port: f for f in report.flows}
        outstanding_log: list[int] = []
        for proto in list(self.protocols):
            port = proto.peer_port()
            flow = flows.get(port) if port is not None else None
            outstanding = None
            if flow is not None:
                outstanding = wire_to_frame_bytes(oracle_outstanding_wire_bytes(
                    self.oracle_sent_wire_bytes.get(flow.port, 0), flow.delivered_bytes,
                    flow.dropped_bytes), frame, PACKET_OVERHEAD_BYTES)
            for session in proto.open_sessions():
                window = session.grants.set_window(window)
                if outstanding is not None:
                    outstanding_log.append(session.grants.set_oracle_outstanding(outstanding))
        if self.config.log_dir is not None:
            if self._oracle_log is None:
                self._oracle_log = open(Path(self.config.log_dir) / "oracle.jsonl", "w",
                                        buffering=1 << 14)
            self._oracle_log.write(
                f'{{"recv_time_us":{now_us()},"t_ms":{report.t_ms:.3f},'
                f'"window_ms":{report.window_ms},"interval_ms":{report.interval_ms:g},'
                f'"late_ms":{late_ms:.3f},'
                f'"capacity_bytes":{report.capacity_bytes},"window_bytes":{window},'
                f'"outstanding_bytes":{json.dumps(outstanding_log)}}}\n'
            )
        for proto in list(self.protocols):
            proto.transmit()
        return window

    def monitor_tick(self, now_us: int) -> MonitorReport | None:
        """Feed the flow monitor from every open session, at most every
        :data:`MONITOR_INTERVAL_US` (connections call it from ``transmit``): delivered
        bytes (the receiver's cumulative count when it grants, else bytes written − QUIC's
        bytes in flight), aioquic's latest RTT sample, the granted window. Logs a line when
        the unfair or starving flags change. Returns the new report, or None."""
        if now_us < self._monitor_next_us:
            return None
        self._monitor_next_us = now_us + MONITOR_INTERVAL_US
        mon = self.monitor
        live: set[int] = set()
        for proto in self.protocols:
            loss = proto._quic._loss
            for s in proto.open_sessions():
                fid = s.serial
                live.add(fid)
                if fid not in mon._flows:
                    mon.add_flow(fid, now_us)
                g = s.grants
                delivered = g.cum_received_bytes if g.grants_accepted else max(
                    0, g.bytes_written - int(loss.bytes_in_flight))
                mon.on_counters(fid, now_us, delivered)
                if loss._rtt_initialized:
                    mon.on_rtt(fid, now_us, int(loss._rtt_latest * 1e6))
                if g.grants_accepted:
                    mon.on_window(fid, g.window_bytes)
        for fid in [f for f in mon._flows if f not in live]:
            mon.remove_flow(fid)
        report = mon.report(now_us)
        self.monitor_report = report
        flags = (report.unfair, report.starving)
        if flags != self._monitor_flags:
            self._monitor_flags = flags
            logger.info("monitor: flows=%d jain=%s unfair=%s starving=%s", len(report.flows),
                        None if report.jain_index is None else round(report.jain_index, 3),
                        report.unfair, list(report.starving))
        return report

    def close_oracle_log(self) -> None:
        """Flush and close ``oracle.jsonl`` (idempotent)."""
        if self._oracle_log is not None:
            self._oracle_log.close()
            self._oracle_log = None
