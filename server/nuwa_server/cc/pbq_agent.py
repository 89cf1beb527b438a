"""PBQ's policy in the server: the ONNX model under onnxruntime, run every 100 ms per
connection off the packet path, with the fallbacks to plain BBR (docs/PBQ.md "Control loop").

* :func:`load_policy` loads ``models/pbq.onnx`` (or ``--pbq-model``) once per process and
  checks its metadata (:data:`.pbq.STATE_VERSION`, input size :data:`.pbq.STATE_SIZE`, action
  rule :data:`.pbq.ACTION_RULE_VERSION`)
  against the graph's input; it returns a :class:`PbqPolicy` or the reason it cannot.
* :class:`PbqAgent` is one connection's decision loop: :meth:`PbqAgent.step` ``(now)``
  observes, infers, applies (or falls back, logging one line); :meth:`PbqAgent.run` calls it
  every :data:`.pbq.INTERVAL_S` from an asyncio task.

onnxruntime is optional (``pip install ./server[pbq]``; the repository's ``.venv`` has it): a
product without it falls back with a log line. The product imports no numpy (.importlinter):
the state goes to onnxruntime as a nested list, which onnxruntime converts to the model's
float32 input itself.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..onnx_model import MetadataCheck, load_onnx
from .pbq import ACTION_RULE_VERSION, INTERVAL_S, STATE_SIZE, STATE_VERSION, PbqCongestionControl

log = logging.getLogger("nuwa.pbq")

_HERE = Path(__file__).resolve().parents  # checkout: server/nuwa_server/cc → the repository
DEFAULT_MODEL_PATH = _HERE[min(3, len(_HERE) - 1)] / "models" / "pbq.onnx"
"""The shipped model in a checkout (``./nuwa train --agent pbq`` writes it); an installed
product has no such file unless ``--pbq-model`` names one."""
MAX_INFERENCE_S = 0.020
"""An inference slower than this falls back to BBR (docs/PBQ.md; the decision target is < 1 ms)."""
REPORT_EVERY = 100
"""Every this many decisions (10 s) a connection logs its inference times (INFO)."""
INPUT_NAME = "state"
"""The model's input: ``[batch, STATE_SIZE]`` float32; its first output is the action
``[batch, 1]`` in [−1, 1]."""


class PbqModelError(Exception):
    """A model that cannot be used, or one inference that failed; the message is the reason."""


@dataclass
class PbqPolicy:
    """A loaded, checked model. ``session``: the onnxruntime InferenceSession; ``metadata``:
    its custom metadata (state version, input size, training command, commit)."""

    session: Any
    metadata: dict[str, str]
    path: Path

    def act(self, state: list[float]) -> float:
        """The action for one state (:data:`.pbq.STATE_SIZE` floats), in [−1, 1].

        Raises:
            PbqModelError: a NaN/inf input or output, a wrong length, or onnxruntime raised.
        """
        if len(state) != STATE_SIZE:
            raise PbqModelError(f"state has {len(state)} values, the model takes {STATE_SIZE}")
        if not all(math.isfinite(x) for x in state):
            raise PbqModelError("state has a NaN or infinite value")
        try:
            out = self.session.run(None, {INPUT_NAME: [state]})
            action = float(out[0][0][0])
        except Exception as exc:  # onnxruntime raises its own types
            raise PbqModelError(f"inference raised {type(exc).__name__}: {exc}") from exc
        if not math.isfinite(action):
            raise PbqModelError(f"model output is {action}")
        return action


_CACHE: dict[Path, PbqPolicy | str] = {}


def load_policy(path: Path | None = None) -> PbqPolicy | str:
    """The checked model at ``path`` (default :data:`DEFAULT_MODEL_PATH`), loaded once per
    process; or the reason it cannot be used (missing file, onnxruntime missing or unable to
    load it, metadata or input shape not :data:`.pbq.STATE_VERSION` / :data:`.pbq.STATE_SIZE` /
    :data:`.pbq.ACTION_RULE_VERSION`).
    """
    p = (path or DEFAULT_MODEL_PATH).resolve()
    if p not in _CACHE:
        _CACHE[p] = _load(p)
    return _CACHE[p]


def _load(path: Path) -> PbqPolicy | str:
    loaded = load_onnx(path, checks=(MetadataCheck("state_version", STATE_VERSION, "state version"),
                                     MetadataCheck("input_size", str(STATE_SIZE), "input size"),
                                     MetadataCheck("action_rule_version", ACTION_RULE_VERSION,
                                                   "action rule")),
                       input_name=INPUT_NAME, input_size=STATE_SIZE,
                       missing_runtime_hint="pip install ./server[pbq]")
    if isinstance(loaded, str):
        return loaded
    session, meta = loaded
    return PbqPolicy(session=session, metadata=meta, path=path)


class PbqAgent:
    """One connection's decision loop (module doc).

    Args:
        cc: the connection's controller.
        policy: :func:`load_policy`'s answer (a reason string falls back at the first step).
        on_window: called after each new window (the server pumps its send loop).
        clock: the inference timer, s (``time.perf_counter``; tests pass their own).
        label: names the connection in the log line.
    """

    def __init__(self, cc: PbqCongestionControl, policy: PbqPolicy | str,
                 on_window: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter, label: str = "") -> None:
        self.cc = cc
        self.policy = policy
        self.on_window = on_window
        self.clock = clock
        self.label = label
        self.inference_s: list[float] = []
        """Each decision's inference time, s (the last 1,000)."""

    def step(self, now: float) -> bool:
        """One decision at ``now`` (s of the connection's clock): observe, infer, apply.
        Returns False once the controller runs plain BBR (nothing more to do)."""
        cc = self.cc
        if not cc.agent_active:
            return False
        if isinstance(self.policy, str):
            self._fall_back(self.policy)
            return False
        state = cc.observe(now)
        if cc.last_interval is not None and cc.last_interval.app_limited:
            cc.apply_action(0.0, now)  # held (PbqCongestionControl.apply_action): no inference
            return True
        t0 = self.clock()
        try:
            action = self.policy.act(state)
        except PbqModelError as exc:
            self._fall_back(str(exc))
            return False
        took_s = self.clock() - t0
        if took_s > MAX_INFERENCE_S:
            self._fall_back(f"inference took {took_s * 1000:.1f} ms "
                            f"> {MAX_INFERENCE_S * 1000:.0f} ms")
            return False
        if len(self.inference_s) >= 1000:
            del self.inference_s[:500]
        self.inference_s.append(took_s)
        cc.apply_action(action, now)
        if cc.decisions % REPORT_EVERY == 0:
            last = sorted(self.inference_s[-REPORT_EVERY:])
            log.info("pbq%s: %d decisions, inference over the last %d: p50 %.3f ms, p99 %.3f ms, "
                     "max %.3f ms; cwnd %d B; %d held after app-limited intervals", self._where(),
                     cc.decisions, len(last), 1000 * last[len(last) // 2],
                     1000 * last[int(0.99 * (len(last) - 1))], 1000 * last[-1],
                     cc.congestion_window, cc.held_app_limited)
        if self.on_window is not None:
            self.on_window()
        return True

    def _where(self) -> str:
        return f" {self.label}" if self.label else ""

    def _fall_back(self, reason: str) -> None:
        self.cc.fall_back(reason)
        log.warning("pbq%s: falling back to BBR: %s", self._where(), reason)

    async def run(self, loop_time: Callable[[], float]) -> None:
        """Call :meth:`step` every :data:`.pbq.INTERVAL_S` (``loop_time``: the clock aioquic
        is given, s) until the controller falls back or the task is cancelled."""
        while True:
            await asyncio.sleep(INTERVAL_S)
            if not self.step(loop_time()):
                return
