"""The end-to-end table of docs/BENCHMARKS.md (twenty-fifth session): PBQ (the model retrained at
aa2339a) against BBR in the same bench run, beside the twenty-fourth session's run of the same
invocation (the model trained at 2d4b688, the same BBR):
``python table.py BENCH_OUT_S25 BENCH_OUT_S24`` (each a ``./nuwa bench --out`` folder). The
table itself is the twenty-fourth session's (``../s24-senders/table.py``)."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "s24-senders"))
from table import load, rows

N, W = rows(load(sys.argv[1]), load(sys.argv[2]), "twenty-fourth session's run")
for q in sorted(N, reverse=True):
    print(f"\nqueue {q}: this run {W[('new', q)]}/{N[q]}, twenty-fourth session's "
          f"{W[('old', q)]}/{N[q]}; in both runs {W[('both', q)]}, in either {W[('either', q)]}; "
          f"cells valid in both runs: {W[('new_valid', q)]} and {W[('old_valid', q)]} of "
          f"{W[('valid', q)]}")
