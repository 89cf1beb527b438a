#!/bin/bash
# Forty-eighth session: SCHEME (`nuwa`, or `nuwa_ahead_queue` for the combination) next to a Cubic
# download with the queue-aware stall watchdog of 2a1e03b (NuwaSession.stallAfterUs; reverted in
# e00d914, so check out 2a1e03b to run it again); the `nuwa-*` and `nuwa_ahead_queue-*` runs of
# ab.sh are the same without it. Usage: watchdog.sh SCHEME ROUND...
set -u
cd /work/main
scheme=$1
shift
for i in "$@"; do
  for tr in vz hsdpa; do
    case $tr in hsdpa) f=traces/3G/norway-hsdpa-bus-1.mahi ;; vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;; esac
    o=/work/out/s48/watchdog-$scheme-$tr-$i
    ./nuwa play --trace $f --duration 60 --scheme $scheme --competitor cubic --switch rule --out $o > $o.log 2>&1
    echo "$(date -u +%T) watchdog $scheme $tr $i rc=$?"
  done
done
