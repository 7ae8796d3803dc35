"""Input at memory speed (issue 17 item 1): dpstats' readers against NumPy, in the same run.

1. `.npy` load: np.load(path) against dpstats.read_table(path) (memory-mapped, zero-copy for
   float64 C order; the finite-value scan included), both in this process, file in the page cache.
2. The whole tool: `dpstats mean --method bounded --bounds LO,HI` on the .npy (wall time and peak
   RSS from /usr/bin/time -v, at 1 and 2 threads) against NumPy's non-private
   np.clip(np.load(path), LO, HI).mean(0) (in this process: no interpreter start counted).
3. CSV: MB/s of `dpstats mean --method bounded` on a CSV (the reader's time; the mean is ~1%), at
   1 and 2 threads, and of dpstats.read_table against np.loadtxt's C parser (pandas-free).

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_input.py [--n N] [--d D]
       [--csv-n N] [--dir DIR] [--tool build/dpstats] [--repeats R] [--out FILE]
"""
import argparse
import json
import os
import platform
import re
import subprocess
import time

import numpy as np

import dpstats


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run_tool(tool, args, repeats):
    """Best wall time and the peak RSS (KiB) of `tool args` over `repeats` runs."""
    best, rss = float("inf"), 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-v", tool, *args], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        best = min(best, wall)
        rss = max(rss, int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)))
    return best, rss


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10**7)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--csv-n", type=int, default=10**6)
    ap.add_argument("--dir", default="/tmp/dpstats_bench_input")
    ap.add_argument("--tool", default="build/dpstats")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    lo, hi = -3.0, 3.0
    res = dict(machine=platform.processor() or platform.machine(), cores=os.cpu_count(), n=a.n, d=a.d)

    npy = os.path.join(a.dir, f"x_{a.n}x{a.d}.npy")
    if not os.path.exists(npy):
        rng = np.random.default_rng(0)
        X = np.empty((a.n, a.d))
        for s in range(0, a.n, 10**6):  # in blocks: no second copy while generating
            X[s:s + 10**6] = rng.normal(size=(min(10**6, a.n - s), a.d))
        np.save(npy, X)
        del X
    warm(npy)
    data_mb = a.n * a.d * 8 / 1e6
    res["data_MB"] = data_mb

    # 1. load, in this process
    res["np_load_s"] = best_of(lambda: np.load(npy), a.repeats)
    res["dpstats_read_table_s"] = best_of(lambda: dpstats.read_table(npy), a.repeats)
    res["load_ratio"] = res["dpstats_read_table_s"] / res["np_load_s"]

    # 2. the whole bounded mean
    res["numpy_load_clip_mean_s"] = best_of(lambda: np.clip(np.load(npy), lo, hi).mean(0), a.repeats)
    for t in (1, 2):
        wall, rss = run_tool(a.tool, ["mean", "--method", "bounded", "--bounds", f"{lo},{hi}",
                                      "--epsilon", "1", "--delta", "0", "--threads", str(t), npy],
                             a.repeats)
        res[f"tool_bounded_{t}thread_s"] = wall
        res[f"tool_bounded_{t}thread_peak_rss_over_data"] = rss * 1024 / (data_mb * 1e6)
        res[f"tool_bounded_{t}thread_ratio_to_numpy"] = wall / res["numpy_load_clip_mean_s"]

    # 3. CSV
    csv = os.path.join(a.dir, f"x_{a.csv_n}x10.csv")
    if not os.path.exists(csv):
        rng = np.random.default_rng(1)
        np.savetxt(csv, rng.normal(size=(a.csv_n, 10)), delimiter=",", fmt="%.17g")
    warm(csv)
    csv_mb = os.path.getsize(csv) / 1e6
    res["csv_MB"] = csv_mb
    for t in (1, 2):
        wall, rss = run_tool(a.tool, ["mean", "--method", "bounded", "--bounds", f"{lo},{hi}",
                                      "--epsilon", "1", "--delta", "0", "--threads", str(t), csv],
                             a.repeats)
        res[f"csv_tool_{t}thread_MB_per_s"] = csv_mb / wall
        res[f"csv_tool_{t}thread_peak_rss_over_values"] = rss * 1024 / (a.csv_n * 10 * 8)
    res["csv_np_loadtxt_MB_per_s"] = csv_mb / best_of(lambda: np.loadtxt(csv, delimiter=","), 1)

    print(json.dumps(res, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
