#!/usr/bin/env python3
"""`--dry-run` (issue 30 item 3; docs/guide.md "Before you spend epsilon"), end to end on the tool.

(a) Every releasing command plans with --dry-run: it reads the header line only (a table whose
    second line is garbage, and an endless pipe, both plan at once), draws nothing (the dry run's
    generator refuses any draw: the run would fail), and charges nothing (a budget file stays
    byte-identical; one too small is refused by name, still untouched).
(b) The plan's rows needed predicts the real run: at about 0.7x and 1.5x the rows the plan says
    its estimates need, the verdict at --n-hint n says abstain / release, and the real run on n
    rows (seeded) abstains for the rank error below and does not abstain for it above.
Usage: dry_run.py DPSTATS; exit 1 on any failure."""
import json, os, subprocess, sys, tempfile, threading, time

import numpy as np

DPSTATS = sys.argv[1]
FAILURES = []


def run(args, stdin=None, timeout=300):
    p = subprocess.run([DPSTATS, *args], capture_output=True, text=True, timeout=timeout,
                       stdin=stdin)
    out = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else None
    return p.returncode, out, p.stderr.strip()


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def plan(args, path, n_hint=None):
    extra = ["--dry-run"] + ([] if n_hint is None else ["--n-hint", str(n_hint)])
    rc, out, err = run([*args, *extra, path])
    if not (rc == 0 and out and out["command"] == "dry-run" and "not declared" not in err):
        check(False, f"plan {' '.join(args)} (--n-hint {n_hint}): {err[:200]}")
    return out or {}


def write_csv(path, X, names):
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        np.savetxt(f, X, delimiter=",", fmt="%.17g")


# ---- (a) every command, a header only, nothing drawn or charged --------------------------------
COMMANDS = [
    ["stat", s, "--epsilon", "0.3", "--delta", "0"] for s in
    ["count", "sum", "mean", "variance", "std"]] + [
    ["stat", "quantiles", "--quantiles", "0.5,0.9", "--epsilon", "0.3", "--delta", "0"],
    ["stat", "histogram", "--categories", "0,1", "--epsilon", "0.3", "--delta", "0",
     "--columns", "a"],
    ["bounds", "--epsilon", "0.3"],
    ["median", "--epsilon", "1", "--delta", "1e-6"],
    ["moments", "--epsilon", "1", "--delta", "1e-6"],
    ["moments", "--epsilon", "1", "--delta", "1e-6", "--steps", "100", "--clip", "3"],
    ["fit", "--task", "classify", "--classes", "2", "--epsilon", "1", "--delta", "1e-6",
     "--n-public", "500"],
    ["fit", "--task", "heavy-tailed", "--epsilon", "1", "--domain-radius", "10"],
    ["fit", "--task", "user-level", "--epsilon", "1", "--delta", "1e-6", "--domain-radius", "10",
     "--items-per-user", "5"],
    ["mean", "--method", "exp-time", "--alpha", "0.05", "--epsilon", "1", "--delta", "1e-6",
     "--columns", "a"],
    ["mean", "--method", "tukey-median", "--bounds", "-5,5", "--epsilon", "1", "--delta", "0",
     "--columns", "a,b"],
    ["mean", "--method", "prime-ht-boosted", "--alpha", "0.05", "--epsilon", "1", "--delta",
     "1e-6"],
] + [["mean", "--method", m, "--epsilon", "1", "--delta", "1e-6"]
     + (["--alpha", "0.05"] if m not in ("dp-mean", "bounded") else []) for m in
     ["dp-mean", "bounded", "prime", "prime-ht", "filter", "robust", "prime-boosted"]]


def part_a(tmp):
    garbage = os.path.join(tmp, "garbage.csv")
    with open(garbage, "w") as f:
        f.write("a,b,c\n\x01\x02 this is not a table ,,,\"\n")
    for args in COMMANDS:  # exp-time enumerates subsets: a reference for tiny n only
        out = plan(args, garbage, n_hint=30 if "exp-time" in args else 500)
        # Stages, or an abstention on public values before any charge (the classifier's
        # feature scale at 500 rows), which the verdict states.
        staged = len(out.get("stages", [])) > 0 or \
            out.get("verdict", "").startswith("would abstain before spending anything")
        check(out.get("private") is True and staged and "estimate" not in out and
              "status" not in out, f"{' '.join(args[:3])}: a private plan and no estimate")
    out = plan(["median", "--method", "weiszfeld"], garbage, n_hint=100)
    check(out.get("private") is False and out.get("stages") == [] and "estimate" not in out,
          "a non-private method plans no stage and prints no estimate")
    rc, out, err = run(["noise", "--mechanism", "laplace", "--sensitivity", "1", "--epsilon",
                        "0.5", "--dry-run", "1", "2"])
    check(rc == 0 and out["stages"][0]["mechanism"] == "laplace", "noise --dry-run plans")

    # An endless pipe: only its first line may be read.
    fifo = os.path.join(tmp, "endless")
    os.mkfifo(fifo)

    def feed():
        try:
            with open(fifo, "w") as f:
                f.write("a,b\n")
                for _ in range(10 ** 7):
                    f.write("1,2\n" * 1000)
        except (BrokenPipeError, OSError):
            pass
    threading.Thread(target=feed, daemon=True).start()
    start = time.time()
    out = plan(["stat", "mean", "--epsilon", "0.3", "--delta", "0"], fifo, n_hint=300)
    check(time.time() - start < 20 and out.get("d") == 2, "an endless input plans from its header")

    # Charges nothing: a budget file stays byte-identical; too small a budget is refused (at rows
    # the plan can use: with too few it abstains before spending anything, budget or not).
    table = os.path.join(tmp, "small.csv")
    write_csv(table, np.random.default_rng(0).normal(size=(50, 2)), ["a", "b"])
    for total, want in (("5", 0), ("0.01", 2)):
        budget = os.path.join(tmp, f"budget{total}.json")
        rc, _, err = run(["budget", "init", budget, "--epsilon", total, "--delta", "1e-5"])
        check(rc == 0, f"budget init: {err}")
        before = open(budget, "rb").read()
        rc, out, err = run(["stat", "mean", "--epsilon", "0.3", "--delta", "0", "--budget", budget,
                            "--dry-run", "--n-hint", "50000", table])
        check(rc == want, f"dry run against a budget of {total}: exit {rc} ({err[:120]})")
        check(open(budget, "rb").read() == before, f"the budget file ({total}) is byte-identical")
    rc, _, err = run(["stat", "mean", "--epsilon", "0.3", "--delta", "0", "--n-hint", "5", table])
    check(rc == 2 and "--dry-run" in err, "--n-hint without --dry-run is refused")


