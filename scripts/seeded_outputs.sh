#!/usr/bin/env bash
# Seeded releases of every capability, one JSON per file, to compare two builds byte for byte
# (a build change such as a unity build, PCH or flags must leave them identical):
#   scripts/seeded_outputs.sh A/dpstats /tmp/a && scripts/seeded_outputs.sh B/dpstats /tmp/b && diff -r /tmp/a /tmp/b
# Usage: scripts/seeded_outputs.sh DPSTATS OUTDIR (the input tables are generated into OUTDIR/data).
set -u
D=$1; out=$2; mkdir -p "$out"; dat=$out/data
if [ ! -d $dat ]; then mkdir -p $dat; /usr/bin/python3 - $dat <<'PY'
import sys, numpy as np, math, random
d = sys.argv[1]; g = np.random.default_rng(5)
n = 3000
X = g.normal(size=(n, 5)); X[: n // 20] += 1.5
np.savetxt(d + "/robust.csv", X, delimiter=",", header="a,b,c,d,e", comments="")
P = np.column_stack([g.uniform(18, 90, n), g.lognormal(10, 1, n), g.integers(0, 3, n)])
np.savetxt(d + "/people.csv", P, delimiter=",", header="age,salary,code", comments="")
random.seed(3)
with open(d + "/users.csv", "w") as f:
    for u in range(300):
        for k in range(10):
            a = [random.gauss(0, 0.5) for _ in range(3)]
            p = 1 / (1 + math.exp(-(2 * a[0] - a[1])))
            f.write(",".join(str(v) for v in [u, 1 if random.random() < p else -1] + a) + "\n")
random.seed(2)
with open(d + "/heavy.csv", "w") as f:
    for i in range(3000):
        x = [random.gauss(0, 1) / max(1e-3, abs(random.gauss(0, 1))) ** 0.5 for _ in range(3)]
        f.write(",".join(f"{v:.5f}" for v in [0.4 * sum(x) + random.gauss(0, 1)] + x) + "\n")
random.seed(1)
with open(d + "/classify.csv", "w") as f:
    for i in range(2000):
        c = i % 3
        f.write(",".join([str(c)] + [f"{c * 0.5 + random.random() * 0.3:.4f}" for _ in range(4)]) + "\n")
PY
fi
i=0
run() { i=$((i+1)); "$D" "$@" 2>&1 | sed -E -e 's/"(seconds|time|wall|elapsed|runtime)[a-z_]*":[0-9.e+-]+/"\1":T/g' -e 's/"data":"[^"]*"/"data":D/' > "$out/$i.json"; }
run mean --method prime --alpha 0.05 --epsilon 1 --delta 1e-6 --seed 1 $dat/robust.csv
run mean --method prime-ht --alpha 0.05 --epsilon 1 --delta 1e-6 --seed 2 $dat/robust.csv
run mean --method filter --alpha 0.05 --epsilon 1 --delta 1e-6 --seed 3 $dat/robust.csv
run mean --method dp-mean --epsilon 0.3 --delta 1e-6 --seed 4 $dat/robust.csv
run mean --method bounded --bounds -4,4 --epsilon 0.2 --delta 0 --seed 5 $dat/robust.csv
run median --epsilon 0.5 --delta 1e-6 --seed 6 $dat/robust.csv
run moments --epsilon 1 --delta 1e-6 --clip 5 --seed 7 $dat/robust.csv
run moments --method jme --epsilon 1 --delta 1e-6 --clip 5 --steps 500 --seed 8 $dat/robust.csv
run bounds --epsilon 0.3 --seed 9 $dat/people.csv
run stat quantiles --quantiles 0.1,0.5,0.9 --bounds 0,120 --bounds 0,1e7 --bounds 0,3 --epsilon 0.3 --delta 0 --seed 10 $dat/people.csv
run stat variance --bounds 0,120 --bounds 0,1e7 --bounds 0,3 --epsilon 0.3 --delta 0 --seed 11 $dat/people.csv
run stat histogram --column 2 --epsilon 0.1 --delta 1e-6 --seed 12 $dat/people.csv
run fit --task user-level --items-per-user 10 --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 2 --seed 13 $dat/users.csv
run fit --task user-level --items-per-user 10 --method dp-gd-filter --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 2 --seed 14 $dat/users.csv
run fit --task heavy-tailed --epsilon 1 --domain-radius 2 --seed 15 $dat/heavy.csv
run fit --task heavy-tailed --method lipschitz-extension --epsilon 1 --domain-radius 2 --moment-bound 3 --seed 16 $dat/heavy.csv
run fit --task classify --data $dat/classify.csv --classes 3 --optimizer dp-adam-jme --epsilon 1 --delta 1e-6 --epochs 2 --batch-size 100 --n-public 2000 --feature-scale 1 --seed 17
run mean --method tukey-median --bounds -4,4 --epsilon 1 --delta 1e-6 --columns a,b --seed 18 $dat/robust.csv
run noise --mechanism gaussian --sensitivity 1 --epsilon 0.5 --delta 1e-6 --seed 19 1 2 3
echo "seeded: $i commands -> $out"
