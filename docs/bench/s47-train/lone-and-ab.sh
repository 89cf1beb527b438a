#!/bin/bash
# Forty-seventh session: lone UMTS video (rule, trains), a lone 120 s bulk flow, then next to Cubic:
# trains on/off alternated. Run as `lone-and-ab.sh c` at 4101e94 and `lone-and-ab.sh d` at 120d86a.
set -u
cd /work/main
tag=$1
for i in 1 2 3; do
  ./nuwa play --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 60 --switch rule --out /work/out/s47/$tag-umts-$i > /work/out/s47/$tag-umts-$i.log 2>&1
done
./nuwa mix --flows nuwa --switch rule --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 120 --json /work/out/s47/$tag-mix-umts-lone.json --out /work/out/s47/$tag-mix-umts-lone > /work/out/s47/$tag-mix-umts-lone.log 2>&1
for i in 1 2; do
  for tr in on off; do
    rule='{}'; [ $tr = off ] && rule='{"train_own_packets": null}'
    ./nuwa play --trace traces/4G/mahimahi-verizon-lte-short.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --switch-rule "$rule" --out /work/out/s47/$tag-$tr-vz-$i > /work/out/s47/$tag-$tr-vz-$i.log 2>&1
    ./nuwa play --trace traces/3G/norway-hsdpa-bus-1.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --switch-rule "$rule" --out /work/out/s47/$tag-$tr-hsdpa-$i > /work/out/s47/$tag-$tr-hsdpa-$i.log 2>&1
  done
done
