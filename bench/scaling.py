#!/usr/bin/env python3
"""Scaling of every capability's default command with the number of rows (issue 31).

Each command below runs, as the tool a user would call, on generated tables of n rows for every n
of --sizes; the table gives wall time, CPU time (user + system of the process and its threads)
and peak resident memory, and the growth ratio per 10x rows of each. CPU time is the measure the
check uses: on a shared machine the wall clock moves with the load, the CPU a command spends does
not (much). Ratios are taken between consecutive sizes and scaled to a factor 10 of rows
(ratio ** (1 / log10(n2 / n1))).

  /usr/bin/python3 bench/scaling.py --dpstats build/dpstats --sizes 1e4,1e5,1e6 \
      --out build/bench/scaling.json --markdown build/bench/scaling.md
  /usr/bin/python3 bench/scaling.py --check 15 ...   # exit 1 when a CPU ratio exceeds 15 per 10x

The data are synthetic and seeded (Gaussian features, a planted logistic model, users of 10 rows),
written once per size to --data (default: a temporary folder, removed at the end) by a child
process: this one stays small, because a child forked from it starts with its resident size,
which ru_maxrss would count.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# (name, data kind, arguments after `dpstats`; {X} is the data file). Each is the command's
# default form: the method a user is pointed to first, every scale estimated privately.
COMMANDS = [
    ("mean bounded", "table", ["mean", "--method", "bounded", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("mean dp-mean", "table", ["mean", "--method", "dp-mean", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("mean prime", "table", ["mean", "--method", "prime", "--alpha", "0.05", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("mean prime-ht", "table", ["mean", "--method", "prime-ht", "--alpha", "0.05", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("mean filter", "table", ["mean", "--method", "filter", "--alpha", "0.05", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("median", "table", ["median", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("bounds", "table", ["bounds", "--epsilon", "1", "{X}"]),
    ("stat count", "table", ["stat", "count", "--epsilon", "1", "--delta", "0", "{X}"]),
    ("stat sum", "table", ["stat", "sum", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("stat mean", "table", ["stat", "mean", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("stat variance", "table", ["stat", "variance", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("stat std", "table", ["stat", "std", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("stat quantiles", "table", ["stat", "quantiles", "--quantiles", "0.1,0.5,0.9", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("stat histogram", "categories", ["stat", "histogram", "--header", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("moments", "moments", ["moments", "--method", "jme", "--clip", "5", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("moments, private clip", "moments", ["moments", "--method", "jme", "--epsilon", "1", "--delta", "1e-6", "{X}"]),
    ("moments live (--steps)", "moments_csv", ["moments", "--method", "jme", "--clip", "5", "--epsilon", "1", "--delta", "1e-6", "--steps", "{n}", "{X}"]),
    ("fit classify", "classify", ["fit", "--task", "classify", "--classes", "2", "--epsilon", "1", "--delta", "1e-6", "--epochs", "1", "--n-public", "{n}", "--feature-scale", "30", "--data", "{X}"]),
    ("fit classify, private scale", "classify", ["fit", "--task", "classify", "--classes", "2", "--epsilon", "1", "--delta", "1e-6", "--epochs", "1", "--n-public", "{n}", "--data", "{X}"]),
    ("fit user-level", "users", ["fit", "--task", "user-level", "--loss", "logistic", "--epsilon", "1", "--delta", "1e-6", "--domain-radius", "5", "--items-per-user", "10", "{X}"]),
    ("fit heavy-tailed", "heavy", ["fit", "--task", "heavy-tailed", "--loss", "absolute", "--epsilon", "1", "--domain-radius", "2", "{X}"]),
]


def make_data(kind, n, folder):
    """Writes the table of `kind` with n rows (once, in a child process) and returns its path."""
    ext = "csv" if kind in ("moments_csv", "categories") else "npy"
    path = os.path.join(folder, f"{kind}_{n}.{ext}")
    if not os.path.exists(path):
        subprocess.run([sys.executable, __file__, "--write-data", kind, str(n), path], check=True)
    return path


def write_data(kind, n, path):
    import numpy as np  # only in the child that writes the table
    rng = np.random.default_rng(n)
    if kind == "table":
        np.save(path, rng.normal(3.0, 2.0, size=(n, 10)))
    elif kind == "moments":
        np.save(path, rng.normal(size=(n, 4)))
    elif kind == "moments_csv":
        np.savetxt(path, rng.normal(size=(n, 4)), delimiter=",", fmt="%.6f")
    elif kind == "categories":
        cats = rng.zipf(1.5, size=n) % 50
        with open(path, "w") as f:
            f.write("dept\n")
            f.write("\n".join(f"d{c}" for c in cats))
            f.write("\n")
    elif kind == "classify":
        X = rng.normal(size=(n, 10)) * 10
        w = np.linspace(-1, 1, 10)
        y = (X @ w + rng.normal(size=n) * 5 > 0).astype(float)
        np.save(path, np.column_stack([y, X]))
    elif kind == "users":
        X = rng.normal(size=(n, 5))
        w = np.linspace(-1, 1, 5)
        y = np.where(X @ w + rng.normal(size=n) > 0, 1.0, -1.0)
        users = np.arange(n) // 10
        np.save(path, np.column_stack([users, y, X]))
    elif kind == "heavy":
        X = rng.standard_t(5, size=(n, 5))
        y = X @ np.linspace(-0.5, 0.5, 5) + rng.standard_t(5, size=n)
        np.save(path, np.column_stack([y, X]))
    else:
        raise ValueError(kind)


def run(dpstats, args, timeout):
    """Runs one command; returns (wall s, cpu s, peak RSS MiB, exit code)."""
    err_file = tempfile.TemporaryFile()
    start = time.monotonic()
    proc = subprocess.Popen([dpstats] + args, stdout=subprocess.DEVNULL, stderr=err_file)
    timer = threading.Timer(timeout, proc.kill)  # a killed run reports exit -9
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    wall = time.monotonic() - start
    err_file.seek(0)
    err = err_file.read().decode(errors="replace")
    err_file.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(f"  exit {code}: {' '.join(args)}\n  {err.strip()[-400:]}\n")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, code


def per_decade(a, b, n1, n2):
    return (b / a) ** (1.0 / math.log10(n2 / n1)) if a > 0 and b > 0 else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dpstats", default="build/dpstats")
    p.add_argument("--sizes", default="1e4,1e5,1e6")
    p.add_argument("--only", default="", help="comma-separated command names (default all)")
    p.add_argument("--data", default="")
    p.add_argument("--out", default="")
    p.add_argument("--markdown", default="")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--check", type=float, default=0, help="fail when a CPU ratio per 10x exceeds this")
    p.add_argument("--min-cpu", type=float, default=0.2,
                   help="--check skips a pair whose larger CPU time is below this (start-up noise)")
    p.add_argument("--write-data", nargs=3, metavar=("KIND", "N", "PATH"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.write_data:
        write_data(a.write_data[0], int(a.write_data[1]), a.write_data[2])
        return
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    only = set(s.strip() for s in a.only.split(",") if s.strip())
    commands = [c for c in COMMANDS if not only or c[0] in only]
    folder = a.data or tempfile.mkdtemp(prefix="dpstats-scaling-")
    os.makedirs(folder, exist_ok=True)
    try:
        report = measure(a, commands, sizes, folder)
    finally:
        if not a.data:
            shutil.rmtree(folder, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)
    md = markdown(report)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)
    print(md)
    if a.check:
        failures = check(report, a.check, a.min_cpu)
        for line in failures:
            print("FAIL", line)
        sys.exit(1 if failures else 0)


def measure(a, commands, sizes, folder):
    load = os.getloadavg()[0]
    results = []
    for name, kind, template in commands:
        row = {"command": name, "args": template, "runs": []}
        for n in sizes:
            path = make_data(kind, n, folder)
            args = [t.replace("{X}", path).replace("{n}", str(n)) for t in template]
            wall, cpu, rss, code = run(a.dpstats, args, a.timeout)
            row["runs"].append({"n": n, "wall": wall, "cpu": cpu, "rss_mib": rss, "exit": code})
            print(f"{name:30s} n={n:>9d} wall {wall:8.2f} s cpu {cpu:8.2f} s rss {rss:8.1f} MiB"
                  f"{'' if code == 0 else f' exit {code}'}", flush=True)
        results.append(row)
    return {"sizes": sizes, "load_at_start": load, "load_at_end": os.getloadavg()[0],
            "cores": os.cpu_count(), "results": results}


def markdown(report):
    sizes = report["sizes"]
    head = "| command | " + " | ".join(f"n = {n:.0e}: wall / CPU s, MiB" for n in sizes)
    pairs = list(zip(sizes, sizes[1:]))
    head += " | " + " | ".join(f"CPU ×, MiB × per 10× ({n1:.0e}→{n2:.0e})" for n1, n2 in pairs) + " |\n"
    lines = [head, "|---" * (1 + len(sizes) + len(pairs)) + "|\n"]
    for row in report["results"]:
        cells = []
        for r in row["runs"]:
            mark = "" if r["exit"] == 0 else f" (exit {r['exit']})"
            cells.append(f"{r['wall']:.2f} / {r['cpu']:.2f}, {r['rss_mib']:.0f}{mark}")
        ratios = []
        for (r1, r2) in zip(row["runs"], row["runs"][1:]):
            c = per_decade(r1["cpu"], r2["cpu"], r1["n"], r2["n"])
            m = per_decade(r1["rss_mib"], r2["rss_mib"], r1["n"], r2["n"])
            ratios.append(f"{c:.1f}, {m:.1f}")
        lines.append(f"| {row['command']} | " + " | ".join(cells + ratios) + " |\n")
    lines.append(f"\nLoad average at start {report['load_at_start']:.1f}, at end "
                 f"{report['load_at_end']:.1f} ({report['cores']} cores).\n")
    return "".join(lines)


def check(report, limit, min_cpu):
    failures = []
    for row in report["results"]:
        for r in row["runs"]:
            if r["exit"] != 0:
                failures.append(f"{row['command']} at n = {r['n']}: exit {r['exit']}")
        for (r1, r2) in zip(row["runs"], row["runs"][1:]):
            if max(r1["cpu"], r2["cpu"]) < min_cpu:  # start-up dominated: not a growth
                continue
            for what, key in (("CPU", "cpu"), ("peak memory", "rss_mib")):
                c = per_decade(r1[key], r2[key], r1["n"], r2["n"])
                if not c <= limit:
                    failures.append(f"{row['command']}: {what} x{c:.1f} per 10x rows from n = "
                                    f"{r1['n']} to {r2['n']} (limit {limit})")
    return failures


if __name__ == "__main__":
    main()
