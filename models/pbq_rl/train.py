"""Train PBQ's agent (stable-baselines3 PPO, docs/PBQ.md "Training"), export it to ONNX with
metadata and parity fixtures, evaluate it against BBR in the simulator.

``./nuwa train --agent pbq`` runs this with the defaults (seeded; one torch thread; the
environments in subprocesses, one per core) and writes ``models/pbq.onnx`` (metadata inside:
state version, input size, training command, git commit), ``models/pbq.json`` (the same and
the training figures), ``models/pbq.fixtures.json`` (states → SB3's deterministic actions,
replayed by ``models/tests/test_pbq_training.py`` under onnxruntime) and
``models/report/pbq-eval.json`` (held-out traces and the random-loss links, PBQ vs BBR).

Usage: python -m pbq_rl.train [--epochs N] [--seed S] [--n-envs E] [--out DIR] [--no-eval] [--save-at 50,100]
       [--rtt-threshold X]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from nuwa_server.cc.pbq import (
    ACTION_RULE,
    ACTION_RULE_VERSION,
    FEATURES,
    FRAMES,
    INTERVAL_S,
    STATE_SIZE,
    STATE_VERSION,
)
from torch import nn

from .env import EPISODE_STEPS, PbqEnv
from .scenario import REPO_ROOT, RTT_THRESHOLD, split_traces

EPOCH_STEPS = 1200
"""Steps per PPO rollout: the paper's epoch of 1,200 steps."""
DEFAULT_EPOCHS = 50
"""The paper's 50 epochs (60,000 steps)."""
HYPERPARAMS: dict[str, Any] = {"gamma": 0.99}
"""docs/PBQ.md: γ 0.99, n_steps one epoch over the environments, the rest SB3's defaults."""
POLICY_KWARGS: dict[str, Any] = {"net_arch": {"pi": [64], "vf": [64]}, "activation_fn": nn.Tanh}
"""The paper's actor and critic: one hidden layer of 64 tanh units each."""


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


class ActorMean(nn.Module):
    """SB3's deterministic action: policy_net → action_net (the Gaussian's mean), clipped to
    [−1, 1] as SB3 clips actions to the Box (``PPO.predict(deterministic=True)``)."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.policy_net: nn.Module = policy.mlp_extractor.policy_net
        self.action_net: nn.Module = policy.action_net

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return torch.clamp(self.action_net(self.policy_net(state)), -1.0, 1.0)


def export_onnx(policy: Any, path: Path, meta: dict[str, str]) -> None:
    """One ONNX file: input ``state`` [batch, 68] float32, output ``action`` [batch, 1]; the
    metadata as the model's custom metadata (the server checks state_version, input_size)."""
    import onnx

    module = ActorMean(policy).eval()
    batch = torch.export.Dim("batch", min=1, max=1024)
    torch.onnx.export(module, (torch.zeros(2, STATE_SIZE),), str(path), dynamo=True, opset_version=18,
                      external_data=False, input_names=["state"], output_names=["action"],
                      dynamic_shapes=({0: batch},))
    model = onnx.load(str(path))
    onnx.helper.set_model_props(model, meta)
    onnx.save(model, str(path))


