"""Train the switching DQN offline and ship it: ``./nuwa train --agent switch``.

1. Logs: :mod:`switch_rl.collect` runs the simulator's mixed-flow scenarios (``TRAIN``, and the
   held-apart ``VAL``: other links, traces and seeds) with the rule plus ε-random excursions.
2. Offline DQN (stable-baselines3 ``DQN``, the seed paper's agent, ``drl-cca-switching.txt``
   §4): the replay buffer is filled with the logged transitions once and the Q-network is
   fitted by ``DQN.train`` gradient steps alone (no environment steps: batch RL), the target
   network copied every ``target_every`` steps. Discount 0.95 per 0.5-s step (a horizon of
   about 10 s: what a switch needs to show its effect next to Cubic).
3. Validation on the held-apart logs (TD error, how often the greedy action takes the logged
   action's reward side) and in closed loop: each VAL scenario in the simulator with
   ``--switch none``, ``rule`` and ``dqn`` (Nuwa's share, Jain's index, switches, Nuwa's p95).
4. Export: the Q-network to ONNX (input ``state`` [batch, 8], output ``q`` [batch, 2]) with
   metadata (features version, state size, command, commit, validation), checked against
   SB3's own Q-values under onnxruntime; ``models/switch-dqn.json`` holds the summary.

Heavy (CPU): run under ``flock /tmp/nuwa-heavy.lock`` (``./nuwa train`` does).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .collect import REPO_ROOT, VAL, collect, load_link


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


def arrays(runs: list[dict[str, Any]]) -> tuple[np.ndarray, ...]:
    """(s, a, r, s2, done) arrays of every transition of ``runs``."""
    tr = [t for r in runs for t in r["transitions"]]
    return (np.array([t["s"] for t in tr], np.float32), np.array([t["a"] for t in tr], np.int64),
            np.array([t["r"] for t in tr], np.float32), np.array([t["s2"] for t in tr], np.float32),
            np.array([t["done"] for t in tr], np.float32))


def fit(train: list[dict[str, Any]], steps: int, seed: int, gamma: float = 0.95,
        target_every: int = 250) -> Any:
    """SB3 DQN fitted offline on ``train``'s transitions (module doc); returns the model."""
    import gymnasium as gym
    import torch
    from nuwa_server.switch_dqn import STATE_SIZE
    from stable_baselines3 import DQN
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.utils import polyak_update

    class Spaces(gym.Env):  # type: ignore[misc]
        """Only the spaces: the model never steps an environment."""

        observation_space = gym.spaces.Box(0.0, 1.0, (STATE_SIZE,), np.float32)
        action_space = gym.spaces.Discrete(2)

    s, a, r, s2, d = arrays(train)
    torch.manual_seed(seed)
    model = DQN("MlpPolicy", Spaces(), learning_rate=5e-4, buffer_size=len(s) + 1,
                learning_starts=0, batch_size=128, gamma=gamma, seed=seed,
                policy_kwargs={"net_arch": [64, 64]}, device="cpu")
    model.set_logger(configure(None, []))
    for k in range(len(s)):
        model.replay_buffer.add(s[k:k + 1], s2[k:k + 1], a[k:k + 1], r[k:k + 1], d[k:k + 1],
                                [{}])
    q_params = list(model.q_net.parameters())
    t_params = list(model.q_net_target.parameters())
    done = 0
    while done < steps:
        n = min(target_every, steps - done)
        model.train(gradient_steps=n, batch_size=128)
        polyak_update(q_params, t_params, 1.0)
        done += n
    return model


def q_values(model: Any, states: np.ndarray) -> np.ndarray:
    """SB3's Q-values for ``states`` [n, 8] → [n, 2]."""
    import torch

    with torch.no_grad():
        return model.q_net(torch.as_tensor(states)).numpy()


def offline_validation(model: Any, runs: list[dict[str, Any]], gamma: float = 0.95
                       ) -> dict[str, float]:
    """On held-apart logs: the mean TD error of the logged action and the share of states
    where the greedy action is the logged one."""
    s, a, r, s2, _ = arrays(runs)
    q, q2 = q_values(model, s), q_values(model, s2)
    td = r + gamma * q2.max(axis=1) - q[np.arange(len(a)), a]
    return {"transitions": len(s), "mean_abs_td": float(np.abs(td).mean()),
            "greedy_is_logged": float((q.argmax(axis=1) == a).mean()),
            "greedy_sender_share": float((q.argmax(axis=1) == 1).mean())}


