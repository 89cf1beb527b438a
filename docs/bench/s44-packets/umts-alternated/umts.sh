#!/bin/bash
# alternate configs on UMTS, one run each, print util / p95 all / p95 data
cd /work/main
T=traces/3G/mahimahi-tmobile-umts-driving.mahi
i=0
for cfg in "$@"; do
  i=$((i+1))
  flock /tmp/nuwa-heavy.lock ./nuwa bulk --trace $T --scheme nuwa --duration 60 --cc "$cfg" --json /work/out/s44/umts-$i.json > /work/out/s44/umts-$i.log 2>&1
  python3 -c "
import json;d=json.load(open('/work/out/s44/umts-$i.json'))
print('$cfg', round(d['utilization'],3), d['queuing_delay_ms']['p95'], d['queuing_delay_data_ms']['p95'], d['emulator']['valid'])"
done
