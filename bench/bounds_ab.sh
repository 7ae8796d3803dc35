#!/usr/bin/env bash
# `dpstats bounds --epsilon 1 --threads 1` on two builds, interleaved in one run with one Eigen XᵀX
# pass built for AVX2 + FMA (bench_xtx_avx2: the CPU of 7 passes less that of 1, over 6) on the
# shifted cluster of bench/scale_passes_tool.sh (n x 100, 5% of rows shifted by 1.5): a change's
# before/after as CPU seconds (user + sys, perf stat's task-clock) and XᵀX passes, R rounds.
#   bench/bounds_ab.sh BEFORE AFTER XTX_AVX2 N [ROUNDS]
set -euo pipefail
A=$1; B=$2; XTX=$3; N=$4; R=${5:-5}
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
/usr/bin/python3 -c "
import numpy as np, sys
rng = np.random.default_rng(1); n = int(sys.argv[2])
X = rng.standard_normal((n, 100)); X[: n // 20] += 1.5; rng.shuffle(X); np.save(sys.argv[1], X)
" "$D/cluster.npy" "$N"
cpu() { perf stat -x, -e task-clock -o "$D/stat" "$@" >/dev/null 2>&1
        awk -F, '/task-clock/ {printf "%.3f", $1 / 1000}' "$D/stat"; }
echo "== load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$R"); do
  x=$(echo "($(cpu "$XTX" "$N" 100 1 7) - $(cpu "$XTX" "$N" 100 1 1)) / 6" | bc -l)
  a=$(cpu "$A" bounds --epsilon 1 --seed 1 --threads 1 "$D/cluster.npy")
  b=$(cpu "$B" bounds --epsilon 1 --seed 1 --threads 1 "$D/cluster.npy")
  printf 'xtx %.3f before %s (%.2f passes) after %s (%.2f passes)\n' "$x" "$a" \
    "$(echo "$a / $x" | bc -l)" "$b" "$(echo "$b / $x" | bc -l)"
done
echo "== load $(cut -d' ' -f1-3 /proc/loadavg)"
