#!/bin/bash
# Fifty-fourth session: Nuwa's MPC in hls.js deciding once per completed fragment (hlsjs_nuwa, the default
# since 5d2d587) against deciding on every read of the level (hlsjs_nuwa_perread, the behaviour before),
# one factor, the arms alternated per trace and round. Usage: run.sh OUTDIR ROUND...; TRACES="vz tm hsdpa 5g"
# (default) and COMPETITOR=cubic for the runs next to a Cubic download (with --switch rule).
# Heavy: under flock /tmp/nuwa-heavy.lock.
set -u
cd "$(dirname "$0")/../../.."
out=$1; shift
mkdir -p "$out"
extra=(); tag=lone
if [ -n "${COMPETITOR:-}" ]; then extra=(--competitor "$COMPETITOR" --switch rule); tag=$COMPETITOR; fi
for i in "$@"; do
  for tr in ${TRACES:-vz tm hsdpa 5g}; do
    case $tr in
      vz) f=traces/4G/mahimahi-verizon-lte-short.mahi ;;
      tm) f=traces/4G/mahimahi-tmobile-lte-short.mahi ;;
      hsdpa) f=traces/3G/norway-hsdpa-bus-1.mahi ;;
      5g) f=traces/5G/mnwild-tmobile-5g-sa-lowband-walking-r20061.mahi ;;
    esac
    for scheme in hlsjs_nuwa hlsjs_nuwa_perread; do
      o=$out/$tag-$scheme-$tr-$i
      ./nuwa play --player hlsjs --trace $f --duration 60 --scheme $scheme "${extra[@]}" --out $o > $o.log 2>&1
      echo "$(date -u +%T) $tag $scheme $tr $i rc=$?"
    done
  done
done
