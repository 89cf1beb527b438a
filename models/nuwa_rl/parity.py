"""Parity of an exported Nuwa-RL model with its fixtures under onnxruntime (Python). numpy + onnxruntime only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def check_onnxruntime(path: Path, fixtures: dict[str, Any]) -> float:
    """Replay the fixtures through onnxruntime (Python); returns the max |logit difference|.

    :raises AssertionError: if an action differs or a logit differs by more than the tolerance.
    """
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    hidden = sess.get_inputs()[1].shape[2]
    h = np.zeros((1, 1, hidden), np.float32)
    c = np.zeros((1, 1, hidden), np.float32)
    worst = 0.0
    for i, (obs, start) in enumerate(zip(fixtures["obs"], fixtures["episode_start"], strict=True)):
        logits, h, c = sess.run(None, {"obs": np.array([obs], np.float32), "h": h, "c": c,
                                       "episode_start": np.array([start], np.float32)})
        worst = max(worst, float(np.max(np.abs(logits[0] - np.array(fixtures["logits"][i])))))
        assert int(np.argmax(logits[0])) == fixtures["actions"][i], f"action differs at step {i}"
    assert worst <= fixtures["tolerance_logits"], f"logits differ by {worst}"
    return worst
