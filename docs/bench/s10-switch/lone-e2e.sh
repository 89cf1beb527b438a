#!/usr/bin/env bash
# A lone Nuwa flow with the switch rule over the single-flow dev traces, END TO END (server
# behind the emulator, `./nuwa mix`, 60 s, 1000 packets), one JSON per trace under
# $LONE_OUT (default docs/bench/s12-lone/after/). Heavy: flock /tmp/nuwa-heavy.lock.
# Usage: lone-e2e.sh [rule|dqn] [trace substring ...]
set -u
cd "$(dirname "$0")/../../.."
sw=${1:-rule}; shift || true
out=${LONE_OUT:-docs/bench/s12-lone/after}
mkdir -p "$out"
for tr in traces/*/*.mahi; do
  n=$(basename "$tr" .mahi)
  if [ $# -gt 0 ]; then keep=0; for s in "$@"; do case $n in *"$s"*) keep=1 ;; esac; done; [ $keep = 1 ] || continue; fi
  .venv/bin/python -m nuwa_lab.mix --flows nuwa --switch "$sw" --trace "$tr" --queue-packets 1000 \
    --duration 60 --out "out/lone-e2e/$n" --json "$out/$n-$sw.json" 2>/dev/null | grep -E "flow 0|utilization" | tr '\n' ' ' | sed "s|^|$n: |"
  echo
done
