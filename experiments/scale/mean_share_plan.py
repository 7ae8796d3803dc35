# The mean defaults on user-like tables (docs/results/real-data.md "Scale shares planned"): ok share,
# stated-error coverage, abstentions that charged nothing, and the planned share. Run:
# /usr/bin/python3 experiments/scale/mean_share_plan.py build/python [dp-mean,bounded]
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import dpstats
methods = sys.argv[2].split(",") if len(sys.argv) > 2 else ["dp-mean", "bounded"]
g = np.random.default_rng(11)
def tables():
    yield "normal 2000x3", g.normal(0, 1, (2000, 3))
    yield "ratings 3000x1", np.clip(np.round(g.normal(7, 2, (3000, 1))), 1, 10)
    m = np.where(g.uniform(size=(3000,)) < 0.6, 0.0, np.round(np.exp(g.normal(4, 1.2, 3000)), 2)); yield "zero-inflated money 3000", m[:, None]
    yield "lognormal delays 5000", np.exp(g.normal(2, 1, (5000, 1)))
    p = np.column_stack([g.normal(44, 5, 342), g.normal(17, 2, 342), g.normal(200, 14, 342), g.normal(4200, 800, 342)]); yield "penguins 342x4", p
    yield "near 1e9 1000x2", 1e9 + g.normal(0, 1000, (1000, 2))
    yield "survey 300x5", np.round(g.uniform(1, 5, (300, 5)))
tot = {}
for name, X in tables():
    truth = X.mean(axis=0); sd = X.std(axis=0)
    for eps in (0.3, 1.0):
        row = []
        for method in methods:
            ok = within = upfront = 0; errs = []; shares = set()
            for s in range(1, 6):
                r = dpstats.mean(X, method=method, epsilon=eps, delta=1e-6, seed=s)
                sh = r.diagnostics.get("scale_share", {})
                shares.add(round(sh.get("value", float("nan")), 2))
                if r.status == "ok":
                    ok += 1
                    e = np.abs(np.asarray(r.estimate) - truth)
                    errs.append(np.max(e / sd))
                    within += bool(np.all(e <= np.asarray(r.diagnostics["stated_error"]["radius"])))
                elif not r.ledger:
                    upfront += 1
            t = tot.setdefault(method, [0, 0, 0, 0]); t[0] += ok; t[1] += within; t[2] += upfront; t[3] += 5
            row.append(f"{method}: ok {ok}/5 (in stated {within}) upfront {upfront} worst {max(errs) if errs else float('nan'):.3g} sd share {sorted(shares)}")
        print(f"{name:26} eps {eps}: " + " | ".join(row))
for m, t in tot.items():
    print(f"{m}: ok {t[0]}/{t[3]}, within stated error {t[1]}/{t[0]}, abstained before charging {t[2]}")
