#!/usr/bin/env bash
# A lone Nuwa flow with the switch rule over the 18 single-flow dev traces (simulator, 60 s,
# 1000 packets), one JSON per trace under out/lone/DIR. Heavy: flock /tmp/nuwa-heavy.lock.
# Usage: lone-sim.sh DIR [rule|dqn]
set -u
cd "$(dirname "$0")/../../.."
mkdir -p "out/lone/$1"
for tr in traces/*/*.mahi; do
  n=$(basename "$tr" .mahi)
  .venv/bin/python -m nuwa_lab.mix --sim --flows nuwa --switch "${2:-rule}" --trace "$tr" --queue-packets 1000 \
    --duration 60 --json "out/lone/$1/$n.json" 2>/dev/null | head -1 | sed "s|^|$n: |"
done
