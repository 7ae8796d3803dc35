"""Bounded mean of a 10^6 x 10 float64 array: dpstats (private, exact clipped sum, secure noise)
against NumPy's own non-private np.clip(X, lo, hi).mean(0), measured in the same run.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_mean.py [--out FILE] [--repeats R]
"""
import argparse
import json
import platform
import time

import numpy as np

import dpstats


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    results = []
    for n, d in [(10**6, 10), (10**5, 100), (10**6, 50)]:
        X = rng.normal(size=(n, d))
        lo, hi = -3.0, 3.0
        numpy_best, numpy_med = best_of(lambda: np.clip(X, lo, hi).mean(0), args.repeats)
        dp = lambda t: dpstats.mean(X, method="bounded", epsilon=1.0, delta=0.0, bounds=(lo, hi), threads=t)
        dp1_best, dp1_med = best_of(lambda: dp(1), args.repeats)
        dp2_best, dp2_med = best_of(lambda: dp(2), args.repeats)
        row = dict(n=n, d=d, numpy_clip_mean_s=numpy_best, dpstats_bounded_1thread_s=dp1_best,
                   dpstats_bounded_2threads_s=dp2_best,
                   ratio_1thread=dp1_best / numpy_best, ratio_2threads=dp2_best / numpy_best,
                   medians=dict(numpy=numpy_med, dpstats_1=dp1_med, dpstats_2=dp2_med))
        results.append(row)
        print(f"n={n:>8} d={d:>3}  numpy clip+mean {numpy_best*1e3:7.2f} ms   "
              f"dpstats bounded (1 thread) {dp1_best*1e3:7.2f} ms  ratio {row['ratio_1thread']:.2f}   "
              f"(2 threads) {dp2_best*1e3:7.2f} ms  ratio {row['ratio_2threads']:.2f}")
    meta = dict(machine=platform.machine(), processor=platform.processor(), numpy=np.__version__,
                python=platform.python_version(), dpstats=dpstats.__version__)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(meta=meta, results=results), f, indent=2)


if __name__ == "__main__":
    main()
