"""The server's configuration, clock and shared constants.

:class:`SessionConfig` is the effective per-server config (logged once per
session); :func:`now_us` is the clock of every ``send_time_us`` stamp.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass

from .cc.bbr import BBR_CC_NAME
from .cc.hystart import HYSTART_CC_NAME
from .cc.pbq import PBQ_CC_NAME
from .ceiling import CEILING_NAME
from .grants import GrantConfig
from .oracle_sender import ORACLE_CC_NAME
from .protocol import FRAME_HEADER_BYTES, MAX_FRAME_PAYLOAD_BYTES
from .switch_policy import RuleConfig

WEBTRANSPORT_PATH = "/nuwa"
"""Path of the WebTransport session (PROTOCOL.md, first paragraph)."""

PACKET_OVERHEAD_BYTES = 50
"""QUIC bytes per packet beyond the frame: short header (≤ 1+20+4), AEAD tag
(16), STREAM frame header (≤ 1+8+8+2 in practice ≤ 13); rounded up
(RFC 9000 §17.3, §19.8). Used to check that a frame fits the window."""

CC_MODES = ("nuwa", "cubic", "reno", "bbr", "pbq", "oracle")

SESSION_SCHEMES = ("nuwa", "cubic", "reno", "bbr", "pbq")
"""Schemes a session may open with (``/nuwa?cc=SCHEME``, :mod:`.connection`; ``pbq`` starts
the connection's PBQ agent with the server's ``--pbq-model``); the oracle needs the
emulator's reports and stays a server-wide mode."""

SWITCHES = ("none", "rule", "dqn")
"""``--switch``: live switching of a Nuwa connection between receiver-driven and
sender-driven control: none, the rule of :mod:`.switch_policy`, or the learned policy of
:mod:`.switch_dqn` (the rule its fallback) (:mod:`.switcher`)."""

SENDER_CCS = ("cubic", HYSTART_CC_NAME, "bbr")
"""The controller that governs a Nuwa connection while it is sender-driven (``--sender-cc``):
aioquic's ``cubic`` (the default), ``cubic_hystart`` (Cubic with RFC 9406's slow start,
:mod:`.cc.hystart`; measured and not the default: docs/BENCHMARKS.md, fortieth session), or
BBR."""

CEILINGS = ("cubic", "bbr")
"""Loss-based ceilings under Nuwa's grants (``--ceiling``): the Cubic ceiling of
:mod:`.ceiling` (the default) or BBR (:mod:`.cc.bbr`)."""

GRANT_FLOOD_CLOSE_CODE = 0x0107
"""WebTransport session close code (CLOSE_WEBTRANSPORT_SESSION capsule) and QUIC
application close code for a client that floods datagrams (:class:`.grants.FloodGuard`);
the value of H3_EXCESSIVE_LOAD (RFC 9114 §8.1), whose meaning it has."""

SHUTDOWN_CLOSE_CODE = 0x0100
"""WebTransport session close code sent to every session when the server shuts down
(SIGTERM/SIGINT), with the reason "server shutting down": the value of H3_NO_ERROR
(RFC 9114 §8.1), a graceful close; the player reconnects with backoff (reconnect.ts)."""


