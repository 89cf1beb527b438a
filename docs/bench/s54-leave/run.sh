#!/bin/bash
# Fifty-fourth session: issue 18 "after the competitor leaves" on the two Saturator LTE traces at the head
# (last measured in the fifteenth session): ./nuwa mix nuwa,cubic, Cubic from 5 s, leaving 35 s after the run's start (37.0 s on the emulator's clock), switch rule,
# 60 s, 1000 packets; JSON (with after_leave) and a figure per run here.
# Usage: run.sh ROUND... Heavy: under flock /tmp/nuwa-heavy.lock.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p out/mix
for r in "$@"; do
for tr in tmobile-lte-short verizon-lte-short; do
  T=traces/4G/mahimahi-$tr.mahi
  .venv/bin/python -m nuwa_lab.mix --flows nuwa,cubic --start-gap-s 5 --stop-s 0,35 --switch rule --queue-packets 1000 --duration 60 --trace $T --out out/mix/s54-leave-$tr-$r --json docs/bench/s54-leave/leave-$tr-$r.json > out/mix/s54-leave-$tr-$r.log 2>&1
  echo "$(date -u +%T) $tr $r rc=$?"
done; done
