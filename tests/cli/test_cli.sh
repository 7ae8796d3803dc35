#!/usr/bin/env bash
# End-to-end contract of the tool (design.md §4): JSON on stdout and exit 0 on success; on bad
# input exit 2, one line on stderr naming the problem, nothing on stdout.
set -u
DPSTATS=${DPSTATS:-build/dpstats}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() {  # ok NAME JQ-LIKE-PYTHON-CHECK -- ARGS...
  local name=$1 check=$2; shift 3
  if "$DPSTATS" "$@" >"$tmp/out" 2>"$tmp/err" &&
     /usr/bin/python3 -c "import json,sys; j=json.load(open('$tmp/out')); sys.exit(0 if ($check) else 1)"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL (expected success): $name"; cat "$tmp/out" "$tmp/err" | head -5
  fi
}

bad() {  # bad NAME EXPECTED-STDERR-SUBSTRING -- ARGS...
  local name=$1 expect=$2; shift 3
  "$DPSTATS" "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  if [ "$code" -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
     grep -qi -- "$expect" "$tmp/err"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL (expected exit 2 with '$expect'): $name (exit $code)"
    head -3 "$tmp/out" "$tmp/err"
  fi
}

# ---- data files ----
printf 'a,b\n1,2\n3,4\n5,6\n' >"$tmp/good.csv"
printf '1,2\n3,4\n' >"$tmp/noheader.csv"
printf 'a,b\n1,2\n3\n' >"$tmp/ragged.csv"
printf 'a,b\n1,nan\n' >"$tmp/nan.csv"
printf 'a,b\n1,inf\n' >"$tmp/inf.csv"
printf 'a,b\n1,x7\n' >"$tmp/text.csv"
printf 'a,b\n1,1e999\n' >"$tmp/overflow.csv"
: >"$tmp/empty.csv"
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(1)
np.save(sys.argv[1] + "/data.npy", rng.normal(size=(5000, 3)))
np.save(sys.argv[1] + "/nan.npy", np.array([[1.0, np.nan]]))
PY

# ---- success paths ----
ok "version" "j['command']=='version'" -- version
ok "bounded laplace" "j['privacy']['epsilon']==1 and j['privacy']['delta']==0 and len(j['estimate'])==2 and j['seeded'] and j['n']==3 and j['columns']==['a','b']" \
  -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,10 --seed 1 "$tmp/good.csv"
ok "bounded gaussian, no header" "j['privacy']['delta']==1e-6 and j['status']=='ok' and j['seeded'] is False and j['noise']=='secure' and j['privacy']['certified']" \
  -- mean --method bounded --epsilon 1 --delta 1e-6 --bounds -5,5 "$tmp/noheader.csv"
# The units step charges 6 entries: median, refined median, MAD; winsorising clip, clipped second moment, tail count.
ok "dp-mean npy" "j['method']=='dp-mean' and j['d']==3 and abs(sum(x*x for x in j['estimate']))**0.5 < 0.5 and len(j['ledger'])==8" \
  -- mean --method dp-mean --epsilon 2 --delta 1e-6 --seed 3 "$tmp/data.npy"
ok "stdin csv" "j['n']==3" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,10 - <"$tmp/good.csv"
ok "noise laplace" "len(j['estimate'])==3 and j['privacy']['epsilon']==0.5 and j['diagnostics']['scale']>=2" \
  -- noise --mechanism laplace --sensitivity 1 --epsilon 0.5 1 2 -3.5
ok "noise gaussian" "len(j['estimate'])==1 and j['privacy']['delta']==1e-5" \
  -- noise --mechanism gaussian --sensitivity 1 --epsilon 1 --delta 1e-5 10
ok "calibrate gaussian" "abs(j['sigma']-3.730632)<1e-5 and j['secure_sigma']>=j['sigma']" \
  -- account calibrate --mechanism gaussian --sensitivity 1 --epsilon 1 --delta 1e-5
ok "calibrate laplace" "j['scale']==2 and j['secure_scale']>=2" \
  -- account calibrate --mechanism laplace --sensitivity 1 --epsilon 0.5
ok "convert rho" "abs(j['epsilon']-4.7284)<1e-4" -- account convert --rho 0.5 --delta 1e-5
ok "compose" "j['epsilon']<=10*0.1+1e-12 and j['delta']>0" \
  -- account compose --epsilon 0.1 --delta 0 --times 10 --delta-slack 1e-5
# Issue #20: dp_accounting's PLD (1e-4) gives 5.193 at T = 1e4 and 21.090 at T = 1e5.
ok "dp-sgd pld T=1e4" "5.19<=j['epsilon']<=5.25 and j['accountant']=='pld' and j['upper_bound']" \
  -- account dp-sgd --sampling-rate 0.01 --noise-multiplier 1.1 --steps 10000 --delta 1e-5
ok "dp-sgd pld T=1e5" "21.09<=j['epsilon']<=21.3 and j['accountant']=='pld' and j['upper_bound']" \
  -- account dp-sgd --sampling-rate 0.01 --noise-multiplier 1.1 --steps 100000 --delta 1e-5
ok "dp-sgd sigma" "j['epsilon']<=2 and 0.5<j['noise_multiplier']<2 and j['upper_bound']" \
  -- account dp-sgd --sampling-rate 0.01 --epsilon 2 --steps 1000 --delta 1e-5
ok "dp-sgd rdp" "j['accountant']=='rdp' and j['epsilon']<5.64" \
  -- account dp-sgd --sampling-rate 0.01 --noise-multiplier 1.1 --steps 10000 --delta 1e-5 --accountant rdp
ok "compose losses" "j['upper_bound'] and j['accountant'] in ('pld','rdp') and len(j['losses'])==3" \
  -- account compose --delta 1e-6 --loss pure:0.5 --loss gaussian:sigma=4 \
     --loss subsampled-gaussian:q=0.01,sigma=1.1,steps=1000
ok "compose zcdp rdp" "j['accountant']=='rdp' and 'refused' in j['pld']" \
  -- account compose --delta 1e-6 --loss zcdp:0.1 --loss approx:0.1,1e-8,times=3

# ---- bad input: exit 2, one line on stderr, nothing on stdout ----
bad "missing file" "cannot open" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 "$tmp/nope.csv"
bad "empty file" "empty" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 "$tmp/empty.csv"
bad "ragged rows" "line 3" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 "$tmp/ragged.csv"
bad "NaN cell" "nan" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 "$tmp/nan.csv"
bad "Inf cell" "inf" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 "$tmp/inf.csv"
bad "text cell" "number" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 "$tmp/text.csv"
bad "a text cell names its column and --columns (issue 30)" "('b').*pick the numeric columns with --columns" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 "$tmp/text.csv"
bad "overflow cell" "line 2" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 "$tmp/overflow.csv"
bad "NaN in npy" "nan" -- mean --method dp-mean --epsilon 1 --delta 1e-6 "$tmp/nan.npy"
bad "epsilon zero" "epsilon" -- mean --method bounded --epsilon 0 --delta 0 --bounds 0,1 "$tmp/good.csv"
bad "epsilon negative" "epsilon" -- mean --method bounded --epsilon -1 --delta 0 --bounds 0,1 "$tmp/good.csv"
bad "epsilon nan" "epsilon" -- mean --method bounded --epsilon nan --delta 0 --bounds 0,1 "$tmp/good.csv"
bad "epsilon text" "epsilon" -- mean --method bounded --epsilon abc --delta 0 --bounds 0,1 "$tmp/good.csv"
bad "delta one" "delta" -- mean --method bounded --epsilon 1 --delta 1 --bounds 0,1 "$tmp/good.csv"
bad "delta negative" "delta" -- mean --method bounded --epsilon 1 --delta -0.1 --bounds 0,1 "$tmp/good.csv"
bad "dp-mean delta zero" "delta" -- mean --method dp-mean --epsilon 1 --delta 0 "$tmp/good.csv"
bad "bounds reversed" "lower < upper" -- mean --method bounded --epsilon 1 --delta 0 --bounds 2,1 "$tmp/good.csv"
bad "bounds text" "bounds" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,x "$tmp/good.csv"
ok "bounds estimated when absent (3 rows: abstains before charging, with the reason)" "j['status']=='abstained' and 'bounds' in j['diagnostics']['abstained'] and 'rows' in j['diagnostics']['abstained'] and 'nothing was charged' in j['diagnostics']['abstained'] and len(j['ledger'])==0 and j['privacy']['epsilon']==0 and j['diagnostics']['scale_share']['usable'] is False" \
  -- mean --method bounded --epsilon 1 --delta 0 "$tmp/good.csv"
