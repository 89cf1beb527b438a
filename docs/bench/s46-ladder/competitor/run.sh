# Forty-sixth session: a Nuwa video next to a Cubic download (issue 18), one run at a time, 21:13-21:31 UTC, code dc7b8f2 (+ the lab scheme nuwa_abandon)
set -u
cd /work/main
for i in 1 2 3; do
  ./nuwa play --trace traces/3G/norway-hsdpa-bus-1.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --out /work/out/s46/comp/hsdpa-$i
done
for i in 1 2 3; do
  ./nuwa play --trace traces/4G/mahimahi-verizon-lte-short.mahi --duration 60 --scheme nuwa --competitor cubic --switch rule --out /work/out/s46/comp/vz-$i
done
for i in 1 2 3; do
  ./nuwa play --trace traces/4G/mahimahi-verizon-lte-short.mahi --duration 60 --scheme nuwa_abandon --competitor cubic --switch rule --out /work/out/s46/comp/vzab-$i
done
# the switch rule's first detection replayed on each (lab/nuwa_lab/mix/replay.py --first):
# .venv/bin/python -m nuwa_lab.mix.replay --first /work/out/s46/comp/vz-1 --config '{"min_samples": 17}'
