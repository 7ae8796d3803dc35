#!/usr/bin/env python3
"""Sweep of the tool with extreme privacy parameters, bounds, scales and data magnitudes
(issue #21, docs/threat-model.md rows `silent-clamp` and `internal-names`).

Every run must end in one of three ways: exit 0 with "status": "ok" and finite numbers that are
not a clamp artefact, exit 0 with "status": "abstained" and a reason, or exit 2 with one line on
stderr that names a parameter the user gave (or the data) and no internal quantity. Usage:
extremes.py DPSTATS [--verbose]; exit 1 on any violation."""
import json, math, os, subprocess, sys, tempfile

import numpy as np

DPSTATS = sys.argv[1]
VERBOSE = "--verbose" in sys.argv
# Words that only the internals use: a message containing one did not come from the validate step.
INTERNAL = ["lattice", "granularity", "sigma^2", "sigma2", "2^62", "quantum", "value must be finite",
            "rho ", "rho=", "noise variance", "l1_sensitivity", "k2", "bin index"]


N = 4000


def data_files(tmp):
    rng = np.random.default_rng(1)
    y = np.where(rng.normal(size=N) > 0, 1.0, -1.0)
    files = {
        "norm": rng.normal(size=(N, 2)),
        "big": np.full((N, 2), 1e308),
        "bigneg": np.full((N, 2), -1e308),
        "pm": np.where(np.arange(2 * N).reshape(N, 2) % 2 == 0, 1e308, -1e308),
        "huge": rng.normal(size=(N, 2)) * 1e200,
        "tiny": rng.normal(size=(N, 2)) * 1e-300,
        "xy": np.c_[rng.normal(size=(N, 2)), y],
        "bigxy": np.c_[np.full((N, 2), 1e308), y],
        "users": np.c_[np.repeat(np.arange(N // 10), 10), y, rng.normal(size=(N, 2))],  # user, label, x
        "labels": np.c_[(y > 0).astype(float), rng.normal(size=(N, 2))],
    }
    for k in ["norm", "big", "bigneg", "pm", "huge", "tiny"]:
        files[k + "1"] = files[k][:, :1]
    paths = {}
    for k, v in files.items():
        paths[k] = os.path.join(tmp, k + ".npy")
        np.save(paths[k], v)
    for k in ["users", "labels"]:  # fit --task classify reads a CSV (label, features...)
        paths[k] = os.path.join(tmp, k + ".csv")
        np.savetxt(paths[k], files[k], delimiter=",")
    return paths


def cases(f):
    E = ["--epsilon"]
    eps = os.environ.get("EPS", "1e-320 1e-300 1e-30 1e30 1e308").split()
    dels = ["1e-320", "1e-300"]
    out = []
    mean = ["mean", "--seed", "1"]
    for m in ["dp-mean", "prime", "prime-ht", "filter", "exp-time", "bounded"]:
        extra = ["--bounds", "-10,10"] if m == "bounded" else []
        extra += [] if m in ("dp-mean", "bounded") else ["--alpha", "0.05"]
        dd = "0" if m == "bounded" else "1e-6"
        one = "1" if m == "exp-time" else ""  # exp-time is d = 1
        for data in ["norm", "big", "bigneg", "pm", "huge", "tiny"]:
            out.append(mean + ["--method", m, "--epsilon", "1", "--delta", dd] + extra + [f[data + one]])
        for e in eps:
            out.append(mean + ["--method", m, "--epsilon", e, "--delta", dd] + extra + [f["norm" + one]])
        for dl in dels:
            out.append(mean + ["--method", m, "--epsilon", "1", "--delta", dl] + extra + [f["norm" + one]])
        if m == "bounded":
            continue
        for s in ["1e-320", "1e-300", "1e300", "1e308"]:
            out.append(mean + ["--method", m, "--epsilon", "1", "--delta", dd, "--scale", s] + extra + [f["norm" + one]])
        for data in ["big", "bigneg", "pm", "huge"]:  # a supplied scale far too small
            out.append(mean + ["--method", m, "--epsilon", "1", "--delta", dd, "--scale", "1"] + extra + [f[data + one]])
    for b in ["-1e308,1e308", "-1e-320,1e-320", "0,1e-300", "1e307,1e308"]:
        out.append(mean + ["--method", "bounded", "--epsilon", "1", "--delta", "0", "--bounds=" + b, f["norm"]])
    med = ["median", "--seed", "1", "--delta", "1e-6"]
    for m in ["fast", "hsu24", "weiszfeld"]:
        for data in ["norm", "big", "pm", "huge", "tiny"]:
            out.append(med + ["--method", m, "--epsilon", "1", f[data]])
        for e in eps:
            out.append(med + ["--method", m, "--epsilon", e, f["norm"]])
        for r in ["1e-320", "1e308"]:
            out.append(med + ["--method", m, "--epsilon", "1", "--domain-radius", r, f["norm"]])
    for st in ["mean", "sum", "variance", "quantiles", "count"]:
        for data in ["norm", "big", "pm", "huge"]:
            out.append(["stat", st, "--seed", "1", "--epsilon", "1", "--delta", "1e-6", f[data]])
        for e in eps:
            out.append(["stat", st, "--seed", "1", "--epsilon", e, "--delta", "1e-6", f["norm"]])
        out.append(["stat", st, "--seed", "1", "--epsilon", "1", "--delta", "0", "--bounds=-1e308,1e308", f["norm"]])
    for data in ["norm", "big", "pm"]:
        out.append(["bounds", "--seed", "1", "--epsilon", "1", "--delta", "1e-6", f[data]])
    for e in eps:
        out.append(["bounds", "--seed", "1", "--epsilon", e, "--delta", "1e-6", f["norm"]])
    for m in ["jme", "ime", "pp"]:
        for data in ["norm", "big", "pm"]:
            out.append(["moments", "--method", m, "--seed", "1", "--epsilon", "1", "--delta", "1e-6", f[data]])
        for e in eps:
            out.append(["moments", "--method", m, "--seed", "1", "--epsilon", e, "--delta", "1e-6", f["norm"]])
        for c in ["1e-320", "1e308"]:
            out.append(["moments", "--method", m, "--seed", "1", "--epsilon", "1", "--delta", "1e-6", "--clip", c, f["norm"]])
    for mech, dl in [("laplace", []), ("gaussian", ["--delta", "1e-6"])]:
        for e in eps:
            out.append(["noise", "--seed", "1", "--mechanism", mech, "--sensitivity", "1", "--epsilon", e] + dl + ["1", "2"])
        for s in ["1e-320", "1e308"]:
            out.append(["noise", "--seed", "1", "--mechanism", mech, "--sensitivity", s, "--epsilon", "1"] + dl + ["1", "2"])
        out.append(["noise", "--seed", "1", "--mechanism", mech, "--sensitivity", "1", "--epsilon", "1"] + dl + ["1e308", "-1e308"])
    for e in eps:
        out.append(["account", "calibrate", "--mechanism", "laplace", "--sensitivity", "1", "--epsilon", e])
        out.append(["account", "calibrate", "--mechanism", "gaussian", "--sensitivity", "1", "--epsilon", e, "--delta", "1e-6"])
    for s in ["1e-320", "1e308"]:
        out.append(["account", "calibrate", "--mechanism", "laplace", "--sensitivity", s, "--epsilon", "1"])
    for e in eps + ["1"]:
        out.append(["fit", "--task", "user-level", "--seed", "1", "--epsilon", e, "--delta", "1e-6",
                    "--domain-radius", "10", "--items-per-user", "10", f["users"]])
        out.append(["fit", "--task", "classify", "--seed", "1", "--epsilon", e, "--delta", "1e-5",
                    "--classes", "2", "--epochs", "1", "--n-public", str(N), "--data", f["labels"]])
    for data in ["xy", "bigxy"]:
        out.append(["fit", "--task", "heavy-tailed", "--seed", "1", "--epsilon", "1", "--domain-radius", "10", f[data]])
    for e in eps:
        out.append(["fit", "--task", "heavy-tailed", "--seed", "1", "--epsilon", e, "--domain-radius", "10", f["xy"]])
    return out


def numbers(v):
    """Every number in a JSON value (null counts as NaN: a non-finite double printed)."""
    if v is None:
        return [math.nan]
    if isinstance(v, bool) or isinstance(v, str):
        return []
    if isinstance(v, (int, float)):
        return [float(v)]
    if isinstance(v, dict):
        v = list(v.values())
    return [x for e in v for x in numbers(e)]


def judge(args, code, out, err):
    """None when the outcome is acceptable, else why not."""
    if code == 0:
        try:  # one JSON object, or JSON lines (moments: the release, then one line per step)
            objs = [json.loads(line) for line in out.splitlines() if line.strip()]
            j = objs[0]
        except (ValueError, IndexError):
            return "exit 0 without JSON"
        if j.get("status") == "abstained":
            return None if (j.get("diagnostics") or {}).get("abstained") else "abstained without a reason"
        flat = np.array(numbers(j.get("estimate")) if "estimate" in j else [], dtype=float)
        for o in objs[1:]:
            flat = np.r_[flat, [x for k in ("first", "second") if k in o for x in numbers(o[k])]]
        if flat.size and not np.all(np.isfinite(flat)):
            return "status ok with a non-finite estimate"
        # A clamp artefact: |estimate| at 2^62 (lattice or bin limit) times a power of two.
        for v in flat:
            if v != 0 and abs(math.frexp(abs(v))[0] - 0.5) < 1e-12 and abs(v) > 1e15:
                return f"status ok with a clamp-like estimate {v:g}"
        return None
    if code != 2:
        return f"exit {code}"
    if out.strip():
        return "exit 2 with output on stdout"
    lines = err.strip().splitlines()
    if len(lines) != 1:
        return f"exit 2 with {len(lines)} lines on stderr"
    low = err.lower()
    for w in INTERNAL:
        if w in low and not (w.startswith("rho") and "--rho" in args):
            return f"message names an internal quantity ({w!r})"
    return None


def main():
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        f = data_files(tmp)
        all_cases = cases(f)
        for args in all_cases:
            shown = " ".join(os.path.basename(a) if a.startswith(tmp) else a for a in args)
            try:
                p = subprocess.run([DPSTATS] + args, capture_output=True, text=True, timeout=30)
            except subprocess.TimeoutExpired:
                bad += 1
                print(f"FAIL {shown}: still running after 30 s", flush=True)
                continue
            why = judge(args, p.returncode, p.stdout, p.stderr)
            if why:
                bad += 1
                print(f"FAIL {shown}: {why}: {p.stderr.strip()[:300] or p.stdout[:300]}", flush=True)
            elif VERBOSE:
                st = json.loads(p.stdout.splitlines()[0]).get("status") if p.returncode == 0 else p.stderr.strip()
                print(f"ok   {shown}: {st}")
    print(f"extremes: {len(all_cases) - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