def now_us() -> int:
    """CLOCK_MONOTONIC in µs: the clock of ``send_time_us`` and of the link emulator."""
    return time.monotonic_ns() // 1000


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Effective per-server config, logged once per session (docs/DESIGN.md §10 habit 7).

    Attributes:
        cc: ``nuwa`` (QUIC cc cubic as the ceiling, grants obeyed), ``cubic`` or
            ``reno`` (aioquic's own cc; grants parsed and logged, ignored), ``bbr``
            (:mod:`.cc.bbr`, draft-ietf-ccwg-bbr; grants ignored), ``pbq`` (:mod:`.cc.pbq`:
            BBR's pacing, the PBQ agent's window every 100 ms; grants ignored),
            ``oracle`` (cubic ceiling; grants give only the bytes received, the
            window comes from the emulator's capacity oracle, see
            :meth:`ServerContext.on_oracle_report`).
        ceiling: the controller under the grants in ``nuwa`` mode: ``cubic`` (the Cubic
            ceiling, :mod:`.ceiling`) or ``bbr``.
        content_root: directory served by ``get``; None serves nothing (404).
        log_dir: per-session JSONL logs go to a subdirectory; None: no logs.
        frame_payload_bytes: DATA payload per frame, bytes (1200).
        max_datagram_bytes: QUIC max UDP payload the server sends, bytes.
        grant_timeout_us: no-grant time before the fallback, µs.
        initial_window_bytes: grant window before the first grant, bytes.
        pbq_model: the PBQ agent's ONNX file (``pbq`` mode); None: the checkout's
            ``models/pbq.onnx`` (:data:`.cc.pbq_agent.DEFAULT_MODEL_PATH`).
        switch: ``none``, ``rule`` or ``dqn`` (``nuwa`` mode only: :mod:`.switcher`).
        switch_model: ``dqn``'s ONNX file; None: the checkout's ``models/switch-dqn.onnx``
            (:data:`.switch_dqn.DEFAULT_MODEL_PATH`; missing or unusable: the rule, logged).
        switch_mode: how a switch carries controller state, ``unrestricted`` or
            ``limited`` (:mod:`.cc.switching`).
        switch_rule: a JSON object of :class:`.switch_policy.RuleConfig` fields to change
            from their defaults (the rule's thresholds, also the DQN's fallback; the lab's
            one-factor comparisons), e.g. ``{"probe_fail_min_samples": null}``; None: the
            defaults.
        sender_cc: the controller of sender-driven control (:data:`SENDER_CCS`; default
            ``cubic``).
    """

    cc: str = "nuwa"
    ceiling: str = "cubic"
    content_root: str | None = None
    log_dir: str | None = None
    frame_payload_bytes: int = 1200
    max_datagram_bytes: int = 1350
    grant_timeout_us: int = 1_000_000
    initial_window_bytes: int = 12000
    pbq_model: str | None = None
    switch: str = "none"
    switch_model: str | None = None
    switch_mode: str = "unrestricted"
    switch_rule: str | None = None
    sender_cc: str = "cubic"

    def validate(self) -> SessionConfig:
        """Return self or raise ValueError naming the bad field."""
        if self.cc not in CC_MODES:
            raise ValueError(f"cc must be one of {CC_MODES}, got {self.cc!r}")
        if self.ceiling not in CEILINGS:
            raise ValueError(f"ceiling must be one of {CEILINGS}, got {self.ceiling!r}")
        if not 1 <= self.frame_payload_bytes <= MAX_FRAME_PAYLOAD_BYTES:
            raise ValueError(
                f"frame_payload_bytes must be in 1..{MAX_FRAME_PAYLOAD_BYTES}, "
                f"got {self.frame_payload_bytes}"
            )
        if not 1200 <= self.max_datagram_bytes <= 65527:
            raise ValueError(f"max_datagram_bytes must be in 1200..65527, got "
                             f"{self.max_datagram_bytes}")
        if self.switch not in SWITCHES:
            raise ValueError(f"switch must be one of {SWITCHES}, got {self.switch!r}")
        if self.switch != "none" and self.cc != "nuwa":
            raise ValueError(f"switch {self.switch!r} needs cc 'nuwa', got {self.cc!r}")
        if self.switch_mode not in ("unrestricted", "limited"):
            raise ValueError(f"switch_mode must be unrestricted or limited, got "
                             f"{self.switch_mode!r}")
        if self.switch_rule is not None and self.switch == "none":
            raise ValueError("switch_rule needs switch 'rule' or 'dqn'")
        drained = self.rule_config().drained_sender_cc
        if self.sender_cc not in SENDER_CCS:
            raise ValueError(f"sender_cc must be one of {SENDER_CCS}, got {self.sender_cc!r}")
        if drained is not None and drained not in SENDER_CCS:
            raise ValueError(f"switch_rule: drained_sender_cc must be one of {SENDER_CCS}, "
                             f"got {drained!r}")
        self.grant_config().validate()
        return self

    def rule_config(self) -> RuleConfig:
        """The switch rule's thresholds: the defaults with ``switch_rule``'s fields changed.
        Raises ValueError naming the problem (not JSON, not an object, an unknown field, a
        value :meth:`.switch_policy.RuleConfig.validate` refuses)."""
        if self.switch_rule is None:
            return RuleConfig()
        try:
            fields = json.loads(self.switch_rule)
        except json.JSONDecodeError as exc:
            raise ValueError(f"switch_rule is not JSON: {exc}") from None
        if not isinstance(fields, dict):
            raise ValueError(f"switch_rule must be a JSON object, got {self.switch_rule!r}")
        known = {f.name for f in dataclasses.fields(RuleConfig)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ValueError(f"switch_rule: unknown field(s) {unknown}; known: {sorted(known)}")
        try:
            return RuleConfig(**fields).validate()
        except TypeError as exc:  # a value of the wrong type met a comparison
            raise ValueError(f"switch_rule: {exc}") from None

    @property
    def frame_fits_one_packet(self) -> bool:
        """Whether a full DATA frame plus QUIC overhead fits one datagram."""
        return (
            FRAME_HEADER_BYTES + self.frame_payload_bytes + PACKET_OVERHEAD_BYTES
            <= self.max_datagram_bytes
        )

    @property
    def quic_congestion_control(self) -> str:
        """aioquic congestion control: the ceiling (Cubic, ceiling.py, or BBR) for nuwa, none
        for oracle, else the mode's own."""
        if self.cc == "oracle":  # no loss-based ceiling under the oracle (oracle_sender.py)
            return ORACLE_CC_NAME
        if self.cc == "nuwa":
            return BBR_CC_NAME if self.ceiling == "bbr" else CEILING_NAME
        if self.cc == "pbq":
            return PBQ_CC_NAME
        return BBR_CC_NAME if self.cc == "bbr" else self.cc

    def grant_config(self) -> GrantConfig:
        """The :class:`GrantConfig` this config implies."""
        return GrantConfig(
            enforce=self.cc in ("nuwa", "oracle"),
            initial_window_bytes=self.initial_window_bytes,
            grant_timeout_us=self.grant_timeout_us,
            window_from_grants=self.cc != "oracle",
        )
