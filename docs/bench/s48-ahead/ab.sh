#!/bin/bash
# Forty-eighth session: a Nuwa video next to a Cubic download, the shipped MPC (`nuwa`) against the
# same with as many segments fetched ahead as the standing wait needs (`nuwa_ahead_queue`),
# alternated per trace and round. Usage: ab.sh ROUND... (one run of each arm on each trace per round).
set -u
cd /work/main
for i in "$@"; do
  for tr in hsdpa vz; do
    case $tr in hsdpa) f=traces/3G/norway-hsdpa-bus-1.mahi ;; vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;; esac
    for s in nuwa_ahead_queue nuwa; do
      o=/work/out/s48/$s-$tr-$i
      ./nuwa play --trace $f --duration 60 --scheme $s --competitor cubic --switch rule --out $o > $o.log 2>&1
      echo "$(date -u +%T) $s $tr $i rc=$?"
    done
  done
done
