#!/usr/bin/env bash
# A/B, alternated: the Td cap in packets (default) against it off, 60 s bulk, deep queue.
set -u
OUT=$1; shift
cd /work/main
for r in "$@"; do
  for t in 4G/nyc2019-unknownop-lte-taxi-1 4G/mahimahi-tmobile-lte-short 5G/mnwild-tmobile-5g-sa-lowband-walking-r20061 4G/lumos-vzw-lte-driving-50087; do
    n=$(basename $t)
    ./nuwa bulk --trace traces/$t.mahi --scheme nuwa --duration 60 --json $OUT/$n-cap-r$r.json > $OUT/$n-cap-r$r.log 2>&1
    ./nuwa bulk --trace traces/$t.mahi --scheme nuwa --duration 60 --cc '{"target_delay_max_packets":0}' --json $OUT/$n-off-r$r.json > $OUT/$n-off-r$r.log 2>&1
  done
done
echo done > $OUT/DONE
