"""Client of @nuwa/cc's BulkStepper: runs the TypeScript core itself, one decision
interval at a time, through `e2e/src/rl-stepper.ts` (JSON lines over a pipe).
No port: the windows are the windows of the controller that runs in the browser.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
TSX = REPO_ROOT / "node_modules" / ".bin" / "tsx"
STEPPER = REPO_ROOT / "e2e" / "src" / "rl-stepper.ts"

#: The controller settings of the RL environment: the paper's additive rule
#: (Eq. 3/6, where k acts), Td and rho pinned (the defaults of @nuwa/cc when the
#: model was trained) so that retuning the defaults does not silently change the
#: environment; everything else at @nuwa/cc's defaults. The player must run the
#: controller with these settings for the model to see what it was trained on.
ENV_CC_CONFIG: dict[str, Any] = {"step": "additive", "target_delay_ms": 25, "sensitivity_ms": 15}


class StepperError(RuntimeError):
    """The stepper process refused a request or died."""


class Stepper:
    """One Node process holding one simulated bulk download.

    :raises StepperError: if node_modules is missing (run ./nuwa setup), or on any refused request.
    """

    def __init__(self) -> None:
        if not TSX.exists():
            raise StepperError(f"{TSX} not found: run ./nuwa setup first")
        self.proc = subprocess.Popen(
            [str(TSX), str(STEPPER)], cwd=REPO_ROOT, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, bufsize=1)

    def _call(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError as e:
            raise StepperError(f"stepper process exited (rc {self.proc.poll()})") from e
        line = self.proc.stdout.readline()
        if not line:
            raise StepperError(f"stepper process exited (rc {self.proc.poll()})")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise StepperError(str(reply.get("error")))
        return reply

    def reset(self, trace: str | Path, trace_start_ms: int = 0,
              config: dict[str, Any] | None = None, one_way_delay_ms: int = 25,
              queue_packets: int = 1000, record_queuing_delays: bool = False) -> dict[str, Any]:
        """Start a fresh simulation; returns {period_ms, mean_bps} of the trace."""
        return self._call({
            "cmd": "reset", "trace": str(Path(trace).resolve()), "trace_start_ms": int(trace_start_ms),
            "config": ENV_CC_CONFIG if config is None else config,
            "one_way_delay_ms": one_way_delay_ms, "queue_packets": queue_packets,
            "record_queuing_delays": record_queuing_delays})

    def summary(self) -> dict[str, Any]:
        """Per-packet queuing delay percentiles since reset (reset with record_queuing_delays=True):
        {packets, queuing_delay_ms: {mean, p50, p95}} (None when no packet left)."""
        return self._call({"cmd": "summary"})

    def step(self, k_mss: float, interval_ms: int) -> dict[str, Any]:
        """Set k, advance interval_ms; returns IntervalStats (stepper.ts)."""
        stats: dict[str, Any] = self._call({"cmd": "step", "k": float(k_mss),
                                            "interval_ms": int(interval_ms)})["stats"]
        return stats

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
