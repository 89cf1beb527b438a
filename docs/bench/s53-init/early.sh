#!/bin/bash
# Fifty-third session: what the false early probe costs the video next to Cubic on HSDPA
# (configuration only): the shipped rule against the rule with no early probe
# (--switch-rule '{"leave_rate_factor": null}'), alternated per round. Usage: early.sh OUTDIR ROUND...
# Heavy: under flock /tmp/nuwa-heavy.lock.
set -u
cd "$(dirname "$0")/../../.."
out=$1; shift
mkdir -p "$out"
f=traces/3G/norway-hsdpa-bus-1.mahi
for i in "$@"; do
  o=$out/nuwa-hsdpa-$i
  ./nuwa play --trace $f --duration 60 --scheme nuwa --competitor cubic --switch rule --out $o > $o.log 2>&1
  echo "$(date -u +%T) nuwa hsdpa $i rc=$?"
  o=$out/noearly-hsdpa-$i
  ./nuwa play --trace $f --duration 60 --scheme nuwa --competitor cubic --switch rule --switch-rule '{"leave_rate_factor": null}' --out $o > $o.log 2>&1
  echo "$(date -u +%T) noearly hsdpa $i rc=$?"
done
