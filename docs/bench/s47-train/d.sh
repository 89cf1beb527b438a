#!/bin/bash
# Forty-seventh session, code HEAD: lone UMTS video (rule, trains), a lone 120 s bulk flow, then next to Cubic: trains on/off alternated
set -u
cd /work/main
for i in 1 2 3; do
  ./nuwa play --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 60 --switch rule --out /work/out/s47/d-umts-$i > /work/out/s47/d-umts-$i.log 2>&1
done
./nuwa mix --flows nuwa --switch rule --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 120 --json /work/out/s47/d-mix-umts-lone.json --out /work/out/s47/d-mix-umts-lone > /work/out/s47/d-mix-umts-lone.log 2>&1
for i in 1 2; do
  for tr in on off; do
    rule='{}'; [ $tr = off ] && rule='{"train_own_packets": null}'
    ./nuwa play --trace traces/4G/mahimahi-verizon-lte-short.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --switch-rule "$rule" --out /work/out/s47/d-$tr-vz-$i > /work/out/s47/d-$tr-vz-$i.log 2>&1
    ./nuwa play --trace traces/3G/norway-hsdpa-bus-1.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --switch-rule "$rule" --out /work/out/s47/d-$tr-hsdpa-$i > /work/out/s47/d-$tr-hsdpa-$i.log 2>&1
  done
done
