#!/usr/bin/env bash
# Fifty-second session: a lone Nuwa flow in the sender simulator (SIMULATED) on the 18 dev traces,
# --switch rule with X (queue_floor_ms) 50, 40, 35: switches per run (lone-sim.log). Heavy-ish: 54 x 10 s.
cd "$(dirname "$0")/../../.." && mkdir -p out/s52-lone
for x in 50 40 35; do for t in traces/3G/*.mahi traces/4G/*.mahi traces/5G/*.mahi; do
  n=$(basename $t .mahi)
  .venv/bin/python -m nuwa_lab.mix --sim --flows nuwa --trace $t --switch rule --switch-rule "{\"queue_floor_ms\":$x}" --duration 60 --queue-packets 1000 --json out/s52-lone/$n-x$x.json 2>&1 | grep "^flow" | sed "s/^/$n x$x: /"
done; done
