#!/usr/bin/env python3
"""Issue 27's findings 1-5 and 7, reproduced through the tool with the issue's exact commands
(epsilon, delta, flags) on generated equivalents of its tables, over several seeds.

Every run must end as the issue's "Done when" asks: `ok` within its stated error (or, for a fit,
the documented tolerance of tests/sweep/fits.cpp), or an abstention that names the right cause.
Finding 6 (the 60,000-image Fashion-MNIST table) is not reproduced here (no such table offline).
Prints one line per run and a table per finding (the report in docs/results/real-data.md).
Usage: findings.py DPSTATS [--seeds K] [--only F1,F4,...]; exit 1 on any WRONG outcome."""
import json, math, os, subprocess, sys, tempfile

import numpy as np

DPSTATS = sys.argv[1]
SEEDS = int(sys.argv[sys.argv.index("--seeds") + 1]) if "--seeds" in sys.argv else 3
ONLY = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
rows = []  # (finding, command, seed, outcome, detail)


def run(args):
    p = subprocess.run([DPSTATS] + args, capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.startswith("{"):
        return None, p.stderr.strip()
    return json.loads(p.stdout.splitlines()[0]), p.stderr


def record(finding, args, seed, outcome, detail=""):
    cmd = " ".join(a if not a.startswith("/") else os.path.basename(a) for a in args)
    rows.append((finding, cmd, seed, outcome, detail))
    print(f"{finding:4} seed {seed}: {outcome:8} {cmd} :: {detail}"[:400], flush=True)


def abstained(j):
    return j.get("status") != "ok"


def reason(j):
    return j.get("diagnostics", {}).get("abstained", "") or ""


def write_csv(path, header, X):
    np.savetxt(path, X, delimiter=",", header=",".join(header), comments="", fmt="%.10g")
    return path


# ---- judges: each returns (outcome, detail); outcome in ok, abstain, WRONG ----

def judge_abstain(j, causes):
    r = reason(j)
    if not any(c in r for c in causes):
        return "WRONG", f"abstained without naming {causes}: {r[:200]}"
    if j.get("diagnostics", {}).get("fallback"):
        return "WRONG", "diagnostics.fallback although nothing was released"
    return "abstain", r[:160]


def judge_mean_stat(j, x, causes, stat="mean"):
    """stat mean/sum: within the stated radius of the column winsorised at the stated range, and
    a warning when more rows than the stated threshold lie beyond the estimated bounds."""
    if abstained(j):
        return judge_abstain(j, causes)
    d = j["diagnostics"]
    s = d["stated_error"]
    lo, hi = s.get("winsorised_at", [[-math.inf, math.inf]])[0]
    w = np.clip(x, lo, hi)
    truth = w.mean() if stat == "mean" else w.sum()
    est, radius = j["estimate"][0], s["radius"][0]
    if not abs(est - truth) <= radius:
        return "WRONG", f"estimate {est:.6g} truth(winsorised) {truth:.6g} radius {radius:.3g}"
    if "bounds" in d and "bounds_estimate" in d:
        blo, bhi = d["bounds"][0]
        outside = np.mean((x < blo) | (x > bhi))
        if outside > s.get("clipped_fraction_threshold", 0.1) and "warning" not in d:
            return "WRONG", f"{outside:.1%} of rows beyond the estimated bounds, no warning"
    raw = x.mean() if stat == "mean" else x.sum()
    return "ok", f"estimate {est:.6g} truth {raw:.6g} radius {radius:.3g}"


def judge_quantiles(j, x, qs, causes):
    """Each estimate between the (q - t/n)- and (q + (t+1)/n)-quantiles, widened by h."""
    if abstained(j):
        return judge_abstain(j, causes)
    s = j["diagnostics"]["stated_error"]
    xs, n = np.sort(x), len(x)
    details = []
    for c, q in enumerate(qs):
        t, h, est = s["rank_error"][c], s["resolution"][c], j["estimate"][c]
        lo = -math.inf if q * n - t < 1 else xs[int(math.ceil(q * n - t)) - 1] - h
        hi = math.inf if math.floor(q * n + t) + 1 > n else xs[int(math.floor(q * n + t))] + h
        if not lo <= est <= hi:
            return "WRONG", f"q {q}: estimate {est:.6g} outside [{lo:.6g}, {hi:.6g}] (t {t:.3g})"
        details.append(f"q{q}={est:.4g} (truth {np.quantile(x, q):.4g}, t/n {t / n:.3f})")
    return "ok", "; ".join(details)


# ---- the findings ----

def f1(tmp):
    """Case 1: 3,000 ratings 1..10, sd about 1.2; the mean and the median at small epsilon."""
    for seed in range(1, SEEDS + 1):
        g = np.random.default_rng(100 + seed)
        x = np.clip(np.round(g.normal(6.5, 1.2, 3000)), 1, 10)
        path = write_csv(f"{tmp}/ratings.csv", ["rating"], x[:, None])
        for eps in ("0.3", "1"):
            args = ["stat", "mean", "--epsilon", eps, "--delta", "0", "--columns", "rating",
                    "--drop-missing", "--seed", str(seed), path]
            j, err = run(args)
            record("F1", args, seed, *(judge_mean_stat(j, x, ["bounds"]) if j else ("WRONG", err)))
        for eps in ("0.3", "0.5", "1"):
            args = ["stat", "quantiles", "--quantiles", "0.5", "--epsilon", eps, "--delta", "0",
                    "--seed", str(seed), path]
            j, err = run(args)
            record("F1", args, seed, *(judge_quantiles(j, x, [0.5], ["rank", "rows"]) if j else ("WRONG", err)))


def f2(tmp):
    """Case 2: 10,000 rows, 98% exactly 0, the rest up to millions."""
    for seed in range(1, SEEDS + 1):
        g = np.random.default_rng(200 + seed)
        x = np.where(g.random(10000) < 0.02, np.round(np.exp(g.normal(np.log(2e4), 1.5, 10000)), 2), 0.0)
        path = write_csv(f"{tmp}/money.csv", ["amount"], x[:, None])
        zero_cause = ["most values", "most rows", "equal", "zero", "degenerate", "MAD"]
        for stat in ("sum", "mean"):
            args = ["stat", stat, "--epsilon", "1", "--delta", "0", "--seed", str(seed), path]
            j, err = run(args)
            record("F2", args, seed, *(judge_mean_stat(j, x, zero_cause, stat) if j else ("WRONG", err)))
        for method in ("bounded", "dp-mean"):
            args = ["mean", "--method", method, "--epsilon", "1", "--delta", "1e-6", "--seed", str(seed), path]
            j, err = run(args)
            if j is None:
                record("F2", args, seed, "WRONG", err)
            elif abstained(j):
                record("F2", args, seed, *judge_abstain(j, zero_cause))
            else:
                s = j["diagnostics"]["stated_error"]
                e = abs(j["estimate"][0] - x.mean())
                record("F2", args, seed, "ok" if e <= s["radius"][0] else "WRONG",
                       f"estimate {j['estimate'][0]:.6g} truth {x.mean():.6g} radius {s['radius'][0]:.3g}")


def f3(tmp):
    """Case 3: 200,000 rows of a right-skewed column (lognormal: its 0.99 quantile ~4 sd above
    the mean); the upper quantiles and the mean without public bounds."""
    for seed in range(1, SEEDS + 1):
        g = np.random.default_rng(300 + seed)
        x = np.round(np.exp(g.normal(0, 1, 200000)), 4)
        path = write_csv(f"{tmp}/skewed.csv", ["value"], x[:, None])
        args = ["stat", "quantiles", "--quantiles", "0.95,0.99", "--epsilon", "0.5", "--delta", "0",
                "--seed", str(seed), path]
        j, err = run(args)
        out = judge_quantiles(j, x, [0.95, 0.99], ["range", "rows"]) if j else ("WRONG", err)
        if out[0] == "ok" and j["estimate"][0] == j["estimate"][1]:
            out = ("WRONG", "the same capped value for q 0.95 and 0.99")
        record("F3", args, seed, *out)
        args = ["stat", "mean", "--epsilon", "0.5", "--delta", "0", "--seed", str(seed), path]
        j, err = run(args)
        record("F3", args, seed, *(judge_mean_stat(j, x, ["bounds"]) if j else ("WRONG", err)))


def penguins(g, n=342):
    mean = [[38.8, 18.3, 190, 3700], [48.8, 18.4, 196, 3733], [47.5, 15.0, 217, 5076]]
    sd = [[2.7, 1.2, 6.5, 460], [3.3, 1.1, 7.1, 384], [3.1, 1.0, 6.5, 504]]
    y = np.array([0 if i < 152 else (1 if i < 220 else 2) for i in range(n)])
    X = np.round(10 * g.normal(np.array(mean)[y], np.array(sd)[y])) / 10
    return np.c_[y, X]


def f4(tmp):
    """Case 4: ~350 rows, 4 measurements in mm and g, 3 well-separated classes: an ok release
    reaches accuracy >= 0.8 on the table (a plain logistic regression reaches 0.99); an abstention
    charges nothing and names the rows the per-column standardisation needs, or feature_scale.
    (At 342 rows the per-column plan's 12 selections pass at no share up to 0.5, even at epsilon 8;
    one global scale passes at epsilon 3 and 8 but trains the majority class on mm and g.)"""
    for seed in range(1, SEEDS + 1):
        path = f"{tmp}/penguins.csv"
        np.savetxt(path, penguins(np.random.default_rng(400 + seed)), delimiter=",", fmt="%.10g")
        # The same with an explicit --scale-share 0.5 (issue 27, left after integ-trial): it had
        # bought one global scale for mm and g and released the majority class (0.44) `ok`; a given
        # share is now the per-column plan's only, which abstains here naming the rows it needs.
        for eps, share in (("1", None), ("3", None), ("8", None), ("3", "0.5"), ("8", "0.5")):
            args = ["fit", "--task", "classify", "--classes", "3", "--epsilon", eps, "--delta", "1e-6",
                    "--n-public", "342", "--test", path, "--seed", str(seed), path]
            if share:
                args[-1:-1] = ["--scale-share", share]
            j, err = run(args)
            if j is None:
                out = ("WRONG", err)
            elif abstained(j):
                out = judge_abstain(j, ["standardising each column", "standardises each column",
                                        "feature_scale"])
                if j["ledger"]:
                    out = ("WRONG", "abstained after charging: " + out[1])
            else:
                acc = j["diagnostics"]["test_accuracy"][-1]
                out = ("ok" if acc >= 0.8 else "WRONG",
                       f"accuracy {acc:.3f}, share {j['diagnostics'].get('scale_share', {}).get('value')}")
            record("F4", args, seed, *out)
        # 9 such tables (3,078 rows) at epsilon 3: the per-column plan passes at a planned share
        # (0.11); at the old fixed 0.05 it did not, and one global scale trained the majority class.
        big = f"{tmp}/penguins3k.csv"
        np.savetxt(big, np.concatenate([penguins(np.random.default_rng(40 * seed + k)) for k in range(9)]),
                   delimiter=",", fmt="%.10g")
        args = ["fit", "--task", "classify", "--classes", "3", "--epsilon", "3", "--delta", "1e-6",
                "--n-public", "3078", "--test", big, "--seed", str(seed), big]
        j, err = run(args)
        if j is None or abstained(j):
            out = ("WRONG", err if j is None else "abstained: " + reason(j)[:150])
        else:
            acc = j["diagnostics"]["test_accuracy"][-1]
            out = ("ok" if acc >= 0.8 else "WRONG", f"accuracy {acc:.3f}, "
                   f"{j['diagnostics'].get('feature_scale_source')}, share {j['diagnostics'].get('scale_share', {}).get('value')}")
        record("F4", args, seed, *out)


def users_table(g):
    rows = []
    for u in range(200):
        habit = g.normal()
        for _ in range(4 + g.integers(13)):
            s = max(0.0, round(g.normal(5 + 2 * habit, 2)))
            m = math.exp(g.normal(math.log(20) + 0.3 * habit, 0.5))
            logit = 0.6 * (s - 5) + 0.08 * (m - 22)
            rows.append([1000 + 7 * u, 1.0 if g.random() < 1 / (1 + math.exp(-logit)) else -1.0, s, m])
    return np.array(rows)


def attacked_table(g, n=4000):
    centre, unit = np.array([120, 2500, 30]), np.array([8, 400, 2])
    X = centre + unit * g.standard_t(3, size=(n, 3))
    clean = np.ones(n, bool)
    clean[10::20] = False
    X[~clean] = centre + 12 * math.sqrt(3) * unit
    return X, clean


def f5(tmp):
    """Case 5: the user-level fit given a bound above every row's norm (intercept, loss, no false
    clip warning); PRIME's heavy-tail advice and the robust entry on an attacked table."""
    for seed in range(1, SEEDS + 1):
        T = users_table(np.random.default_rng(500 + seed))
        path = f"{tmp}/users.csv"
        np.savetxt(path, T, delimiter=",", fmt="%.10g")
        bound = math.ceil(np.linalg.norm(T[:, 2:], axis=1).max())
        m = math.ceil(len(T) / 200)
        args = ["fit", "--task", "user-level", "--domain-radius", "10", "--epsilon", "1", "--delta", "1e-6",
                "--items-per-user", str(m), "--feature-bound", str(bound), "--seed", str(seed), path]
        j, err = run(args)
        if j is None:
            out = ("WRONG", err)
        elif abstained(j):
            out = judge_abstain(j, ["rows", "users", "epsilon"])
        else:
            d, w = j["diagnostics"], np.array(j["estimate"])
            b = w[-1] if d.get("intercept") else 0.0
            loss = np.mean(np.log1p(np.exp(-T[:, 1] * (T[:, 2:] @ w[:2] + b))))
            warn = d.get("warning", "")
            if not d.get("intercept") and "intercept" not in json.dumps(d):
                out = ("WRONG", "no intercept and no reason")
            elif "clip" in warn and bound >= np.linalg.norm(T[:, 2:], axis=1).max():
                out = ("WRONG", f"clip warning with a bound above every norm: {warn[:100]}")
            else:
                out = ("ok" if loss <= math.log(2) else "WRONG", f"log loss {loss:.3f} intercept {d.get('intercept')}")
        record("F5", args, seed, *out)

        X, clean = attacked_table(np.random.default_rng(550 + seed))
        apath = write_csv(f"{tmp}/attacked.csv", ["length_mm", "mass_g", "time_s"], X)
        truth, sd = X[clean].mean(0), X[clean].std(0)
        for method in (["--method", "prime"], []):
            args = ["mean"] + method + ["--alpha", "0.05", "--epsilon", "10", "--delta", "0.01",
                                        "--seed", str(seed), apath]
            j, err = run(args)
            if j is None:
                out = ("WRONG", err)
            elif abstained(j):
                r = reason(j)
                bad_advice = any(f"use {m}" in r for m in ("dp-mean", "bounded"))
                out = ("WRONG", "advice names a non-robust method: " + r[:150]) if bad_advice or not (
                    "prime-ht" in r or "robust" in r) else judge_abstain(j, ["prime-ht", "robust"])
            else:
                e = np.abs(np.array(j["estimate"]) - truth)
                radius = np.array(j["diagnostics"]["stated_error"]["radius"])
                out = ("ok" if np.all(e <= radius) else "WRONG",
                       f"{j['method']}/{j['diagnostics'].get('robust', {}).get('chosen') if isinstance(j['diagnostics'].get('robust'), dict) else ''}: worst error {np.max(e / sd):.3f} sd")
            record("F5", args, seed, *out)


def f7(tmp):
    """Case 7: `mean --method prime` without --scale at n ~1,000 and 3,000: abstain before
    charging when the plan says so, the reason prints the given alpha, no fallback claimed."""
    for seed in range(1, SEEDS + 1):
        g = np.random.default_rng(700 + seed)
        for n in (1000, 3000):
            X = g.normal([250, 4200, 38], [20, 450, 9], size=(n, 3))
            path = write_csv(f"{tmp}/mid.csv", ["length_mm", "mass_g", "age_years"], X)
            for eps in ("1", "10"):
                args = ["mean", "--method", "prime", "--alpha", "0.05", "--epsilon", eps, "--delta", "0.01",
                        "--seed", str(seed), path]
                j, err = run(args)
                if j is None:
                    out = ("WRONG", err)
                elif abstained(j):
                    r = reason(j)
                    if "alpha = 0 " in r or "alpha = 0," in r or ("0.05" not in r and "alpha" in r):
                        out = ("WRONG", "the reason does not print the given alpha: " + r[:150])
                    elif j["ledger"] and j["diagnostics"].get("scale_share", {}).get("usable") is False:
                        out = ("WRONG", "the plan said unusable but the release charged")
                    elif j["privacy"]["epsilon"] > 0 and "rank error" in r:
                        out = ("WRONG", "charged, then abstained on a rank error the plan knew: " + r[:150])
                    else:
                        out = judge_abstain(j, ["rows", "epsilon", "scale"])
                        out = (out[0], f"eps {j['privacy']['epsilon']}: " + out[1])
                else:
                    e = np.abs(np.array(j["estimate"]) - X.mean(0))
                    radius = np.array(j["diagnostics"]["stated_error"]["radius"])
                    out = ("ok" if np.all(e <= radius) else "WRONG",
                           f"worst error {np.max(e / X.std(0)):.3f} sd, radius/sd {np.max(radius / X.std(0)):.3f}")
                record("F7", args, seed, *out)


def holdout(tmp):
    """Build item 3: the fits' --holdout loss is charged (its ledger entry) and stated."""
    T = penguins(np.random.default_rng(900))  # columns standardised by public knowledge
    T[:, 1:] = (T[:, 1:] - [45, 17, 200, 4200]) / [5, 2, 14, 800]
    path = f"{tmp}/penguins_h.csv"
    np.savetxt(path, T, delimiter=",", fmt="%.10g")
    args = ["fit", "--task", "classify", "--classes", "3", "--epsilon", "3", "--delta", "1e-6",
            "--n-public", "342", "--feature-scale", "1", "--holdout", "0.2", "--seed", "1", path]
    j, err = run(args)
    if j is None:
        out = ("WRONG", err)
    elif abstained(j):
        out = ("WRONG", "abstained: " + reason(j)[:150])
    else:
        h = j["diagnostics"].get("holdout", {})
        charged = any("holdout" in e.get("purpose", "") for e in j["ledger"])
        ok = charged and h and all(k in h for k in ("loss", "interval_95", "noise_sd")) if isinstance(h, dict) else False
        out = ("ok" if ok else "WRONG", f"holdout {json.dumps(h)[:240]} charged {charged}")
    record("B3", args, 1, *out)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for name, f in [("F1", f1), ("F2", f2), ("F3", f3), ("F4", f4), ("F5", f5), ("F7", f7), ("B3", holdout)]:
            if ONLY is None or name in ONLY:
                f(tmp)
    table = {}
    for finding, cmd, seed, outcome, _ in rows:
        table.setdefault((finding, cmd.replace(f"--seed {seed} ", "")), []).append(outcome)
    print("\n| finding | command | outcomes over seeds |\n|---|---|---|")
    for (finding, cmd), outs in table.items():
        print(f"| {finding} | `{cmd}` | {', '.join(f'{o} {outs.count(o)}' for o in sorted(set(outs)))} |")
    wrong = [r for r in rows if r[3] == "WRONG"]
    print(f"\n{len(rows)} runs, {len(wrong)} WRONG")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
