"""The sender-side simulator's PBQ flow (lab/nuwa_lab/sendersim/agents.py). Not a `cpu` test
(conftest): the server's agent it runs falls back to BBR when an inference takes over 20 ms of
wall-clock time, so a starved host changes the outcome (a CI run with it beside the real-time
tests at SCHED_IDLE: "inference took 37.4 ms > 20 ms"). It runs with the functional real-time
tests, at normal priority."""

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
