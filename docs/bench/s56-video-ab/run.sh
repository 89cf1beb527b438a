#!/usr/bin/env bash
# Video A/B, alternated: Nuwa's MPC over the shipped controller (Td cap in packets) against Td fixed, 60 s.
set -u
OUT=$1; shift
cd /work/main
for r in "$@"; do
  for t in 5G/mnwild-tmobile-5g-sa-lowband-walking-r20061 4G/mahimahi-tmobile-lte-short; do
    n=$(basename $t)
    ./nuwa play --trace traces/$t.mahi --duration 60 --out $OUT/$n-cap-r$r > $OUT/$n-cap-r$r.log 2>&1
    ./nuwa play --trace traces/$t.mahi --duration 60 --cc '{"target_delay_max_packets":0}' --out $OUT/$n-fixed-r$r > $OUT/$n-fixed-r$r.log 2>&1
  done
done
echo done > $OUT/DONE
