"""Writing the downlink log in mahimahi ``mm-link --downlink-log`` format, and its sidecar.

Log lines (t = integer ms after the base timestamp T0, floor of link time)::

    # base timestamp: T0        T0 = floor(time.monotonic() * 1000) at link start
    t + size                    packet of `size` bytes arrived at the queue
    t d size                    ... and was dropped (always right after its `+` line)
    t # 1504                    one delivery opportunity
    t - size delay              packet departed (= reached the client), delay = t - arrival t

Events are written in time order. The sidecar ``LOG.meta.json`` (see
:func:`sidecar_path`) records T0 in the CLOCK_MONOTONIC millisecond domain so
that other processes on the same host can map their own ``time.monotonic()``
stamps to log time: ``log_ms = monotonic_ms - base_timestamp_ms``. For a packet
the server stamped ``send_time_us`` (``time.monotonic_ns() // 1000``), its
queue arrival is at about ``send_time_us / 1000 + downlink_delay_ms - T0``
(:func:`server_send_us_to_log_ms`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .trace import PACKET_SIZE_BYTES

SIDECAR_FORMAT = "nuwa-emulator-log-meta/1"


def sidecar_path(log_path: str | Path) -> Path:
    """The sidecar JSON path for a log: ``LOG`` + ``.meta.json``."""
    return Path(str(log_path) + ".meta.json")


def write_sidecar(log_path: str | Path, meta: dict[str, Any]) -> Path:
    """Write ``meta`` (must hold ``base_timestamp_ms``) as the log's sidecar; returns its path."""
    if "base_timestamp_ms" not in meta:
        raise ValueError("sidecar needs base_timestamp_ms")
    doc = {"format": SIDECAR_FORMAT, "log": str(log_path), **meta}
    p = sidecar_path(log_path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(p)
    return p


def read_sidecar(log_path: str | Path) -> dict[str, Any]:
    """Read a log's sidecar. Raises ``FileNotFoundError`` or ``ValueError`` (bad content)."""
    doc = json.loads(sidecar_path(log_path).read_text())
    if not isinstance(doc, dict) or "base_timestamp_ms" not in doc:
        raise ValueError(f"{sidecar_path(log_path)}: not an emulator log sidecar")
    return doc


def server_send_us_to_log_ms(
    send_time_us: int, base_timestamp_ms: int, downlink_delay_ms: float
) -> float:
    """Expected queue-arrival log time (ms after T0) of a packet the server sent at
    ``send_time_us`` (µs, ``time.monotonic_ns() // 1000`` on this host): the send
    time plus the propagation delay stage, minus T0 (loopback transit ~0.05 ms ignored).
    """
    return send_time_us / 1000.0 + downlink_delay_ms - base_timestamp_ms


class MahimahiLogWriter:
    """Buffered writer of a mahimahi-format link log; implements ``LinkRecorder``.

    ``path``: output file (truncated). ``base_timestamp_ms``: T0 for the header.
    ``header``: extra ``# ...`` comment lines (without the ``#``). Event times
    passed in are link ms after T0; they are floored to integers.
    """

    def __init__(
        self,
        path: str | Path,
        base_timestamp_ms: int,
        header: list[str] | None = None,
        buffer_bytes: int = 1 << 20,
    ) -> None:
        self.path = Path(path)
        self._f = self.path.open("w", buffering=buffer_bytes)
        self._w = self._f.write
        for line in header or []:
            self._w(f"# {line}\n")
        self._w(f"# init timestamp: {base_timestamp_ms}\n")
        self._w(f"# base timestamp: {base_timestamp_ms}\n")

    def arrival(self, t_ms: float, size_bytes: int) -> None:
        """``t + size``."""
        self._w(f"{math.floor(t_ms)} + {size_bytes}\n")

    def drop(self, t_ms: float, size_bytes: int) -> None:
        """``t d size`` (written right after the packet's ``+`` line)."""
        self._w(f"{math.floor(t_ms)} d {size_bytes}\n")

    def opportunity(self, t_ms: int) -> None:
        """``t # 1504``."""
        self._w(f"{t_ms} # {PACKET_SIZE_BYTES}\n")

    def departure(self, t_ms: int, size_bytes: int, arrival_ms: float) -> None:
        """``t - size delay`` with delay = t - floor(arrival) in ms."""
        self._w(f"{t_ms} - {size_bytes} {t_ms - math.floor(arrival_ms)}\n")

    def flush(self) -> None:
        """Push buffered lines to the OS (readers then see a consistent prefix)."""
        self._f.flush()

    def close(self) -> None:
        """Flush and close; further writes raise ``ValueError``."""
        self._f.close()
