"""Small hand-made ONNX models for the server's PBQ fallback tests (server/tests/data/).

``python -m pbq_rl.testmodels`` (in .venv-rl: needs the ``onnx`` package) writes:

* ``pbq-linear.onnx``: a valid model, action = tanh(state · w), w = 0.05 on the delivery-rate
  features and −0.05 on the latest-RTT features (so it acts on what it is shown);
* ``pbq-wrong-shape.onnx``: valid metadata, but its input takes 56 values;
* ``pbq-wrong-version.onnx``: the linear model with state version ``pbq-state-v0``;
* ``pbq-nan.onnx``: valid metadata and shape, its output is always NaN;
* ``pbq-action-v1.onnx``: the linear model without ``action_rule_version`` (as the ninth
  session's models, trained for the v1 action rule).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from nuwa_server.cc.pbq import ACTION_RULE_VERSION, FEATURES, FRAME_SIZE, FRAMES, STATE_SIZE, STATE_VERSION
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parents[2] / "server" / "tests" / "data"


def _model(n_in: int, w: np.ndarray, *, nan: bool = False, version: str = STATE_VERSION,
           input_size: int = STATE_SIZE, action_rule: str | None = ACTION_RULE_VERSION) -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["state", "w"], ["z"])]
    inits = [numpy_helper.from_array(w.astype(np.float32).reshape(n_in, 1), "w")]
    if nan:
        inits.append(numpy_helper.from_array(np.array([np.nan], np.float32), "nan"))
        nodes.append(helper.make_node("Add", ["z", "nan"], ["z2"]))
        nodes.append(helper.make_node("Tanh", ["z2"], ["action"]))
    else:
        nodes.append(helper.make_node("Tanh", ["z"], ["action"]))
    graph = helper.make_graph(
        nodes, "pbq_test", [helper.make_tensor_value_info("state", TensorProto.FLOAT, ["batch", n_in])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    props = {"state_version": version, "input_size": str(input_size),
             "training_command": "python -m pbq_rl.testmodels (hand-made)", "git_commit": "none"}
    if action_rule is not None:
        props["action_rule_version"] = action_rule
    helper.set_model_props(model, props)
    onnx.checker.check_model(model)
    return model


def linear_weights() -> np.ndarray:
    """The linear model's weights over the 68-vector (module doc)."""
    w = np.zeros(STATE_SIZE)
    for f in range(FRAMES):
        w[f * FRAME_SIZE + FEATURES.index("delivery_rate_over_max_delivery_rate")] = 0.05
        w[f * FRAME_SIZE + FEATURES.index("latest_rtt_over_min_rtt")] = -0.05
    return w


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    w = linear_weights()
    onnx.save(_model(STATE_SIZE, w), OUT / "pbq-linear.onnx")
    onnx.save(_model(56, np.zeros(56)), OUT / "pbq-wrong-shape.onnx")
    onnx.save(_model(STATE_SIZE, w, version="pbq-state-v0"), OUT / "pbq-wrong-version.onnx")
    onnx.save(_model(STATE_SIZE, w, nan=True), OUT / "pbq-nan.onnx")
    onnx.save(_model(STATE_SIZE, w, action_rule=None), OUT / "pbq-action-v1.onnx")
    print(f"wrote 5 models to {OUT}")


if __name__ == "__main__":
    main()
