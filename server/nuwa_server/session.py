"""WebTransport sessions over aioquic: requests in, stamped frames out, grants obeyed.

The adapter layer (docs/DESIGN.md §10 habit 1): it owns the clock, the QUIC connection
and the log files; the decisions live in :mod:`.protocol`, :mod:`.grants`
and :mod:`.content`.

Sending discipline (docs/DESIGN.md §2 step 3, PROTOCOL.md "Responses"): a frame is
handed to QUIC only when it can leave at once, so its ``send_time_us`` is its
departure time:

* transport: QUIC ``bytes_in_flight`` + bytes already queued unsent in any
  stream buffer + this frame (+ packet overhead) fit in the congestion window
  (RFC 9002 §7), and the pacer (aioquic's, RFC 9002 §7.7) has a packet's
  budget; each frame is then flushed to the socket on its own before the
  next is considered, so it rides in its own packet;
* grants (``--cc nuwa``): outstanding + frame ≤ min(grant window, ceiling),
  see :mod:`.grants`.

ACK-only packets raise no QUIC event, so the sender is pumped from
``transmit()``, which aioquic calls after every received datagram and
every timer (docs/DESIGN.md §8 "aioquic"). Streams of a session are served round
robin, one frame at a time.

WebTransport (draft-ietf-webtrans-http3-02, as Chromium speaks it): extended
CONNECT (RFC 9220) with ``:protocol webtransport`` on ``/nuwa`` gets
``:status 200`` and ``sec-webtransport-http3-draft: draft02``; other paths
get 404. Grants arrive as HTTP datagrams (RFC 9297 §2.1, quarter stream id
+ payload) on the session.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from aioquic.asyncio.protocol import QuicConnectionProtocol, QuicStreamHandler
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import (
    DatagramReceived,
    DataReceived,
    H3Event,
    HeadersReceived,
    WebTransportStreamDataReceived,
)
from aioquic.quic.connection import QuicConnection, stream_is_unidirectional
from aioquic.quic.events import (
    ConnectionTerminated,
    ProtocolNegotiated,
    QuicEvent,
    StopSendingReceived,
    StreamReset,
)

from .ceiling import CEILING_NAME, NuwaCeilingCongestionControl
from .content import ContentError, ContentRoot, satisfiable_range
from .grants import FloodGuard, GrantConfig, GrantDecision, GrantState, WriteBudget
from .oracle_sender import (
    ORACLE_CC_NAME,
    ORACLE_HEADROOM_MS,
    oracle_outstanding_wire_bytes,
    oracle_window_wire_bytes,
    report_late_ms,
    wire_to_frame_bytes,
)
from .protocol import (
    FRAME_HEADER_BYTES,
    MAX_FRAME_PAYLOAD_BYTES,
    MAX_REQUEST_BYTES,
    U32_MOD,
    BulkRequest,
    CancelRequest,
    ErrorKind,
    FrameType,
    GetRequest,
    ProtocolError,
    encode_error,
    encode_frame_header,
    encode_head,
    parse_request,
)

if TYPE_CHECKING:
    from .oracle_wire import OracleReport

logger = logging.getLogger("nuwa_server.session")

WEBTRANSPORT_PATH = "/nuwa"
"""Path of the WebTransport session (PROTOCOL.md, first paragraph)."""

PACKET_OVERHEAD_BYTES = 50
"""QUIC bytes per packet beyond the frame: short header (≤ 1+20+4), AEAD tag
(16), STREAM frame header (≤ 1+8+8+2 in practice ≤ 13); rounded up
(RFC 9000 §17.3, §19.8). Used to check that a frame fits the window."""

WT_SESSION_GONE = 0x170D7B68
"""Stream reset code when the session goes away (draft-ietf-webtrans-http3 §9.5)."""

BULK_PATTERN_PERIOD = 251
"""Bulk payload byte at offset i is ``i % 251`` (a prime period, so misordered
or shifted data is detectable)."""

STATUS_CANCELLED = 499
"""ERROR status of a response the client cancelled (nginx's "client closed request")."""

EARLY_CANCELS_KEPT = 256
"""Cancelled request ids remembered before their request arrives (bounded)."""

CC_MODES = ("nuwa", "cubic", "reno", "oracle")

GRANT_FLOOD_CLOSE_CODE = 0x0107
"""WebTransport session close code (CLOSE_WEBTRANSPORT_SESSION capsule) and QUIC
application close code for a client that floods datagrams (:class:`.grants.FloodGuard`);
the value of H3_EXCESSIVE_LOAD (RFC 9114 §8.1), whose meaning it has."""

CLOSE_WEBTRANSPORT_SESSION_CAPSULE = 0x2843
"""Capsule type (draft-ietf-webtrans-http3-02 §5, RFC 9297 §3.2): u32 code + UTF-8 reason."""

MAX_SESSIONS_PER_CONNECTION = 4
"""Open WebTransport sessions one QUIC connection may hold; a CONNECT beyond it is refused
with :data:`TOO_MANY_SESSIONS_STATUS` (the player holds one at a time: SessionManager)."""

TOO_MANY_SESSIONS_STATUS = 429
"""HTTP status of a CONNECT refused for :data:`MAX_SESSIONS_PER_CONNECTION` (RFC 6585 §4)."""

CLOSED_SESSIONS_KEPT = 16
"""Closed sessions :class:`ServerContext` keeps for inspection (``recent_sessions``);
older ones are forgotten, so a long-running server's memory does not grow with churn."""

FLOOD_CONNECTION_CLOSE_DELAY_S = 0.2
"""After a flood, the QUIC connection is closed this long after the session's close
capsule, so the capsule can arrive first."""

_FILE_BLOCK_BYTES = 1 << 16
_TYPE_NAMES = {t: t.name for t in FrameType}


def now_us() -> int:
    """CLOCK_MONOTONIC in µs: the clock of ``send_time_us`` and of the link emulator."""
    return time.monotonic_ns() // 1000


# --------------------------------------------------------------------------- config


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Effective per-server config, logged once per session (docs/DESIGN.md §10 habit 7).

    Attributes:
        cc: ``nuwa`` (QUIC cc cubic as the ceiling, grants obeyed), ``cubic`` or
            ``reno`` (aioquic's own cc; grants parsed and logged, ignored),
            ``oracle`` (cubic ceiling; grants give only the bytes received, the
            window comes from the emulator's capacity oracle, see
            :meth:`ServerContext.on_oracle_report`).
        content_root: directory served by ``get``; None serves nothing (404).
        log_dir: per-session JSONL logs go to a subdirectory; None: no logs.
        frame_payload_bytes: DATA payload per frame, bytes (1200).
        max_datagram_bytes: QUIC max UDP payload the server sends, bytes.
        grant_timeout_us: no-grant time before the fallback, µs.
        initial_window_bytes: grant window before the first grant, bytes.
    """

    cc: str = "nuwa"
    content_root: str | None = None
    log_dir: str | None = None
    frame_payload_bytes: int = 1200
    max_datagram_bytes: int = 1350
    grant_timeout_us: int = 1_000_000
    initial_window_bytes: int = 12000

    def validate(self) -> SessionConfig:
        """Return self or raise ValueError naming the bad field."""
        if self.cc not in CC_MODES:
            raise ValueError(f"cc must be one of {CC_MODES}, got {self.cc!r}")
        if not 1 <= self.frame_payload_bytes <= MAX_FRAME_PAYLOAD_BYTES:
            raise ValueError(
                f"frame_payload_bytes must be in 1..{MAX_FRAME_PAYLOAD_BYTES}, "
                f"got {self.frame_payload_bytes}"
            )
        if not 1200 <= self.max_datagram_bytes <= 65527:
            raise ValueError(f"max_datagram_bytes must be in 1200..65527, got "
                             f"{self.max_datagram_bytes}")
        self.grant_config().validate()
        return self

    @property
    def frame_fits_one_packet(self) -> bool:
        """Whether a full DATA frame plus QUIC overhead fits one datagram."""
        return (
            FRAME_HEADER_BYTES + self.frame_payload_bytes + PACKET_OVERHEAD_BYTES
            <= self.max_datagram_bytes
        )

    @property
    def quic_congestion_control(self) -> str:
        """aioquic congestion control: the Cubic ceiling (ceiling.py) for nuwa, none for oracle."""
        if self.cc == "oracle":  # no loss-based ceiling under the oracle (oracle_sender.py)
            return ORACLE_CC_NAME
        return CEILING_NAME if self.cc == "nuwa" else self.cc

    def grant_config(self) -> GrantConfig:
        """The :class:`GrantConfig` this config implies."""
        return GrantConfig(
            enforce=self.cc in ("nuwa", "oracle"),
            initial_window_bytes=self.initial_window_bytes,
            grant_timeout_us=self.grant_timeout_us,
            window_from_grants=self.cc != "oracle",
        )


# --------------------------------------------------------------------------- logs


class SessionLog:
    """JSON-lines logs of one session, buffered, in ``<log_dir>/<session name>/``.

    Files: ``frames.jsonl``, ``grants.jsonl``, ``events.jsonl`` (config,
    requests, refusals, fallbacks, summary) and ``summary.json``. With
    ``directory=None`` every method is a no-op.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._frames: IO[str] | None = None
        self._grants: IO[str] | None = None
        self._events: IO[str] | None = None
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self._frames = open(directory / "frames.jsonl", "w", buffering=1 << 18)
            self._grants = open(directory / "grants.jsonl", "w", buffering=1 << 14)
            self._events = open(directory / "events.jsonl", "w", buffering=1 << 12)

    def frame(
        self,
        seq: int,
        stream_id: int,
        frame_type: FrameType,
        frame_bytes: int,
        send_time_us: int,
        outstanding_bytes: int,
        grant_window_bytes: int | None,
        ceiling_bytes: int,
        bytes_in_flight: int,
    ) -> None:
        """One ``frames.jsonl`` row (formatted by hand: this runs per frame)."""
        if self._frames is None:
            return
        window = "null" if grant_window_bytes is None else grant_window_bytes
        self._frames.write(
            f'{{"seq":{seq},"stream_id":{stream_id},"type":"{_TYPE_NAMES[frame_type]}",'
            f'"bytes":{frame_bytes},"send_time_us":{send_time_us},'
            f'"outstanding_bytes":{outstanding_bytes},"grant_window_bytes":{window},'
            f'"ceiling_bytes":{ceiling_bytes},"bytes_in_flight":{bytes_in_flight}}}\n'
        )

    def grant(self, recv_time_us: int, decision: GrantDecision, bytes_written: int) -> None:
        """One ``grants.jsonl`` row."""
        if self._grants is None:
            return
        g = decision.grant
        row = {
            "recv_time_us": recv_time_us,
            "grant_seq": None if g is None else g.grant_seq,
            "receiver_time_us": None if g is None else g.receiver_time_us,
            "cum_received_bytes": None if g is None else g.cum_received_bytes,
            "window_bytes": None if g is None else g.window_bytes,
            "echo_send_time_us": None if g is None else g.echo_send_time_us,
            "echo_hold_us": None if g is None else g.echo_hold_us,
            "accepted": decision.accepted,
            "reason": decision.reason,
            "rtt_us": decision.rtt_us,
            "window_in_force_bytes": decision.window_bytes,
            "cum_in_force_bytes": decision.cum_received_bytes,
            "bytes_written": bytes_written,
        }
        self._grants.write(json.dumps(row, separators=(",", ":")) + "\n")

    def event(self, event: str, **fields: Any) -> None:
        """One ``events.jsonl`` row ``{"event": ..., "time_us": ..., **fields}``."""
        if self._events is None:
            return
        row = {"event": event, "time_us": now_us(), **fields}
        self._events.write(json.dumps(row, separators=(",", ":"), default=str) + "\n")

    def close(self, summary: dict[str, Any]) -> None:
        """Write ``summary.json`` and close every file (idempotent)."""
        if self.directory is None or self._frames is None:
            return
        self.event("summary", **summary)
        with open(self.directory / "summary.json", "w") as fh:
            json.dump(summary, fh, indent=1, default=str)
        for fh_ in (self._frames, self._grants, self._events):
            if fh_ is not None:
                fh_.close()
        self._frames = self._grants = self._events = None


# --------------------------------------------------------------------------- bodies


class BulkBody:
    """``size_bytes`` of the bulk pattern (byte i = i mod 251)."""

    def __init__(self, size_bytes: int, chunk_bytes: int) -> None:
        self.remaining_bytes = size_bytes
        self._offset = 0
        self._pattern = bytes(range(BULK_PATTERN_PERIOD)) * (
            chunk_bytes // BULK_PATTERN_PERIOD + 2
        )

    def read(self, max_bytes: int) -> bytes:
        """Next at most ``max_bytes`` of the body (empty at the end)."""
        n = min(max_bytes, self.remaining_bytes)
        start = self._offset % BULK_PATTERN_PERIOD
        if start + n > len(self._pattern):
            self._pattern = bytes(range(BULK_PATTERN_PERIOD)) * (n // BULK_PATTERN_PERIOD + 2)
        chunk = self._pattern[start : start + n]
        self._offset += n
        self.remaining_bytes -= n
        return chunk

    def close(self) -> None:
        """Nothing to release."""


class FileBody:
    """Bytes ``[first, first + length)`` of an open file, read in 64 KiB blocks.

    Raises:
        OSError: on open (by the constructor) or on read.
    """

    def __init__(self, path: str, first: int, length: int) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 (closed by close())
        self._file.seek(first)
        self.remaining_bytes = length
        self._block = b""
        self._block_offset = 0

    def read(self, max_bytes: int) -> bytes:
        """Next at most ``max_bytes`` of the range.

        Raises:
            EOFError: the file is shorter than the range (changed under us).
            OSError: the read failed.
        """
        n = min(max_bytes, self.remaining_bytes)
        if n <= 0:
            return b""
        if self._block_offset >= len(self._block):
            self._block = self._file.read(min(max(_FILE_BLOCK_BYTES, n), self.remaining_bytes))
            self._block_offset = 0
            if not self._block:
                raise EOFError(f"file ended {self.remaining_bytes} bytes early")
        chunk = self._block[self._block_offset : self._block_offset + n]
        self._block_offset += len(chunk)
        self.remaining_bytes -= len(chunk)
        return chunk

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._file.close()


Body = BulkBody | FileBody


# --------------------------------------------------------------------------- streams


@dataclass(slots=True, eq=False)
class ResponseStream:
    """One client-opened bidirectional stream: request bytes in, frames out."""

    stream_id: int
    request: bytearray = field(default_factory=bytearray)
    responding: bool = False
    done: bool = False
    control: deque[tuple[FrameType, bytes]] = field(default_factory=deque)
    body: Body | None = None
    body_done_frame: bool = False
    peeked: tuple[FrameType, bytes, bool] | None = None
    request_id: int | None = None

    def peek(self, payload_bytes: int) -> tuple[FrameType, bytes, bool] | None:
        """Next frame to write as (type, payload, fin); stays until :meth:`commit`."""
        if self.peeked is None:
            self.peeked = self._next(payload_bytes)
        return self.peeked

    def commit(self) -> None:
        """The peeked frame was written."""
        if self.peeked is not None and self.peeked[2]:
            self.done = True
            self.close_body()
        self.peeked = None

    def _next(self, payload_bytes: int) -> tuple[FrameType, bytes, bool] | None:
        if self.control:
            ftype, payload = self.control.popleft()
            fin = ftype in (FrameType.END, FrameType.ERROR) and not self.control
            return ftype, payload, fin
        if self.body is not None:
            if self.body.remaining_bytes > 0:
                try:
                    return FrameType.DATA, self.body.read(payload_bytes), False
                except (OSError, EOFError) as exc:
                    logger.error("stream %d: body read failed: %s", self.stream_id, exc)
                    self.close_body()
                    return FrameType.ERROR, encode_error(500, "read failed"), True
            self.close_body()
            return FrameType.END, b"", True
        return None

    def close_body(self) -> None:
        """Release the body's file, if any."""
        if self.body is not None:
            self.body.close()
            self.body = None


# --------------------------------------------------------------------------- session


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
        self.log.event("request", stream_id=stream.stream_id, op="get", path=request.path,
                       range=request.byte_range, id=request.request_id)
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
            "fallback_entries": g.fallback_entries,
            "departure": asdict(self.departure),
            "rtt_us": {"min": self.rtt_min_us, "last": self.rtt_last_us,
                       "samples": self.rtt_samples},
            "close_reason": self.close_reason,
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


# --------------------------------------------------------------------------- connection


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

    def close_oracle_log(self) -> None:
        """Flush and close ``oracle.jsonl`` (idempotent)."""
        if self._oracle_log is not None:
            self._oracle_log.close()
            self._oracle_log = None


class NuwaProtocol(QuicConnectionProtocol):
    """aioquic connection protocol: HTTP/3 + WebTransport + the Nuwa sender."""

    def __init__(
        self,
        quic: QuicConnection,
        stream_handler: QuicStreamHandler | None = None,
        *,
        context: ServerContext,
    ) -> None:
        super().__init__(quic, stream_handler)
        self._context = context
        self._config = context.config
        context.connections += 1
        context.protocols.append(self)
        self._conn_index = context.connections
        self._h3: H3Connection | None = None
        self._sessions: dict[int, NuwaSession] = {}
        self._wake_at: float | None = None
        self._wake_handle: Any = None
        self._pumping = False
        self._flood = FloodGuard()
        """Datagrams of all this connection's sessions together (issue 13: opening more
        sessions must not multiply a connection's grant budget)."""
        self.flooded = False

    def peer_port(self) -> int | None:
        """UDP port of the peer (the emulator's socket for one client), None before a path."""
        paths = self._quic._network_paths
        return int(paths[0].addr[1]) if paths else None

    def open_sessions(self) -> list[NuwaSession]:
        """This connection's sessions that are not closed."""
        return [s for s in self._sessions.values() if not s.closed]

    # ------------------------------------------------------------------ events

    def quic_event_received(self, event: QuicEvent) -> None:
        """Route QUIC events to HTTP/3 and the sessions; never raises on peer input."""
        if isinstance(event, ProtocolNegotiated):
            if event.alpn_protocol in H3_ALPN:
                self._h3 = H3Connection(self._quic, enable_webtransport=True)
        elif isinstance(event, ConnectionTerminated):
            for session in list(self._sessions.values()):
                session.close(f"connection_terminated:{event.error_code}:{event.reason_phrase}")
            self._sessions.clear()
            self._cancel_wake()
            if self in self._context.protocols:
                self._context.protocols.remove(self)
        if self._h3 is not None:
            for h3_event in self._h3.handle_event(event):
                self._h3_event_received(h3_event)
        if isinstance(event, StopSendingReceived | StreamReset):
            self._on_stream_stopped(event)

    def _on_stream_stopped(self, event: StopSendingReceived | StreamReset) -> None:
        why = "stop_sending" if isinstance(event, StopSendingReceived) else "reset"
        session = self._sessions.get(event.stream_id)
        if session is not None and isinstance(event, StreamReset):
            self._close_session(session, "connect_stream_reset")
            return
        for session in self._sessions.values():
            if event.stream_id in session.streams:
                stream = session.streams[event.stream_id]
                # A reset of the client's half after its request is complete
                # changes nothing; STOP_SENDING means it wants no more.
                if why == "stop_sending" or not stream.responding:
                    session.on_stream_abort(event.stream_id, f"{why}:{event.error_code}")
                return

    def _h3_event_received(self, event: H3Event) -> None:
        assert self._h3 is not None
        if isinstance(event, HeadersReceived):
            self._on_headers(event)
        elif isinstance(event, WebTransportStreamDataReceived):
            session = self._sessions.get(event.session_id)
            if session is None or stream_is_unidirectional(event.stream_id):
                self._refuse_stream(event.stream_id)
                return
            session.on_stream_data(event.stream_id, event.data, event.stream_ended)
        elif isinstance(event, DatagramReceived):
            connection_ok = self._flood.take(now_us())
            session = self._sessions.get(event.stream_id)
            if session is not None:
                session.on_datagram(event.data, connection_flooded=not connection_ok)
                if session.flooded:
                    self._close_for_flood(session)
            elif not connection_ok and not self.flooded:
                self._close_for_flood(None)
        elif isinstance(event, DataReceived):
            session = self._sessions.get(event.stream_id)
            if session is not None and event.stream_ended:
                # The client ended the CONNECT stream (possibly after a
                # CLOSE_WEBTRANSPORT_SESSION capsule): the session is over.
                self._close_session(session, "client_closed")

    def _on_headers(self, event: HeadersReceived) -> None:
        assert self._h3 is not None
        headers = dict(event.headers)
        method = headers.get(b":method")
        protocol = headers.get(b":protocol")
        path = headers.get(b":path", b"").split(b"?", 1)[0].decode("utf-8", "replace")
        if (method == b"CONNECT" and protocol == b"webtransport" and path == WEBTRANSPORT_PATH
                and len(self._sessions) >= MAX_SESSIONS_PER_CONNECTION):
            self._context.sessions_refused += 1
            logger.warning("connection %d: CONNECT refused with %d: %d sessions open, at most "
                           "%d per connection", self._conn_index, TOO_MANY_SESSIONS_STATUS,
                           len(self._sessions), MAX_SESSIONS_PER_CONNECTION)
            self._h3.send_headers(event.stream_id, [(b":status", str(TOO_MANY_SESSIONS_STATUS)
                                                     .encode())], end_stream=True)
        elif method == b"CONNECT" and protocol == b"webtransport" and path == WEBTRANSPORT_PATH:
            self._h3.send_headers(
                event.stream_id,
                [(b":status", b"200"), (b"sec-webtransport-http3-draft", b"draft02")],
            )
            start = now_us()
            name = (
                time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
                + f"-c{self._conn_index}-s{event.stream_id}-{os.getpid()}"
            )
            session = NuwaSession(event.stream_id, name, self._config,
                                  self._context.content_root, start)
            if self._context.oracle_window_bytes is not None:
                session.grants.set_window(self._context.oracle_window_bytes)
            self._sessions[event.stream_id] = session
            self._context.add_session(session)
            logger.info("session %s opened (cc=%s)", name, self._config.cc)
            if self._context.on_session is not None:
                self._context.on_session(session)
        else:
            self._h3.send_headers(event.stream_id, [(b":status", b"404")], end_stream=True)

    def _refuse_stream(self, stream_id: int) -> None:
        try:
            self._quic.stop_stream(stream_id, WT_SESSION_GONE)
            if not stream_is_unidirectional(stream_id):
                self._quic.reset_stream(stream_id, WT_SESSION_GONE)
        except Exception:  # noqa: BLE001 - a dead stream is not worth a crash
            logger.debug("could not refuse stream %d", stream_id, exc_info=True)

    def _close_session(self, session: NuwaSession, reason: str) -> None:
        for stream_id in session.close(reason):
            try:
                self._quic.reset_stream(stream_id, WT_SESSION_GONE)
            except Exception:  # noqa: BLE001
                logger.debug("could not reset stream %d", stream_id, exc_info=True)
        self._sessions.pop(session.session_id, None)
        if self._h3 is not None:
            try:
                self._h3.send_data(session.session_id, b"", end_stream=True)
            except Exception:  # noqa: BLE001 - the stream may already be closed
                logger.debug("could not end CONNECT stream", exc_info=True)

    def _close_for_flood(self, session: NuwaSession | None) -> None:
        """Close a flooding client: every session of the connection with a
        CLOSE_WEBTRANSPORT_SESSION capsule (code :data:`GRANT_FLOOD_CLOSE_CODE`, reason
        "grant flood"), then the QUIC connection with the same application error code.
        ``session`` is the one whose datagram tripped a guard (None: a datagram for no
        session tripped the connection's guard); it closes as ``grant_flood``, the
        others as ``connection_grant_flood``."""
        if self.flooded:
            return
        self.flooded = True
        reason = b"grant flood"
        payload = GRANT_FLOOD_CLOSE_CODE.to_bytes(4, "big") + reason
        capsule = encode_uint_var(CLOSE_WEBTRANSPORT_SESSION_CAPSULE) + encode_uint_var(
            len(payload)) + payload
        others = [s for s in self._sessions.values() if s is not session]
        for s in [session, *others] if session is not None else others:
            if self._h3 is not None:
                try:
                    self._h3.send_data(s.session_id, capsule, end_stream=False)
                except Exception:  # noqa: BLE001 - the stream may already be closed
                    logger.debug("could not send the close capsule", exc_info=True)
            self._close_session(s, "grant_flood" if s is session else "connection_grant_flood")
        self.transmit()
        self._loop.call_later(FLOOD_CONNECTION_CLOSE_DELAY_S, self._close_connection_for_flood)

    def _close_connection_for_flood(self) -> None:
        self._quic.close(error_code=GRANT_FLOOD_CLOSE_CODE, reason_phrase="grant flood")
        self.transmit()

    def close_all(self, reason: str) -> None:
        """Close every session (server shutdown) and the connection."""
        for session in list(self._sessions.values()):
            self._close_session(session, reason)
        self.close()

    # ------------------------------------------------------------------ sending

    def transmit(self) -> None:
        """Write the frames that can leave now, then let aioquic send (see module doc)."""
        if not self._pumping:
            self._pumping = True
            try:
                self._pump()
            except Exception:  # noqa: BLE001 - never let the sender kill the connection
                logger.exception("pump failed")
            finally:
                self._pumping = False
        super().transmit()
        if self._sessions:
            # Departure check: frame bytes never sent after this transmit() (held
            # by cwnd, pacing or flow control) were stamped before departure.
            # Retransmissions are counted apart: their frames' stamps are old by
            # nature (RFC 9002 §6 loss recovery).
            new_bytes = self._unsent_new_bytes()
            retransmit = new_bytes == 0 and self._unsent_bytes() > 0
            if new_bytes or retransmit:
                for session in self._sessions.values():
                    stats = session.departure
                    if new_bytes:
                        stats.transmits_with_unsent_new_bytes += 1
                        stats.max_unsent_new_bytes = max(stats.max_unsent_new_bytes, new_bytes)
                    else:
                        stats.transmits_with_retransmit_backlog += 1

    def _unsent_new_bytes(self) -> int:
        """Stream bytes queued in aioquic and never sent yet (no retransmissions)."""
        total = 0
        for stream in self._quic._streams.values():
            sender = stream.sender
            if not sender.buffer_is_empty:
                total += sender._buffer_stop - sender.highest_offset
        return total

    def _unsent_bytes(self) -> int:
        """Stream bytes queued in aioquic but not yet sent (incl. retransmissions)."""
        total = 0
        for stream in self._quic._streams.values():
            sender = stream.sender
            if not sender.buffer_is_empty:
                for r in sender._pending:
                    total += r.stop - r.start
        return total

    def _pump(self) -> None:
        """Write frames while the connection can send them at once (module doc).

        Each frame is handed to aioquic and flushed to the socket before the
        next is considered, so it travels in its own packet(s) and its stamp
        precedes its departure by the time to build the packet. Stops at the
        first frame that would not leave now: congestion window, pacer,
        bytes still queued from before (flow control, retransmissions), or
        every session's grant. ACKs, grants and timers call transmit() again.
        """
        sessions = [s for s in self._sessions.values() if s.active]
        if not sessions:
            return
        loss = self._quic._loss
        pacer = loss._pacer
        payload_bytes = self._config.frame_payload_bytes
        queued = self._unsent_bytes()
        ceiling_cc = isinstance(loss._cc, NuwaCeilingCongestionControl)
        blocked: set[int] = set()
        while len(blocked) < len(sessions):
            progressed = False
            for session in sessions:
                if session.session_id in blocked:
                    continue
                if not session.active:
                    blocked.add(session.session_id)
                    continue
                stream = session.active[0]
                peeked = stream.peek(payload_bytes)
                if peeked is None:
                    session.active.popleft()
                    continue
                ftype, payload, fin = peeked
                frame_bytes = FRAME_HEADER_BYTES + len(payload)
                cwnd = loss.congestion_window
                bytes_in_flight = loss.bytes_in_flight
                # transport: RFC 9002 §7 window, nothing queued ahead of us
                if queued or bytes_in_flight + frame_bytes + PACKET_OVERHEAD_BYTES > cwnd:
                    return
                t_us = now_us()
                level = session.grants.poll_fallback(t_us)
                if level is not None:
                    self._log_fallback(session, level, t_us)
                budget = session.grants.budget(t_us, bytes_in_flight)
                if not budget.allows(frame_bytes, cwnd):
                    window = budget.window_bytes
                    if ceiling_cc and window is not None and budget.allows(frame_bytes, window):
                        # the grant allows it, the ceiling does not: the window is in use
                        loss._cc.on_window_limited()  # type: ignore[attr-defined]
                    blocked.add(session.session_id)
                    self._wake_for_timeout(session, t_us)
                    continue
                # aioquic's pacer (RFC 9002 §7.7): a packet may leave while its bucket > 0
                if pacer.packet_time is not None:
                    loop_now = self._loop.time()
                    pacer.update_bucket(now=loop_now)
                    if pacer.bucket_time <= 0:
                        # the grant allows this frame: the window is in use (RFC 9002 §7.8)
                        if ceiling_cc:
                            loss._cc.on_window_limited()  # type: ignore[attr-defined]
                        self._wake(loop_now + pacer.packet_time)
                        return
                self._write_frame(session, stream, ftype, payload, fin, budget, cwnd,
                                  bytes_in_flight)
                for data, addr in self._quic.datagrams_to_send(now=self._loop.time()):
                    self._transport.sendto(data, addr)  # type: ignore[union-attr]
                queued = self._unsent_bytes()
                progressed = True
                session.active.rotate(-1)
                if stream.done:
                    session.stream_finished(stream)
            if not progressed:
                break

    def _write_frame(
        self,
        session: NuwaSession,
        stream: ResponseStream,
        ftype: FrameType,
        payload: bytes,
        fin: bool,
        budget: WriteBudget,
        ceiling_bytes: int,
        bytes_in_flight: int,
    ) -> None:
        seq = session.take_seq()
        send_time_us = now_us()
        data = encode_frame_header(ftype, seq, send_time_us, len(payload)) + payload
        try:
            self._quic.send_stream_data(stream.stream_id, data, end_stream=fin)
        except Exception as exc:  # noqa: BLE001 - stream gone under us (reset, stop)
            logger.info("session %s: stream %d not writable (%s)", session.name,
                        stream.stream_id, exc)
            session.on_stream_abort(stream.stream_id, f"write_failed:{exc}")
            return
        stream.commit()
        outstanding = session.grants.on_frame_written(len(data), budget)
        session.log.frame(seq, stream.stream_id, ftype, len(data), send_time_us, outstanding,
                          budget.window_bytes, ceiling_bytes, bytes_in_flight)

    def _log_fallback(self, session: NuwaSession, level: int, t_us: int) -> None:
        budget = session.grants.budget(t_us, 0)
        logger.info("session %s: grant timeout, fallback level %d, window %s bytes",
                    session.name, level, budget.window_bytes)
        session.log.event("grant_fallback", level=level, window_bytes=budget.window_bytes,
                          last_grant_seq=session.grants.last_grant_seq)

    def _wake_for_timeout(self, session: NuwaSession, t_us: int) -> None:
        """Blocked by the grant: wake at the next grant-timeout boundary."""
        g = session.grants
        if not g.config.enforce:
            return
        since = g.last_grant_time_us if g.last_grant_time_us is not None else g.start_time_us
        level = g.fallback_level(t_us)
        self._wake((since + (level + 1) * g.config.grant_timeout_us) / 1e6)

    def _wake(self, at: float) -> None:
        """Call transmit() at loop time ``at`` (s, CLOCK_MONOTONIC), keeping the earliest."""
        if self._wake_at is not None and self._wake_at <= at:
            return
        self._cancel_wake()
        self._wake_at = at
        self._wake_handle = self._loop.call_at(at, self._on_wake)

    def _on_wake(self) -> None:
        self._wake_at = None
        self._wake_handle = None
        self.transmit()

    def _cancel_wake(self) -> None:
        if self._wake_handle is not None:
            self._wake_handle.cancel()
        self._wake_handle = None
        self._wake_at = None
