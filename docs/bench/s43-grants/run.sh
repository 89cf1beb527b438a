#!/bin/bash
# The forty-third session's grant-cadence check (docs/BENCHMARKS.md): alternating end-to-end bulk
# runs, 60 s each, the page's grant cadence at its default (news every 10 ms, GRANT_INTERVAL_US)
# and at 5 ms (`--grants '{"max_interval_us":5000}'`), one run each. Results: gi-<trace>-<base|g5>.json.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-out/s43-grants}
mkdir -p "$OUT"
for t in traces/4G/nyc2019-unknownop-lte-walking-3201711.mahi traces/4G/lumos-vzw-lte-driving-50087.mahi traces/4G/nyc2018-unknownop-lte-subway-cross.mahi traces/3G/mahimahi-tmobile-umts-driving.mahi; do
  n=$(basename "$t" .mahi)
  for v in base g5; do
    if [ "$v" = base ]; then g='{}'; else g='{"max_interval_us":5000}'; fi
    flock /tmp/nuwa-heavy.lock ./nuwa bulk --trace "$t" --scheme nuwa --duration 60 --grants "$g" --json "$OUT/gi-$n-$v.json" --out "$OUT/gi-$n-$v" > "$OUT/gi-$n-$v.log" 2>&1
    tail -2 "$OUT/gi-$n-$v.log" | head -1
  done
done
