"""One WebTransport session: its request streams, frame sequence, grants and logs.

Transport-free: the QUIC connection (:mod:`.connection`) and the WebSocket
fallback (:mod:`.websocket`) feed it requests and grants and write its frames.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .bodies import BulkBody, FileBody
from .cmcd import parse_cmcd
from .config import GRANT_FLOOD_CLOSE_CODE, SessionConfig, now_us
from .content import ContentError, ContentRoot, satisfiable_range
from .grants import FloodGuard, GrantDecision, GrantState
from .packet_train import PacketTrain
from .protocol import (
    MAX_REQUEST_BYTES,
    U32_MOD,
    BulkRequest,
    CancelRequest,
    ErrorKind,
    FrameType,
    GetRequest,
    ProtocolError,
    encode_error,
    encode_head,
    parse_request,
)
from .session_log import SessionLog
from .streams import ResponseStream

logger = logging.getLogger("nuwa_server.session")

STATUS_CANCELLED = 499
"""ERROR status of a response the client cancelled (nginx's "client closed request")."""

EARLY_CANCELS_KEPT = 256
"""Cancelled request ids remembered before their request arrives (bounded)."""


@dataclass(slots=True)
class DepartureStats:
    """Evidence that stamps are departure times: transmit() calls after which
    never-sent frame bytes were still queued (and the most such bytes), and
    calls after which only retransmissions were queued."""

    transmits_with_unsent_new_bytes: int = 0
    max_unsent_new_bytes: int = 0
    transmits_with_retransmit_backlog: int = 0


class NuwaSession:
    """One WebTransport session: its request streams, frame sequence and grants.

    Created by :class:`NuwaProtocol` when a CONNECT to ``/nuwa`` is accepted.
    ``session_id`` is the CONNECT stream id (draft-ietf-webtrans-http3 §2).
    """

    def __init__(
        self,
        session_id: int,
        name: str,
        config: SessionConfig,
        content_root: ContentRoot | None,
        start_time_us: int,
    ) -> None:
        self.session_id = session_id
        self.name = name
        self.config = config
        self.content_root = content_root
        self.start_time_us = start_time_us
        self.grants = GrantState(config.grant_config(), start_time_us)
        self.flood = FloodGuard()
        self.flooded = False
        self.streams: dict[int, ResponseStream] = {}
        self.finished_stream_ids: set[int] = set()
        self.active: deque[ResponseStream] = deque()
        self.next_seq = 0
        self.requests = 0
        self.statuses: Counter[int] = Counter()
        # Cancel (PROTOCOL.md "Cancelling a request"): live responses by request id,
        # and ids cancelled before their request arrived (streams are not ordered).
        self.by_request_id: dict[int, ResponseStream] = {}
        self.early_cancels: deque[int] = deque(maxlen=EARLY_CANCELS_KEPT)
        self.cancelled = 0
        self.departure = DepartureStats()
        self.rtt_min_us: int | None = None
        self.rtt_last_us: int | None = None
        self.rtt_samples = 0
        self.switches = 0
        self.train = PacketTrain()
        """The packet train the switch rule arms (:mod:`.packet_train`); idle otherwise."""
        self.ceiling_stats: dict[str, int | None] | None = None
        """The Cubic ceiling's counters at the close (``ceiling.stats()``; None: no ceiling)."""
        """Live controller switches of this session's connection while it was open
        (:mod:`.switcher`)."""
        self.closed = False
        self.close_reason = ""
        self.end_time_us: int | None = None
        self.serial = 0
        """Opening order on the server (set by :meth:`ServerContext.add_session`)."""
        self.on_closed: Callable[[NuwaSession], None] | None = None
        directory = Path(config.log_dir) / name if config.log_dir else None
        self.log = SessionLog(directory)
        self.log.event("config", session=name, session_id=session_id, **asdict(config),
                       quic_congestion_control=config.quic_congestion_control,
                       grant_config=asdict(config.grant_config()))

    # ------------------------------------------------------------------ input

    def on_stream_data(self, stream_id: int, data: bytes, ended: bool) -> None:
        """Request bytes from the client on ``stream_id``; the request starts at FIN."""
        stream = self.streams.get(stream_id)
        if stream is None:
            if self.closed or stream_id in self.finished_stream_ids:
                return
            stream = ResponseStream(stream_id)
            self.streams[stream_id] = stream
        if stream.responding:
            return
        stream.request += data
        if len(stream.request) > MAX_REQUEST_BYTES:
            err = ProtocolError(
                ErrorKind.REQUEST_TOO_LARGE, f"more than {MAX_REQUEST_BYTES} bytes"
            )
            self._respond_error(stream, 400, str(err), kind=err.kind.value)
        elif ended:
            self._handle_request(stream)

    def _handle_request(self, stream: ResponseStream) -> None:
        self.requests += 1
        raw = bytes(stream.request)
        try:
            request = parse_request(raw)
        except ProtocolError as exc:
            self._respond_error(stream, exc.status, str(exc), kind=exc.kind.value)
            return
        if isinstance(request, CancelRequest):
            self._handle_cancel(stream, request.request_id)
            return
        if request.request_id is not None:
            stream.request_id = request.request_id
            if request.request_id in self.early_cancels:
                self.early_cancels.remove(request.request_id)
                self._respond_error(stream, STATUS_CANCELLED, "cancelled by the client",
                                    kind="cancelled")
                return
            self.by_request_id[request.request_id] = stream
        if isinstance(request, BulkRequest):
            self.log.event("request", stream_id=stream.stream_id, op="bulk",
                           size_bytes=request.size_bytes, id=request.request_id)
            stream.control.append((
                FrameType.HEAD,
                encode_head(200, request.size_bytes, request.size_bytes,
                            "application/octet-stream"),
            ))
            stream.body = BulkBody(request.size_bytes, self.config.frame_payload_bytes)
            self._start(stream, 200)
            return
        self._handle_get(stream, request)

    def _handle_get(self, stream: ResponseStream, request: GetRequest) -> None:
        # CMCD keys the player sent (CTA-5004; bl, mtp, br, ...): recorded, nothing else changes.
        extra = {"cmcd": parse_cmcd(request.cmcd)} if request.cmcd is not None else {}
        self.log.event("request", stream_id=stream.stream_id, op="get", path=request.path,
                       range=request.byte_range, id=request.request_id, **extra)
        if self.content_root is None:
            self._respond_error(stream, 404, "no content root", kind="no_content_root")
            return
        try:
            resolved = self.content_root.resolve(request.path)
            byte_range = satisfiable_range(request.byte_range, resolved.size_bytes)
        except ContentError as exc:
            if exc.status == 403:
                logger.warning("session %s: refused path %r (%s)", self.name, request.path,
                               exc.reason)
                self.log.event("refused", stream_id=stream.stream_id, path=request.path,
                               reason=exc.reason)
            self._respond_error(stream, exc.status, str(exc), kind=exc.reason)
            return
        if byte_range is None:
            first, length, status = 0, resolved.size_bytes, 200
        else:
            first, length, status = byte_range[0], byte_range[1] - byte_range[0] + 1, 206
        try:
            body = FileBody(resolved.path, first, length)
        except OSError as exc:
            logger.error("session %s: cannot open %s: %s", self.name, resolved.path, exc)
            self._respond_error(stream, 500, "cannot open file", kind="open_failed")
            return
        stream.control.append((
            FrameType.HEAD,
            encode_head(status, resolved.size_bytes, length, resolved.content_type, byte_range),
        ))
        stream.body = body
        self._start(stream, status)

    def _handle_cancel(self, stream: ResponseStream, request_id: int) -> None:
        """``cancel``: end the response to ``request_id`` with ERROR 499 at the next frame.

        The cancelled stream still ends with a frame and FIN, so the client reads
        it to the end and every byte written is reported received (nothing is
        stranded in the grant's outstanding count, PROTOCOL.md "Grants"). The
        cancel stream itself is answered HEAD 200 (empty body), END.
        """
        target = self.by_request_id.pop(request_id, None)
        cut = target is not None and not target.done
        if target is not None and not target.done:
            target.close_body()
            target.control.clear()
            target.peeked = None  # peeked but not written: dropped
            target.control.append((FrameType.ERROR,
                                   encode_error(STATUS_CANCELLED, "cancelled by the client")))
            self.cancelled += 1
        elif target is None:
            self.early_cancels.append(request_id)
        self.log.event("cancel", stream_id=stream.stream_id, request_id=request_id,
                       target_stream_id=None if target is None else target.stream_id, cut=cut)
        stream.control.append((FrameType.HEAD, encode_head(200, 0, 0, "application/json")))
        stream.control.append((FrameType.END, b""))
        self._start(stream, 200)

    def _respond_error(self, stream: ResponseStream, status: int, message: str, kind: str) -> None:
        self.log.event("error_response", stream_id=stream.stream_id, status=status, kind=kind,
                       message=message)
        stream.control.append((FrameType.ERROR, encode_error(status, message)))
        self._start(stream, status)

    def _start(self, stream: ResponseStream, status: int) -> None:
        self.statuses[status] += 1
        stream.responding = True
        stream.request = bytearray()
        if not self.closed:
            self.active.append(stream)

    def on_datagram(self, data: bytes, connection_flooded: bool = False) -> GrantDecision:
        """A grant datagram's payload (after the quarter stream id); logs it.

        ``connection_flooded``: the connection's own guard (all its sessions' datagrams
        together, :class:`NuwaProtocol`) found this datagram beyond its bucket; the
        session is then flooded as if its own bucket were empty.
        """
        t_us = now_us()
        if self.flooded or not self.flood.take(t_us) or connection_flooded:
            if not self.flooded:
                self.flooded = True
                logger.warning("session %s: grant flood (%d datagrams in %.3f s, more than %d "
                               "beyond %d/s): closing with code 0x%x", self.name,
                               self.flood.datagrams, (t_us - self.start_time_us) / 1e6,
                               self.flood.burst, self.flood.rate_per_s, GRANT_FLOOD_CLOSE_CODE)
                self.log.event("grant_flood", datagrams=self.flood.datagrams,
                               rate_per_s=self.flood.rate_per_s, burst=self.flood.burst,
                               close_code=GRANT_FLOOD_CLOSE_CODE,
                               scope="connection" if connection_flooded else "session")
            self.grants.grants_dropped["flood"] += 1
            return GrantDecision(False, "flood", None, self.grants.window_bytes,
                                 self.grants.cum_received_bytes, None)
        decision = self.grants.on_datagram(data, t_us)
        self.log.grant(t_us, decision, self.grants.bytes_written)
        if not decision.accepted and decision.reason != "replay":
            logger.info("session %s: dropped malformed grant (%s, %d bytes)", self.name,
                        decision.reason, len(data))
        if decision.rtt_us is not None:
            self.rtt_samples += 1
            self.rtt_last_us = decision.rtt_us
            if self.rtt_min_us is None or decision.rtt_us < self.rtt_min_us:
                self.rtt_min_us = decision.rtt_us
        return decision

    def stream_finished(self, stream: ResponseStream) -> None:
        """``stream`` wrote its last frame (END or ERROR, with FIN)."""
        try:
            self.active.remove(stream)
        except ValueError:
            pass
        self.streams.pop(stream.stream_id, None)
        self.finished_stream_ids.add(stream.stream_id)
        if stream.request_id is not None and self.by_request_id.get(stream.request_id) is stream:
            del self.by_request_id[stream.request_id]

    def on_stream_abort(self, stream_id: int, why: str) -> None:
        """The client reset or stopped ``stream_id``: stop serving it."""
        stream = self.streams.pop(stream_id, None)
        if stream is None:
            return
        self.finished_stream_ids.add(stream_id)
        stream.done = True
        stream.close_body()
        if stream.request_id is not None and self.by_request_id.get(stream.request_id) is stream:
            del self.by_request_id[stream.request_id]
        try:
            self.active.remove(stream)
        except ValueError:
            pass
        self.log.event("stream_aborted", stream_id=stream_id, why=why)

    # ------------------------------------------------------------------ output

    def take_seq(self) -> int:
        """Next session-wide frame sequence number (u32, wraps)."""
        seq = self.next_seq
        self.next_seq = (seq + 1) % U32_MOD
        return seq

    def summary(self) -> dict[str, Any]:
        """The session summary (``summary.json``)."""
        g = self.grants
        end = self.end_time_us if self.end_time_us is not None else now_us()
        return {
            "session": self.name,
            "session_id": self.session_id,
            "cc": self.config.cc,
            "grants_enforced": g.config.enforce,
            "switches": self.switches,
            "start_time_us": self.start_time_us,
            "end_time_us": end,
            "duration_s": (end - self.start_time_us) / 1e6,
            "frames": g.frames_written,
            "bytes_sent": g.bytes_written,
            "requests": self.requests,
            "cancelled": self.cancelled,
            "responses_by_status": {str(k): v for k, v in sorted(self.statuses.items())},
            "grants_accepted": g.grants_accepted,
            "grants_dropped": dict(g.grants_dropped),
            "grants_clamped": dict(g.grants_clamped),
            "grant_violations": g.grant_violations,
            "frames_paced": g.frames_paced,
            "train": {"sent": self.train.sent, "answered": self.train.answered,
                      "dropped": self.train.dropped, "frames": g.train_frames},
            "fallback_entries": g.fallback_entries,
            "departure": asdict(self.departure),
            "rtt_us": {"min": self.rtt_min_us, "last": self.rtt_last_us,
                       "samples": self.rtt_samples},
            "close_reason": self.close_reason,
            "ceiling": self.ceiling_stats,
        }

    def close(self, reason: str) -> list[int]:
        """End the session; returns ids of streams still being served (to reset)."""
        if self.closed:
            return []
        self.closed = True
        self.close_reason = reason
        self.end_time_us = now_us()
        unfinished = [s.stream_id for s in self.streams.values() if s.responding and not s.done]
        for stream in self.streams.values():
            stream.close_body()
        self.active.clear()
        summary = self.summary()
        self.log.close(summary)
        logger.info("session %s closed (%s): %s", self.name, reason,
                    json.dumps(summary, default=str))
        if self.on_closed is not None:
            self.on_closed(self)
        return unfinished
