"""One sender-side simulation: N flows of any schemes through one Mahimahi bottleneck.

:func:`simulate` builds the path (:mod:`.core`), one sender and receiver per flow (a QUIC flow
of a registered controller, :mod:`.quic`; or a Nuwa flow, :mod:`.nuwa`), starts flow i at
``first_start_s`` + i × ``start_gap_s`` plus a seeded jitter of up to ``START_JITTER_MS`` (so
flows that start together are not in lockstep), runs ``duration_s`` of simulated time and returns
:func:`.metrics.summarize`'s figures with the run's parameters. Deterministic for a given
input and seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nuwa_lab.emulator import Trace

from .agents import attach_agent
from .core import Path, Sim
from .metrics import summarize
from .quic import QuicReceiver, QuicSender
from .schemes import NUWA_SCHEME, check_schemes, pacer_hook

START_JITTER_MS = 10.0
"""Each flow's start is delayed by a seeded uniform draw in [0, this), ms."""


@dataclass(frozen=True)
class SimConfig:
    """A run's parameters: one-way propagation delay each way (ms), drop-tail limit
    (packets; None: unbounded), the receivers' ACK policy (every ``ack_every`` packets,
    ``max_ack_delay_ms``), the gap between flow starts (s), simulated time (s; the run ends
    then, on the trace's clock), the seed, the first flow's start on the trace's clock (s;
    an end-to-end run's download starts seconds into the trace) and the warm-up after it
    that utilization and queuing delay leave out (s; ``bulk_metrics.py`` leaves out 2), and the
random loss before the queue (a probability per packet, seeded by ``seed``); ``pbq`` flows'
ONNX model (None: the checkout's ``models/pbq.onnx``; :mod:`.agents`); ``--switch dqn``'s
Q-network (None: the checkout's ``models/switch-dqn.onnx``); the switch rule's thresholds
changed from their defaults (the server's ``--switch-rule`` JSON; None: the defaults)."""

    one_way_delay_ms: float = 25.0
    queue_packets: int | None = 1000
    ack_every: int = 2
    max_ack_delay_ms: float = 25.0
    start_gap_s: float = 0.0
    duration_s: float = 60.0
    seed: int = 1
    first_start_s: float = 0.0
    warmup_s: float = 0.0
    loss_rate: float = 0.0
    pbq_model: str | None = None
    switch_model: str | None = None
    switch_rule: str | None = None
    sender_cc: str | None = None


def simulate(schemes: list[str], trace: Trace, cfg: SimConfig,
             switch: str = "none") -> dict[str, Any]:
    """Run the flows ``schemes`` (names of :func:`.schemes.schemes`) over ``trace``.

    ``switch``: ``none``, ``rule`` or ``dqn`` (each Nuwa flow's sender runs the server's
    ``--switch``: ``nuwa_server.switcher.make_policy`` and ``set_control_mode``).
    Returns the dict of :func:`.metrics.summarize` plus ``config``, with each flow's
    ``switches`` and ``switch_log`` [[t_s, mode], ...]. Raises ValueError on an unknown
    scheme or switch, no flows or a duration ≤ 0.
    """
    if switch not in ("none", "rule", "dqn"):
        raise ValueError(f"switch must be none, rule or dqn, got {switch!r}")
    if not schemes:
        raise ValueError("simulate: no flows")
    if cfg.duration_s <= 0:
        raise ValueError(f"duration_s must be > 0, got {cfg.duration_s}")
    check_schemes(schemes)
    rng = random.Random(cfg.seed)
    sim = Sim()
    path = Path(sim, trace, cfg.queue_packets, cfg.one_way_delay_ms, cfg.loss_rate, cfg.seed)
    starts_ms: list[float] = []
    receivers: list[QuicReceiver] = []
    closers: list[Callable[[], None]] = []
    bridges: list[Any] = []
    try:
        for i, scheme in enumerate(schemes):
            start_ms = ((cfg.first_start_s + i * cfg.start_gap_s) * 1000
                        + rng.uniform(0, START_JITTER_MS))
            starts_ms.append(start_ms)
            receiver = _make_flow(path, scheme, start_ms, cfg, closers, bridges, switch)
            receivers.append(receiver)
        sim.run_until(cfg.duration_s * 1000)
    finally:
        for close in reversed(closers):
            close()
    end_ms = int(cfg.duration_s * 1000)
    out = summarize(schemes, starts_ms, [(r.delivered_ms, r.delivered_bytes) for r in receivers],
                    path.truth, trace, end_ms, min(starts_ms) + cfg.warmup_s * 1000)
    out["config"] = {"schemes": schemes, "trace": trace.name, "switch": switch, **cfg.__dict__}
    for f, r in zip(out["flows"], receivers, strict=True):
        log = getattr(getattr(r, "nuwa_sender", None), "switch_log", [])
        f["switches"] = len(log)
        f["switch_log"] = [[round(t, 3), m] for t, m in log]
    return out


def _make_flow(path: Path, scheme: str, start_ms: float, cfg: SimConfig,
               closers: list[Callable[[], None]], bridges: list[Any] | None = None,
               switch: str = "none") -> QuicReceiver:
    """Build one flow's sender and receiver on ``path``; returns the receiver (attached)."""
    flow = len(path.receivers)
    receiver: QuicReceiver
    if scheme == NUWA_SCHEME:
        from .nuwa import Bridge, make_nuwa_flow  # the bridge starts node: only when asked

        if bridges is None:
            raise AssertionError("a nuwa flow needs the run's bridge list")
        if not bridges:
            bridges.append(Bridge())
            closers.append(bridges[0].close)  # closers run last first: after the sessions
        _, nuwa_receiver = make_nuwa_flow(path, flow, start_ms, cfg.ack_every,
                                          cfg.max_ack_delay_ms, bridges[0], switch,
                                          cfg.switch_model, cfg.switch_rule, cfg.sender_cc)
        closers.append(nuwa_receiver.close)
        receiver = nuwa_receiver
    else:
        sender = QuicSender(path, flow, scheme, start_ms, pacer_hook(), seed=cfg.seed * 1000 + flow)
        attach_agent(sender, cfg.pbq_model)  # pbq: the server's agent every 100 ms
        receiver = QuicReceiver(path, sender, cfg.ack_every, cfg.max_ack_delay_ms)
    if path.attach(receiver) != flow:
        raise AssertionError("flow index mismatch")
    return receiver
