"""Train Nuwa-RL (sb3-contrib RecurrentPPO, MlpLstmPolicy), export it, evaluate it.

Reproduces the shipped model: `./nuwa train` runs this with the defaults
(seeded; one torch thread). Writes models/nuwa-rl.onnx, nuwa-rl.json
(metadata), nuwa-rl.fixtures.json (parity fixtures), and a report under
models/report/ (reward curve and per-trace results PNG, evaluation table).

Usage: python -m nuwa_rl.train [--timesteps N] [--seed S] [--n-envs E] [--out DIR] [--no-eval]
       [--reward-baseline-k K|none] [--cc JSON] [--hp JSON] [--policy-kwargs JSON]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import agent, export
from .env import NuwaKEnv, repo_traces
from .episode import REWARD_BASELINE_K_MSS
from .sim import ENV_CC_CONFIG, REPO_ROOT

DEFAULT_TIMESTEPS = 160_000
HYPERPARAMS: dict[str, Any] = {
    "n_steps": 200, "batch_size": 200, "n_epochs": 4, "learning_rate": 3e-4, "gamma": 0.98,
    "gae_lambda": 0.95, "ent_coef": 0.01, "clip_range": 0.2,
}
POLICY_KWARGS: dict[str, Any] = {"lstm_hidden_size": 64, "n_lstm_layers": 1, "enable_critic_lstm": False,
                                 "net_arch": {"pi": [64], "vf": [64]}}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def train(timesteps: int, seed: int, n_envs: int, out: Path,
          reward_baseline_k_mss: float | None = REWARD_BASELINE_K_MSS) -> tuple[Any, dict[str, Any]]:
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)  # docs/DESIGN.md §8: two threads on two cores is slower and erratic
    commit = _git("rev-parse", "HEAD")
    cc_dirty = bool(_git("status", "--porcelain", "--untracked-files=no", "packages/cc/src", "models/nuwa_rl"))
    # (timestep, mean Eq. 13 reward (not the baselined training reward), trace, mean k) per episode
    curve: list[tuple[int, float, str, float]] = []
    k_sums = [0.0] * n_envs
    r_sums = [0.0] * n_envs

    class Curve(BaseCallback):
        def _on_step(self) -> bool:
            for i, info in enumerate(self.locals["infos"]):
                k_sums[i] += float(info.get("k_mss", 0.0))
                r_sums[i] += float(info.get("raw_reward", 0.0))
                if "episode" in info:
                    curve.append((self.num_timesteps, r_sums[i] / agent.EPISODE_STEPS,
                                  Path(str(info.get("trace", ""))).name, k_sums[i] / agent.EPISODE_STEPS))
                    k_sums[i] = r_sums[i] = 0.0
            return True

    vec = make_vec_env(NuwaKEnv, n_envs=n_envs, seed=seed,
                       env_kwargs={"reward_baseline_k_mss": reward_baseline_k_mss})
    model = RecurrentPPO("MlpLstmPolicy", vec, seed=seed, verbose=0, device="cpu",
                         policy_kwargs=POLICY_KWARGS, **HYPERPARAMS)
    t0 = time.time()
    model.learn(total_timesteps=timesteps, callback=Curve())
    wall_s = time.time() - t0
    vec.close()
    (out / "report").mkdir(parents=True, exist_ok=True)
    export.write_json(out / "report" / "reward_curve.json", curve)
    info = {"timesteps": timesteps, "seed": seed, "n_envs": n_envs, "wall_s": round(wall_s, 1),
            "steps_per_s": round(timesteps / wall_s, 1), "hyperparams": HYPERPARAMS,
            "policy_kwargs": POLICY_KWARGS, "torch": torch.__version__, "machine": platform.machine(),
            "episodes": len(curve), "reward_baseline_k_mss": reward_baseline_k_mss,
            "git_commit": commit, "uncommitted_changes": cc_dirty}
    print(f"trained {timesteps} steps in {wall_s:.0f} s ({timesteps / wall_s:.0f} steps/s)", flush=True)
    return model, info


def fixture_sequence(seed: int, steps: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Observations of a real episode (agent acting by a seeded random rule), reset at steps/2."""
    env = NuwaKEnv(episode_steps=steps, reward_baseline_k_mss=None)
    rng = np.random.default_rng(seed)
    obs_l, starts = [], []
    try:
        for half in range(2):
            obs, _ = env.reset(seed=seed + half)
            for i in range(steps // 2):
                obs_l.append(obs)
                starts.append(1.0 if i == 0 else 0.0)
                obs, *_ = env.step(int(rng.integers(len(agent.ACTIONS))))
    finally:
        env.close()
    return np.array(obs_l, np.float32), np.array(starts, np.float32)


def plot_report(out: Path, curve: list[Any], evaluation: dict[str, Any] | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    if curve:
        t = np.array([c[0] for c in curve])
        r = np.array([c[1] for c in curve])
        ax.plot(t, r, ".", ms=3, alpha=0.4, label="episode mean reward")
        w = max(1, len(r) // 15)
        ax.plot(t[w - 1:], np.convolve(r, np.ones(w) / w, "valid"), label=f"moving mean ({w} episodes)")
        if len(curve[0]) > 3:
            ax2 = ax.twinx()
            ax2.plot(t, [c[3] for c in curve], "g.", ms=3, alpha=0.5, label="episode mean k")
            ax2.set_ylabel("episode mean k (MSS/RTT)", color="g")
            ax2.set_ylim(0, 9.5)
    ax.set_xlabel("training timesteps (200 ms intervals)")
    ax.set_ylabel("mean reward per step (Eq. 13)")
    ax.set_title("Nuwa-RL training (random trace and start per episode)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "report" / "reward_curve.png", dpi=110)
    plt.close(fig)
    if not evaluation:
        return
    rows = evaluation["rows"]
    pols = [p for p in rows[0] if isinstance(rows[0][p], dict)]
    fig, ax = plt.subplots(figsize=(10, 4))
    x = np.arange(len(rows))
    wd = 0.8 / len(pols)
    for i, p in enumerate(pols):
        ax.bar(x + i * wd, [r[p]["reward"] for r in rows], wd, label=p)
    ax.set_xticks(x + 0.4 - wd / 2, [f"{r['family']}\n{r['trace'][:18]}" for r in rows], fontsize=6)
    ax.set_ylabel("mean reward per step (Eq. 13)")
    ax.set_title("Per-trace results in the simulator (160 s from t = 0)")
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(out / "report" / "per_trace.png", dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timesteps", type=int, default=DEFAULT_TIMESTEPS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-envs", type=int, default=4)
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "models")
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--reward-baseline-k", default=str(REWARD_BASELINE_K_MSS),
                    help="train on the reward minus that of the same trace at this fixed k ('none': raw reward)")
    ap.add_argument("--cc", type=json.loads, default={},
                    help="controller settings (JSON) over sim.ENV_CC_CONFIG (experiments; the shipped model: none)")
    ap.add_argument("--hp", type=json.loads, default={}, help="RecurrentPPO hyperparameters (JSON) over HYPERPARAMS")
    ap.add_argument("--policy-kwargs", type=json.loads, default={}, help="(JSON) over POLICY_KWARGS")
    ap.add_argument("--ray-address", help="the evaluation's Ray cluster (default: a local Ray; evaluate.py)")
    a = ap.parse_args()
    ENV_CC_CONFIG.update(a.cc)
    HYPERPARAMS.update(a.hp)
    POLICY_KWARGS.update(a.policy_kwargs)
    out: Path = a.out
    out.mkdir(parents=True, exist_ok=True)
    baseline_k = None if a.reward_baseline_k.lower() == "none" else float(a.reward_baseline_k)
    model, info = train(a.timesteps, a.seed, a.n_envs, out, baseline_k)
    model.save(str(REPO_ROOT / "out" / "rl" / "nuwa-rl-sb3.zip"))
    onnx_path = out / "nuwa-rl.onnx"
    export.export_onnx(model.policy, onnx_path)
    obs, starts = fixture_sequence(a.seed)
    fixtures = export.make_fixtures(model, obs, starts)
    worst = export.check_onnxruntime(onnx_path, fixtures)
    print(f"onnxruntime parity: max |logit diff| {worst:.2e}", flush=True)
    export.write_json(out / "nuwa-rl.fixtures.json", fixtures)
    traces = [str(p.relative_to(REPO_ROOT)) for p in repo_traces()]
    meta = export.metadata(onnx_path, model.policy.lstm_actor.hidden_size, traces, info)
    export.write_json(onnx_path.with_suffix(".json"), meta)
    curve = json.loads((out / "report" / "reward_curve.json").read_text())
    evaluation = None
    if not a.no_eval:
        from .evaluate import evaluate, family_table

        evaluation = evaluate(onnx_path, ray_address=a.ray_address)
        export.write_json(out / "report" / "evaluation.json", evaluation)
        (out / "report" / "evaluation.md").write_text(family_table(evaluation) + "\n")
        print(family_table(evaluation))
    plot_report(out, curve, evaluation)


if __name__ == "__main__":
    main()
