# Forty-sixth session: a lone Nuwa video on T-Mobile UMTS driving with the server's switch rule on
# (no competitor), three runs one at a time, 22:20-22:28 UTC, code 0dc0e27. Each run's switches
# are the server's "controller switch" lines (switches-N.log); summary in run-N.json.
set -u
cd /work/main
for i in 1 2 3; do
  ./nuwa play --trace traces/3G/mahimahi-tmobile-umts-driving.mahi --duration 60 --scheme nuwa --switch rule --out /work/out/s46/umts-lone-rule-$i
done
