#!/bin/bash
# Forty-seventh session: packet trains; lone UMTS video with the rule, then a video next to Cubic (HSDPA, Verizon), one at a time
set -u
cd /work/main
tag=$1
for i in 1 2 3; do
  ./nuwa play --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 60 --switch rule --out /work/out/s47/$tag-umts-$i > /work/out/s47/$tag-umts-$i.log 2>&1
done
for i in 1 2; do
  ./nuwa play --trace traces/3G/norway-hsdpa-bus-1.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --out /work/out/s47/$tag-hsdpa-$i > /work/out/s47/$tag-hsdpa-$i.log 2>&1
  ./nuwa play --trace traces/4G/mahimahi-verizon-lte-short.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --out /work/out/s47/$tag-vz-$i > /work/out/s47/$tag-vz-$i.log 2>&1
done
