"""Record the switch rule's inputs (RuleSwitchPolicy.observe calls) while replaying a run's
grants through ConnectionSwitcher.on_grant (nuwa_lab.mix.replay), and write them in the
format of server/tests/data/switch-inputs-att-lte-outage.txt, trimmed to [from_s, to_s)
of the first grant (how server/tests/data/switch-inputs-umts-lone.txt and -verizon-cubic.txt were
made). Usage: .venv/bin/python docs/bench/s46-ladder/extract_inputs.py RUN FROM_S TO_S OUT "header" ..."""
import sys
from pathlib import Path

from nuwa_lab.mix import replay
from nuwa_server.switch_policy import RuleConfig, RuleSwitchPolicy

run, lo, hi, out = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
header = sys.argv[5:]
rows = []
orig = RuleSwitchPolicy.observe


def rec(self, now_us, window_bytes=None, queuing_delay_us=None, echo_us=None, delivered_bytes=None):
    rows.append((now_us, window_bytes, queuing_delay_us, echo_us))
    return orig(self, now_us, window_bytes, queuing_delay_us, echo_us, delivered_bytes)


RuleSwitchPolicy.observe = rec  # type: ignore[method-assign]
grants, _ = replay.read_sessions(run)
t0 = int(grants[0][1]["recv_time_us"])
at, ev = replay.first_detection(grants, RuleConfig(min_samples=1000))  # never fires: every input
lines = [f"# {h}" for h in header]
for t, w, q, e in rows:
    if lo * 1e6 <= t - t0 < hi * 1e6:
        lines.append(f"{t - t0} {w} {q} {'None' if e is None else e - t0}")
out.write_text("\n".join(lines) + "\n")
print(len(lines), "lines")
