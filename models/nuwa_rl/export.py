"""Export the Nuwa-RL actor step to one ONNX file, with its metadata and parity fixtures.

The graph (docs/DESIGN.md §8 "RL stack": the actor step as its own module, not sb3's
get_distribution):

    inputs  obs [B, OBS_DIM] float32, h [1, B, H] float32, c [1, B, H] float32,
            episode_start [B] float32 (1 = reset the LSTM state first)
    outputs logits [B, len(ACTIONS)] float32, h_out [1, B, H], c_out [1, B, H]

The greedy action is argmax(logits); k <- clamp(k * ACTIONS[action], 1, 9).
Fixtures: a real episode's observations (with a reset in the middle), the
sb3 policy's greedy actions and the exported module's logits, all produced
here; the tests of onnxruntime (Python), onnxruntime-node and onnxruntime-web
replay them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from . import agent
from .parity import check_onnxruntime  # noqa: F401  (re-exported for train.py)
from .sim import ENV_CC_CONFIG

MODEL_VERSION = 1


class ActorStep(nn.Module):
    """One step of sb3-contrib RecurrentActorCriticPolicy's actor (lstm_actor, policy_net, action_net)."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.lstm: nn.LSTM = policy.lstm_actor
        self.policy_net: nn.Module = policy.mlp_extractor.policy_net
        self.action_net: nn.Module = policy.action_net

    def forward(self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor,
                episode_start: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        keep = (1.0 - episode_start).view(1, -1, 1)  # sb3-contrib _process_sequence: reset at episode start
        out, (h2, c2) = self.lstm(obs.unsqueeze(0), (h * keep, c * keep))
        logits = self.action_net(self.policy_net(out.squeeze(0)))
        return logits, h2, c2


def export_onnx(policy: Any, path: Path) -> None:
    """Dynamo export, opset 18, one file, dynamic batch (docs/DESIGN.md §8: batch-2 example)."""
    step = ActorStep(policy).eval()
    hidden = step.lstm.hidden_size
    b = 2
    ex = (torch.zeros(b, agent.OBS_DIM), torch.zeros(1, b, hidden), torch.zeros(1, b, hidden),
          torch.ones(b))
    batch = torch.export.Dim("batch", min=1, max=1024)
    torch.onnx.export(
        step, ex, str(path), dynamo=True, opset_version=18, external_data=False,
        input_names=["obs", "h", "c", "episode_start"], output_names=["logits", "h_out", "c_out"],
        dynamic_shapes=({0: batch}, {1: batch}, {1: batch}, {0: batch}))


def make_fixtures(model: Any, observations: np.ndarray, episode_starts: np.ndarray) -> dict[str, Any]:
    """Greedy actions from sb3 (model.predict) and logits from ActorStep over one sequence (batch 1)."""
    policy = model.policy
    step = ActorStep(policy).eval()
    hidden = step.lstm.hidden_size
    h = torch.zeros(1, 1, hidden)
    c = torch.zeros(1, 1, hidden)
    state = None
    actions, sb3_actions, logits_all = [], [], []
    for obs, start in zip(observations, episode_starts, strict=True):
        a_sb3, state = model.predict(obs[None, :], state=state, episode_start=np.array([bool(start)]),
                                     deterministic=True)
        with torch.no_grad():
            logits, h, c = step(torch.from_numpy(obs[None, :]), h, c, torch.tensor([float(start)]))
        logits_all.append(logits[0].numpy().astype(float).tolist())
        actions.append(int(torch.argmax(logits[0])))
        sb3_actions.append(int(a_sb3[0]))
    if actions != sb3_actions:
        raise RuntimeError(f"ActorStep disagrees with sb3's policy: {actions} vs {sb3_actions}")
    return {"obs": observations.astype(float).tolist(), "episode_start": episode_starts.astype(float).tolist(),
            "logits": logits_all, "actions": actions, "tolerance_logits": 1e-4}


def metadata(path: Path, hidden: int, traces: list[str], train_info: dict[str, Any]) -> dict[str, Any]:
    """The model's contract with the player (tuner.ts reads it)."""
    return {
        "name": "nuwa-rl",
        "version": MODEL_VERSION,
        "paper": "nuwa-rl-journal §V-B (Eq. 10 state, Eq. 11 action, Eq. 12-13 reward)",
        "onnx": path.name,
        "onnx_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "onnx_bytes": path.stat().st_size,
        "inputs": {"obs": ["batch", agent.OBS_DIM], "h": [1, "batch", hidden], "c": [1, "batch", hidden],
                   "episode_start": ["batch"]},
        "outputs": {"logits": ["batch", len(agent.ACTIONS)], "h_out": [1, "batch", hidden],
                    "c_out": [1, "batch", hidden]},
        "lstm": {"hidden_size": hidden, "layers": 1},
        "observation": {"history_len": agent.HISTORY_LEN, "order": "oldest interval first, zero-padded",
                        "features": list(agent.FEATURES)},
        "actions": list(agent.ACTIONS),
        "action_rule": "k <- clamp(k * actions[argmax(logits)], k_min, k_max)  (Eq. 11)",
        "k_min_mss": agent.K_MIN_MSS, "k_max_mss": agent.K_MAX_MSS, "k_initial_mss": agent.K_INITIAL_MSS,
        "interval_ms": agent.INTERVAL_MS,
        "controller": {**ENV_CC_CONFIG, "note": "run @nuwa/cc with these settings; k acts in the additive rule "
                       "(nuwa-icpads Eq. 3/6)"},
        "reward": {"weights": {"throughput": agent.W_THROUGHPUT, "delay": agent.W_DELAY, "loss": agent.W_LOSS},
                   "alpha": agent.ALPHA, "units": {"throughput": "Mbit/s", "delay": f"{agent.DELAY_UNIT_MS:g} ms",
                                                   "loss": "percent"}},
        "player_buffer": {"ladder_bps": list(agent.LADDER_BPS), "segment_s": agent.SEGMENT_S,
                          "max_s": agent.BUFFER_MAX_S},
        "training_traces": traces,
        "training": train_info,
    }


def write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=1) + "\n")