bad "unknown method" "method" -- mean --method median --epsilon 1 --delta 0 "$tmp/good.csv"
bad "seed negative" "seed" -- mean --method bounded --epsilon 1 --delta 0 --bounds 0,1 --seed -1 "$tmp/good.csv"
bad "noise gaussian no delta" "delta" -- noise --mechanism gaussian --sensitivity 1 --epsilon 1 5
bad "noise laplace with delta" "delta must be 0 for mechanism laplace" -- noise --mechanism laplace --sensitivity 1 --epsilon 1 --delta 1e-6 5
bad "noise unknown mechanism" "mechanism" -- noise --mechanism cauchy --sensitivity 1 --epsilon 1 5
bad "repro threads above the declared range" "in \[1, 1024\]" -- repro --threads 2000 table1
bad "noise bad sensitivity" "sensitivity" -- noise --mechanism laplace --sensitivity 0 --epsilon 1 5
bad "noise value text" "VALUE" -- noise --mechanism laplace --sensitivity 1 --epsilon 1 5x
bad "calibrate classic range" "delta" -- account calibrate --mechanism gaussian --sensitivity 1 --epsilon 1
bad "convert rho and mu" "excludes" -- account convert --rho 1 --mu 1 --delta 1e-5
bad "compose times" "times" -- account compose --epsilon 1 --delta 0 --times 0 --delta-slack 1e-6
bad "compose loss kind" "kind" -- account compose --delta 1e-6 --loss gauss:1
bad "compose loss value" "sigma" -- account compose --delta 1e-6 --loss gaussian:sigma=abc
bad "dp-sgd both" "excludes" -- account dp-sgd --sampling-rate 0.01 --noise-multiplier 1 --epsilon 1 --steps 10 --delta 1e-5
bad "dp-sgd rate" "sampling_rate" -- account dp-sgd --sampling-rate 2 --noise-multiplier 1 --steps 10 --delta 1e-5
bad "no command" "subcommand" --
bad "unknown command" "" -- frobnicate

# ---- fit --task classify (issue 6): tiny CSV, label first ----
/usr/bin/python3 - "$tmp/classify.csv" <<'PYEOF'
import random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    for i in range(400):
        c = i % 3
        f.write(",".join([str(c)] + [f"{c * 0.5 + random.random() * 0.3:.4f}" for _ in range(4)]) + "\n")
PYEOF
ok "classify jme" "j['task']=='classify' and j['method']=='dp-adam-jme' and j['privacy']['certified'] and j['privacy']['epsilon']<=1 and j['privacy']['neighbouring']=='add-remove' and len(j['diagnostics']['train_loss'])==2 and len(j['diagnostics']['test_accuracy'])==2 and j['model']['parameters']==15 and 'NOT covered' in j['diagnostics']['test_accuracy_warning'] and j['diagnostics']['sampling_rate']==0.1 and 'n' not in j" \
  -- fit --task classify --data "$tmp/classify.csv" --test "$tmp/classify.csv" --classes 3 --optimizer dp-adam-jme --epsilon 1 --delta 1e-6 --feature-scale 1 --epochs 2 --batch-size 40 --n-public 400 --seed 1
ok "classify small table abstains before spending (issue 27)" "j['status']=='abstained' and j['ledger']==[] and j['privacy']['epsilon']==0 and 'rows at this epsilon' in j['diagnostics']['abstained'] and 'feature_scale' in j['diagnostics']['abstained']" \
  -- fit --task classify --data "$tmp/classify.csv" --classes 3 --epsilon 1 --delta 1e-6 --n-public 400 --seed 1
ok "classify --holdout states a private loss" "j['status']=='ok' and j['diagnostics']['holdout']['unit']=='row' and j['diagnostics']['holdout']['units_expected']==100 and 'holdout' in j['ledger'][-1]['purpose'] and j['diagnostics']['sampling_rate']==40/300" \
  -- fit --task classify --data "$tmp/classify.csv" --classes 3 --epsilon 1 --delta 1e-6 --feature-scale 1 --holdout 0.25 --epochs 2 --batch-size 40 --n-public 400 --seed 1
bad "classify --holdout out of range" "holdout" -- fit --task classify --data "$tmp/classify.csv" --classes 3 --epsilon 1 --delta 1e-6 --holdout 0.8 --n-public 400
ok "classify adam" "j['privacy']['epsilon'] is None and not j['privacy']['certified']" \
  -- fit --task classify --data "$tmp/classify.csv" --classes 3 --optimizer adam --model mlp --hidden 4 --epochs 1 --batch-size 40 --seed 1
bad "classify needs classes" "classes" -- fit --task classify --data "$tmp/classify.csv" --epsilon 1 --delta 1e-6
bad "classify bad label" "a label is not an integer in 0..1" -- fit --task classify --data "$tmp/classify.csv" --classes 2 --epsilon 1 --delta 1e-6 --n-public 400
bad "classify needs epsilon" "epsilon is required" -- fit --task classify --data "$tmp/classify.csv" --classes 3 --delta 1e-6
bad "classify needs delta" "delta is required" -- fit --task classify --data "$tmp/classify.csv" --classes 3 --epsilon 1
# Issue 28: under add/remove the row count is private: the sampling rate needs a public one.
bad "classify needs --n-public" "n_public is required" -- fit --task classify --data "$tmp/classify.csv" --classes 3 --epsilon 1 --delta 1e-6
bad "classify batch above --n-public" "n_public = 30" -- fit --task classify --data "$tmp/classify.csv" --classes 3 --epsilon 1 --delta 1e-6 --n-public 30 --batch-size 40
ok "classify feature scale" "j['diagnostics']['feature_scale']==2 and j['privacy']['accountant'] in ('pld','rdp') and len(j['ledger'])==2" \
  -- fit --task classify --data "$tmp/classify.csv" --classes 3 --epsilon 1 --delta 1e-6 --feature-scale 2 --epochs 1 --batch-size 40 --n-public 400 --seed 1
bad "classify unknown optimizer" "optimizer" -- fit --task classify --data "$tmp/classify.csv" --classes 3 --optimizer sgd
bad "classify adam with epsilon" "not private" -- fit --task classify --data "$tmp/classify.csv" --classes 3 --optimizer adam --epsilon 1
bad "classify rejects --loss" "does not apply" -- fit --task classify --data "$tmp/classify.csv" --classes 3 --loss logistic

# ---- fit --task heavy-tailed (issue 8): label first, heavy-tailed features, one enormous record ----
/usr/bin/python3 - "$tmp/heavy.csv" <<'PYEOF'
import random, sys
random.seed(2)
with open(sys.argv[1], "w") as f:
    f.write("-1e7,1e6,1e6,1e6\n")
    for i in range(3000):
        x = [random.gauss(0, 1) / max(1e-3, abs(random.gauss(0, 1))) ** 0.5 for _ in range(3)]
        y = 0.4 * sum(x) + random.gauss(0, 1)
        f.write(",".join(f"{v:.5f}" for v in [y] + x) + "\n")
PYEOF
ok "heavy-tailed default" "j['task']=='heavy-tailed' and j['method']=='clipped-gd' and j['status']=='ok' and abs(j['privacy']['epsilon']-1)<1e-12 and j['privacy']['delta']==0 and j['privacy']['certified'] and len(j['estimate'])==3 and sum(v*v for v in j['estimate'])<=4+1e-9" \
  -- fit --task heavy-tailed --loss absolute --epsilon 1 --domain-radius 2 --moment-order 2 --moment-bound 3 --seed 1 "$tmp/heavy.csv"
