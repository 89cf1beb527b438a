"""One request stream: request bytes in, the response's frames out, one at a time."""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from .bodies import Body
from .protocol import FrameType, encode_error

logger = logging.getLogger("nuwa_server.streams")


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
