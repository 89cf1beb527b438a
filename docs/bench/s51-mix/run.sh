#!/usr/bin/env bash
# Issue 18's switcher pairs re-measured at the head (fifty-first session), end to end: every pair
# the static controllers left unfair (docs/bench/s9-mix) with `--switch rule`, 60 s, second flow
# after 5 s (the 2+2: a flow every 10 s), 1000 packets; runs alternate across pairs.
# Heavy: run under flock /tmp/nuwa-heavy.lock. Usage: run.sh RUNS [OUTDIR] (before/: code b596f43,
# after-restore/: the probe's rate verdict with the share restore (233105a), after/: the rate verdict
# alone (21cae3d; since 3070e48 opt-in: the same with --switch-rule '{"probe_rate_floor": 0.6}'))
set -u
cd "$(dirname "$0")/../../.."
RUNS=${1:-3}
OUT=${2:-docs/bench/s51-mix/after}
mix() { local name=$1; shift; .venv/bin/python -m nuwa_lab.mix "$@" --switch rule --queue-packets 1000 --duration 60 \
  --out "out/mix/s51-$name" --json "$OUT/$name.json" 2>&1 | head -3 | sed "s/^/$name: /"; }
TS=traces/4G/nyc2018-tmobile-lte-timessquare-static-cross.mahi
WK=traces/4G/nyc2019-unknownop-lte-walking-3205967.mahi
for r in $(seq 1 "$RUNS"); do
  mix "nuwa-bbr-10mbps-$r" --flows nuwa,bbr --start-gap-s 5 --link-mbps 10
  mix "nuwa-cubic-timessquare-$r" --flows nuwa,cubic --start-gap-s 5 --trace "$TS"
  mix "nuwa-bbr-timessquare-$r" --flows nuwa,bbr --start-gap-s 5 --trace "$TS"
  mix "nuwa-cubic-walking-$r" --flows nuwa,cubic --start-gap-s 5 --trace "$WK"
  mix "nuwa-bbr-walking-$r" --flows nuwa,bbr --start-gap-s 5 --trace "$WK"
  mix "twotwo-10mbps-$r" --flows nuwa,nuwa,cubic,cubic --start-gap-s 10 --link-mbps 10
done
