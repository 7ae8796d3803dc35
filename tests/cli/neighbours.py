#!/usr/bin/env python3
"""The neighbour test (issue 28 item 3): every command and method of the tool runs on a table D
and on a neighbour D' with the same seed, and every field the declaration calls public
(`dpstats fields`, dpstats/output_fields.hpp) must be identical: present in both outputs or in
neither, with the same value. Neighbours follow the relation the release states: one row replaced
(replace-one: the last row becomes an outlier), or one row removed and one added (add-remove).
No output may hold an undeclared field (the tool names one on stderr).

The tables are like users' data: a few hundred to a few thousand rows, mixed units (years,
dollars with a heavy right tail, a zero-inflated count, a timestamp near 1.7e9), and the replaced
or added row is far outside them. Usage: neighbours.py DPSTATS [--verbose] [--only NAME]; exit 1
on any difference."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

DPSTATS = sys.argv[1]
VERBOSE = "--verbose" in sys.argv
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None


# ---- data ------------------------------------------------------------------------------------

def people(n, seed):
    """age (years), income (dollars, lognormal), visits (zero-inflated count), timestamp (~1.7e9)."""
    g = np.random.default_rng(seed)
    age = np.round(g.uniform(18, 80, n), 1)
    income = np.round(np.exp(g.normal(np.log(5e4), 0.6, n)), 2)
    visits = np.where(g.uniform(size=n) < 0.6, 0, g.poisson(3, n))
    stamp = 1.7e9 + np.round(g.uniform(0, 3e7, n))
    return np.column_stack([age, income, visits, stamp])


def labelled(n, seed):
    """label (0/1 by a logistic model), then age, income in thousands, visits."""
    g = np.random.default_rng(seed)
    X = people(n, seed)[:, :3] / np.array([1, 1000, 1])
    z = 0.04 * (X[:, 0] - 45) + 0.02 * (X[:, 1] - 50) + 0.2 * X[:, 2] - 0.3
    y = (g.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(float)
    return np.column_stack([y, X])


def regression(n, seed):
    """y (minutes, t_3 noise), distance (miles), hour."""
    g = np.random.default_rng(seed)
    dist, hour = g.uniform(100, 2500, n), g.uniform(5, 23, n)
    y = 0.02 * dist + 1.5 * (hour - 12) + 15 * g.standard_t(3, n)
    return np.column_stack([y, dist / 1000, hour / 10])


def users(n_users, m, seed):
    """user id, label +-1, two features."""
    g = np.random.default_rng(seed)
    ids = np.repeat(np.arange(n_users), m)
    X = g.normal(size=(n_users * m, 2))
    y = np.where(X @ np.array([1.0, -0.5]) + 0.5 * g.normal(size=n_users * m) > 0, 1.0, -1.0)
    return np.column_stack([ids, y, X])


OUTLIER = {  # the row a neighbour replaces or adds, per table kind
    "people": [150, 9.9e9, 1e6, 4.1e9],
    "labelled": [1, 150, 9.9e6, 1e6],
    "regression": [999, 99, 9.9],
    "users": [10 ** 6, 1, 1e6, -1e6],
    "tiny": [150, 9.9e9, 1e6, 4.1e9],
}


def tables():
    return {
        "people": people(400, 1),
        "people_big": people(6000, 2),
        "labelled": labelled(600, 3),
        "regression": regression(3000, 4),
        "regression_big": regression(40000, 5),
        "users": users(1500, 4, 6),
        "tiny": people(24, 7),
    }


def kind_of(name):
    return name.split("_")[0]


def neighbours(name, X, relation):
    """[(label, D')]: the neighbours of X under `relation`. A moments stream's horizon is public
    (continual release): under add/remove a step's row is present or zero ("stream")."""
    out = np.array(OUTLIER[kind_of(name)], dtype=float)
    if relation == "add-remove-stream":
        zeroed = X.copy()
        zeroed[-1] = 0
        return [("row zeroed", zeroed)]
    if kind_of(name) == "users":  # a user's whole data: the last user's rows replaced / removed
        last = X[:, 0] == X[-1, 0]
        repl = X.copy()
        repl[last, 1:] = out[1:]
        if relation == "replace-one":
            return [("user replaced", repl)]
        added = np.vstack([X, np.tile(np.r_[X[-1, 0] + 1, out[1:]], (last.sum(), 1))])
        return [("user removed", X[~last]), ("user added", added)]
    if relation == "replace-one":
        repl = X.copy()
        repl[-1] = out
        return [("row replaced", repl)]
    return [("row removed", X[1:]), ("row added", np.vstack([X, out]))]


# ---- cases: (name, relation, table, args) ------------------------------------------------------

def cases():
    E = ["--seed", "11"]
    c = []
    for m, extra in [("bounded", ["--bounds", "0,100", "--columns", "1", "--delta", "0"]),
                     ("bounded", ["--delta", "0"]),
                     ("dp-mean", ["--scale", "15,3e4,2,1e7", "--delta", "1e-6"]),
                     ("dp-mean", ["--delta", "1e-6"]),
                     ("prime", ["--alpha", "0.05", "--scale", "15,3e4,2,1e7", "--delta", "1e-6"]),
                     ("prime-ht", ["--alpha", "0.05", "--delta", "1e-6"]),
                     ("filter", ["--alpha", "0.05", "--scale", "15,3e4,2,1e7", "--delta", "1e-6"]),
                     ("prime", ["--profile", "paper", "--alpha", "0.05", "--scale", "15,3e4,2,1e7",
                                "--delta", "1e-6", "--T1", "2", "--T2", "2"]),
                     ("prime-boosted", ["--alpha", "0.05", "--delta", "1e-6"]),
                     ("prime-ht-boosted", ["--alpha", "0.05", "--scale", "15,3e4,2,1e7",
                                           "--delta", "1e-6"]),
                     ("exp-time", ["--alpha", "0.05", "--columns", "1", "--delta", "1e-6",
                                   "--scale", "15"]),
                     ("tukey-median", ["--bounds", "0,100", "--columns", "1", "--delta", "0"]),
                     ("robust", ["--alpha", "0.05", "--delta", "1e-6"])]:
        table = ("tiny" if m == "exp-time" else
                 "people" if m == "tukey-median" or "--scale" in extra else "people_big")
        c.append((f"mean {m} {'given' if '--scale' in extra or '--bounds' in extra else 'estimated'}",
                  "replace-one", table, ["mean", "--method", m, "--epsilon", "1"] + extra + E))
    for extra, table in [([], "people_big"), (["--domain-radius", "1e6"], "people"),
                         (["--profile", "paper", "--domain-radius", "1e6"], "people_big"),
                         (["--method", "hsu24", "--domain-radius", "1e6"], "people")]:
        c.append(("median " + " ".join(extra[:2]), "replace-one", table,
                  ["median", "--epsilon", "1", "--delta", "1e-6", "--columns", "1,2"] + extra + E))
    c.append(("median weiszfeld (non-private)", "replace-one", "people",
              ["median", "--method", "weiszfeld", "--columns", "1,2"]))
    for m in ["jme", "lambda-jme", "ime", "cs", "pp", "pp-debiased"]:
        c.append((f"moments {m} clip given", "replace-one", "people",
                  ["moments", "--method", m, "--columns", "1,3", "--clip", "200",
                   "--epsilon", "1", "--delta", "1e-6"] + (["--lambda", "2"] if m == "lambda-jme"
                                                           else []) + E))
    M = ["moments", "--method", "jme", "--columns", "1,3", "--epsilon", "1", "--delta", "1e-6"]
    c.append(("moments jme clip estimated", "replace-one", "people_big", M + E))
    c.append(("moments jme add-remove", "add-remove-stream", "people_big",
              M + ["--neighbouring", "add-remove"] + E))
    c.append(("moments jme live stream", "replace-one", "people",
              M + ["--clip", "200", "--steps", "400"] + E))
    for m in ["dp-gd-user", "dp-gd-filter", "dp-sgd-user", "dp-sgd-group", "phased-sgd",
              "accelerated", "nonsmooth", "non-private"]:
        priv = [] if m == "non-private" else ["--epsilon", "2", "--delta", "1e-6"]
        loss = ["--loss", "hinge"] if m == "nonsmooth" else []
        c.append((f"fit user-level {m}", "replace-one", "users",
                  ["fit", "--task", "user-level", "--method", m, "--domain-radius", "3",
                   "--items-per-user", "4", "--feature-bound", "3", "--no-centre"] + priv + loss + E))
    c.append(("fit user-level estimated bounds", "replace-one", "users",
              ["fit", "--task", "user-level", "--domain-radius", "3", "--items-per-user", "4",
               "--epsilon", "2", "--delta", "1e-6"] + E))
    for m, extra in [("clipped-gd", []), ("clipped-gd", ["--moment-bound", "3", "--no-centre"]),
                     ("lipschitz-extension", ["--moment-bound", "3", "--no-centre"]),
                     ("output-perturbation", ["--moment-bound", "3", "--no-centre"]),
                     ("dp-sgd", ["--delta", "1e-6", "--moment-bound", "3", "--no-centre"]),
                     ("non-private", [])]:
        priv = [] if m == "non-private" else ["--epsilon", "1"]
        c.append((f"fit heavy-tailed {m} {' '.join(extra[:2])}", "replace-one",
                  "regression_big" if not extra and m == "clipped-gd" else "regression",
                  ["fit", "--task", "heavy-tailed", "--method", m, "--domain-radius", "2"]
                  + priv + extra + E))
    for opt in ["dp-sgd", "dp-adam", "dp-adam-debiased", "dp-adam-jme", "dp-adam-joint-clip"]:
        c.append((f"fit classify {opt}", "add-remove", "labelled",
                  ["fit", "--task", "classify", "--classes", "2", "--optimizer", opt,
                   "--epsilon", "1", "--delta", "1e-6", "--epochs", "2", "--batch-size", "60",
                   "--n-public", "600", "--scale-share", "0.5"] + E))  # 600 rows: scale planned
    c.append(("fit classify adam (non-private)", "add-remove", "labelled",
              ["fit", "--task", "classify", "--classes", "2", "--optimizer", "adam", "--epochs",
               "1", "--batch-size", "60", "--n-public", "600"] + E))
    c.append(("fit classify mlp feature scale", "add-remove", "labelled",
              ["fit", "--task", "classify", "--classes", "2", "--model", "mlp", "--hidden", "8",
               "--epsilon", "1", "--delta", "1e-6", "--epochs", "1", "--batch-size", "60",
               "--n-public", "600", "--feature-scale", "100"] + E))
    # --holdout (issue 27): the split is a keyed hash of each unit, so the held-out count is
    # private; the statement divides by a public expected count.
    c.append(("fit classify --holdout", "add-remove", "labelled",
              ["fit", "--task", "classify", "--classes", "2", "--epsilon", "1", "--delta", "1e-6",
               "--epochs", "1", "--batch-size", "60", "--n-public", "600", "--feature-scale",
               "100", "--holdout", "0.25"] + E))
    c.append(("fit heavy-tailed --holdout", "replace-one", "regression",
              ["fit", "--task", "heavy-tailed", "--method", "clipped-gd", "--domain-radius", "2",
               "--epsilon", "1", "--moment-bound", "3", "--no-centre", "--holdout", "0.25"] + E))
    c.append(("fit user-level --holdout", "replace-one", "users",
              ["fit", "--task", "user-level", "--domain-radius", "3", "--items-per-user", "4",
               "--feature-bound", "3", "--no-centre", "--epsilon", "2", "--delta", "1e-6",
               "--holdout", "0.25"] + E))
    for stat, extra, rel in [("count", ["--delta", "0"], "add-remove"),
                             ("sum", ["--bounds", "0,100", "--delta", "0"], "replace-one"),
                             ("mean", ["--bounds", "0,100", "--delta", "0"], "replace-one"),
                             ("mean", ["--delta", "1e-6"], "replace-one"),
                             ("variance", ["--bounds", "0,100", "--delta", "1e-6"], "replace-one"),
                             ("std", ["--delta", "1e-6"], "replace-one"),
                             ("quantiles", ["--quantiles", "0.1,0.5,0.9", "--bounds", "0,100",
                                            "--delta", "0"], "replace-one"),
                             ("quantiles", ["--quantiles", "0.5", "--delta", "1e-6"], "replace-one"),
                             ("histogram", ["--categories", "0,1,2,3", "--delta", "0"], "add-remove"),
                             ("histogram", ["--delta", "1e-6"], "add-remove")]:
        cols = "3" if stat == "histogram" else "1"
        c.append((f"stat {stat} {' '.join(extra[:2])}", rel,
                  "people_big" if "--bounds" not in extra else "people",
                  ["stat", stat, "--column" if stat == "histogram" else "--columns", cols,
                   "--epsilon", "1"] + extra + E))
    for extra, rel in [([], "replace-one"), (["--neighbouring", "add-remove"], "add-remove"),
                       (["--delta", "1e-6", "--norm-quantile", "0.9"], "replace-one"),
                       (["--coverage", "0.1"], "replace-one"),
                       (["--coverage", "0.1", "--neighbouring", "add-remove"], "add-remove")]:
        c.append((f"bounds {' '.join(extra[:2])}", rel, "people_big",
                  ["bounds", "--epsilon", "1"] + extra + E))
    return c


# ---- the declaration --------------------------------------------------------------------------

def declaration():
    return json.loads(subprocess.run([DPSTATS, "fields"], capture_output=True, text=True,
                                     check=True).stdout)


def matches(pattern, path):
    p, q = pattern.split("."), path.split(".")
    if len(p) != len(q):
        return False
    for a, b in zip(p, q):
        if a == b or (a == "*" and not b.endswith("[]")):
            continue
        return False
    return True


def leaves(v, path=""):
    """{leaf path: [values]} as dpstats/output_fields.hpp defines leaves."""
    out = {}
    key = (lambda k: str(k).replace("%", "%25").replace(".", "%2E"))  # as output_fields.cpp
    child = (lambda k: f"{path}.{key(k)}" if path else key(k))
    if isinstance(v, dict) and v:
        for k, x in v.items():
            for p, vals in leaves(x, child(k)).items():
                out.setdefault(p, []).extend(vals)
        return out
    if isinstance(v, list) and any(isinstance(e, dict) for e in v):
        for e in v:
            for p, vals in leaves(e, path + "[]").items():
                out.setdefault(p, []).extend(vals)
        return out
    return {path: [v]}


def public_fields(decl, scope, out):
    fields = decl[scope]["fields"]
    pub = {}
    for path, vals in leaves(out).items():
        kind = next((f["kind"] for pat, f in fields.items() if matches(pat, path)), None)
        if kind is None:
            raise AssertionError(f"{scope}: field {path} is not declared")
        if kind == "public":
            pub[path] = vals
    return pub


def scope_of(out):
    return out["command"] + ("/" + out["task"] if out["command"] == "fit" else "")


# ---- running ----------------------------------------------------------------------------------

def run(args, path):
    p = subprocess.run([DPSTATS] + args + [path], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}: {p.stderr.strip()}")
    if "not declared" in p.stderr:
        raise AssertionError(p.stderr.strip())
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    return lines


def compare(decl, a, b):
    """The differences between the public fields of two runs' outputs (lists of JSON lines)."""
    diffs = []
    if len(a) != len(b) and scope_of(a[0]) != "moments":
        diffs.append(f"{len(a)} vs {len(b)} output lines")
    for i, (x, y) in enumerate(zip(a[:1], b[:1])):
        scope = scope_of(x)
        px, py = public_fields(decl, scope, x), public_fields(decl, scope, y)
        for path in sorted(set(px) | set(py)):
            if px.get(path) != py.get(path):
                diffs.append(f"{path}: {str(px.get(path))[:120]} vs {str(py.get(path))[:120]}")
    for x, y in zip(a[1:], b[1:]):  # a stream's step lines
        for path, vals in public_fields(decl, "moments/step", x).items():
            if public_fields(decl, "moments/step", y).get(path) != vals:
                diffs.append(f"step {x.get('step')}: {path}")
                break
    return diffs


def doc_matches_declaration():
    """docs/threat-model.md "What each output field is" holds `dpstats fields --markdown`."""
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                       "threat-model.md")
    text = open(doc, encoding="utf-8").read()
    begin, end = "<!-- fields:begin -->\n", "<!-- fields:end -->"
    section = text[text.index(begin) + len(begin):text.index(end)]
    md = subprocess.run([DPSTATS, "fields", "--markdown"], capture_output=True, text=True,
                        check=True).stdout
    return section.strip() == md.strip()


def noise_pairs(decl):
    """`dpstats noise`: its data are the values given; neighbours change them by the stated
    sensitivity at most."""
    diffs = []
    for mech, extra in (("laplace", []), ("gaussian", ["--delta", "1e-6"])):
        args = [DPSTATS, "noise", "--mechanism", mech, "--sensitivity", "2", "--epsilon", "1",
                "--seed", "11"] + extra
        a, b = (json.loads(subprocess.run(args + v, capture_output=True, text=True,
                                          check=True).stdout) for v in (["3", "-1"], ["4", "0"]))
        pa, pb = public_fields(decl, "noise", a), public_fields(decl, "noise", b)
        diffs += [f"noise {mech}: {p}" for p in set(pa) | set(pb) if pa.get(p) != pb.get(p)]
    return diffs


def main():
    decl = declaration()
    failures, checked = [], 0
    if noise_pairs(decl):
        failures.append(("noise", "values changed", noise_pairs(decl)))
    if not doc_matches_declaration():
        failures.append(("docs/threat-model.md", "fields", [
            "the section differs from `dpstats fields --markdown`: regenerate it"]))
    with tempfile.TemporaryDirectory() as tmp:
        data = tables()
        for name, relation, table, args in cases():
            if ONLY and ONLY not in name:
                continue
            X = data[table]
            base = os.path.join(tmp, "d.csv")
            np.savetxt(base, X, delimiter=",", fmt="%.10g")
            try:
                a = run(args, base)
                stated = a[0].get("privacy", {}).get("neighbouring", relation)
                if a[0].get("privacy") and stated != relation.replace("-stream", ""):
                    raise AssertionError(f"states {stated}, the case expects {relation}")
                for label, Y in neighbours(table, X, relation):  # the same path: it is printed
                    np.savetxt(base, Y, delimiter=",", fmt="%.10g")
                    b = run(args, base)
                    checked += 1
                    diffs = compare(decl, a, b)
                    if diffs:
                        failures.append((name, label, diffs))
                    if VERBOSE:
                        print(f"{name} ({label}): {a[0].get('status')} / {b[0].get('status')}, "
                              f"{len(diffs)} public differences")
            except AssertionError as e:
                failures.append((name, "run", [str(e)[:400]]))
    for name, label, diffs in failures:
        print(f"FAIL {name} ({label}):")
        for d in diffs[:12]:
            print("   ", d)
    print(f"{checked} neighbour pairs compared, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
