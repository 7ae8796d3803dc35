#!/usr/bin/env bash
# Issue 17 item 5: PRIME at n = 10^6, d = 100 in units of one XᵀX pass, measured in the same run,
# on 1 thread and on all cores. Units: Eigen's rank update built for AVX2 + FMA (bench_xtx_avx2,
# a separate program) and the portable build's own (SSE2) pass (BM_XtX in dpstats_bench).
#   bench/prime_passes.sh [BUILD] [N] [D]
set -euo pipefail
BUILD=${1:-build}
N=${2:-1000000}
D=${3:-100}
T=$(nproc)
OUT="$BUILD/bench/prime_passes"
mkdir -p "$OUT"
echo "== machine: $T cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/bench/dpstats_bench" --benchmark_filter="^BM_(Prime|XtX)/$N/$D(/|\$)" \
  --benchmark_repetitions=3 --benchmark_out="$OUT/prime.json" --benchmark_out_format=json >/dev/null
: >"$OUT/xtx_avx2.jsonl"
for t in 1 "$T"; do "$BUILD/bench/bench_xtx_avx2" "$N" "$D" "$t" 5 >>"$OUT/xtx_avx2.jsonl"; done
/usr/bin/python3 - "$OUT" "$N" "$D" "$T" <<'PY'
import json, sys
out, n, d, T = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
runs = json.load(open(f"{out}/prime.json"))["benchmarks"]
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
def best(prefix):  # the best repetition, in seconds
    ts = [b["real_time"] * UNIT[b["time_unit"]] for b in runs
          if b["run_name"].removesuffix("/real_time") == prefix and b.get("run_type") == "iteration"]
    return min(ts)
avx = {r["threads"]: r["seconds"] for r in map(json.loads, open(f"{out}/xtx_avx2.jsonl"))}
sse = best(f"BM_XtX/{n}/{d}")
print(f"| threads | PRIME s | XtX AVX2 s | PRIME / AVX2 pass | XtX SSE2 s (1 thread) | PRIME / SSE2 pass |")
print("|---|---|---|---|---|---|")
for t in sorted({1, T}):
    p = best(f"BM_Prime/{n}/{d}/{t}")
    print(f"| {t} | {p:.3f} | {avx[t]:.3f} | {p / avx[t]:.2f} | {sse:.3f} | {p / sse:.2f} |")
PY
