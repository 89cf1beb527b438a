"""Mixed flows through one bottleneck (issue 18, "Measure first"): ``./nuwa mix``.

End to end (default): one server per scheme in the run (``nuwa_server.server --cc ...``,
:data:`.run.SCHEME_SERVER_ARGS`), all behind one emulated bottleneck (the emulator's
``--route``), one receiver process (:mod:`.worker`): Nuwa flows are the load tool's Python
receivers driven by the real TypeScript controller, other flows plain aioquic downloads.
Flow i starts at i × ``--start-gap-s``; every flow ends at ``--duration``. The figures come
from the emulator's per-flow departures (``--flow-log``): per flow ``goodput_bps``,
``share`` and Jain's index over the last 20 s, ``queuing_delay_ms`` {mean, p50, p95},
``starved_s`` and ``switches``, plus ``utilization`` (definitions:
:mod:`nuwa_lab.sendersim.metrics`). ``--sim`` gives the same report from the sender-side
simulator. The package: :mod:`.cli`, :mod:`.run` (orchestrator, analysis), :mod:`.worker`.
"""

from __future__ import annotations

from .cli import build_parser, main

__all__ = ["build_parser", "main"]