bad "heavy-tailed rejects classify's --one-unit" "--one-unit does not apply to --task heavy-tailed" \
  -- fit --task heavy-tailed --loss absolute --epsilon 1 --domain-radius 2 --one-unit "$tmp/heavy.csv"
bad "heavy-tailed rejects classify's --hidden" "--hidden does not apply to --task heavy-tailed" \
  -- fit --task heavy-tailed --loss absolute --epsilon 1 --domain-radius 2 --hidden 4 "$tmp/heavy.csv"
bad "classify rejects heavy-tailed's --moment-order" "--moment-order does not apply to --task classify" \
  -- fit --task classify --data "$tmp/classify.csv" --classes 3 --epsilon 1 --delta 1e-6 --n-public 400 --moment-order 2
ok "heavy-tailed lipschitz-extension (abort bit not covered)" "j['method']=='lipschitz-extension' and j['status']=='ok' and not j['privacy']['certified'] and j['diagnostics']['phases'][0]['sampler']=='lattice_l2_laplace'" \
  -- fit --task heavy-tailed --method lipschitz-extension --loss absolute --epsilon 1 --domain-radius 2 --moment-order 2 --moment-bound 3 --seed 1 "$tmp/heavy.csv"
ok "heavy-tailed paper" "j['diagnostics']['profile']=='paper' and not j['privacy']['certified']" \
  -- fit --task heavy-tailed --method lipschitz-extension --loss huber --profile paper --epsilon 1 --domain-radius 2 --seed 1 "$tmp/heavy.csv"
ok "heavy-tailed clipped-gd" "j['method']=='clipped-gd' and j['privacy']['delta']==0 and j['ledger'][-1]['mechanism']=='l2_laplace' and j['diagnostics']['scale']['moment_bound']['estimated']" \
  -- fit --task heavy-tailed --method clipped-gd --steps 4 --epsilon 1 --domain-radius 2 --seed 1 "$tmp/heavy.csv"
ok "heavy-tailed dp-sgd" "j['privacy']['delta']==1e-6 and j['privacy']['rho'] is not None" \
  -- fit --task heavy-tailed --method dp-sgd --delta 1e-6 --steps 4 --epsilon 1 --domain-radius 2 --seed 1 "$tmp/heavy.csv"
bad "heavy-tailed delta on pure" "delta" -- fit --task heavy-tailed --delta 1e-6 --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"
bad "heavy-tailed dp-sgd needs delta" "delta" -- fit --task heavy-tailed --method dp-sgd --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"
bad "heavy-tailed hinge labels" "labels must be -1 or +1" -- fit --task heavy-tailed --loss hinge --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"
bad "heavy-tailed unknown loss" "loss" -- fit --task heavy-tailed --loss cubic --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"
bad "heavy-tailed needs radius" "domain-radius" -- fit --task heavy-tailed --epsilon 1 "$tmp/heavy.csv"
bad "heavy-tailed rejects --epochs" "does not apply" -- fit --task heavy-tailed --epochs 2 --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"
bad "heavy-tailed moment below 2" "moment_order" -- fit --task heavy-tailed --moment-order 1.5 --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"
# ---- --threads: seeded outputs byte-identical at 1, 2 and 3 threads (issue 17) ----
same_threads() {  # same_threads NAME -- ARGS... (wall-clock diagnostics removed before comparing)
  local name=$1; shift 2
  local t good=1
  for t in 1 2 3; do
    "$DPSTATS" "$@" --threads "$t" >"$tmp/threads$t" 2>"$tmp/err" || good=0
  done
  if [ "$good" -eq 1 ] && /usr/bin/python3 - "$tmp" <<'PYEOF'
import json, sys
def load(t):
    out = []
    for line in open(f"{sys.argv[1]}/threads{t}"):
        j = json.loads(line)
        for k in ("examples_per_second", "train_seconds"):
            j.get("diagnostics", {}).pop(k, None)
        out.append(j)
    return out
a = load(1)
sys.exit(0 if a and a == load(2) and a == load(3) else 1)
PYEOF
  then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL (threads change the output): $name"; head -3 "$tmp/err"; fi
}
/usr/bin/python3 - "$tmp" <<'PYEOF'
import sys, numpy as np
rng = np.random.default_rng(5)
X = rng.standard_t(5, size=(9000, 3))
y = X @ np.array([0.5, -0.2, 0.1]) + rng.standard_t(5, size=9000)
np.savetxt(sys.argv[1] + "/heavy_big.csv", np.column_stack([y, X]), delimiter=",", fmt="%.17g")
lab = rng.integers(0, 3, size=2000)
F = rng.normal(size=(2000, 4)) + lab[:, None]
np.savetxt(sys.argv[1] + "/classify_big.csv", np.column_stack([lab, F]), delimiter=",", fmt="%.17g")
np.save(sys.argv[1] + "/moments_wide.npy", rng.normal(size=(3, 40000)) / 400)
PYEOF
same_threads "heavy-tailed clipped-gd --threads" -- fit --task heavy-tailed --epsilon 1 --domain-radius 2 --seed 4 "$tmp/heavy_big.csv"
same_threads "heavy-tailed lipschitz-extension --threads" -- fit --task heavy-tailed --method lipschitz-extension --epsilon 1 --domain-radius 2 --moment-bound 3 --seed 4 "$tmp/heavy_big.csv"
same_threads "classify --threads" -- fit --task classify --data "$tmp/classify_big.csv" --classes 3 --model mlp --hidden 8 --epsilon 4 --delta 1e-6 --epochs 1 --batch-size 200 --n-public 2000 --seed 4
same_threads "moments d = 40000 diagonal --threads" -- moments --method jme --epsilon 1 --delta 1e-6 --clip 1 --diagonal --seed 4 "$tmp/moments_wide.npy"

# ---- fit --task user-level --items-per-user 10 (issue 7): user id, label, features ----
/usr/bin/python3 - "$tmp/users.csv" <<'PYEOF'
import math, random, sys
random.seed(3)
with open(sys.argv[1], "w") as f:
    for u in range(300):
        for k in range(10):
            a = [random.gauss(0, 0.5) for _ in range(3)]
            p = 1 / (1 + math.exp(-(2 * a[0] - a[1])))
            f.write(",".join(str(v) for v in [u, 1 if random.random() < p else -1] + a) + "\n")
PYEOF
ok "user-level default" "j['method']=='dp-gd-user' and j['privacy']['certified'] and j['diagnostics']['gradient_evaluations']==60000" \
  -- fit --task user-level --items-per-user 10 --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 2 --seed 1 "$tmp/users.csv"
ok "user-level dp-gd-filter" "j['method']=='dp-gd-filter' and j['privacy']['certified'] and j['diagnostics']['gradient_evaluations']==60000 and len(j['ledger'])==4 and j['ledger'][1]['purpose'].startswith('offset check') and j['ledger'][3]['count']==20" \
  -- fit --task user-level --items-per-user 10 --method dp-gd-filter --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 2 --seed 1 "$tmp/users.csv"
ok "user-level accelerated" "j['method']=='accelerated' and j['privacy']['certified'] and j['diagnostics']['gradient_evaluations']==10*50*10 and j['diagnostics']['profile']=='practical'" \
  -- fit --task user-level --items-per-user 10 --method accelerated --steps 10 --users-per-step 50 --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 2 --seed 1 "$tmp/users.csv"
ok "user-level nonsmooth" "j['method']=='nonsmooth' and j['diagnostics']['schedule']['smoothing_radius']==0.01" \
  -- fit --task user-level --items-per-user 10 --method nonsmooth --loss hinge --smoothing-radius 0.01 --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 2 --seed 1 "$tmp/users.csv"
