#!/usr/bin/env python3
"""Mean family on real-data-like tables: before (the old silent unit scale, reproduced with
--scale 1) and after (the default: units estimated privately). Writes docs/results/real-data.md
rows to stdout.

Tables (seeded with numpy.random.default_rng):
  age_salary (seed 1): n = 20000; age ~ N(41, 12^2), salary = 20000 + 1100 age + N(0, 15000^2);
      5% of the rows (the first 1000) replaced by (999, 9.9e6).
  flights (seed 2): n = 200000; delay = -12 + Gamma(shape 0.35, scale 60) minutes (std ~35,
      long right tail); distance = exp(N(ln 560, 0.75^2)) miles (std ~ 570).
Usage: experiments/prime/real_data.py [path/to/dpstats]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

TOOL = sys.argv[1] if len(sys.argv) > 1 else "build/dpstats"


def age_salary():
    g = np.random.default_rng(1)
    n = 20000
    age = g.normal(41, 12, n)
    salary = 20000 + 1100 * age + g.normal(0, 15000, n)
    X = np.column_stack([age, salary])
    clean = X[1000:].mean(axis=0)
    X[:1000] = (999, 9.9e6)
    return X, clean


def flights():
    g = np.random.default_rng(2)
    n = 200000
    delay = -12 + g.gamma(0.35, 60, n)
    distance = np.exp(g.normal(np.log(560), 0.75, n))
    X = np.column_stack([delay, distance])
    return X, X.mean(axis=0)


def flights_pareto():
    g = np.random.default_rng(4)
    n = 200000
    tail = g.random(n) < 0.05
    delay = np.where(tail, -5 + 60 * g.random(n) ** (-1 / 1.5), -5 + g.exponential(15, n))
    distance = 800 * np.exp(0.6 * g.normal(size=n))
    X = np.column_stack([delay, distance])
    return X, X.mean(axis=0)


def run(path, method, extra, truth=None):
    args = [TOOL, "mean", "--method", method, "--epsilon", "1", "--delta", "1e-6", "--seed", "3"]
    if method in ("prime", "prime-ht", "filter"):
        args += ["--alpha", "0.05"]
    if method == "bounded":
        args[args.index("--delta") + 1] = "0"
    out = subprocess.run(args + extra + [path], capture_output=True, text=True)
    if out.returncode != 0:
        return "error: " + out.stderr.strip().splitlines()[-1][:60]
    j = json.loads(out.stdout)
    if j["status"] != "ok":
        return "abstained (" + j["diagnostics"].get("abstained", "")[:50] + ")"
    est = j["estimate"]
    note = " (fallback dp-mean)" if j["diagnostics"].get("fallback") else ""
    warn = " [clipped warning]" if "warning" in j["diagnostics"].get("clipped", {}) else ""
    stated = ""
    if truth is not None and "stated_error" in j["diagnostics"]:
        r = j["diagnostics"]["stated_error"]["radius"]
        inside = all(abs(e - t) <= ri for e, t, ri in zip(est, truth, r))
        stated = " (±" + " / ".join(f"{v:,.3g}" for v in r) + (", within)" if inside else ", OUTSIDE)")
    return " / ".join(f"{v:,.5g}" for v in est) + note + warn + stated


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for name, (X, truth) in (("age_salary", age_salary()), ("flights", flights()),
                                 ("flights_pareto", flights_pareto())):
            path = os.path.join(tmp, name + ".csv")
            np.savetxt(path, X, delimiter=",", header="a,b", comments="")
            print(f"\n{name}: truth (clean mean) " + " / ".join(f"{v:,.5g}" for v in truth))
            print("\n| method | before (scale 1) | after (default) |\n|---|---|---|")
            for m in ("prime", "prime-ht", "filter", "dp-mean", "bounded"):
                before = ("n/a (--bounds was required)" if m == "bounded"
                          else run(path, m, ["--scale", "1"]))
                after = run(path, m, [], truth)
                print(f"| {m} | {before} | {after} |")


if __name__ == "__main__":
    main()
