#!/bin/bash
# Fifty-fifth session: hls.js (Nuwa's MPC) alone on Verizon LTE short, 60 s, the content's composition offsets
# as the one factor, arms alternated: "negative" (the new default: signed offsets, no edit-list shift) against
# "edit_list" (ffmpeg's default, the content before; NUWA_DASHGEN_CTS_OFFSETS picks it).
# Usage: run.sh OUT ROUND...   Heavy: under flock /tmp/nuwa-heavy.lock.
set -u
cd "$(dirname "$0")/../../.."
out=$1; shift
mkdir -p "$out"
for r in "$@"; do
  for arm in negative edit_list; do
    NUWA_DASHGEN_CTS_OFFSETS=$arm ./nuwa play --player hlsjs --scheme hlsjs_nuwa --trace traces/4G/mahimahi-verizon-lte-short.mahi \
      --duration 60 --out "$out/$arm-$r" > "$out/$arm-$r.log" 2>&1
    echo "$(date -u +%T) $arm $r rc=$?"
  done
done