bad "user-level accelerated hinge" "nonsmooth" -- fit --task user-level --items-per-user 10 --method accelerated --loss hinge --epsilon 1 --delta 1e-6 --domain-radius 5 "$tmp/users.csv"
bad "user-level paper Alg 3 refuses" "cannot run at this size" -- fit --task user-level --items-per-user 10 --method accelerated --profile paper --feature-bound 2 --epsilon 1 --delta 1e-6 --domain-radius 5 "$tmp/users.csv"
bad "user-level smoothing radius only for nonsmooth" "does not apply" -- fit --task user-level --items-per-user 10 --method accelerated --smoothing-radius 0.1 --epsilon 1 --delta 1e-6 --domain-radius 5 "$tmp/users.csv"
bad "user-level needs epsilon" "epsilon" -- fit --task user-level --items-per-user 10 --delta 1e-6 --domain-radius 5 "$tmp/users.csv"
bad "user-level needs --items-per-user" "items_per_user is required" -- fit --task user-level --epsilon 1 --delta 1e-6 --domain-radius 5 "$tmp/users.csv"
bad "user-level paper needs feature bound" "feature_bound" -- fit --task user-level --items-per-user 10 --method phased-sgd --profile paper --epsilon 1 --delta 1e-6 --domain-radius 5 "$tmp/users.csv"
bad "user-level profile only where read" "does not apply" -- fit --task user-level --items-per-user 10 --profile paper --epsilon 1 --delta 1e-6 --domain-radius 5 "$tmp/users.csv"
ok "user-level bound estimate without a guarantee abstains (300 users)" "j['status']=='abstained' and not j['estimate'] and 'the private estimate of feature_bound' in j['diagnostics']['abstained'] and j['diagnostics']['bounds']['feature_bound']['estimated'] and j['ledger']==[] and j['privacy']['epsilon']==0" \
  -- fit --task user-level --items-per-user 10 --epsilon 1 --delta 1e-6 --domain-radius 5 --seed 1 "$tmp/users.csv"
ok "user-level biting bound reported" "j['diagnostics']['bounds']['feature_bound']['clipped_users_fraction']>0.5 and len(j['diagnostics']['bounds']['warnings'])==1" \
  -- fit --task user-level --items-per-user 10 --feature-bound 0.1 --epsilon 1 --delta 1e-6 --domain-radius 5 --seed 1 "$tmp/users.csv"
# ---- fits below the centring threshold (issue 15): raw units far from 0 abstain; --no-centre runs ----
/usr/bin/python3 - "$tmp/people.csv" <<'PYEOF'
import random, sys
random.seed(5)
with open(sys.argv[1], "w") as f:
    for i in range(3000):
        age, income = random.uniform(18, 80), random.lognormvariate(10.8, 0.5)
        f.write(f"{0.3 * age + 1e-4 * income + random.gauss(0, 5)},{age},{income}\n")
PYEOF
ok "heavy-tailed raw units far from 0 abstain (offset check)" "j['status']=='abstained' and not j['estimate'] and 'far from 0' in j['diagnostics']['abstained'] and 'Give at least' in j['diagnostics']['abstained'] and j['ledger'][0]['purpose'].startswith('offset check') and j['diagnostics']['stated_error']['radius'] is None" \
  -- fit --task heavy-tailed --epsilon 1 --domain-radius 2 --seed 1 "$tmp/people.csv"
ok "heavy-tailed --no-centre runs in raw units" "j['status']=='ok' and len(j['estimate'])==2 and j['diagnostics']['centring']['reason']=='centre = false' and 'offset_check' not in j['diagnostics']['centring']" \
  -- fit --task heavy-tailed --no-centre --epsilon 1 --domain-radius 2 --seed 1 "$tmp/people.csv"
ok "heavy-tailed --centre with too few records abstains" "j['status']=='abstained' and 'centring' in j['diagnostics']['abstained']" \
  -- fit --task heavy-tailed --centre --epsilon 1 --domain-radius 2 --seed 1 "$tmp/people.csv"
bad "fit --centre and --no-centre exclude each other" "excludes" -- fit --task heavy-tailed --centre --no-centre --epsilon 1 --domain-radius 2 "$tmp/people.csv"
bad "classify rejects --no-centre" "does not apply" -- fit --task classify --no-centre --epsilon 1 --delta 1e-6 "$tmp/people.csv"
ok "user-level --no-centre states no centring" "j['status']=='ok' and j['diagnostics']['centring']['reason']=='centre = false' and j['diagnostics']['stated_error']['radius'] is None" \
  -- fit --task user-level --items-per-user 10 --no-centre --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 2 --seed 1 "$tmp/users.csv"
bad "heavy-tailed old --moment" "moment" -- fit --task heavy-tailed --moment 2 --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"

# ---- mean: the PRIME family (issue 3) ----
/usr/bin/python3 - "$tmp/robust.csv" "$tmp/one.csv" <<'PYEOF'
import random, sys
random.seed(5)
with open(sys.argv[1], "w") as f:
    for i in range(20000):
        s = 1.5 if i < 1000 else 0.0
        f.write(",".join(f"{random.gauss(s, 1):.6f}" for _ in range(4)) + "\n")
with open(sys.argv[2], "w") as f:
    for i in range(20):
        f.write(f"{5.0 if i < 2 else random.gauss(0, 1):.6f}\n")
PYEOF
ok "mean prime-ht" "j['method']=='prime-ht' and j['status']=='ok' and j['diagnostics']['heavy_tailed'] and j['privacy']['certified'] and j['privacy']['epsilon']<=10" \
  -- mean --method prime-ht --alpha 0.05 --epsilon 10 --delta 0.01 --seed 1 "$tmp/robust.csv"
ok "mean prime-boosted" "j['method']=='prime-boosted' and j['status']=='ok' and j['diagnostics']['boost_parts']==7 and len(j['ledger'])==1 and j['privacy']['epsilon']<=10" \
  -- mean --method prime-boosted --boost-zeta 0.1 --alpha 0.05 --epsilon 10 --delta 0.01 --scale 1 --seed 1 "$tmp/robust.csv"
ok "mean filter" "j['method']=='filter' and j['status']=='ok' and j['diagnostics']['T']==5 and sum(x*x for x in j['estimate'])**0.5 < 0.2" \
  -- mean --method filter --alpha 0.05 --T 5 --epsilon 10 --delta 0.01 --seed 1 "$tmp/robust.csv"
ok "mean filter paper" "j['diagnostics']['profile']=='paper' and j['privacy']['epsilon']<=10" \
  -- mean --method filter --profile paper --alpha 0.05 --epsilon 10 --delta 0.01 --seed 1 "$tmp/robust.csv"
ok "mean exp-time d=1" "j['method']=='exp-time' and j['status']=='ok' and j['privacy']['certified'] and len(j['estimate'])==1" \
  -- mean --method exp-time --alpha 0.1 --epsilon 300 --delta 0.01 --scale 1 --seed 1 "$tmp/one.csv"
ok "mean prime estimates its units" "j['status']=='ok' and j['diagnostics']['units']['scale']=='estimated' and sum(x*x for x in j['estimate'])**0.5 < 0.2" \
  -- mean --method prime --alpha 0.05 --epsilon 10 --delta 0.01 --seed 1 "$tmp/robust.csv"
ok "mean with --alpha and no --method is the robust entry" "j['method']=='robust' and j['status']=='ok' and j['diagnostics']['robust']['chosen']=='prime' and sum(x*x for x in j['estimate'])**0.5 < 0.2 and 'radius' in j['diagnostics']['stated_error']" \
  -- mean --alpha 0.05 --epsilon 10 --delta 0.01 --seed 1 "$tmp/robust.csv"
ok "mean without --method or --alpha is bounded (private bounds)" "j['method']=='bounded' and j['diagnostics']['robust'] is False and 'bounds_estimate' in j['diagnostics']" \
  -- mean --epsilon 10 --delta 0.01 --seed 1 "$tmp/robust.csv"
