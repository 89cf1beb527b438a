#!/usr/bin/env bash
# Fifty-second session: issue 18's switcher pairs with BBR as the sender-driven controller
# (`--sender-cc bbr`, configuration only) against the shipped aioquic Cubic, `./nuwa mix --switch
# rule`, 60 s, the download after 5 s, 1000 packets; the pairs of docs/bench/s51-mix/run.sh.
# Arms alternate within each run. Heavy: run under flock /tmp/nuwa-heavy.lock.
# Usage: run.sh RUNS OUTDIR PAIRS ARM...
#   PAIRS: bbr (Nuwa/BBR on 10 Mbit/s, Times Square, walking) | cubic (Nuwa/Cubic, same links)
#   ARM: NAME:SENDER_CC[:RULE_JSON], e.g. cubic:cubic bbr:bbr bbrfloor:bbr:{"probe_rate_floor":0.6}
# Directories (code a4af43e, 2026-12-07, one heavy job at a time):
#   runs/: an earlier form of this script, the Nuwa/BBR pairs, arms cubic and bbr alternated, 3 runs
#     (the same as `run.sh 3 runs bbr cubic:cubic bbr:bbr`)
#   runs-floor/: `run.sh 1 runs-floor bbr 'bbrfloor:bbr:{"probe_rate_floor":0.6}'`, 3 times, alternated
#     with runs-cubic/: `run.sh 1 runs-cubic cubic bbr:bbr` (stopped after 2 rounds: 0.01-0.12 of the link)
#   runs-x35/: `run.sh 3 runs-x35 bbr 'x35:cubic:{"queue_floor_ms":35}'`
# Then with the opt-in drained_sender_cc (each: `run.sh 1 DIR bbr ARM` then `run.sh 1 DIR cubic ARM`
# per round, arm named NAME<round> and renamed NAME-<round> after; code: the commit that adds them,
# before each piece named here):
#   runs-drained/: '{"queue_floor_ms":35,"probe_rate_floor":0.6,"drained_sender_cc":"bbr"}', BBR
#     seeded from the ceiling's window (before the pipeACK seed); 2 rounds of BBR pairs, 1 of Cubic
#   runs-drained-pipeack/: the same with the pipeACK seed, 1 round (stopped: at X = 35 the probe's
#     queue verdict held on BBR's queue, the kind was never read)
#   runs-first35/: '{"first_queue_floor_ms":35,"probe_rate_floor":0.6,"drained_sender_cc":"bbr"}'
#     before drained_below_ms, 2 rounds; runs-guard/: the same with it (12.5 ms), 2 rounds (the
#     second's Cubic Times Square and walking not run: the session's time)
set -u
cd "$(dirname "$0")/../../.."
RUNS=$1; OUT=$2; PAIRS=$3; shift 3
mkdir -p "$OUT"
TS=traces/4G/nyc2018-tmobile-lte-timessquare-static-cross.mahi
WK=traces/4G/nyc2019-unknownop-lte-walking-3205967.mahi
mix() { local name=$1; shift; .venv/bin/python -m nuwa_lab.mix "$@" --switch rule --queue-packets 1000 \
  --duration 60 --out "out/mix/s52-$name" --json "$OUT/$name.json" 2>&1 | sed -n 2p | sed "s/^/$name: /"; }
for r in $(seq 1 "$RUNS"); do
  for arm in "$@"; do
    IFS=: read -r name cc rule <<< "$arm"
    args=(--sender-cc "$cc" --switch-rule "${rule:-{\}}" --start-gap-s 5)
    mix "nuwa-$PAIRS-10mbps-$name-$r" --flows "nuwa,$PAIRS" --link-mbps 10 "${args[@]}"
    mix "nuwa-$PAIRS-timessquare-$name-$r" --flows "nuwa,$PAIRS" --trace "$TS" "${args[@]}"
    mix "nuwa-$PAIRS-walking-$name-$r" --flows "nuwa,$PAIRS" --trace "$WK" "${args[@]}"
  done
done
