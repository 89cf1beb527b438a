#!/bin/bash
# Forty-seventh session, code 128b678: lone videos with the rule (trains), UMTS again and three other near-dark / outage traces
set -u
cd /work/main
for i in 4 5; do
  ./nuwa play --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 60 --switch rule --out /work/out/s47/e-umts-$i > /work/out/s47/e-umts-$i.log 2>&1
done
for t in 3G/nyc2018-unknownop-3g-subway 3G/nyc2018-unknownop-3g-subway-cross 4G/mahimahi-att-lte-driving; do
  n=$(basename $t)
  ./nuwa play --trace traces/$t.mahi --duration 60 --switch rule --out /work/out/s47/e-$n > /work/out/s47/e-$n.log 2>&1
done
