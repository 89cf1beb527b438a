#!/bin/bash
# Fifty-third session: the init-segment prefetch alone on its link (no competitor, no switching):
# `nuwa` (prefetch on) against `nuwa_noinit`, alternated, one run each per trace and round.
# Usage: lone.sh OUTDIR ROUND...  Heavy: under flock /tmp/nuwa-heavy.lock.
set -u
cd "$(dirname "$0")/../../.."
out=$1; shift
mkdir -p "$out"
for i in "$@"; do
  for tr in 5g umts vz; do
    case $tr in
      5g) f=traces/5G/mnwild-tmobile-5g-sa-lowband-walking-r20061.mahi ;;
      umts) f=traces/3G/mahimahi-tmobile-umts-driving.mahi ;;
      vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;;
    esac
    for scheme in nuwa nuwa_noinit; do
      o=$out/$scheme-$tr-$i
      ./nuwa play --trace $f --duration 60 --scheme $scheme --out $o > $o.log 2>&1
      echo "$(date -u +%T) $scheme $tr $i rc=$?"
    done
  done
done
