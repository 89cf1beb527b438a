#!/bin/bash
# Forty-eighth session: the same two arms alone on the link (no competitor, no switching), where
# the fetch-ahead must cost nothing. Usage: lone.sh ROUND...
set -u
cd /work/main
for i in "$@"; do
  for tr in umts vz hsdpa; do
    case $tr in umts) f=traces/3G/mahimahi-tmobile-umts-driving.mahi ;; vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;; hsdpa) f=traces/3G/norway-hsdpa-bus-1.mahi ;; esac
    for s in nuwa_ahead_queue nuwa; do
      o=/work/out/s48/lone-$s-$tr-$i
      ./nuwa play --trace $f --duration 60 --scheme $s --out $o > $o.log 2>&1
      echo "$(date -u +%T) lone $s $tr $i rc=$?"
    done
  done
done
