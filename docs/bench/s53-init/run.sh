#!/bin/bash
# Fifty-third session: the loader's init-segment prefetch (attachNuwa prefetch_init, on by default
# for the MPC) against the MPC without it (`nuwa_noinit`), one factor, next to a Cubic download
# (issue 18's "a Nuwa video next to it plays without rebuffering"), alternated per round on the two
# traces the forty-eighth and fifty-first sessions measured. Usage: run.sh OUTDIR ROUND...
# TRACES="vz" for one trace. Heavy: under flock /tmp/nuwa-heavy.lock.
set -u
cd "$(dirname "$0")/../../.."
out=$1; shift
mkdir -p "$out"
for i in "$@"; do
  for tr in ${TRACES:-hsdpa vz}; do
    case $tr in hsdpa) f=traces/3G/norway-hsdpa-bus-1.mahi ;; vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;; esac
    for scheme in nuwa nuwa_noinit; do
      o=$out/$scheme-$tr-$i
      ./nuwa play --trace $f --duration 60 --scheme $scheme --competitor cubic --switch rule --out $o > $o.log 2>&1
      echo "$(date -u +%T) $scheme $tr $i rc=$?"
    done
  done
done
