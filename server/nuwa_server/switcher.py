"""Switching a Nuwa connection between receiver-driven and sender-driven control, live
(issue 18 items 1 and 3): the glue between one QUIC connection, its sessions, the rule
policy (:mod:`.switch_policy`) and the controller swap (:mod:`.cc.switching`).

* **receiver-driven** (the Nuwa mode): grants bind (``GrantConfig.enforce``), the ceiling
  (``SessionConfig.quic_congestion_control``: the Cubic ceiling or BBR) is only a cap;
* **sender-driven**: grants are advisory (still parsed, applied and logged, so the
  receiver's window and cumulative count stay current for the way back), and the
  connection's controller becomes ``SessionConfig.sender_cc`` (aioquic's Cubic by default;
  Cubic with RFC 9406's slow start, :mod:`.cc.hystart`, or BBR on request), which alone
  governs.

While the rule suspects a competitor it asks for a packet train (:mod:`.packet_train`) on
every open session: their next frames leave back to back, and the grants that echo them tell
the rule whether the queue ahead is the flow's own (``switch_policy`` module doc, "A lone
flow on a near-dark link"; each answer is logged as a ``train`` event). The DQN policy asks
for none.

A switch swaps the controller in ``SessionConfig.switch_mode`` (unrestricted by default:
the Cubic ceiling is a Cubic, so its W_max, epoch and window carry over exactly) and flips
``enforce`` on every open session of the connection (one controller per connection). A probe
back to receiver-driven control that fails (the rule's verdict) hands the sender-driven
controller the window and state the probe set aside when that window is the larger
(:func:`.cc.switching.restore_after_probe`: BBRRestoreCwnd's rule). The server logs each
switch as ``controller switch peer_port=P session=... to=MODE t_us=T ... restored_cwnd=B``
(T on the server's CLOCK_MONOTONIC, as frames are stamped; B None when nothing was restored)
(``./nuwa mix`` counts those lines).

Sans-I/O apart from the aioquic objects it is handed: the caller passes ``now_us``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable

from aioquic.quic.congestion.base import QuicCongestionControl
from aioquic.quic.recovery import QuicPacketRecovery

from .cc.switching import SWITCH_MODES, SwitchRecord, restore_after_probe, switch_controller
from .config import SessionConfig
from .grants import GrantDecision, GrantState
from .session import NuwaSession
from .switch_dqn import DqnSwitchPolicy, load_model
from .switch_policy import RECEIVER, SENDER, ControlMode, RuleSwitchPolicy

logger = logging.getLogger("nuwa_server.switcher")

POLL_INTERVAL_US = 50_000
"""How often a connection's policy is asked for a decision, µs."""


def set_control_mode(loss: QuicPacketRecovery, grants: Iterable[GrantState],
                     config: SessionConfig, mode: ControlMode, now_us: int,
                     sender_cc: str | None = None) -> SwitchRecord:
    """Move a connection to ``mode`` now: swap its controller (receiver-driven: the
    ceiling; sender-driven: ``sender_cc``, default ``config.sender_cc``) in
    ``config.switch_mode`` and set the enforcement of every session's grants (``grants``:
    each session's :class:`~.grants.GrantState`). Returns the swap's record. Raises
    ValueError on an unknown mode or controller."""
    if mode == RECEIVER:
        to_cc, enforce = config.quic_congestion_control, True
    elif mode == SENDER:
        to_cc, enforce = sender_cc or config.sender_cc, False
    else:
        raise ValueError(f"mode must be receiver or sender, got {mode!r}")
    switch_mode = config.switch_mode
    if switch_mode not in SWITCH_MODES:
        raise ValueError(f"switch_mode must be one of {SWITCH_MODES}, got {switch_mode!r}")
    record = switch_controller(loss, to_cc, switch_mode, now_us / 1e6)  # type: ignore[arg-type]
    for g in grants:
        g.config = dataclasses.replace(g.config, enforce=enforce)
    return record


def chosen_sender_cc(policy: object, config: SessionConfig, target: ControlMode) -> str | None:
    """The sender-driven controller ``policy`` names for a switch to ``target`` (the rule's
    :meth:`~.switch_policy.RuleSwitchPolicy.sender_cc`; the DQN names none), or None:
    ``config.sender_cc``. For :func:`set_control_mode`."""
    choose = getattr(policy, "sender_cc", None)
    return choose(config.sender_cc) if choose is not None and target == SENDER else None


def make_policy(config: SessionConfig, now_us: int,
                label: str = "") -> RuleSwitchPolicy | DqnSwitchPolicy:
    """The policy ``config.switch`` names: the rule, or the DQN (``config.switch_model``,
    default the checkout's model; an unusable one falls back to the rule, logged)."""
    if config.switch == "dqn":
        from pathlib import Path

        path = Path(config.switch_model) if config.switch_model else None
        return DqnSwitchPolicy(now_us, load_model(path), rule_config=config.rule_config(),
                               label=label)
    return RuleSwitchPolicy(now_us, config.rule_config())


