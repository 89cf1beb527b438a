"""The sender-side simulator's PBQ flow (lab/nuwa_lab/sendersim/agents.py). Not a `cpu` test
(conftest): the server's agent it runs falls back to BBR when an inference takes over 20 ms of
wall-clock time, so a starved host changes the outcome (a CI run with it beside the real-time
tests at SCHED_IDLE: "inference took 37.4 ms > 20 ms"). It runs with the functional real-time
tests, at normal priority. Since the twenty-first session the simulator's agent times its
inference by CPU time (the last test), so a starved host no longer makes it fall back."""

from __future__ import annotations

from pathlib import Path

import pytest

from nuwa_lab.emulator import constant_rate_trace
from nuwa_lab.sendersim import SimConfig, simulate

LINK_10M = constant_rate_trace(10e6)


def test_a_pbq_flow_runs_the_servers_agent_every_100_ms(caplog: pytest.LogCaptureFixture) -> None:
    """sendersim.agents: a pbq flow gets the server's PbqAgent on the simulated clock (one
    decision per 100 ms); with no usable model it falls back at once and is exactly BBR."""
    from nuwa_lab.sendersim.agents import attach_agent  # noqa: F401 - the module under test

    data = Path(__file__).resolve().parents[2] / "server" / "tests" / "data"
    cfg = SimConfig(duration_s=5, pbq_model=str(data / "pbq-linear.onnx"))
    with_model = simulate(["pbq"], LINK_10M, cfg)
    missing = SimConfig(duration_s=5, pbq_model=str(data / "missing.onnx"))
    assert simulate(["pbq"], LINK_10M, missing)["flows"][0] == \
        simulate(["bbr"], LINK_10M, missing)["flows"][0] | {"scheme": "pbq"}
    bbr = simulate(["bbr"], LINK_10M, cfg)["flows"][0]
    assert with_model["flows"][0] != bbr | {"scheme": "pbq"}
    fallbacks = [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]
    assert len(fallbacks) == 1 and "no model file" in fallbacks[0]


def test_a_pbq_flows_inference_timer_is_cpu_time_not_the_wall_clock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that deschedules the simulator mid-inference must not change a simulated run:
    the agent times its inference by this thread's CPU time (an inference that burns 20 ms of
    CPU still falls back), not by the wall clock (the server's default)."""
    import time

    from nuwa_lab.sendersim import agents

    made: list[agents.PbqAgent] = []

    class Spy(agents.PbqAgent):
        def __init__(self, *a: object, **kw: object) -> None:
            super().__init__(*a, **kw)  # type: ignore[arg-type]
            made.append(self)

    monkeypatch.setattr(agents, "PbqAgent", Spy)
    data = Path(__file__).resolve().parents[2] / "server" / "tests" / "data"
    simulate(["pbq"], LINK_10M, SimConfig(duration_s=1, pbq_model=str(data / "pbq-linear.onnx")))
    assert len(made) == 1 and made[0].clock is time.thread_time
    assert made[0].cc.decisions > 0