# ---- (b) rows needed predicts the real run -----------------------------------------------------
CASES = [  # (name, arguments, columns, data)
    ("stat mean", ["stat", "mean", "--epsilon", "0.3", "--delta", "0"], 1, "normal"),
    ("stat sum", ["stat", "sum", "--epsilon", "0.2", "--delta", "0"], 2, "zero_inflated"),
    ("bounds", ["bounds", "--epsilon", "0.3"], 2, "normal"),
    ("mean bounded", ["mean", "--method", "bounded", "--epsilon", "0.3", "--delta", "0"], 1,
     "normal"),
    ("mean dp-mean", ["mean", "--method", "dp-mean", "--epsilon", "0.3", "--delta", "1e-6"], 2,
     "normal"),
    ("mean prime", ["mean", "--method", "prime", "--alpha", "0.05", "--epsilon", "1", "--delta",
                    "1e-6"], 2, "normal"),
    ("median", ["median", "--epsilon", "0.3", "--delta", "1e-6"], 2, "normal"),
    ("fit classify", ["fit", "--task", "classify", "--classes", "2", "--epsilon", "0.3",
                      "--delta", "1e-6", "--epochs", "1", "--n-public", "N"], 3, "labelled"),
]


def table_of(kind, n, d, rng):
    if kind == "zero_inflated":
        X = np.where(rng.random((n, d)) < 0.7, 0.0, rng.lognormal(3, 1, (n, d)))
    elif kind == "labelled":
        y = rng.integers(0, 2, n)
        X = np.c_[y, rng.normal(size=(n, d - 1)) * [1, 50][: d - 1] + y[:, None] + 1e3]
    else:
        X = rng.normal(10, 2, (n, d))
    return X


def rank_cause(out):
    reason = out.get("diagnostics", {}).get("abstained", "") if out else ""
    return "its rank error" in reason, reason


def at(args, n):  # "N" stands for the public row count (classify's --n-public)
    return [str(n) if a == "N" else a for a in args]


def releases(args, header, n):
    return plan(at(args, n), header, n_hint=n).get("verdict", "").startswith("would release")


def threshold(args, header):
    """The fewest rows at which the plan says "would release" (to 1%): where the plan's estimates
    are chosen by n (the classifier's feature scale), this is where its choice first holds."""
    hi = int((plan(at(args, 10000), header, n_hint=10000).get("rows_needed") or 5000) * 2)
    while not releases(args, header, hi) and hi < 10 ** 6:
        hi *= 2
    lo = 1
    while hi - lo > max(1, hi // 100):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if releases(args, header, mid) else (mid, hi)
    return hi


def part_b(tmp):
    rng = np.random.default_rng(7)
    for name, args, d, kind in CASES:
        names = [f"c{j}" for j in range(d)]
        header = os.path.join(tmp, f"header_{d}.csv")
        write_csv(header, np.zeros((0, d)), names)
        needed = threshold(args, header)
        stated = plan(at(args, needed), header, n_hint=needed).get("rows_needed")
        print(f"     {name}: the plan releases from {needed} rows (rows_needed {stated})")
        for factor, abstains in ((0.7, True), (1.5, False)):
            n = max(int(needed * factor), 20)
            verdict = plan(at(args, n), header, n_hint=n).get("verdict", "")
            check(verdict.startswith("would abstain" if abstains else "would release"),
                  f"{name} at n = {n} ({factor}x {needed}): verdict '{verdict[:90]}'")
            path = os.path.join(tmp, f"{name.replace(' ', '_')}_{n}.csv")
            write_csv(path, table_of(kind, n, d, rng), names)
            rc, out, err = run([*at(args, n), "--seed", "3", path])
            cause, reason = rank_cause(out)
            check(rc == 0 and cause == abstains,
                  f"{name} at n = {n}: the real run {'abstains for' if abstains else 'passes'} "
                  f"the rank error (exit {rc}; {(reason or err)[:150]})")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        part_a(tmp)
        part_b(tmp)
    print(f"{len(FAILURES)} failure(s)")
    sys.exit(1 if FAILURES else 0)
