#!/usr/bin/env bash
# Strong and weak scaling of `dpstats mean --method bounded` under mpirun (docs/benchmarks.md
# "MPI ranks"): wall time of the whole command (start, read, data pass, exit) for P = 1, 2, 4,
# as a ratio to the single-process run (no mpirun) on the same rows.
# usage: bench/mpi/scaling.sh build/dpstats [rows_per_unit]
set -euo pipefail
DPSTATS=$1
N=${2:-1000000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp" "$N" <<'PY'
import sys, numpy as np
out, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(1)
for k in range(4):  # 4 shards of n rows, d = 8
    np.save(f"{out}/s{k}.npy", rng.normal(size=(n, 8)))
PY
ARGS=(mean --method bounded --bounds -5,5 --epsilon 1 --delta 0 --seed 1)
best() {  # best of 3 wall times, seconds
  local b=999
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
    b=$(echo "if ($e - $s < $b) $e - $s else $b" | bc -l)
  done
  printf '%.3f' "$b"
}
echo "strong: 4 shards of $N rows (all rows fixed), time and ratio to one process"
t1=$(best "$DPSTATS" "${ARGS[@]}" --shards "$tmp"/s*.npy)
echo "P=1 (no mpirun) $t1 s"
for p in 1 2 4; do
  t=$(best mpirun -np $p --bind-to none "$DPSTATS" "${ARGS[@]}" --shards "$tmp"/s*.npy)
  echo "P=$p $t s ratio $(echo "$t / $t1" | bc -l | cut -c1-5)"
done
echo "weak: P shards of $N rows (rows per rank fixed), ratio to one process on one shard"
w1=$(best "$DPSTATS" "${ARGS[@]}" "$tmp/s0.npy")
echo "P=1 (no mpirun) $w1 s"
for p in 1 2 4; do
  files=("$tmp"/s*.npy)
  t=$(best mpirun -np $p --bind-to none "$DPSTATS" "${ARGS[@]}" --shards "${files[@]:0:$p}")
  echo "P=$p $t s ratio $(echo "$t / $w1" | bc -l | cut -c1-5)"
done
