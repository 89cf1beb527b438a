"""The sender-side simulator (issue 17 item 2): the server's congestion controllers, aioquic's
own loss recovery and pacer, and the Nuwa controller, under a simulated clock over the
emulator's Mahimahi link. N flows of any schemes share one bottleneck.

Modules: :mod:`.core` (clock, path, bottleneck truth), :mod:`.quic` (a QUIC flow's sender on
aioquic's ``QuicPacketRecovery`` and its ACKing receiver), :mod:`.nuwa` (the Nuwa flow: the
TypeScript controller over a Node bridge, the server's grant rule and ceiling),
:mod:`.schemes` (controllers by name, plug-ins), :mod:`.metrics` (figures), :mod:`.run`
(:func:`simulate`), :mod:`.cli`. docs/SENDERSIM.md has the model, its checks and its gaps.
"""

from .run import SimConfig, simulate
from .schemes import cc_names, schemes

__all__ = ["SimConfig", "cc_names", "schemes", "simulate"]