def fixture_states(seed: int, steps: int = 64) -> np.ndarray:
    """States of real episodes (a seeded random policy), two scenarios: a 10 Mbit/s link with
    1 % loss beside BBR, and a held-out trace."""
    _, held = split_traces()
    rng = np.random.default_rng(seed)
    out = []
    for sc in ({"kind": "constant", "rate_mbps": 10.0, "loss": 0.01, "competitor": True},
               {"kind": "trace", "trace": str(held[0]), "competitor": False}):
        env = PbqEnv(scenario=sc, episode_steps=steps // 2)
        obs, _ = env.reset(seed=seed)
        for _ in range(steps // 2):
            out.append(obs)
            obs, *_ = env.step(rng.uniform(-1, 1, 1).astype(np.float32))
    return np.array(out, np.float32)


def make_fixtures(model: Any, path: Path, states: np.ndarray) -> dict[str, Any]:
    """SB3's deterministic actions for ``states`` and the exported file's under onnxruntime;
    raises if they differ by more than the tolerance."""
    import onnxruntime as ort

    sb3 = np.array([model.predict(s, deterministic=True)[0][0] for s in states], np.float64)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ort_out = sess.run(None, {"state": states})[0][:, 0].astype(np.float64)
    worst = float(np.max(np.abs(sb3 - ort_out)))
    if worst > 1e-5:
        raise RuntimeError(f"ONNX export differs from SB3's policy by {worst}")
    return {"states": states.astype(float).tolist(), "actions": sb3.tolist(), "tolerance": 1e-5,
            "max_diff_at_export": worst}


def train(epochs: int, seed: int, n_envs: int, save_at: tuple[int, ...] = (),
          rtt_threshold: float = RTT_THRESHOLD) -> tuple[Any, dict[str, Any]]:
    """PPO over :class:`.env.PbqEnv` (training traces, the reward's ``rtt_threshold`` × min
    RTT), ``epochs`` × :data:`EPOCH_STEPS`; the SB3 model is also saved after each epoch of
    ``save_at`` (``out/rl/pbq-sb3-e{N}.zip``)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    torch.set_num_threads(1)
    curve: list[tuple[int, float]] = []  # (timestep, mean reward per step of an episode)
    sums = [0.0] * n_envs

    class Curve(BaseCallback):
        def _on_step(self) -> bool:
            for i, (r, done) in enumerate(zip(self.locals["rewards"], self.locals["dones"], strict=True)):
                sums[i] += float(r)
                if done:
                    curve.append((self.num_timesteps, sums[i] / EPISODE_STEPS))
                    sums[i] = 0.0
            return True

        def _on_rollout_end(self) -> None:
            # a rollout ends before its update: after rollout k the policy has had k − 1 updates
            epoch = self.num_timesteps // EPOCH_STEPS - 1
            if epoch in save_at:
                self.model.save(str(REPO_ROOT / "out" / "rl" / f"pbq-sb3-e{epoch}.zip"))

    vec_cls = SubprocVecEnv if n_envs > 1 else DummyVecEnv
    vec = make_vec_env(PbqEnv, n_envs=n_envs, seed=seed, vec_env_cls=vec_cls,
                       env_kwargs={"rtt_threshold": rtt_threshold})
    model = PPO("MlpPolicy", vec, seed=seed, verbose=0, device="cpu", n_steps=EPOCH_STEPS // n_envs,
                policy_kwargs=POLICY_KWARGS, **HYPERPARAMS)
    t0 = time.time()
    model.learn(total_timesteps=epochs * EPOCH_STEPS, callback=Curve())
    wall_s = time.time() - t0
    vec.close()
    steps = epochs * EPOCH_STEPS
    info = {"epochs": epochs, "timesteps": steps, "seed": seed, "n_envs": n_envs, "rtt_threshold": rtt_threshold,
            "wall_s": round(wall_s, 1),
            "steps_per_s": round(steps / wall_s, 1), "hyperparams": {**HYPERPARAMS, "n_steps_per_env":
                                                                     EPOCH_STEPS // n_envs},
            "policy": "one hidden layer of 64 tanh units, actor and critic", "torch": torch.__version__,
            "machine": platform.machine(), "episodes": len(curve), "reward_curve": curve}
    print(f"trained {steps} steps in {wall_s:.0f} s ({steps / wall_s:.0f} steps/s)", flush=True)
    return model, info


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS, help=f"PPO rollouts of {EPOCH_STEPS} steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-envs", type=int, default=2, help="environments (subprocesses)")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "models")
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--save-at", default="", help="also save the SB3 model after these epochs (comma list)")
    ap.add_argument("--rtt-threshold", type=float, default=RTT_THRESHOLD,
                    help=f"the reward's delay constraint, x min RTT (default {RTT_THRESHOLD})")
    a = ap.parse_args(argv)
    if not 1.0 <= a.rtt_threshold <= 10.0:
        ap.error(f"--rtt-threshold must be 1..10 (got {a.rtt_threshold})")
    out: Path = a.out
    out.mkdir(parents=True, exist_ok=True)
    command = "./nuwa train --agent pbq " + " ".join(sys.argv[1:] if argv is None else argv)
    commit = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no", "server/nuwa_server/cc",
                      "models/pbq_rl", "lab/nuwa_lab/sendersim"))
    save_at = tuple(int(x) for x in a.save_at.split(",") if x)
    model, info = train(a.epochs, a.seed, a.n_envs, save_at, a.rtt_threshold)
    model.save(str(REPO_ROOT / "out" / "rl" / "pbq-sb3.zip"))
    train_traces, held = split_traces()
    meta = {"name": "pbq", "state_version": STATE_VERSION, "input_size": str(STATE_SIZE),
            "frames": str(FRAMES), "features": ",".join(FEATURES), "interval_s": str(INTERVAL_S),
            "reward_rtt_threshold": str(a.rtt_threshold),
            "action_rule_version": ACTION_RULE_VERSION,
            "action_rule": ACTION_RULE,
            "training_command": command.strip(), "git_commit": commit,
            "uncommitted_changes": str(dirty).lower(), "paper": "PBQ-enhanced QUIC (Sensors 2023); docs/PBQ.md"}
    onnx_path = out / "pbq.onnx"
    export_onnx(model.policy, onnx_path, meta)
    fixtures = make_fixtures(model, onnx_path, fixture_states(a.seed))
    print(f"onnxruntime parity: max |action diff| {fixtures['max_diff_at_export']:.2e}", flush=True)
    (out / "pbq.fixtures.json").write_text(json.dumps(fixtures) + "\n")
    curve = info.pop("reward_curve")
    summary = {**meta, "training": info, "training_traces": [str(p.relative_to(REPO_ROOT)) for p in train_traces],
               "held_out_traces": [str(p.relative_to(REPO_ROOT)) for p in held]}
    (out / "pbq.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "report").mkdir(exist_ok=True)
    (out / "report" / "pbq-reward-curve.json").write_text(json.dumps(curve) + "\n")
    if not a.no_eval:
        from .evaluate import evaluate

        ev = evaluate(onnx_path)
        (out / "report" / "pbq-eval.json").write_text(json.dumps(ev, indent=1) + "\n")


if __name__ == "__main__":
    main()
