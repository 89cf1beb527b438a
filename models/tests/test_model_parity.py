"""The shipped model (models/nuwa-rl.onnx) under onnxruntime (Python) gives its export-time fixtures."""

import json
from pathlib import Path

from nuwa_rl.parity import check_onnxruntime

MODELS = Path(__file__).resolve().parents[1]


def test_onnxruntime_gives_the_fixture_actions() -> None:
    fixtures = json.loads((MODELS / "nuwa-rl.fixtures.json").read_text())
    worst = check_onnxruntime(MODELS / "nuwa-rl.onnx", fixtures)
    assert worst <= fixtures["tolerance_logits"]


def test_metadata_matches_the_file() -> None:
    meta = json.loads((MODELS / "nuwa-rl.json").read_text())
    assert meta["onnx_bytes"] == (MODELS / "nuwa-rl.onnx").stat().st_size
    assert meta["inputs"]["obs"][1] == meta["observation"]["history_len"] * len(meta["observation"]["features"])
    assert meta["training"]["timesteps"] > 0 and meta["training_traces"]
