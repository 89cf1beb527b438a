"""BBR against Cubic in one bench run, every trace (docs/BENCHMARKS.md, fiftieth session; issue 17's
"on the traces within the spread that published BBR evaluations report against Cubic"):
``python3 docs/bench/s50-bbr/table.py BENCH_OUT`` (a ``./nuwa bench --out`` folder).

The published spread it reads against: Li, Chung, Jiang & Claypool, "TCP CUBIC versus BBR on the
Highway" (PAM 2018; Verizon LTE while driving): "CUBIC and BBR generally have similar throughputs,
but BBR has significantly lower self-inflicted delays than CUBIC"; Cardwell et al., "BBR:
Congestion-Based Congestion Control" (ACM Queue 2016): BBR keeps about one BDP queued where a
loss-based sender fills a deep buffer. Stated here as: BBR's utilization at least 0.95× Cubic's
("similar throughput") and its p95 queuing delay below Cubic's ("lower self-inflicted delay"), per
trace and queue. A criterion of ours from their words, not a figure of theirs."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "s24-senders"))
from table import load  # noqa: E402


def main() -> None:
    cells = load(sys.argv[1])
    print("| trace | queue | BBR util / p95 ms / loss | Cubic util / p95 ms / loss | util ratio | "
          "p95 ratio | within |")
    print("|---|---|---|---|---|---|---|")
    n = {}
    ok = {}
    for k in sorted(cells, key=lambda k: (-k[2], k[0], k[1])):
        c = cells[k]
        if "bbr" not in c or "cubic" not in c:
            continue
        b, q = c["bbr"], c["cubic"]
        within = b[0] >= 0.95 * q[0] and b[1] < q[1]
        n[k[2]] = n.get(k[2], 0) + 1
        ok[k[2]] = ok.get(k[2], 0) + within
        inv = "" if b[3] and q[3] else " (a run invalid)"
        print(f"| {k[1]} ({k[0]}) | {k[2]} | {b[0]:.3f} / {b[1]:.0f} / {100 * b[2]:.2f} % | "
              f"{q[0]:.3f} / {q[1]:.0f} / {100 * q[2]:.2f} % | {b[0] / q[0]:.3f} | "
              f"{b[1] / q[1]:.2f} | {'yes' if within else 'no'}{inv} |")
    for qp in sorted(n, reverse=True):
        print(f"\nqueue {qp}: within on {ok[qp]} of {n[qp]} traces")


if __name__ == "__main__":
    main()
