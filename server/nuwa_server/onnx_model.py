"""Loading a checked ONNX model for a per-connection policy (PBQ's agent, the switching DQN):
one thread, CPU, metadata and input shape checked against what the server feeds it, and every
way it can fail returned as a reason instead of raised, so that the caller falls back (and logs
the reason once) rather than dropping the connection (docs/PBQ.md; issue 18 item 3)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class MetadataCheck:
    """One custom-metadata field the model must carry: ``key`` with the value ``expected``;
    ``label`` names it in the reason (``model <label> <got>, the server's is <expected>``)."""

    key: str
    expected: str
    label: str


def load_onnx(path: Path, *, checks: tuple[MetadataCheck, ...], input_name: str,
              input_size: int, missing_runtime_hint: str = "") -> tuple[Any, dict[str, str]] | str:
    """An onnxruntime session for ``path`` and its custom metadata, or why it cannot be used.

    Args:
        path: the ``.onnx`` file.
        checks: metadata fields that must match (model and server built for the same state).
        input_name, input_size: the one input the server feeds, shape [batch, input_size].
        missing_runtime_hint: appended to the reason when onnxruntime is not installed.

    Returns:
        ``(session, metadata)``, or a one-line reason: no file, no onnxruntime, a file
        onnxruntime cannot load (malformed, truncated), a metadata field that differs, or
        inputs that are not exactly ``input_name`` with last dimension ``input_size``.
        Never raises for a bad file.
    """
    if not path.is_file():
        return f"no model file at {path}"
    try:
        import onnxruntime as ort  # type: ignore[import-untyped]
    except ImportError:
        return "onnxruntime is not installed" + (f" ({missing_runtime_hint})"
                                                  if missing_runtime_hint else "")
    try:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # one thread, off the packet path (docs/PBQ.md)
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), sess_options=opts,
                                       providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own types for a malformed file
        return f"onnxruntime cannot load {path}: {type(exc).__name__}: {str(exc)[:200]}"
    meta = dict(session.get_modelmeta().custom_metadata_map)
    for check in checks:
        if meta.get(check.key) != check.expected:
            return (f"model {check.label} {meta.get(check.key)!r}, "
                    f"the server's is {check.expected!r}")
    inputs = session.get_inputs()
    if len(inputs) != 1 or inputs[0].name != input_name or list(inputs[0].shape)[-1] != input_size:
        shapes = [(i.name, i.shape) for i in inputs]
        return f"model inputs {shapes}, the server feeds {input_name} [batch, {input_size}]"
    return session, meta
