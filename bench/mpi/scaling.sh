#!/usr/bin/env bash
# Issue 18 item 8: strong and weak scaling of `mpirun -np P dpstats ...` against one process of the
# same binary, for the bounded mean, PRIME, the median and user-level DP-GD. Wall seconds, best of
# REPS, mpirun's start-up included. Strong: one .npy of N rows read by row range. Weak: P copies
# of an N/4-row shard (--shards), against one process on one shard. Every ranked stdout is checked
# against the one-process stdout of the same rows.
#   bench/mpi/scaling.sh [BUILD] [N] [REPS]
set -euo pipefail
BUILD=${1:-build}
N=${2:-2000000}
REPS=${3:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
DPSTATS=$(realpath "$BUILD/dpstats")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp" "$N" <<'PY'
import sys, numpy as np
out, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(1)
X = np.column_stack([1e-3 * rng.normal(2, 1, n), 5e4 + 1e3 * rng.normal(size=n),
                     rng.standard_t(3, n), rng.lognormal(size=n)] + [rng.normal(size=n) for _ in range(4)])
X[: n // 50] *= 1e3
np.save(f"{out}/X.npy", X)
np.save(f"{out}/shard.npy", X[: n // 4])
users = n // 20
U = np.column_stack([np.repeat(np.arange(users), 20), (rng.normal(size=users * 20) > 0), rng.normal(size=(users * 20, 3))])
np.savetxt(f"{out}/users.csv", U, delimiter=",", header="user,label,f1,f2,f3", comments="", fmt="%.17g")
PY
declare -A CMD=(
  [bounded]="mean --method bounded --epsilon 1 --delta 0 --seed 3"
  [prime]="mean --method prime --alpha 0.05 --epsilon 4 --delta 1e-6 --seed 3"
  [median]="median --epsilon 1 --delta 1e-6 --seed 3"
  [user-level]="fit --task user-level --epsilon 1 --delta 1e-6 --domain-radius 3 --steps 20 --seed 3"
)
best() {  # best wall time of REPS runs of "$@" in ms, stdout kept in $tmp/out
  local b=999999999 t0 t
  for _ in $(seq "$REPS"); do
    t0=$(date +%s%N); "$@" >"$tmp/out"; t=$((($(date +%s%N) - t0) / 1000000))
    ((t < b)) && b=$t
  done
  echo "$b"
}
ratio() { echo "$(($1 * 100 / $2 / 100)).$(printf %02d $(($1 * 100 / $2 % 100)))"; }
echo "== $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); N = $N; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| command | scaling | one process (ms) | P = 1 | P = 2 | P = 4 |"
echo "|---|---|---|---|---|---|"
for name in bounded prime median user-level; do
  read -r -a args <<<"${CMD[$name]}"
  input="$tmp/X.npy"; shard="$tmp/shard.npy"
  if [ "$name" = user-level ]; then input="$tmp/users.csv"; shard=""; fi
  one=$(best "$DPSTATS" "${args[@]}" "$input"); cp "$tmp/out" "$tmp/one"
  row="| $name | strong | $one"
  for p in 1 2 4; do
    t=$(best mpirun -np "$p" --oversubscribe --bind-to none "$DPSTATS" "${args[@]}" "$input")
    cmp -s "$tmp/out" "$tmp/one" || { echo "$name P=$p: release differs from one process" >&2; exit 1; }
    row+=" | $t ($(ratio "$t" "$one")x)"
  done
  echo "$row |"
  [ -z "$shard" ] && continue
  one=$(best "$DPSTATS" "${args[@]}" "$shard")
  row="| $name | weak (N/4 rows per rank) | $one"
  for p in 1 2 4; do
    files=(); for _ in $(seq "$p"); do files+=("$shard"); done
    t=$(best mpirun -np "$p" --oversubscribe --bind-to none "$DPSTATS" "${args[@]}" --shards "${files[@]}")
    row+=" | $t ($(ratio "$t" "$one")x)"
  done
  echo "$row |"
done
