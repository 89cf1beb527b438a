"""Per-session JSON-lines logs (frames, grants, events, summary)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from .config import now_us
from .grants import GrantDecision
from .protocol import FrameType

_TYPE_NAMES = {t: t.name for t in FrameType}


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
