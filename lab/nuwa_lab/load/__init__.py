"""Load test (issue 7, item 7): many Nuwa receivers against one server process
through one emulated bottleneck.

Parts, all real: the aioquic server (``python -m nuwa_server.server --cc nuwa``),
the trace-driven emulator (``python -m nuwa_lab.emulator``), and ``P`` load
client worker processes. A worker holds ``k`` WebTransport sessions over
aioquic, each one a Nuwa receiver: QUIC I/O, frame parsing and the clock are
Python, every decision (window, phase, when to grant) is made by the real
TypeScript controller and grant policy (``@nuwa/cc`` ``NuwaController``,
``@nuwa/player`` ``GrantPolicy``) in a Node subprocess speaking JSON lines
(``e2e/src/load-controllers.ts``), called the way a browser's ``NuwaSession``
calls them (``onFrame`` per frame, ``tick`` every 5 ms, first-byte RTT
sample). Receive times are taken when aioquic hands the stream data to the
worker (``time.monotonic_ns``, the server's clock too), so the worker's own
scheduling delay shows up as queuing delay, as a busy browser's would; the
result reports the bridge's lag so that this can be checked.

Workloads (``--mode``):

* ``bulk``: every session downloads without end (equal demand); fairness is
  Jain's index (Jain, Chiu, Hawe 1984, Eq. 1: (Σx)² / (n·Σx²)) over the
  sessions' goodputs from ``--fair-from-s`` to the end.
* ``paced``: every session fetches one segment of ``--rate-mbps`` ×
  ``--segment-s`` bits every ``--segment-s`` seconds (a live video at a fixed
  bitrate; sessions' segment phases are spread over one segment); a segment
  misses its deadline when its last byte arrives more than ``--segment-s``
  after its request.

CLI (``./nuwa load`` runs it)::

    python -m nuwa_lab.load --sessions 20 --duration 60 --json OUT.json \\
        [--mode bulk|paced] [--rate-mbps R] [--link-mbps L | --trace FILE] \\
        [--workers P] [--profile] [--out DIR]

prints a summary line and writes the result JSON. Exit 0 when the run met
its checks (no errors; bulk: Jain ≥ 0.9; paced: < 1 % of segments late),
1 when it did not, 2 on bad arguments or a part that failed to start.

The package: :mod:`.common` (constants, clock, Jain's index), :mod:`.receiver` (the
Node bridge and one receiver), :mod:`.worker` (a worker process), :mod:`.procs`
(processes, counters, server summaries, profile), :mod:`.run` (the orchestrator and
the analysis), :mod:`.cli` (the command line).
"""

from __future__ import annotations

from .cli import build_parser, main, validate
from .common import jain_index
from .procs import server_session_summaries, summarize_profile

__all__ = [
    "build_parser",
    "jain_index",
    "main",
    "server_session_summaries",
    "summarize_profile",
    "validate",
]
