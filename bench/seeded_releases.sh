#!/usr/bin/env bash
# The seeded releases of the scale layer's consumers (issue 27 item 6: a speed change must leave
# every one byte-identical): bounds with and without coverage and norm, every mean method that
# estimates its units or bounds, median, stat, moments, fit classify, on small generated tables
# (a shifted cluster, columns of mixed units near 1e9, ratings, zero-inflated money, a heavy
# tail, a 3-class table). Each command's output (or error) and exit code go to OUT/N.out; compare
# two builds with `diff -r`.
#   bench/seeded_releases.sh DPSTATS OUT
set -euo pipefail
DP=$(realpath "$1"); OUT=$2
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
D=$(mktemp -d)
cd "$D"  # the tables by relative names: a release that echoes its input's name is comparable
/usr/bin/python3 - "$D" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
X = rng.standard_normal((3000, 5)); X[:150] += 1.5; np.save(f"{d}/cl5.npy", X)
X = rng.standard_normal((20000, 3)) * np.array([1e-3, 1, 1e9]) + np.array([0, 5, 3e9])
np.save(f"{d}/mixed.npy", X)
r = np.clip(np.round(rng.normal(6, 1.2, 3000)), 1, 10)
z = np.where(rng.random(3000) < 0.9, 0.0, np.exp(rng.normal(8, 2, 3000)))
h = rng.lognormal(0, 1.2, 3000)
with open(f"{d}/tab.csv", "w") as f:
    f.write("rating,money,tail\n")
    for a, b, c in zip(r, z, h):
        f.write(f"{a},{b},{c}\n")
k = rng.integers(0, 3, 400)
F = rng.normal(0, 1, (400, 4)) + k[:, None] * 3 * np.array([1, 10, 0.1, 100])
np.savetxt(f"{d}/cls.csv", np.column_stack([k, F]), delimiter=",", fmt=["%d"] + ["%.9g"] * 4)
PY
i=0
run() { i=$((i + 1)); "$DP" "$@" --threads 2 >"$OUT/$i.out" 2>&1 && echo "rc 0" >>"$OUT/$i.out" || echo "rc $?" >>"$OUT/$i.out"; }
run bounds --epsilon 1 --seed 1 "cl5.npy"
run bounds --epsilon 0.3 --coverage 0.01 --seed 2 "cl5.npy"
run bounds --epsilon 1 --norm-quantile 0.9 --seed 3 "cl5.npy"
run bounds --epsilon 1 --coverage 0.02 --norm-quantile 0.5 --norm-centre zero --seed 4 "mixed.npy"
run bounds --epsilon 0.3 --seed 5 --header "tab.csv"
run bounds --epsilon 1 --coverage 0.01 --seed 5 --header "tab.csv"
run bounds --epsilon 1 --seed 6 --neighbouring add-remove --coverage 0.01 "mixed.npy"
run mean --method prime --alpha 0.05 --epsilon 10 --delta 0.01 --seed 1 "cl5.npy"
run mean --method prime-ht --alpha 0.05 --epsilon 10 --delta 0.01 --seed 2 "cl5.npy"
run mean --method robust --alpha 0.05 --epsilon 3 --delta 1e-5 --seed 3 "cl5.npy"
run mean --method dp-mean --epsilon 3 --delta 1e-5 --seed 4 "cl5.npy"
run mean --method bounded --epsilon 1 --delta 0 --seed 5 "cl5.npy"
run mean --method filter --alpha 0.05 --epsilon 10 --delta 0.01 --seed 6 "cl5.npy"
run median --epsilon 1 --delta 1e-5 --seed 7 "cl5.npy"
run stat mean --epsilon 0.3 --delta 0 --columns rating --seed 8 --header "tab.csv"
run stat quantiles --quantiles 0.5,0.95 --epsilon 0.5 --delta 0 --seed 9 --header "tab.csv"
run stat variance --epsilon 1 --delta 0 --seed 10 --header "tab.csv"
run stat sum --epsilon 1 --delta 0 --columns money --seed 11 --header "tab.csv"
run stat std --epsilon 1 --delta 1e-6 --seed 12 "mixed.npy"
run mean --method bounded --epsilon 1 --delta 0 --seed 13 "mixed.npy"
run mean --method prime --alpha 0.05 --epsilon 10 --delta 0.01 --seed 14 "mixed.npy"
run fit --task classify --classes 3 --epsilon 10 --delta 1e-6 --seed 15 --n-public 400 --data cls.csv
run moments --epsilon 1 --delta 1e-6 --seed 16 "cl5.npy"
cd / && rm -rf "$D"
echo "$i seeded commands in $OUT"