bad "robust estimates its scale" "scale" -- mean --method robust --alpha 0.05 --scale 1 --epsilon 10 --delta 0.01 "$tmp/robust.csv"
ok "mean supplied scale that bites is reported" "'warning' in j['diagnostics']['clipped']" \
  -- mean --method dp-mean --epsilon 10 --delta 0.01 --scale 0.01 --seed 1 "$tmp/robust.csv"
bad "mean --sigma is now --scale" "sigma" -- mean --method dp-mean --sigma 1 --epsilon 1 --delta 0.01 "$tmp/robust.csv"
bad "mean scale per column count" "one per column" -- mean --method dp-mean --scale 1,2 --epsilon 1 --delta 0.01 "$tmp/robust.csv"
bad "mean exp-time needs d = 1" "d = 1" -- mean --method exp-time --alpha 0.1 --epsilon 1 --delta 0.01 "$tmp/robust.csv"
bad "mean filter needs alpha" "alpha" -- mean --method filter --epsilon 1 --delta 0.01 "$tmp/robust.csv"
bad "mean --T only for filter" "does not apply" -- mean --method prime --T 3 --alpha 0.05 --epsilon 1 --delta 0.01 "$tmp/robust.csv"
bad "mean window only for exp-time" "uncertified-window" -- mean --method prime --uncertified-window --alpha 0.05 --epsilon 1 --delta 0.01 "$tmp/robust.csv"

# ---- everyday statistics and one budget file across commands ----
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
g = np.random.default_rng(3)
n = 4000
X = np.column_stack([g.uniform(18, 90, n), g.uniform(2e4, 2e5, n), g.integers(0, 3, n)])
np.savetxt(sys.argv[1] + "/people.csv", X, delimiter=",", header="age,salary,code", comments="")
PY
ok "stat count" "j['statistic']=='count' and abs(j['estimate'][0]-4000)<80 and j['privacy']['neighbouring']=='add-remove' and 'n' not in j" \
  -- stat count --epsilon 1 --delta 0 --seed 1 "$tmp/people.csv"
# issue 30: counting rows reads no numbers (text columns are fine); --columns picks numeric ones
/usr/bin/python3 - "$tmp" <<'PY'
import sys
with open(sys.argv[1] + "/flights.csv", "w") as f:
    f.write("date,origin,delay\n")
    for i in range(3000):
        f.write(f"2024-01-{i % 28 + 1:02d},{'JFK' if i % 3 else 'SFO'},{(i * 37) % 120 - 10}\n")
PY
ok "stat count counts rows of a table with text columns" "abs(j['estimate'][0]-3000)<100" \
  -- stat count --epsilon 1 --delta 0 --seed 1 "$tmp/flights.csv"
bad "stat count on a text column named in --columns" "non-numeric" -- stat count --columns origin --epsilon 1 --delta 0 "$tmp/flights.csv"
bad "epsilon 0 says must be > 0" "must be > 0" -- stat count --epsilon 0 --delta 0 "$tmp/flights.csv"
bad "epsilon 0 in the median" "must be > 0" -- median --epsilon 0 --delta 1e-6 --columns delay "$tmp/flights.csv"
if "$DPSTATS" moments --epsilon 1 --delta 1e-6 --clip 200 --columns delay --seed 1 "$tmp/flights.csv" 2>"$tmp/err" |
     head -1 | /usr/bin/python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['method']=='jme' else 1)"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: moments defaults to jme"; head -3 "$tmp/err"
fi
if "$DPSTATS" moments --epsilon 1 --delta 1e-6 --clip 200 --steps 3000 --columns delay --seed 1 \
     "$tmp/flights.csv" 2>"$tmp/err" | tail -1 >"$tmp/live_last.json" &&
   /usr/bin/python3 -c "import json,sys; j=json.load(open('$tmp/live_last.json')); sys.exit(0 if j['step']==3000 and len(j['first'])==1 else 1)"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: the live stream reads --columns (a date and a text column beside)"; head -3 "$tmp/err"
fi
# issue 30: rows past the live stream's horizon are refused naming --steps (the steps before stand)
"$DPSTATS" moments --epsilon 1 --delta 1e-6 --clip 200 --steps 100 --columns delay --seed 1 \
  "$tmp/flights.csv" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && [ "$(wc -l <"$tmp/out")" -eq 101 ] && grep -q "more rows than --steps = 100" "$tmp/err"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: a live stream longer than --steps names --steps"; head -3 "$tmp/err"
fi
ok "stat mean per-column bounds" "abs(j['estimate'][0]-54)<2 and abs(j['estimate'][1]-1.1e5)<5e3 and j['privacy']['unit']=='record'" \
  -- stat mean --bounds 0,120 --bounds 0,5e5 --bounds 0,3 --epsilon 1 --delta 0 --seed 1 "$tmp/people.csv"
ok "stat sum one bound for all" "len(j['estimate'])==3" \
  -- stat sum --bounds 0,5e5 --epsilon 1 --delta 1e-6 --seed 1 "$tmp/people.csv"
ok "stat variance ledger in units" "j['ledger'][0]['sensitivity']<1 and 'lattice' in j['ledger'][0]" \
  -- stat variance --bounds 0,120 --bounds 0,5e5 --bounds 0,3 --epsilon 1 --delta 0 --seed 1 "$tmp/people.csv"
ok "stat std" "len(j['estimate'])==3" \
  -- stat std --bounds 0,120 --bounds 0,5e5 --bounds 0,3 --epsilon 1 --delta 0 --seed 1 "$tmp/people.csv"
ok "stat quantiles" "len(j['estimate'])==9 and j['estimate'][0]<=j['estimate'][1]<=j['estimate'][2]" \
  -- stat quantiles --quantiles 0.25,0.5,0.75 --bounds 0,120 --bounds 0,5e5 --bounds 0,3 --epsilon 3 --delta 0 --seed 1 "$tmp/people.csv"
ok "stat histogram codes" "sorted(j['estimate'])==['0','1','2']" \
  -- stat histogram --column 2 --epsilon 1 --delta 1e-6 --seed 1 "$tmp/people.csv"
ok "stat histogram public categories" "sorted(j['estimate'])==['0','1','2','7']" \
  -- stat histogram --column 2 --categories 0,1,2,7 --epsilon 1 --delta 0 --seed 1 "$tmp/people.csv"
bad "stat unknown statistic" "must be one of" -- stat median --epsilon 1 --delta 0 "$tmp/people.csv"
bad "stat option does not apply" "does not apply" -- stat count --bounds 0,1 --epsilon 1 --delta 0 "$tmp/people.csv"
bad "stat wrong number of bounds" "one per column" -- stat mean --bounds 0,1 --bounds 0,1 --epsilon 1 --delta 0 "$tmp/people.csv"
ok "stat mean estimates absent bounds" "'bounds_estimate' in j['diagnostics'] and abs(j['estimate'][0]-54)<5" -- stat mean --epsilon 1 --delta 0 --seed 1 "$tmp/people.csv"
ok "budget init" "j['total']['epsilon']==8" -- budget init "$tmp/b.json" --epsilon 8 --delta 1e-5 --accountant zcdp
bad "budget init refuses to overwrite" "cannot create" -- budget init "$tmp/b.json" --epsilon 2
ok "stat mean charged to budget" "j['status']=='ok'" \
  -- stat mean --bounds 0,5e5 --epsilon 1 --delta 0 --budget "$tmp/b.json" --seed 1 "$tmp/people.csv"
ok "stat quantiles charged to budget" "j['status']=='ok'" \
  -- stat quantiles --quantiles 0.5 --bounds 0,5e5 --epsilon 0.5 --delta 1e-6 --budget "$tmp/b.json" --seed 1 "$tmp/people.csv"
