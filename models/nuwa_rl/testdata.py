"""Test data for the player's tuner tests (packages/player/src/testdata/), from the Python side:

- features.json: raw interval inputs -> agent.features (the TS port must agree to 1e-6);
- player-buffer.json: received bytes per interval -> agent.PlayerBuffer levels (the bulk page's
  TrainingPlayerBuffer, e2e/pages/training-buffer.ts, must agree to 1e-9);
- wrong-shape.onnx: an actor step whose obs input is 7 wide (the metadata says OBS_DIM), to
  test the tuner's shape check;
- bad.onnx: bytes that are not an ONNX model.

Usage: python -m nuwa_rl.testdata  (needs torch + onnxscript for wrong-shape.onnx)
"""

from __future__ import annotations

import json

import numpy as np

from . import agent
from .sim import REPO_ROOT

OUT = REPO_ROOT / "packages" / "player" / "src" / "testdata"

RAW_INPUTS: list[tuple[float, float, float, float, float]] = [
    # throughput_bps, window_bytes, buffer_s, queuing_delay_ms, k_mss
    (0.0, 4800.0, 0.0, 0.0, 1.0),
    (2.5e6, 31_000.0, 7.25, 12.0, 3.0),
    (52e6, 400_000.0, 30.0, 250.0, 9.0),
    (1.02e9, 8e6, 29.9, 1500.0, 2.85),
    (333_333.3, 1234.5, 0.1, 0.75, 1.05),
]


def features_vectors() -> list[dict[str, object]]:
    return [{"raw": list(r), "features": agent.features(*r).astype(float).tolist()} for r in RAW_INPUTS]


def player_buffer_vectors(steps: int = 600, seed: int = 0) -> dict[str, object]:
    """A seeded sequence through every regime of PlayerBuffer: empty link, start-up, rung
    changes up and down the ladder, the 30 s cap, stalls and restarts."""
    rng = np.random.default_rng(seed)
    interval_s = agent.INTERVAL_MS / 1000
    received: list[float] = []
    for i in range(steps):
        phase = (i // 60) % 10  # 12 s phases: dark, thin, mid, fat, bursty, dark 36 s, thin, mid
        burst = float(rng.choice([0.0, 20e6]))
        rate_bps = [0.0, 0.4e6, 3e6, 12e6, burst, 0.0, 0.0, 0.0, 0.4e6, 3e6][phase]
        received.append(float(np.floor(rate_bps * interval_s / 8 * rng.uniform(0.5, 1.5))))
    buf = agent.PlayerBuffer()
    levels = [buf.step(b, interval_s) for b in received]
    return {"interval_s": interval_s, "received_bytes": received, "buffer_s": levels,
            "stall_s": buf.stall_s}


def wrong_shape_model(path: str) -> None:
    import torch
    from torch import nn

    class Wrong(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(7, 64)
            self.head = nn.Linear(64, len(agent.ACTIONS))

        def forward(self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor, episode_start: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            keep = (1.0 - episode_start).view(1, -1, 1)
            out, (h2, c2) = self.lstm(obs.unsqueeze(0), (h * keep, c * keep))
            return self.head(out.squeeze(0)), h2, c2

    torch.manual_seed(0)
    ex = (torch.zeros(2, 7), torch.zeros(1, 2, 64), torch.zeros(1, 2, 64), torch.ones(2))
    batch = torch.export.Dim("batch", min=1, max=1024)
    torch.onnx.export(Wrong().eval(), ex, path, dynamo=True, opset_version=18, external_data=False,
                      input_names=["obs", "h", "c", "episode_start"], output_names=["logits", "h_out", "c_out"],
                      dynamic_shapes=({0: batch}, {1: batch}, {1: batch}, {0: batch}))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "features.json").write_text(json.dumps(features_vectors(), indent=1) + "\n")
    (OUT / "player-buffer.json").write_text(json.dumps(player_buffer_vectors()) + "\n")
    (OUT / "bad.onnx").write_bytes(np.random.default_rng(0).integers(0, 256, 512, dtype=np.uint8).tobytes())
    wrong_shape_model(str(OUT / "wrong-shape.onnx"))


if __name__ == "__main__":
    main()
