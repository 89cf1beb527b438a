"""The server's own congestion controllers, registered with aioquic by name on import.

* ``bbr`` (:mod:`.bbr`): BBRv3 after draft-ietf-ccwg-bbr, with per-packet delivery-rate
  sampling (:mod:`.rate_sample`) and its pacing rate driving aioquic's pacer
  (:mod:`.pacing`).
* ``cubic_hystart`` (:mod:`.hystart`): aioquic's Cubic with RFC 9406's HyStart++ slow
  start, an opt-in controller of a Nuwa connection while it is sender-driven
  (``--sender-cc cubic_hystart``; not the default, :mod:`.hystart`'s doc).
* ``pbq`` (:mod:`.pbq`): BBR's pacing with the PBQ agent's window every 100 ms, the agent
  run by :mod:`.pbq_agent` (docs/PBQ.md).

aioquic's own ``reno`` and ``cubic`` and the Nuwa ceiling (``..ceiling``) complete the
registry the server chooses from (``..config.SessionConfig.quic_congestion_control``).
"""

from . import bbr as bbr  # noqa: F401 - registers "bbr" with aioquic
from . import hystart as hystart  # noqa: F401 - registers "cubic_hystart" with aioquic
from . import pbq as pbq  # noqa: F401 - registers "pbq" with aioquic
