#!/usr/bin/env bash
# Fifty-first session: the probe's drain allowance on NYC LTE walking-3205967 next to Cubic, the
# shipped rule against the same with no allowance (`probe_drain_factor` 0: the probe's verdict at
# Y), alternated, three runs each. Heavy: under flock /tmp/nuwa-heavy.lock. Usage: drain.sh RUNS
set -u
cd "$(dirname "$0")/../../.."
WK=traces/4G/nyc2019-unknownop-lte-walking-3205967.mahi
for r in $(seq 1 "${1:-3}"); do
  for arm in shipped nodrain; do
    rule='{}'; [ "$arm" = nodrain ] && rule='{"probe_drain_factor": 0.0}'
    .venv/bin/python -m nuwa_lab.mix --flows nuwa,cubic --start-gap-s 5 --trace "$WK" --switch rule \
      --switch-rule "$rule" --queue-packets 1000 --duration 60 --out "out/mix/s51-drain-$arm-$r" \
      --json "docs/bench/s51-mix/drain/nuwa-cubic-walking-$arm-$r.json" 2>&1 | sed -n 2p | sed "s/^/$arm $r: /"
  done
done
