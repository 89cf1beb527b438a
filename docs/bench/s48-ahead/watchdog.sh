#!/bin/bash
# Forty-eighth session: the shipped MPC (`nuwa`) next to a Cubic download with the queue-aware stall
# watchdog (NuwaSession.stallAfterUs); the `nuwa-*` runs of ab.sh are the same without it.
# Usage: watchdog.sh ROUND...
set -u
cd /work/main
for i in "$@"; do
  for tr in vz hsdpa; do
    case $tr in hsdpa) f=traces/3G/norway-hsdpa-bus-1.mahi ;; vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;; esac
    o=/work/out/s48/watchdog-nuwa-$tr-$i
    ./nuwa play --trace $f --duration 60 --scheme nuwa --competitor cubic --switch rule --out $o > $o.log 2>&1
    echo "$(date -u +%T) watchdog nuwa $tr $i rc=$?"
  done
done
