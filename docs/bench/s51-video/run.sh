#!/bin/bash
# Fifty-first session: issue 18's "a Nuwa video next to a Cubic download plays without
# rebuffering", with the probe's rate verdict (21cae3d), on the two traces
# the forty-eighth session measured (bench/s48-ahead: the shipped `nuwa` arm). Usage: run.sh
# ROUND... (one run per trace per round). Heavy: under flock /tmp/nuwa-heavy.lock.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p /work/out/s51/video
for i in "$@"; do
  for tr in hsdpa vz; do
    case $tr in hsdpa) f=traces/3G/norway-hsdpa-bus-1.mahi ;; vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;; esac
    o=/work/out/s51/video/nuwa-$tr-$i
    ./nuwa play --trace $f --duration 60 --scheme nuwa --competitor cubic --switch rule --out $o > $o.log 2>&1
    echo "$(date -u +%T) nuwa $tr $i rc=$?"
  done
done
