"""BBR alone on a constant 10 Mbit/s link in the sender-side simulator (25 ms each way,
1000 packets, ACK every 2 packets): queuing delay per ProbeBW phase and the model's
bandwidth against what the link drained (BENCHMARKS.md "BBR's p95 on a constant link").

Usage: .venv/bin/python docs/bench/s10-bbr/bbr_phases.py [duration_s]
"""

import bisect
import statistics
import sys
from collections import defaultdict

from nuwa_lab.emulator import constant_rate_trace
from nuwa_lab.sendersim.core import Path, Sim
from nuwa_lab.sendersim.quic import QuicReceiver, QuicSender
from nuwa_lab.sendersim.schemes import load_plugins, pacer_hook

load_plugins()
duration_s = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
sim = Sim()
path = Path(sim, constant_rate_trace(10e6), 1000, 25.0, 0.0, 1)
sender = QuicSender(path, 0, "bbr", 0.0, pacer_hook(), seed=1)
receiver = QuicReceiver(path, sender, 2, 25.0)
path.attach(receiver)
cc = sender.recovery._cc
rows = []


def sample() -> None:
    tr = path.truth[0]
    qd_ms = tr.queue_delay_ms[-1] if tr.queue_delay_ms else 0.0
    rows.append((sim.now_ms, cc.state.name, cc.bw_bytes_per_s * 8 / 1e6,
                 cc.pacing_rate_bytes_per_s * 8 / 1e6, qd_ms))
    sim.at(sim.now_ms + 10, sample)


sim.at(10, sample)
sim.run_until(duration_s * 1000)
tr = path.truth[0]
q = statistics.quantiles(tr.queue_delay_ms, n=100)
print(f"queuing delay p50 {q[49]:.1f} ms, p95 {q[94]:.1f} ms")
i0, i1 = bisect.bisect(tr.depart_ms, 5000), bisect.bisect(tr.depart_ms, duration_s * 1000 - 5000)
span_s = (tr.depart_ms[i1 - 1] - tr.depart_ms[i0]) / 1000
print(f"link drained {sum(tr.size_bytes[i0:i1]) * 8 / span_s / 1e6:.3f} Mbit/s (the bytes BBR counts); "
      f"model bw {rows[-1][2]:.3f} Mbit/s, pacing in CRUISE {rows[-1][3]:.3f}")
by = defaultdict(list)
for r in rows:
    if r[0] > 3000:
        by[r[1]].append(r)
for state, rs in sorted(by.items()):
    print(f"{state:16s} {len(rs) / sum(map(len, by.values())):5.1%} of the time: queuing mean "
          f"{statistics.mean(x[4] for x in rs):5.1f} ms, max {max(x[4] for x in rs):5.1f} ms")
