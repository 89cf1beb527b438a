#!/bin/bash
# Forty-eighth session: `nuwa_ahead_queue` next to a Cubic download with the queue-aware stall
# watchdog (the combination of the session's two changes). Usage: watchdog-ahead.sh ROUND...
set -u
cd /work/main
for i in "$@"; do
  for tr in vz hsdpa; do
    case $tr in hsdpa) f=traces/3G/norway-hsdpa-bus-1.mahi ;; vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;; esac
    o=/work/out/s48/watchdog-nuwa_ahead_queue-$tr-$i
    ./nuwa play --trace $f --duration 60 --scheme nuwa_ahead_queue --competitor cubic --switch rule --out $o > $o.log 2>&1
    echo "$(date -u +%T) watchdog nuwa_ahead_queue $tr $i rc=$?"
  done
done
