#!/usr/bin/env bash
# The "Sharing a bottleneck" figures of docs/BENCHMARKS.md (issue 18), end to end:
# ./nuwa mix for each pair, queue and link; results in docs/bench/s9-mix/*.json.
# Heavy: run under flock /tmp/nuwa-heavy.lock. Usage: run-shares.sh [static|pbq|lte|twotwo|switch]...
set -u
cd "$(dirname "$0")/../../.."
OUT=docs/bench/s9-mix
mix() { local name=$1; shift; .venv/bin/python -m nuwa_lab.mix "$@" --out "out/mix/$name" --json "$OUT/$name.json" | sed "s/^/$name: /"; }
for part in "$@"; do
  case $part in
    static)  # 10 Mbit/s end to end: at 20 the 2-core host is the bottleneck (BENCHMARKS.md)
      for q in 50 1000; do
        for pair in nuwa,cubic nuwa,bbr bbr,cubic; do
          mix "${pair/,/-}-10mbps-q$q" --flows "$pair" --start-gap-s 5 --link-mbps 10 --queue-packets "$q" --duration 40
        done
      done ;;
    static20)  # the same at 20 Mbit/s (CPU-bound here: kept as evidence)
      for q in 50 1000; do
        for pair in nuwa,cubic; do
          mix "${pair/,/-}-20mbps-q$q" --flows "$pair" --start-gap-s 5 --link-mbps 20 --queue-packets "$q" --duration 40
        done
      done ;;
    lte)
      for tr in 4G/nyc2018-tmobile-lte-timessquare-static-cross 4G/nyc2019-unknownop-lte-walking-3205967; do
        for pair in nuwa,cubic nuwa,bbr bbr,cubic; do
          mix "${pair/,/-}-$(basename "$tr" | cut -c1-30)" --flows "$pair" --start-gap-s 5 --trace "traces/$tr.mahi" --queue-packets 1000 --duration 40
        done
      done ;;
    pbq)  # Cubic vs PBQ (tenth session): 10 Mbit/s end to end, both queues
      for q in 50 1000; do
        mix "cubic-pbq-10mbps-q$q" --flows cubic,pbq --start-gap-s 5 --link-mbps 10 --queue-packets "$q" --duration 40
      done ;;
    twotwo)
      for sw in none rule; do
        mix "twotwo-10mbps-$sw" --flows nuwa,nuwa,cubic,cubic --start-gap-s 10 --link-mbps 10 --queue-packets 1000 --duration 60 --switch "$sw"
      done ;;
    switch)
      for sw in none rule; do
        mix "nuwa-cubic-10mbps-q1000-60s-$sw" --flows nuwa,cubic --start-gap-s 5 --link-mbps 10 --queue-packets 1000 --duration 60 --switch "$sw"
      done ;;
    lone-sim)  # a lone Nuwa flow with the switcher over every dev trace (sender-side simulator)
      for tr in traces/*/*.mahi; do
        n=$(basename "$tr" .mahi)
        .venv/bin/python -m nuwa_lab.mix --sim --flows nuwa --switch rule --trace "$tr" --queue-packets 1000 \
          --duration 60 --json "out/mix/lone-sim/$n.json" | head -1 | sed "s|^|$n: |"
      done ;;
    sim)  # the static table and the switcher again in the simulator (same report)
      for q in 50 1000; do
        for pair in nuwa,cubic nuwa,bbr bbr,cubic; do
          mix "sim-${pair/,/-}-20mbps-q$q" --sim --flows "$pair" --start-gap-s 5 --link-mbps 20 --queue-packets "$q" --duration 40
        done
      done
      for sw in none rule; do
        mix "sim-twotwo-10mbps-$sw" --sim --flows nuwa,nuwa,cubic,cubic --start-gap-s 10 --link-mbps 10 --queue-packets 1000 --duration 60 --switch "$sw"
        mix "sim-nuwa-cubic-20mbps-q1000-60s-$sw" --sim --flows nuwa,cubic --start-gap-s 5 --link-mbps 20 --queue-packets 1000 --duration 60 --switch "$sw"
      done ;;
  esac
done
