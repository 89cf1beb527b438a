"""Agents that act on a flow's controller at intervals, as the server runs them: a ``pbq`` flow
gets the server's own :class:`nuwa_server.cc.pbq_agent.PbqAgent` (the ONNX model under
onnxruntime, with its fallbacks), stepped every 100 ms of simulated time from the flow's start.
"""

from __future__ import annotations

import time
from pathlib import Path

from nuwa_server.cc.pbq import INTERVAL_S, PbqCongestionControl
from nuwa_server.cc.pbq_agent import PbqAgent, load_policy

from .quic import QuicSender


def attach_agent(sender: QuicSender, pbq_model: str | None = None) -> PbqAgent | None:
    """If ``sender``'s controller is PBQ, schedule its agent every :data:`INTERVAL_S` of the
    simulated clock (the first decision one interval after the flow starts) and return it;
    else None. ``pbq_model``: the ONNX file (None: the checkout's ``models/pbq.onnx``)."""
    cc = sender.recovery._cc
    if not isinstance(cc, PbqCongestionControl):
        return None
    sim = sender.sim
    # The inference timer is this thread's CPU time, not the wall clock: an inference that
    # burns 20 ms still falls back, one merely descheduled on a loaded host does not, so a
    # simulated run's outcome does not depend on what else the host runs.
    agent = PbqAgent(cc, load_policy(Path(pbq_model) if pbq_model else None),
                     on_window=sender.try_send, clock=time.thread_time,
                     label=f"sim flow {sender.flow}")

    def tick() -> None:
        if agent.step(sim.now_s):
            sim.at(sim.now_ms + INTERVAL_S * 1000, tick)

    sim.at(sender.start_ms + INTERVAL_S * 1000, tick)
    return agent