def export_onnx(model: Any, path: Path, meta: dict[str, str]) -> float:
    """The Q-network as ONNX (module doc) with ``meta``; returns the largest |Q| difference
    between SB3 and onnxruntime over 256 random states."""
    import onnx
    import onnxruntime as ort
    import torch
    from nuwa_server.switch_dqn import STATE_SIZE

    module = model.q_net.eval()
    torch.onnx.export(module, (torch.zeros(2, STATE_SIZE),), str(path), dynamo=False,
                      opset_version=17, input_names=["state"], output_names=["q"],
                      dynamic_axes={"state": {0: "batch"}, "q": {0: "batch"}})
    m = onnx.load(str(path))
    onnx.helper.set_model_props(m, meta)
    onnx.save(m, str(path))
    states = np.random.default_rng(0).random((256, STATE_SIZE), dtype=np.float32)
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"state": states})[0]
    return float(np.abs(got - q_values(model, states)).max())


def closed_loop(model_path: Path) -> list[dict[str, Any]]:
    """Each VAL scenario in the simulator with switch none, rule and dqn."""
    from nuwa_lab.sendersim.run import SimConfig, simulate

    rows = []
    for name, flows, link, gap, dur, seed in VAL:
        for sw in ("none", "rule", "dqn"):
            cfg = SimConfig(start_gap_s=gap, duration_s=dur, seed=seed,
                            switch_model=str(model_path))
            out = simulate(flows.split(","), load_link(link), cfg, switch=sw)
            nuwa = [f for f in out["flows"] if f["scheme"] == "nuwa"]
            rows.append({"scenario": name, "switch": sw, "jain_index": out["jain_index"],
                         "nuwa_share": sum(f["share"] for f in nuwa),
                         "nuwa_switches": sum(f["switches"] for f in nuwa),
                         "nuwa_p95_ms": max(f["queuing_delay_ms"]["p95"] for f in nuwa),
                         "utilization": out["utilization"]})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    """``python -m switch_rl.train [--steps N] [--seed S] [--logs DIR] [--ray] [--no-eval]``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20_000, help="gradient steps")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--epsilon", type=float, default=0.15)
    p.add_argument("--logs", default=None, help="reuse DIR/train.json, DIR/val.json if present")
    p.add_argument("--out", default=str(REPO_ROOT / "models"))
    p.add_argument("--ray", action="store_true", help="collect the logs as Ray tasks")
    p.add_argument("--no-eval", action="store_true", help="skip the closed-loop validation")
    a = p.parse_args(argv)
    t0 = time.time()
    logs = Path(a.logs) if a.logs else None
    runs: dict[str, list[dict[str, Any]]] = {}
    for split in ("train", "val"):
        f = logs / f"{split}.json" if logs else None
        if f is not None and f.is_file():
            runs[split] = json.loads(f.read_text())
        else:
            runs[split] = collect(split, a.epsilon, a.ray)
            if logs is not None:
                logs.mkdir(parents=True, exist_ok=True)
                f.write_text(json.dumps(runs[split]))  # type: ignore[union-attr]
        print(f"{split}: {sum(len(r['transitions']) for r in runs[split])} transitions "
              f"({time.time() - t0:.0f} s)", flush=True)
    model = fit(runs["train"], a.steps, a.seed)
    val = offline_validation(model, runs["val"])
    print(f"fitted ({time.time() - t0:.0f} s); held-apart logs: {val}", flush=True)
    from nuwa_server.switch_dqn import FEATURE_NAMES, FEATURES_VERSION, STATE_SIZE

    out = Path(a.out)
    onnx_path = out / "switch-dqn.onnx"
    meta = {"features_version": FEATURES_VERSION, "state_size": str(STATE_SIZE),
            "features": ",".join(FEATURE_NAMES), "actions": "receiver,sender",
            "command": "./nuwa train --agent switch " + " ".join(sys.argv[1:] if argv is None
                                                                  else argv),
            "commit": _git("rev-parse", "HEAD"), "steps": str(a.steps), "seed": str(a.seed),
            "validation": json.dumps(val)}
    diff = export_onnx(model, onnx_path, meta)
    print(f"exported {onnx_path}; onnxruntime vs SB3 max |ΔQ| {diff:.2e}", flush=True)
    summary: dict[str, Any] = {**meta, "onnx_max_abs_diff": diff, "validation": val,
                               "train_runs": [{k: r[k] for k in ("name", "flows", "jain_index")}
                                              for r in runs["train"]]}
    if not a.no_eval:
        summary["closed_loop"] = closed_loop(onnx_path)
    summary["wall_s"] = round(time.time() - t0, 1)
    (out / "switch-dqn.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"done in {summary['wall_s']} s", flush=True)


if __name__ == "__main__":
    main()
