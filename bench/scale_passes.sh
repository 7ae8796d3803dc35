#!/usr/bin/env bash
# Issue 27 item 6: the private scale layer at n = 10^6, d = 100 in units of one XᵀX pass measured
# in the same run: `dpstats bounds`' library call (private_bounds), the clipping bounds, and PRIME
# with no --scale (the units estimated by the scale layer) beside PRIME with the scale given.
# Units: Eigen's rank update built for AVX2 + FMA (bench_xtx_avx2) and the portable build's own
# pass (BM_XtX), on 1 thread and on all cores.
#   bench/scale_passes.sh [BUILD] [N] [D]
set -euo pipefail
BUILD=${1:-build}
N=${2:-1000000}
D=${3:-100}
T=$(nproc)
OUT="$BUILD/bench/scale_passes"
mkdir -p "$OUT"
echo "== machine: $T cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/bench/dpstats_bench" \
  --benchmark_filter="^BM_(XtX/$N/$D|(Bounds|ClipBounds|PrimeDefault)/$N/$D/(1|$T)|Prime/$N/$D/(1|$T))(/|\$)" \
  --benchmark_repetitions=3 --benchmark_out="$OUT/scale.json" --benchmark_out_format=json >/dev/null
: >"$OUT/xtx_avx2.jsonl"
for t in 1 "$T"; do "$BUILD/bench/bench_xtx_avx2" "$N" "$D" "$t" 5 >>"$OUT/xtx_avx2.jsonl"; done
/usr/bin/python3 - "$OUT" "$N" "$D" "$T" <<'PY'
import json, sys
out, n, d, T = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
runs = json.load(open(f"{out}/scale.json"))["benchmarks"]
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
def best(prefix):  # the best repetition, in seconds
    ts = [b["real_time"] * UNIT[b["time_unit"]] for b in runs
          if b["run_name"].split("/iterations")[0].removesuffix("/real_time") == prefix
          and b.get("run_type") == "iteration"]
    return min(ts)
avx = {r["threads"]: r["seconds"] for r in map(json.loads, open(f"{out}/xtx_avx2.jsonl"))}
sse = best(f"BM_XtX/{n}/{d}")
print("| threads | what | seconds | / XtX AVX2 pass | / XtX SSE2 pass (1 thread) |")
print("|---|---|---|---|---|")
for t in sorted({1, T}):
    for name, label in [("Bounds", "bounds (private_bounds, eps 1)"),
                        ("ClipBounds", "clip bounds (eps 1, coverage 0.01)"),
                        ("PrimeDefault", "PRIME, no scale (eps 10, delta 0.01)"),
                        ("Prime", "PRIME, scale given")]:
        s = best(f"BM_{name}/{n}/{d}/{t}")
        print(f"| {t} | {label} | {s:.3f} | {s / avx[t]:.2f} | {s / sse:.2f} |")
    print(f"| {t} | XtX AVX2 | {avx[t]:.3f} | 1 | {avx[t] / sse:.2f} |")
PY
