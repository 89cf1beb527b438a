#!/bin/bash
# Fifty-fourth session: the loader's retry takeover (a retry of a timed-out request reads the transfer it
# left; attachNuwa retry_takeover, on with the MPC since 65f4183) against the MPC without it (nuwa_noretake),
# one factor, alone on the trace where dash.js's 20 s fragment timeout fired (T-Mobile UMTS driving, its
# near-dark minute), the arms alternated per round. Usage: run.sh OUTDIR ROUND... Heavy: under
# flock /tmp/nuwa-heavy.lock.
set -u
cd "$(dirname "$0")/../../.."
out=$1; shift
mkdir -p "$out"
f=traces/3G/mahimahi-tmobile-umts-driving.mahi
for i in "$@"; do
  for scheme in nuwa nuwa_noretake; do
    o=$out/$scheme-umts-$i
    ./nuwa play --trace $f --duration 60 --scheme $scheme --out $o > $o.log 2>&1
    echo "$(date -u +%T) $scheme umts $i rc=$?"
  done
done
