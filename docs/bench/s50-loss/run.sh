#!/usr/bin/env bash
# PBQ's random-loss setting end to end (issue 17; the paper's Fig. 9-10: two flows of one scheme):
# two flows of pbq, bbr and cubic at once, constant 10 and 20 Mbit/s, 25 ms each way, 100-packet
# drop-tail queue, 1 % and 2.5 % random loss of each data packet at the bottleneck, 30 s.
# Usage: bash docs/bench/s50-loss/run.sh OUT_DIR   (one run at a time under the heavy-run lock)
set -euo pipefail
out=${1:?out dir}
mkdir -p "$out"
for mbps in 10 20; do
  for loss in 0.01 0.025; do
    for s in pbq bbr cubic; do
      name="$s-$mbps-$loss"
      flock /tmp/nuwa-heavy.lock ./nuwa mix --flows "$s,$s" --link-mbps "$mbps" --queue-packets 100 \
        --duration 30 --loss "$loss" --json "$out/$name.json" --out "$out/run-$name" \
        > "$out/$name.log" 2>&1 || echo "$name: exit $?" >> "$out/failed.txt"
      tail -1 "$out/$name.log"
    done
  done
done