ok "budget show" "j['ledger_entries']>=2 and 0<j['spent']['epsilon']<=8" -- budget show "$tmp/b.json"
cp "$tmp/b.json" "$tmp/b_before.json"
bad "budget refuses overspending" "exceed" -- stat mean --bounds 0,5e5 --epsilon 20 --delta 0 --budget "$tmp/b.json" "$tmp/people.csv"
if cmp -s "$tmp/b.json" "$tmp/b_before.json"; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo "FAIL: a refused release changed the budget file"; fi
# concurrent releases through one file: flock serialises them, every spend is recorded
"$DPSTATS" budget init "$tmp/c.json" --epsilon 10 --delta 0 >/dev/null
for i in 1 2 3 4 5 6; do
  "$DPSTATS" stat count --epsilon 1 --delta 0 --budget "$tmp/c.json" "$tmp/people.csv" >/dev/null &
done
wait
ok "concurrent releases all recorded" "j['ledger_entries']==6 and abs(j['spent']['epsilon']-6)<1e-9" -- budget show "$tmp/c.json"

# ---- #16: one budget file across a PRIME mean, a median and a fit (zCDP, approximate and pure
# losses composed by one accountant); an overspending command is refused, nothing printed or
# charged; a later command resumes from the file ----
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
g = np.random.default_rng(7)
n = 20000
X = np.column_stack([g.normal(40, 10, n), g.lognormal(11, 0.4, n)])
X[: n // 50] = (999, 9.9e6)  # 2% corrupted rows
np.savetxt(sys.argv[1] + "/people2.csv", X, delimiter=",", header="age,salary", comments="")
x = g.normal(size=(n, 2))
y = x @ np.array([0.5, -0.3]) + g.standard_t(3, n) * 0.2
np.savetxt(sys.argv[1] + "/reg.csv", np.column_stack([y, x]), delimiter=",")
PY
ok "budget init rdp" "j['accountant']=='rdp'" -- budget init "$tmp/s.json" --epsilon 3 --delta 1e-5 --accountant rdp
ok "prime mean charged to the budget file (zCDP)" "j['status']=='ok' and j['method']=='prime'" \
  -- mean --method prime --alpha 0.05 --epsilon 1 --delta 1e-6 --budget "$tmp/s.json" --seed 1 "$tmp/people2.csv"
ok "median charged to the budget file" "j['status']=='ok' and abs(j['estimate'][0]-60000)<1500 and len(j['ledger'])>0" \
  -- median --epsilon 0.5 --delta 1e-6 --columns salary --budget "$tmp/s.json" --seed 1 "$tmp/people2.csv"
ok "heavy-tailed fit charged to the budget file (pure)" "j['privacy']['delta']==0" \
  -- fit --task heavy-tailed --epsilon 0.5 --domain-radius 2 --budget "$tmp/s.json" --seed 1 "$tmp/reg.csv"
ok "histogram (approximate) charged to the budget file" "j['status']=='ok'" \
  -- stat histogram --columns age --epsilon 0.2 --delta 1e-6 --budget "$tmp/s.json" --seed 1 "$tmp/people2.csv"
ok "the file holds all four releases' ledgers" "j['ledger_entries']>=4 and 0<j['spent']['epsilon']<=3 and {e['loss']['kind'] for e in j['ledger']}=={'pure','zcdp','approximate'}" -- budget show "$tmp/s.json"
ok "budget show names the analysis and is the smallest" "j['spent']['analysis'] in j['analyses'] and j['spent']['epsilon']==min(v for v in j['analyses'].values() if v is not None)" -- budget show "$tmp/s.json"
ok "bounds and moments take --budget too" "j['status']=='ok'" \
  -- bounds --epsilon 0.3 --columns age --budget "$tmp/s.json" --seed 1 "$tmp/people2.csv"
"$DPSTATS" moments --method jme --epsilon 0.1 --delta 1e-7 --clip 100 --columns age --budget "$tmp/s.json" \
  --seed 1 "$tmp/people2.csv" | head -1 >"$tmp/m1.json"
ok "moments charged to the budget file" "any(e['purpose']=='joint first and second moment stream' for e in j['ledger'])" -- budget show "$tmp/s.json"
cp "$tmp/s.json" "$tmp/s_before.json"
bad "an overspending mean is refused" "budget" \
  -- mean --method prime --alpha 0.05 --epsilon 100 --delta 1e-6 --budget "$tmp/s.json" "$tmp/people2.csv"
bad "an overspending median is refused" "budget" \
  -- median --epsilon 100 --delta 1e-6 --budget "$tmp/s.json" "$tmp/people2.csv"
# (epsilon 100: the rdp accountant composes a pure fit's 1000 small steps far below their sum)
bad "an overspending fit is refused" "budget" \
  -- fit --task heavy-tailed --epsilon 100 --domain-radius 2 --budget "$tmp/s.json" "$tmp/reg.csv"
if cmp -s "$tmp/s.json" "$tmp/s_before.json"; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo "FAIL: a refused mean/median/fit changed the budget file"; fi
n_before=$(/usr/bin/python3 -c "import json; print(len(json.load(open('$tmp/s.json'))['ledger']))")
ok "resumed: a small release still fits" "j['status']=='ok'" \
  -- stat count --columns age --epsilon 0.05 --delta 0 --budget "$tmp/s.json" --seed 1 "$tmp/people2.csv"
ok "resumed: the file gained its entry" "len(j['ledger'])==$n_before+1" -- budget show "$tmp/s.json"
bad "weiszfeld takes no budget" "does not apply" -- median --method weiszfeld --budget "$tmp/s.json" "$tmp/people2.csv"
bad "fast-center needs the paper profile" "profile paper" -- median --center fast-center --epsilon 1 --delta 1e-6 --domain-radius 1000 "$tmp/people2.csv"
bad "a non-private classifier takes no budget" "budget" -- fit --task classify --optimizer adam --classes 2 --budget "$tmp/s.json" "$tmp/depts.csv"
bad "a non-private user-level fit takes no budget" "budget" -- fit --task user-level --method non-private --items-per-user 1 --domain-radius 1 --budget "$tmp/s.json" "$tmp/reg.csv"
bad "fit without --task or --users" "--task is required" -- fit --epsilon 1 --delta 1e-6 --domain-radius 1 "$tmp/reg.csv"
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
g = np.random.default_rng(7)
codes = ["JFK", "SFO", "ORD", "ATL", "LAX", "DEN", "SEA", "BOS"]
with open(sys.argv[1] + "/airports.csv", "w") as f:
    f.write("origin,late,distance,hour\n")
    for i in range(4000):
        x1, x2 = g.normal(), g.normal()
        late = 1 if g.uniform() < 1 / (1 + np.exp(-(x1 - x2))) else -1
        f.write(f"{codes[i % 8]}{i % 250},{late},{x1:.4f},{x2:.4f}\n")
PY
ok "fit --users COLUMN: text ids, user-level implied" "j['task']=='user-level' and j['status']=='ok' and j['estimate'][0] > 0.5 and j['estimate'][1] < -0.5" \
  -- fit --users origin --items-per-user 4 --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 5 --seed 1 "$tmp/airports.csv"
bad "--users applies to user-level only" "does not apply" \
  -- fit --task heavy-tailed --users origin --epsilon 1 --domain-radius 2 "$tmp/airports.csv"
bad "text ids without --users are refused, naming --users" "name their column with --users" -- fit --task user-level --items-per-user 4 --epsilon 1 --delta 1e-6 --domain-radius 5 "$tmp/airports.csv"

# issue 30: --columns in every command that reads a table, beside text columns (a release or a
# named abstention, never "a cell is not a number")
for args in "mean --epsilon 1 --delta 0 --columns distance,hour" \
            "mean --alpha 0.05 --epsilon 1 --delta 1e-6 --columns distance,hour" \
            "median --epsilon 1 --delta 1e-6 --columns distance,hour" \
            "bounds --epsilon 1 --columns distance" \
            "stat quantiles --quantiles 0.5 --epsilon 1 --delta 0 --columns hour" \
            "fit --task heavy-tailed --epsilon 1 --domain-radius 2 --columns late,distance,hour"; do
  # shellcheck disable=SC2086
  ok "--columns: $args" "j['status'] in ('ok', 'abstained')" -- $args --seed 1 "$tmp/airports.csv"
done

# ---- #16: a histogram of a text column (quoted, with commas), picked by name ----
printf 'id,dept,age\np1,"Legal, Compliance",30\np2,Sales,41\np3,"Legal, Compliance",\n\n' >"$tmp/depts.csv"
ok "histogram of a quoted text column, public categories" "sorted(j['estimate'])==['Legal, Compliance','Sales'] and 'n' not in j" \
  -- stat histogram --columns dept --category Sales --category "Legal, Compliance" --epsilon 1 --delta 0 --seed 1 "$tmp/depts.csv"
bad "a histogram takes one column" "one column" -- stat histogram --columns dept,id --epsilon 1 --delta 0 "$tmp/depts.csv"
bad "a missing category cell is an error" "missing value" -- stat histogram --columns age --epsilon 1 --delta 1e-6 "$tmp/depts.csv"
ok "--drop-missing drops it" "j['status']=='ok' and 'n' not in j" -- stat histogram --columns age --drop-missing --epsilon 1 --delta 1e-6 --seed 1 "$tmp/depts.csv"

# ---- fit --task heavy-tailed: inner solver and final clip rule (issue 8 gaps 1, 2) ----
ok "heavy-tailed private final clip" "len(j['ledger'])==1 and j['privacy']['epsilon']==1 and j['diagnostics']['phases'][1]['clip_rule']['rule']=='private-quantile'" \
  -- fit --task heavy-tailed --method lipschitz-extension --epsilon 1 --domain-radius 2 --moment-bound 3 --seed 1 "$tmp/heavy.csv"
ok "heavy-tailed public clip rule" "len(j['ledger'])==1 and j['diagnostics']['phases'][1]['clip_rule']['rule']=='public'" \
  -- fit --task heavy-tailed --method lipschitz-extension --final-clip-rule public --epsilon 1 --domain-radius 2 --moment-bound 3 --seed 1 "$tmp/heavy.csv"
ok "heavy-tailed inner alg 4" "j['status']=='ok' and j['diagnostics']['inner']=='double-output-perturbation' and all(abs(w-0.4)<0.1 for w in j['estimate'])" \
  -- fit --task heavy-tailed --method lipschitz-extension --inner double-output-perturbation --epsilon 1 --domain-radius 2 --moment-bound 3 --seed 1 "$tmp/heavy.csv"
bad "heavy-tailed unknown inner" "inner" -- fit --task heavy-tailed --method lipschitz-extension --inner newton --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"
bad "heavy-tailed inner only for lipschitz-extension" "does not apply" -- fit --task heavy-tailed --method clipped-gd --inner glm-one-stage --steps 4 --epsilon 1 --domain-radius 2 "$tmp/heavy.csv"

# ---- bounds: private location, scale and clipping bounds with no public range (issue 15) ----
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(15)
n = 10000
X = np.column_stack([rng.normal(40, 12, n), rng.normal(65000, 20000, n)])
X[:500] = 9.9e6  # 5% corrupted rows
np.savetxt(sys.argv[1] + "/agesalary.csv", X, delimiter=",", header="age,salary", comments="")
PY
ok "bounds age salary" "j['command']=='bounds' and j['columns']==['age','salary'] and 6<j['estimate']['scale'][0]<24 and 10000<j['estimate']['scale'][1]<40000 and j['estimate']['lo'][1]<65000<j['estimate']['hi'][1] and j['privacy']['epsilon']<=0.5 and j['privacy']['delta']==0 and len(j['ledger'])==3 and j['diagnostics']['scale']['columns'][0]['status']=='ok'" \
  -- bounds --epsilon 0.5 --seed 1 "$tmp/agesalary.csv"
ok "bounds norm quantile zcdp" "j['estimate']['norm_quantile']>0 and j['privacy']['rho'] is not None and j['privacy']['delta']==1e-6 and len(j['ledger'])==4" \
  -- bounds --epsilon 2 --delta 1e-6 --norm-quantile 0.9 --seed 2 "$tmp/data.npy"
ok "bounds coverage clip bounds (10% tails of a column with 5% rows at 9.9e6)" "len(j['estimate']['clip_lo'])==2 and 20<j['estimate']['clip_lo'][0]<30 and 50<j['estimate']['clip_hi'][0]<70 and 85000<j['estimate']['clip_hi'][1]<120000 and j['privacy']['epsilon']<=1 and any(e['purpose'].startswith('clip bounds') for e in j['ledger']) and 'clip_bounds' in j['diagnostics']" \
  -- bounds --epsilon 1 --coverage 0.2 --seed 1 "$tmp/agesalary.csv"
bad "bounds bad coverage" "coverage" -- bounds --epsilon 1 --coverage 0.7 "$tmp/good.csv"
bad "bounds shares over one" "norm_share + clip_share" -- bounds --epsilon 1 --coverage 0.02 --clip-share 0.9 --norm-quantile 0.5 "$tmp/good.csv"
bad "bounds no epsilon" "epsilon" -- bounds "$tmp/good.csv"
bad "bounds bad widen" "widen must be in" -- bounds --epsilon 1 --widen -2 "$tmp/good.csv"
bad "bounds bad norm quantile" "norm_quantile must be in" -- bounds --epsilon 1 --norm-quantile 1.5 "$tmp/good.csv"
bad "bounds nan" "NaN" -- bounds --epsilon 1 "$tmp/nan.csv"

# ---- median: the seam, the registry and the domain radius (issues 14, 15) ----
/usr/bin/python3 - "$tmp/median.csv" <<'PYEOF'
import random, sys
random.seed(3)
rows = ["999,9900000\n" if i % 20 == 0 else  # 5% corrupted rows
        f"{random.gauss(41, 12):.3f},{random.gauss(52000, 18000):.2f}\n" for i in range(20000)]
for path, n in ((sys.argv[1], 3000), (sys.argv[1].replace(".csv", "_big.csv"), 20000)):
    with open(path, "w") as f:
        f.write("age,salary\n" + "".join(rows[:n]))
with open(sys.argv[1].replace(".csv", "_small.csv"), "w") as f:
    f.write("age,salary\n" + "".join(rows[:300]))
PYEOF
# Seeded, so the outcome is fixed: 20000 rows estimate the radius and release near the clean
# median; 3000 rows need a planned share above 0.1 (docs/proofs/scale.md §9); 300 rows are too
# few at epsilon 1 for any share up to 0.5 (a public check: the rank error against n), decided
# before anything is charged.
ok "median default estimates domain radius" "j['command']=='median' and j['status']=='ok' and j['diagnostics']['domain_radius_source']=='estimated' and abs(j['estimate'][0]-41)<10 and abs(j['estimate'][1]-52000)<3000 and j['privacy']['epsilon']<=1" \
  -- median --epsilon 1 --delta 1e-6 --seed 1 "$tmp/median_big.csv"
ok "median default plans its share on 3000 rows" "j['status']=='ok' and j['diagnostics']['scale_share']['source']=='planned' and j['diagnostics']['scale_share']['value']>0.1 and abs(j['estimate'][1]-52000)<3000" \
  -- median --epsilon 1 --delta 1e-6 --seed 1 "$tmp/median.csv"
ok "median default abstains on too few rows before charging, saying why" "j['status']=='abstained' and not j['estimate'] and 'rank error' in j['diagnostics']['abstained'] and 'rows at this epsilon' in j['diagnostics']['abstained'] and j['ledger']==[]" \
  -- median --epsilon 1 --delta 1e-6 --seed 1 "$tmp/median_small.csv"
ok "median given radius checked" "j['status']=='ok' and j['diagnostics']['domain_radius_source']=='given' and 'domain_radius_warning' in j['diagnostics'] and j['diagnostics']['domain_radius']==100" \
  -- median --epsilon 1 --delta 1e-6 --domain-radius 100 --seed 1 "$tmp/median.csv"
ok "median paper profile" "j['status']=='ok' and j['privacy']['rho'] is None and j['diagnostics']['profile']=='paper'" \
  -- median --profile paper --epsilon 2 --delta 1e-6 --domain-radius 1e6 --bound-check-share 0 --seed 1 "$tmp/median.csv"
ok "median weiszfeld" "j['private']==False and len(j['estimate'])==2" -- median --method weiszfeld "$tmp/median.csv"
# Issue 17: --threads runs the data passes on several threads; a seeded release is the same.
same_for_threads() {  # same_for_threads NAME ARGS... : the output at --threads 1, 2 and 3 is identical
  local name=$1; shift
  "$DPSTATS" "$@" --threads 1 >"$tmp/t1" 2>/dev/null && "$DPSTATS" "$@" --threads 2 >"$tmp/t2" 2>/dev/null &&
    "$DPSTATS" "$@" --threads 3 >"$tmp/t3" 2>/dev/null
  if [ $? -eq 0 ] && [ -s "$tmp/t1" ] && cmp -s "$tmp/t1" "$tmp/t2" && cmp -s "$tmp/t1" "$tmp/t3"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL (expected the same output for 1, 2, 3 threads): $name"
  fi
}
same_for_threads "median --threads" median --epsilon 1 --delta 1e-6 --domain-radius 100 --seed 3 "$tmp/median.csv"
same_for_threads "median paper --threads" median --profile paper --epsilon 2 --delta 1e-6 --domain-radius 1e6 --seed 3 "$tmp/median.csv"
same_for_threads "user-level --threads" fit --task user-level --items-per-user 10 --epsilon 1 --delta 1e-6 --domain-radius 5 --feature-bound 2 --seed 1 "$tmp/users.csv"
bad "median --threads 0" "threads" -- median --epsilon 1 --delta 1e-6 --threads 0 "$tmp/median.csv"
bad "median needs epsilon" "epsilon" -- median --delta 1e-6 "$tmp/median.csv"
bad "median needs delta" "delta" -- median --epsilon 1 "$tmp/median.csv"
bad "median radius renamed" "radius" -- median --epsilon 1 --delta 1e-6 --radius 5 "$tmp/median.csv"
bad "median profile not for hsu24" "does not apply" -- median --method hsu24 --profile paper --epsilon 1 --delta 1e-6 "$tmp/median.csv"
bad "median weiszfeld takes no epsilon" "does not apply" -- median --method weiszfeld --epsilon 1 "$tmp/median.csv"
bad "median bad scale share" "scale_share" -- median --epsilon 1 --delta 1e-6 --scale-share 0.9 "$tmp/median.csv"

# ---- moments: the ledger once on the first line, then one line per step; no silent clip ----
if "$DPSTATS" moments --method jme --epsilon 1 --delta 1e-6 --clip 10 --seed 1 "$tmp/good.csv" >"$tmp/mom" 2>"$tmp/err" &&
   /usr/bin/python3 -c "
import json
lines = [json.loads(l) for l in open('$tmp/mom')]
head, steps = lines[0], lines[1:]
assert head['ledger'] and abs(head['privacy']['epsilon'] - 1) < 1e-9 and head['n'] == 3 and head['diagnostics']['clip'] == 10
assert [s['step'] for s in steps] == [1, 2, 3] and all('ledger' not in s and len(s['first']) == 2 for s in steps)
"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: moments JSON lines"; head -3 "$tmp/mom" "$tmp/err"; fi
if (cat "$tmp/noheader.csv") | "$DPSTATS" moments --method pp --epsilon 1 --delta 1e-6 --clip 10 --steps 2 --seed 1 - >"$tmp/mom" 2>"$tmp/err" &&
   [ "$(wc -l <"$tmp/mom")" -eq 3 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: moments --steps live stream"; cat "$tmp/err"; fi
bad "moments live stream too short to learn a clip" "clip is required" -- moments --method jme --epsilon 1 --delta 1e-6 --steps 3 "$tmp/good.csv"
# A live stream without --clip learns it per block (docs/proofs/moments.md §4.2): rows in x1000
# units from a pipe, every line states the clip the next row runs at (0 in the held first block).
/usr/bin/python3 -c "
import random
random.seed(1)
for _ in range(1300): print(f'{random.gauss(3, 1) * 1000},{random.gauss(6, 2) * 1000}')" >"$tmp/live.csv"
if cat "$tmp/live.csv" | "$DPSTATS" moments --method jme --workload average --epsilon 4 --delta 1e-6 --steps 1300 --seed 1 - >"$tmp/mom" 2>"$tmp/err" &&
   /usr/bin/python3 -c "
import json
lines = [json.loads(l) for l in open('$tmp/mom')]
head, steps = lines[0], lines[1:]
assert len(steps) == 1300 and len(head['ledger']) == 3 and 'adaptive_clip' in head['diagnostics']
assert steps[0]['clip'] == 0 and steps[-1]['clip'] > 1000
assert abs(steps[-1]['first'][0] - 3000) < 600 and abs(steps[-1]['first'][1] - 6000) < 1200
"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: moments live stream, adaptive clip"; head -c 600 "$tmp/mom"; cat "$tmp/err"; fi
# A file without --clip: the clip is estimated privately (here 3 rows: too few, it abstains).
if "$DPSTATS" moments --method jme --epsilon 1 --delta 1e-6 --seed 1 "$tmp/good.csv" >"$tmp/mom" 2>"$tmp/err" &&
   /usr/bin/python3 -c "
import json
lines = [json.loads(l) for l in open('$tmp/mom')]
assert len(lines) == 1 and lines[0]['status'] == 'abstained' and 'quantile of the norms' in lines[0]['diagnostics']['abstained']
assert lines[0]['ledger'] == []  # n is public: the quantile's rank error rules it out before any charge
"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: moments abstains on a tiny file"; head -3 "$tmp/mom" "$tmp/err"; fi
/usr/bin/python3 -c "
import random
random.seed(5)
print('age,salary')
for i in range(2000):
    print(f'{random.gauss(40, 12):.1f},{random.lognormvariate(10.8, 0.5):.0f}' if i % 20 else '999,9900000')
" >"$tmp/salary.csv"
if "$DPSTATS" moments --method jme --workload average --epsilon 1 --delta 1e-6 --seed 1 "$tmp/salary.csv" >"$tmp/mom" 2>"$tmp/err" &&
   /usr/bin/python3 -c "
import json
lines = [json.loads(l) for l in open('$tmp/mom')]
head = lines[0]
assert head['status'] == 'ok' and len(lines) == 2001 and len(head['ledger']) == 3  # quantile, count, stream
assert 1e4 < head['diagnostics']['clip'] < 1e6 and 'clip_estimate' in head['diagnostics']
"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: moments estimates the clip"; head -c 600 "$tmp/mom"; cat "$tmp/err"; fi
if "$DPSTATS" moments --method jme --workload average --epsilon 1 --delta 1e-6 --clip 1000 --seed 1 "$tmp/salary.csv" >"$tmp/mom" 2>"$tmp/err" &&
   head -1 "$tmp/mom" | /usr/bin/python3 -c "
import json, sys
j = json.load(sys.stdin)
assert 'bites' in j['diagnostics']['warning'] and 'clip_check' in j['diagnostics']
"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: moments supplied clip that bites"; head -c 600 "$tmp/mom"; cat "$tmp/err"; fi
bad "moments bad clip check share" "clip_check_share" -- moments --method jme --epsilon 1 --delta 1e-6 --clip 1 --clip-check-share 0.9 "$tmp/good.csv"
bad "moments without epsilon" "epsilon" -- moments --method jme --clip 1 --delta 1e-6 "$tmp/good.csv"
bad "moments unknown method" "method" -- moments --method mean --clip 1 --epsilon 1 --delta 1e-6 "$tmp/good.csv"
bad "moments lambda for jme" "lambda" -- moments --method jme --lambda 2 --clip 1 --epsilon 1 --delta 1e-6 "$tmp/good.csv"

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