class ConnectionSwitcher:
    """One connection's switching policy (rule or DQN) and its inputs (module doc)."""

    def __init__(self, config: SessionConfig, now_us: int) -> None:
        self.config = config
        self.policy = make_policy(config, now_us)
        if isinstance(self.policy, RuleSwitchPolicy):
            self.policy.takes_trains = True  # poll() sends what train_due asks for
        self.records: list[SwitchRecord] = []
        self._next_poll_us = now_us
        self._cum_bytes: dict[str, int] = {}
        """Each session's last accepted ``cum_received_bytes`` (the policy's delivery)."""
        self._set_aside: tuple[QuicCongestionControl, int] | None = None
        """The sender-driven controller a probe replaced, with the probe's start (µs):
        restored if the probe fails (:func:`.cc.switching.restore_after_probe`)."""
        self.restored: list[dict[str, float]] = []
        """What each restore after a failed probe brought back, in order."""

    @property
    def mode(self) -> ControlMode:
        """The control mode in force."""
        return self.policy.mode

    def on_grant(self, session: NuwaSession, decision: GrantDecision, now_us: int) -> None:
        """An accepted grant: its window, the queuing delay its echo shows (RTT sample
        − the session's min RTT, µs) with the echoed frame's stamp (a grant that echoes no
        newer frame adds no sample: ``switch_policy`` module doc), and the bytes the
        receiver counted since the session's previous grant go to the policy."""
        if not decision.accepted:
            return
        qd = echo = None
        if decision.rtt_us is not None and session.rtt_min_us is not None:
            qd = decision.rtt_us - session.rtt_min_us
            echo = decision.grant.echo_send_time_us if decision.grant is not None else None
        last = self._cum_bytes.get(session.name)
        self._cum_bytes[session.name] = decision.cum_received_bytes
        delivered = None if last is None else max(0, decision.cum_received_bytes - last)
        self.policy.observe(now_us, decision.window_bytes, qd, echo, delivered)
        observe_train = getattr(self.policy, "observe_train", None)
        train = getattr(session, "train", None)  # a replay's stand-in session has none
        if observe_train is not None and train is not None and decision.grant is not None:
            g = decision.grant
            sample = train.on_grant(now_us, g.echo_send_time_us, g.receiver_time_us,
                                            g.echo_hold_us, qd)
            if sample is not None:
                observe_train(now_us, sample.others_packets)
                session.log.event("train", t_us=now_us, qd_us=sample.queuing_delay_us,
                                  dispersion_per_frame_us=round(sample.dispersion_per_frame_us),
                                  own_ahead_bytes=sample.own_ahead_bytes,
                                  read_together=sample.read_together,
                                  others_packets=None if sample.read_together else round(
                                      sample.others_packets, 2))

    def poll(self, loss: QuicPacketRecovery, sessions: list[NuwaSession], now_us: int,
             peer_port: int | None) -> SwitchRecord | None:
        """At most every :data:`POLL_INTERVAL_US`: ask the policy; act on its decision.
        Returns the switch's record, or None."""
        if now_us < self._next_poll_us or not sessions:
            return None
        self._next_poll_us = now_us + POLL_INTERVAL_US
        target = self.policy.decide(now_us)
        if target is None:
            train_due = getattr(self.policy, "train_due", None)
            if train_due is not None and train_due(now_us):
                for s in sessions:
                    s.train.arm()  # a pending train keeps its place (arm() refuses)
            return None
        why = getattr(self.policy, "evidence", None)
        evidence = why() if why is not None else None  # before switched() clears it
        before = loss._cc
        record = set_control_mode(loss, [s.grants for s in sessions], self.config, target,
                                  now_us, chosen_sender_cc(self.policy, self.config, target))
        self.policy.switched(now_us, target)
        restored: dict[str, float] = {}
        if target == RECEIVER:
            self._set_aside = (before, now_us)
        else:
            if self._set_aside is not None and getattr(self.policy, "probe_failed_at_switch",
                                                       False):
                saved, since_us = self._set_aside
                restored = restore_after_probe(loss, saved, since_us / 1e6, now_us / 1e6)
                if restored:
                    self.restored.append(restored)
            self._set_aside = None
        self.records.append(record)
        for s in sessions:
            s.switches += 1
            s.log.event("switch", t_us=now_us, to_mode=target, from_cc=record.from_cc,
                        to_cc=record.to_cc, switch_mode=record.mode,
                        cwnd_bytes=record.congestion_window_bytes,
                        bytes_in_flight=record.bytes_in_flight, evidence=evidence,
                        restored_cwnd_bytes=restored.get("congestion_window"))
        logger.info("controller switch peer_port=%s session=%s to=%s t_us=%d from_cc=%s "
                    "to_cc=%s mode=%s cwnd=%d restored_cwnd=%s evidence=%s", peer_port,
                    sessions[0].name, target, now_us,
                    record.from_cc, record.to_cc, record.mode, record.congestion_window_bytes,
                    restored.get("congestion_window"), evidence)
        return record
