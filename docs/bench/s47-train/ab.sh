#!/bin/bash
# Forty-seventh session: a video next to Cubic, trains on (shipped) against off, alternated
set -u
cd /work/main
for i in 1 2; do
  for tr in on off; do
    rule='{}'; [ $tr = off ] && rule='{"train_own_packets": null}'
    ./nuwa play --trace traces/3G/norway-hsdpa-bus-1.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --switch-rule "$rule" --out /work/out/s47/ab-$tr-hsdpa-$i > /work/out/s47/ab-$tr-hsdpa-$i.log 2>&1
    ./nuwa play --trace traces/4G/mahimahi-verizon-lte-short.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --switch-rule "$rule" --out /work/out/s47/ab-$tr-vz-$i > /work/out/s47/ab-$tr-vz-$i.log 2>&1
  done
done
./nuwa mix --flows nuwa --switch rule --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 120 --json /work/out/s47/mix-umts-lone.json --out /work/out/s47/mix-umts-lone > /work/out/s47/mix-umts-lone.log 2>&1
