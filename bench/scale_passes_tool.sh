#!/usr/bin/env bash
# Issue 27 item 6 through the tool, for a machine where dpstats_bench is not built: `dpstats
# bounds` (with and without --coverage), the default PRIME (no --scale) and PRIME with --scale 1
# on the shifted cluster (n x 100, 5% of rows shifted by 1.5), one thread, interleaved with one
# Eigen XᵀX pass built for AVX2 + FMA (bench_xtx_avx2; its CPU seconds per pass: the CPU of 7
# passes less that of 1, over 6). R rounds; each command's wall and user + sys CPU seconds (CPU
# is the measure on a shared machine, where wall is several times the CPU).
#   bench/scale_passes_tool.sh DPSTATS XTX_AVX2 N [ROUNDS]
set -euo pipefail
DP=$1; XTX=$2; N=$3; R=${4:-3}
NPY=$(mktemp -d)/cluster.npy
/usr/bin/python3 -c "
import numpy as np, sys
rng = np.random.default_rng(1); n = int(sys.argv[2])
X = rng.standard_normal((n, 100)); X[: n // 20] += 1.5; rng.shuffle(X); np.save(sys.argv[1], X)
" "$NPY" "$N"
t() { /usr/bin/time -f "%e %U %S" "$@" 2>&1 >/dev/null | tail -1 |
      awk '{printf "wall %.3f cpu %.3f", $1, $2 + $3}'; }
echo "== load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$R"); do
  a=$(/usr/bin/time -f "%U %S" "$XTX" "$N" 100 1 1 2>&1 >/dev/null | awk '{print $1 + $2}')
  b=$(/usr/bin/time -f "%U %S" "$XTX" "$N" 100 1 7 2>&1 >/dev/null | awk '{print $1 + $2}')
  echo "xtx_pass cpu $(echo "($b - $a) / 6" | bc -l | cut -c1-6)"  # 6 more passes, same data
  echo "bounds $(t "$DP" bounds --epsilon 1 --seed 1 --threads 1 "$NPY")"
  echo "bounds_cov $(t "$DP" bounds --epsilon 1 --coverage 0.01 --seed 1 --threads 1 "$NPY")"
  echo "prime_default $(t "$DP" mean --method prime --alpha 0.05 --epsilon 10 --delta 0.01 --seed 1 --threads 1 "$NPY")"
  echo "prime_scale $(t "$DP" mean --method prime --alpha 0.05 --epsilon 10 --delta 0.01 --scale 1 --seed 1 --threads 1 "$NPY")"
done
rm -f "$NPY"
