#!/usr/bin/env bash
# The failures of `mpirun dpstats` (issue 18): each must end every rank with a non-zero exit,
# nothing on stdout, and (except a killed rank, which the launcher reports) exactly one
# "dpstats: error:" line on stderr naming the cause. Also: --budget is charged once, by rank 0.
# usage: DPSTATS=build/dpstats DATA=<make_data.py folder> guards.sh
set -uo pipefail
: "${DPSTATS:?}" "${DATA:?}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
MEAN=(mean --method bounded --epsilon 1 --delta 1e-6 --bounds -10,10 --seed 1)

# refused NAME CODE PATTERN P ARGS...: exit CODE, empty stdout, one error line matching PATTERN.
refused() {
  local name=$1 code=$2 pattern=$3 p=$4
  shift 4
  timeout 60 mpirun -np "$p" --oversubscribe --bind-to none "$DPSTATS" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local lines
  lines=$(grep -c '^dpstats: error:' "$tmp/err")
  if [ "$rc" -ne "$code" ] || [ -s "$tmp/out" ] || [ "$lines" -ne 1 ] || ! grep -q -- "$pattern" "$tmp/err"; then
    echo "FAIL $name: exit $rc (want $code), stdout $(wc -c <"$tmp/out") bytes, $lines error lines"
    cat "$tmp/err"
    failures=$((failures + 1))
  else
    echo "ok   $name: $(head -c 160 "$tmp/err")"
  fi
}

refused "column-count mismatch" 2 "ranks disagree on the input's columns" 2 \
  "${MEAN[@]}" --shards "$DATA/table.csv" "$DATA/narrow.csv"
printf 'milli,kilo_shifted,t2,lognormal\n1,2,3,4\n1,2,x,4\n' >"$tmp/bad.csv"
refused "one rank's unreadable shard" 2 "rank 2: " 3 \
  "${MEAN[@]}" --shards "$DATA/part_00.csv" "$DATA/part_01.csv" "$tmp/bad.csv"
printf 'milli,kilo_shifted,t2,lognormal\n1,2,3,4\n1,2,nan,4\n' >"$tmp/nan.csv"
refused "one rank's missing cell" 2 "rank 1: " 2 "${MEAN[@]}" --shards "$DATA/part_02.csv" "$tmp/nan.csv"
refused "a method not distributed" 2 "does not run on several ranks" 2 \
  mean --method exp-time --alpha 0.05 --epsilon 1 --delta 1e-6 --scale 1 --seed 1 "$DATA/table.csv"
refused "a command not distributed" 2 "does not run on several ranks" 2 \
  noise --mechanism laplace --sensitivity 1 --epsilon 1 --seed 1 5
refused "the live moments stream" 2 "does not run on several ranks" 2 \
  moments --method jme --epsilon 1 --delta 1e-6 --steps 5 --seed 1 "$DATA/table.csv"
refused "the median's paper profile not distributed" 2 "the paper profile's FastRadius" 2 \
  median --profile paper --epsilon 1 --delta 1e-6 --seed 1 "$DATA/table.csv"
refused "non-private adam on ranks" 2 "does not run on 2 ranks" 2 \
  fit --task classify --classes 2 --columns label,f1,f2,f3 --optimizer adam --seed 1 "$DATA/users.csv"
printf 'user,label,f1,f2,f3\n1,1,0.5,0.5,0.5\n2,7,0.5,0.5,0.5\n' >"$tmp/label.csv"
refused "one rank's label out of range" 2 "rank 1: " 2 \
  fit --task classify --classes 2 --columns label,f1,f2,f3 --optimizer dp-sgd --n-public 4500 --epsilon 1 \
  --delta 1e-6 --seed 1 \
  --shards "$DATA/users_part_00.csv" "$tmp/label.csv"
refused "stdin under ranks" 2 "stdin" 2 "${MEAN[@]}" - <"$DATA/table.csv"
refused "tukey-median not distributed" 2 "does not run on several ranks" 2 \
  mean --method tukey-median --epsilon 1 --delta 0 --bounds -10,10 --seed 1 "$DATA/table.csv"
USERS=(fit --task user-level --items-per-user 5 --epsilon 1 --delta 1e-6 --domain-radius 3 --seed 1)
refused "heavy-tailed Alg 2 inner solver not distributed" 2 "inner double-output-perturbation does not run on 2 ranks" 2 \
  fit --task heavy-tailed --method lipschitz-extension --inner double-output-perturbation \
  --epsilon 1 --domain-radius 2 --moment-bound 3 --seed 1 "$DATA/table.csv"
refused "user-level method not distributed" 2 "method non-private does not run on 3 ranks" 3 \
  "${USERS[@]}" --method non-private --feature-bound 2 "$DATA/users.csv"

# --budget: rank 0 alone reads and writes it; one release is charged once, whatever P.
"$DPSTATS" budget init "$tmp/budget.json" --epsilon 2.5 --delta 1e-5 >/dev/null
for p in 1 3; do
  mpirun -np $p --oversubscribe --bind-to none "$DPSTATS" "${MEAN[@]}" --budget "$tmp/budget.json" \
    "$DATA/table.csv" >/dev/null 2>"$tmp/err" || { echo "FAIL budget run P=$p"; cat "$tmp/err"; failures=$((failures + 1)); }
done
spent=$("$DPSTATS" budget show "$tmp/budget.json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["spent"]["epsilon"])')
if /usr/bin/python3 -c "import sys; sys.exit(0 if abs($spent - 2) < 1e-9 else 1)"; then
  echo "ok   budget charged once per release: spent epsilon $spent after two releases"
else
  echo "FAIL budget: spent epsilon $spent after two releases of epsilon 1"; failures=$((failures + 1))
fi
refused "budget exhausted (rank 0 only holds it)" 2 "budget" 3 \
  "${MEAN[@]}" --budget "$tmp/budget.json" "$DATA/table.csv"

# A rank that dies: rank 1 blocks reading a FIFO and is killed; the job ends, nothing released.
mkfifo "$tmp/fifo.csv"
cp "$tmp/budget.json" "$tmp/budget.before"
mpirun -np 3 --oversubscribe --bind-to none "$DPSTATS" "${MEAN[@]}" --budget "$tmp/budget.json" \
  --shards "$DATA/part_02.csv" "$tmp/fifo.csv" "$DATA/part_03.csv" >"$tmp/out" 2>"$tmp/err" &
launcher=$!
victim=""
for _ in $(seq 100); do
  for pid in $(pgrep -P "$launcher"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$pid; fi
  done
  [ -n "$victim" ] && break
  sleep 0.1
done
sleep 0.5
[ -n "$victim" ] && kill -9 "$victim"
( sleep 30; kill "$launcher" 2>/dev/null ) &
watchdog=$!
wait "$launcher"
rc=$?
kill "$watchdog" 2>/dev/null
if [ -z "$victim" ] || [ "$rc" -eq 0 ] || [ -s "$tmp/out" ] || ! cmp -s "$tmp/budget.json" "$tmp/budget.before"; then
  echo "FAIL dead rank: victim '$victim', exit $rc, stdout $(wc -c <"$tmp/out") bytes"; failures=$((failures + 1))
else
  echo "ok   dead rank: mpirun exit $rc, nothing on stdout, budget file unchanged"
fi

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
