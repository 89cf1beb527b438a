"""The learned switching policy (issue 18 item 3): a DQN's Q-network, exported to ONNX, chooses
a Nuwa connection's control mode (receiver-driven or sender-driven) every
:data:`DECISION_INTERVAL_US`; hysteresis damps it and the rule of :mod:`.switch_policy` is its
fallback.

The seed paper (``drl-cca-switching.txt`` §4) learns a switching policy with a DQN over the
flow's state (throughput, RTT, loss, jitter); ours sees what the rule sees, the evidence that
only a receiver-driven server has (:func:`features`, every value in [0, 1]):

====================  ============================================================
``fresh_samples``     fresh queuing-delay samples in the last Y ÷ 60 (clipped)
``qd_min``            their minimum, s ÷ 2 (clipped): the queue never drained below it
``qd_mean``           their mean, s ÷ 2 (clipped)
``coverage_gap``      longest span of Y without a fresh sample ÷ Y
``window_at_floor``   share of granted windows ≤ 4,800 bytes (four frames) in Y
``mode_sender``       1 when sender-driven
``time_in_mode``      time since the last switch ÷ 30 s (clipped)
``rule_evidence``     1 when the rule's receiver-driven condition holds
====================  ============================================================

Action ``a`` ∈ {0, 1}: the mode wanted, :data:`ACTIONS`. Around the network
(:class:`DqnSwitchPolicy`):

* **hysteresis**: a switch needs ``confirm`` consecutive decisions for the other mode and at
  least ``min_dwell_us`` in the present one (a flapping Q-network moves the flow at most once
  per ``min_dwell_us``);
* **the way back follows the rule's probes**: while sender-driven the loss-based controller
  fills the queue itself, so no state tells whether the competitor left (the rule's reason
  for probing, :mod:`.switch_policy`); the network decides when to leave receiver-driven
  control, and the return to it comes at the rule's probe times (20 s, doubled after each
  failed probe up to 80 s). Without this the first model (trained 8bcbccd) went back after
  every 5-s dwell next to Cubic (8 switches in 60 s, Nuwa's share 0.22 against the rule's
  0.40, docs/BENCHMARKS.md);
* **outage guard**: no fresh sample for ``outage_us`` → no switch (an outage tells nothing
  about a competitor; :mod:`.switch_policy` module doc);
* **fallback**: a model that cannot be loaded (missing, unreadable, metadata or shape not
  this module's) or that fails one inference (onnxruntime raised, NaN) → the rule decides
  from then on, with one WARNING line saying why.

Sans-I/O apart from loading the file: :meth:`DqnSwitchPolicy.decide` takes ``now_us``.
The product imports no numpy (.importlinter): the state goes to onnxruntime as a nested list.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .onnx_model import MetadataCheck, load_onnx
from .switch_policy import RECEIVER, SENDER, ControlMode, RuleConfig, RuleSwitchPolicy

log = logging.getLogger("nuwa_server.switch_dqn")

FEATURES_VERSION = "switch-v1"
"""Names the feature vector below; a model trained on another says so in its metadata."""
FEATURE_NAMES = ("fresh_samples", "qd_min", "qd_mean", "coverage_gap", "window_at_floor",
                 "mode_sender", "time_in_mode", "rule_evidence")
STATE_SIZE = len(FEATURE_NAMES)
ACTIONS: tuple[ControlMode, ControlMode] = (RECEIVER, SENDER)
"""Action index → the mode the network wants."""
INPUT_NAME = "state"
"""The model's input ``[batch, STATE_SIZE]`` float32; its first output is the Q-values
``[batch, 2]``."""
DECISION_INTERVAL_US = 500_000
"""One decision per this, µs (the rule is polled every 50 ms; a Q-decision every 0.5 s)."""
FLOOR_WINDOW_BYTES = 4800
"""A granted window at or below this is "at the floor" (four 1,200-byte frames)."""

_HERE = Path(__file__).resolve().parents  # checkout: server/nuwa_server → the repository
DEFAULT_MODEL_PATH = _HERE[min(2, len(_HERE) - 1)] / "models" / "switch-dqn.onnx"
"""The shipped model in a checkout (``./nuwa train --agent switch`` writes it)."""


class SwitchModelError(Exception):
    """A model that cannot be used, or one inference that failed; the message says why."""


def features(rule: RuleSwitchPolicy, now_us: int) -> list[float]:
    """The state vector (module doc) from ``rule``'s observations over its last Y at
    ``now_us``: :data:`STATE_SIZE` floats in [0, 1]."""
    c = rule.config
    hold = c.hold_us
    rule.observe(now_us)  # trims to the last Y
    qd = rule.qd_samples
    wins = rule.window_samples
    prev, gap = now_us - hold, 0
    for t, _ in [*qd, (now_us, 0)]:
        gap = max(gap, t - prev)
        prev = t
    qds = [q for _, q in qd]
    floor = sum(1 for _, w in wins if w <= FLOOR_WINDOW_BYTES) / len(wins) if wins else 0.0
    return [
        min(1.0, len(qds) / 60),
        min(1.0, min(qds) / 2e6) if qds else 0.0,
        min(1.0, sum(qds) / len(qds) / 2e6) if qds else 0.0,
        min(1.0, gap / hold),
        floor,
        1.0 if rule.mode == SENDER else 0.0,
        min(1.0, (now_us - rule.since_us) / 30e6),
        1.0 if rule.mode == RECEIVER and rule.competitor_evidence(now_us) else 0.0,
    ]


@dataclass
class SwitchModel:
    """A loaded, checked Q-network (``session``: onnxruntime's; ``metadata``: its custom
    metadata: features version, state size, training command, commit, validation)."""

    session: Any
    metadata: dict[str, str]
    path: Path

    def q_values(self, state: list[float]) -> list[float]:
        """Q-values of :data:`ACTIONS` for one state. Raises SwitchModelError on a wrong
        length, a non-finite value in or out, or an onnxruntime error."""
        if len(state) != STATE_SIZE or not all(math.isfinite(x) for x in state):
            raise SwitchModelError(f"bad state {state!r}")
        try:
            out = self.session.run(None, {INPUT_NAME: [state]})
            q = [float(x) for x in out[0][0]]
        except Exception as exc:  # onnxruntime raises its own types
            raise SwitchModelError(f"inference raised {type(exc).__name__}: {exc}") from exc
        if len(q) != len(ACTIONS) or not all(math.isfinite(x) for x in q):
            raise SwitchModelError(f"model output {q!r}")
        return q


_CACHE: dict[Path, SwitchModel | str] = {}


def load_model(path: Path | None = None) -> SwitchModel | str:
    """The checked model at ``path`` (default :data:`DEFAULT_MODEL_PATH`), loaded once per
    process; or the reason it cannot be used (missing file, no onnxruntime, unreadable,
    metadata ``features_version``/``state_size`` or the input not this module's)."""
    p = (path or DEFAULT_MODEL_PATH).resolve()
    if p not in _CACHE:
        _CACHE[p] = _load(p)
    return _CACHE[p]


def _load(path: Path) -> SwitchModel | str:
    loaded = load_onnx(path, checks=(
        MetadataCheck("features_version", FEATURES_VERSION, "features version"),
        MetadataCheck("state_size", str(STATE_SIZE), "state size")),
        input_name=INPUT_NAME, input_size=STATE_SIZE)
    if isinstance(loaded, str):
        return loaded
    session, meta = loaded
    return SwitchModel(session=session, metadata=meta, path=path)


@dataclass(frozen=True, slots=True)
class DqnConfig:
    """Hysteresis around the network (module doc), µs and decisions."""

    confirm: int = 3
    min_dwell_us: int = 5_000_000
    outage_us: int = 1_000_000

    def validate(self) -> DqnConfig:
        """Return self or raise ValueError naming the bad field."""
        if self.confirm < 1 or self.min_dwell_us < 0 or self.outage_us <= 0:
            raise ValueError(f"need confirm >= 1, min_dwell_us >= 0, outage_us > 0: {self}")
        return self


class DqnSwitchPolicy:
    """One flow's learned policy with the rule underneath (module doc); the interface of
    :class:`~.switch_policy.RuleSwitchPolicy` (``observe``, ``decide``, ``switched``,
    ``mode``, ``switches``).

    Args:
        now_us: the flow's start.
        model: :func:`load_model`'s answer (a reason string: the rule from the start).
        config / rule_config: the hysteresis; the rule's thresholds (its evidence is a
            feature and it is the fallback).
        label: names the connection in the log line.
    """

    def __init__(self, now_us: int, model: SwitchModel | str,
                 config: DqnConfig | None = None, rule_config: RuleConfig | None = None,
                 label: str = "") -> None:
        self.config = (config or DqnConfig()).validate()
        self.rule = RuleSwitchPolicy(now_us, rule_config)
        self.model: SwitchModel | None = None
        self.fallback_reason: str | None = None
        self.label = label
        self.decisions = 0
        self._streak = 0
        self._next_us = now_us
        self.last_state: list[float] | None = None
        if isinstance(model, str):
            self._fall_back(model)
        else:
            self.model = model

    @property
    def mode(self) -> ControlMode:
        """The control mode in force."""
        return self.rule.mode

    @property
    def switches(self) -> int:
        """Switches acted on so far."""
        return self.rule.switches

    def observe(self, now_us: int, window_bytes: int | None = None,
                queuing_delay_us: int | None = None, echo_us: int | None = None,
                delivered_bytes: int | None = None) -> None:
        """As :meth:`.switch_policy.RuleSwitchPolicy.observe` (the rule keeps the samples)."""
        self.rule.observe(now_us, window_bytes, queuing_delay_us, echo_us, delivered_bytes)

    def _fall_back(self, reason: str) -> None:
        self.fallback_reason = reason
        self.model = None
        log.warning("switch dqn%s: falling back to the rule: %s",
                    f" {self.label}" if self.label else "", reason)

    def decide(self, now_us: int) -> ControlMode | None:
        """The mode to switch to now, or None (module doc: hysteresis, outage guard,
        fallback)."""
        if self.model is None or self.mode == SENDER:
            return self.rule.decide(now_us)  # fallback; or the way back: the rule's probes
        if now_us < self._next_us:
            return None
        self._next_us = now_us + DECISION_INTERVAL_US
        state = features(self.rule, now_us)
        self.last_state = state
        try:
            q = self.model.q_values(state)
        except SwitchModelError as exc:
            self._fall_back(str(exc))
            return self.rule.decide(now_us)
        self.decisions += 1
        want = ACTIONS[0] if q[0] >= q[1] else ACTIONS[1]
        self._streak = self._streak + 1 if want != self.mode else 0
        qd = self.rule.qd_samples
        if not qd or now_us - qd[-1][0] > self.config.outage_us:
            return None  # outage guard: no evidence either way
        if self._streak >= self.config.confirm and (
                now_us - self.rule.since_us >= self.config.min_dwell_us):
            return want
        return None

    def switched(self, now_us: int, mode: ControlMode) -> None:
        """The caller moved the flow to ``mode`` at ``now_us``."""
        self._streak = 0
        self.rule.switched(now_us, mode)

    @property
    def probe_failed_at_switch(self) -> bool:
        """The last switch ended a failed probe (the rule's verdict: its probes are ours)."""
        return self.rule.probe_failed_at_switch
