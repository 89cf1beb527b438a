"""The learned switching policy (nuwa_server/switch_dqn.py): its fallback to the rule, its
hysteresis, its outage guard, and the shipped model, under a simulated clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nuwa_server.config import SessionConfig
from nuwa_server.switch_dqn import (
    DEFAULT_MODEL_PATH,
    STATE_SIZE,
    DqnSwitchPolicy,
    SwitchModel,
    features,
    load_model,
)
from nuwa_server.switch_policy import RECEIVER, SENDER, RuleSwitchPolicy
from nuwa_server.switcher import ConnectionSwitcher

pytestmark = pytest.mark.cpu  # computation only: runs beside other cpu tests (conftest)

MS = 1000
S = 1_000_000


class Scripted:
    """An onnxruntime session stand-in whose Q-values follow ``script(call index)``."""

    def __init__(self, script: Any) -> None:
        self.script = script
        self.calls = 0

    def run(self, _outputs: Any, feeds: dict[str, Any]) -> list[Any]:
        assert len(feeds["state"][0]) == STATE_SIZE
        q = self.script(self.calls)
        self.calls += 1
        return [[q]]


def scripted(script: Any) -> SwitchModel:
    return SwitchModel(session=Scripted(script), metadata={}, path=Path("scripted"))


def drive(p: Any, t0: int, t1: int, qd_us: int | None, step: int = 50 * MS,
          window: int = 1200) -> list[tuple[int, str]]:
    """Grants every ``step``, each echoing a new frame (qd ``qd_us``; None: an outage, no
    sample), acting on every decision; returns the switches."""
    out = []
    for t in range(t0, t1, step):
        p.observe(t, window, qd_us, echo_us=t - 100 * MS if qd_us is not None else None)
        d = p.decide(t)
        if d is not None:
            p.switched(t, d)
            out.append((t, d))
    return out


def test_a_bad_policy_file_falls_back_to_the_rule(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A missing and a malformed file: the reason is logged once, the rule decides (it moves
    a flow with a standing queue after Y, as the rule alone does)."""
    caplog.set_level("WARNING", logger="nuwa_server.switch_dqn")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx file")
    for path in (bad, tmp_path / "missing.onnx"):
        reason = load_model(path)
        assert isinstance(reason, str)
        p = DqnSwitchPolicy(0, reason)
        assert p.model is None and p.fallback_reason == reason
        sw = drive(p, 0, 5 * S, 400 * MS)
        assert sw and sw[0][1] == SENDER and sw == drive(RuleSwitchPolicy(0), 0, 5 * S, 400 * MS)
    assert sum("falling back to the rule" in m for m in caplog.messages) == 2
    # through the server's config: --switch dqn --switch-model BAD
    cs = ConnectionSwitcher(SessionConfig(switch="dqn", switch_model=str(bad)).validate(), 0)
    assert isinstance(cs.policy, DqnSwitchPolicy) and cs.policy.model is None


def test_an_inference_error_falls_back_for_good(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", logger="nuwa_server.switch_dqn")
    p = DqnSwitchPolicy(0, scripted(lambda k: [0.0, float("nan")] if k == 3 else [1.0, 0.0]))
    drive(p, 0, 10 * S, 20 * MS)
    assert p.model is None and "model output" in (p.fallback_reason or "")
    assert any("falling back" in m for m in caplog.messages)


def test_a_flapping_network_is_damped() -> None:
    """Q-values that prefer the other mode every other decision never switch (``confirm`` = 3
    in a row); three in a row do, and then not again within ``min_dwell``."""
    p = DqnSwitchPolicy(0, scripted(lambda k: [0.0, 1.0] if k % 2 else [1.0, 0.0]))
    assert drive(p, 0, 60 * S, 400 * MS) == []
    assert p.decisions >= 100
    p2 = DqnSwitchPolicy(0, scripted(lambda k: [0.0, 1.0] if (k // 3) % 2 else [1.0, 0.0]))
    sw = drive(p2, 0, 60 * S, 400 * MS)
    assert sw and sw[0][1] == SENDER
    gaps = [b[0] - a[0] for a, b in zip(sw, sw[1:], strict=False)]
    assert all(g >= p2.config.min_dwell_us for g in gaps)
    assert len(sw) <= 60 * S // p2.config.min_dwell_us
    assert [m for _, m in sw][:2] == [SENDER, RECEIVER] and sw[1][0] - sw[0][0] >= 20 * S


def test_no_switch_during_an_outage() -> None:
    """A network that wants to switch gets no switch while no fresh sample arrives (an
    outage), and gets it once samples resume."""
    p3 = DqnSwitchPolicy(0, scripted(lambda k: [0.0, 1.0]))  # always wants sender-driven
    drive(p3, 0, 1 * S, 20 * MS)
    assert drive(p3, 1 * S, 20 * S, None) == []  # the outage: grants, no new frame
    assert p3.mode == RECEIVER and p3.decisions >= 30
    sw = drive(p3, 20 * S, 22 * S, 400 * MS)
    assert sw and sw[0][1] == SENDER


def test_the_way_back_follows_the_rules_probes() -> None:
    """Sender-driven, a network that wants receiver-driven at once gets it only at the
    rule's probe time (20 s); a flapping one cannot bring the flow back sooner either."""
    p = DqnSwitchPolicy(0, scripted(lambda k: [1.0, 0.0]))  # always wants receiver-driven
    p.switched(0, SENDER)
    sw = drive(p, 0, 30 * S, 400 * MS)
    assert sw[0] == (20 * S, RECEIVER)
    p2 = DqnSwitchPolicy(0, scripted(lambda k: [1.0, 0.0] if k % 2 else [0.0, 1.0]))
    p2.switched(0, SENDER)
    assert drive(p2, 0, 19 * S, None) == [] and p2.mode == SENDER


def test_features_are_in_range_and_name_the_evidence() -> None:
    r = RuleSwitchPolicy(0)
    for t in range(0, 4 * S, 50 * MS):  # observed, not acted on
        r.observe(t, 1200, 400 * MS, echo_us=t - 100 * MS)
    f = features(r, 4 * S)
    assert len(f) == STATE_SIZE and all(0.0 <= x <= 1.0 for x in f)
    assert f[0] == 1.0 and f[1] == pytest.approx(0.2) and f[7] == 1.0  # 60 samples, 400 ms
    r2 = RuleSwitchPolicy(0)
    drive(r2, 0, 4 * S, None)
    assert features(r2, 4 * S)[:4] == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.skipif(not DEFAULT_MODEL_PATH.is_file(), reason="no shipped model")
def test_the_shipped_model_loads_and_decides() -> None:
    """models/switch-dqn.onnx (./nuwa train --agent switch) passes the checks and answers."""
    m = load_model()
    assert isinstance(m, SwitchModel), m
    assert m.metadata["command"].startswith("./nuwa train --agent switch")
    q = m.q_values([0.5] * STATE_SIZE)
    assert len(q) == 2
