set -u
cd /work/main
for i in 1 2; do
for sc in nuwa nuwa_noreserve; do
  for tr in 3G/norway-hsdpa-bus-1 4G/mahimahi-verizon-lte-short; do
    n=$(basename $tr)-$sc-$i
    ./nuwa play --trace traces/$tr.mahi --duration 60 --scheme $sc --competitor cubic --switch rule --out /work/out/s45/comp/$n > /work/out/s45/comp/$n.log 2>&1
    echo "$n $(grep -E 'rebuffering' /work/out/s45/comp/$n.log | head -1)"
  done
done
done
