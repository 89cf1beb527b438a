#!/bin/bash
# Forty-seventh session: a lone Nuwa video on UMTS with the switch rule (packet trains on), 3 runs
set -u
cd /work/main
for i in 1 2 3; do
  ./nuwa play --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 60 --switch rule --out /work/out/s47/umts-lone-$i > /work/out/s47/umts-lone-$i.log 2>&1
done
