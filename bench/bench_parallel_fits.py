"""Thread scaling of every capability (issue 17 item 7): bounded mean, PRIME, the geometric median,
user-level DP-GD, the heavy-tailed fit, private training and the moments push.

Times each library call (not the data generation) at 1..T threads on the same seeded data, best
of `reps` (wall seconds, and the process CPU seconds of that call), and checks that every thread count gives the same estimate. Prints one JSON line per
case: seconds per thread count, speedup and efficiency against 1 thread in the same run.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_parallel_fits.py [max_threads] [reps]
"""
import json
import sys
import time

import numpy as np

import dpstats


def timed(call, reps):
    best, cpu, out = float("inf"), 0.0, None
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        out = call()
        wall = time.perf_counter() - t0
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    return best, cpu, out


def scale(name, call, threads, reps, per=1.0):
    secs, cpu, first = {}, {}, None
    for t in threads:
        s, c, r = timed(lambda: call(t), reps)
        secs[t], cpu[t] = s / per, c / per
        est = np.concatenate([np.ravel(np.asarray(e)) for e in r])
        if first is None:
            first = est
        elif not np.array_equal(first, est):
            raise SystemExit(f"{name}: the estimate changed at {t} threads")
    base = secs[threads[0]]
    print(json.dumps({"case": name, "seconds": secs, "cpu_seconds": cpu,
                      "speedup": {t: base / s for t, s in secs.items()},
                      "efficiency": {t: base / s / t for t, s in secs.items()}}), flush=True)


def main():
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    threads = list(range(1, top + 1))
    rng = np.random.default_rng(1)

    n, d = 4_000_000, 50
    X = rng.normal(size=(n, d)) * 3.0 + 1.0
    scale("bounded mean, n = 4e6, d = 50",
          lambda t: [dpstats.mean(X, method="bounded", epsilon=1.0, bounds=(-20.0, 20.0), seed=3,
                                  threads=t).estimate], threads, reps)
    del X
    n, d = 1_000_000, 100
    X = rng.normal(size=(n, d))
    X[: n // 20] += 1.5  # the paper's shifted cluster: 5% of the rows moved together
    scale("PRIME practical, n = 1e6, d = 100, scale given",
          lambda t: [dpstats.mean(X, method="prime", epsilon=10.0, delta=0.01, alpha=0.05,
                                  scale=1.0, seed=3, threads=t).estimate], threads, reps)
    X = X[:, :50]
    scale("geometric median practical, n = 1e6, d = 50, domain_radius given",
          lambda t: [dpstats.geometric_median(X, epsilon=1.0, delta=1e-6, domain_radius=100.0,
                                              seed=3, threads=t).estimate], threads, reps)
    del X
    users, m, d = 20_000, 20, 10
    U = np.repeat(np.arange(users), m)
    F = rng.normal(size=(users * m, d))
    lab = (F @ rng.normal(size=d) + rng.normal(size=users * m) > 0).astype(float)
    scale("user-level DP-GD, 20,000 users x 20 rows, d = 10",
          lambda t: [dpstats.fit(F, lab, users=U, task="user-level", method="dp-gd-user",
                                 epsilon=1.0, delta=1e-6, domain_radius=10.0, feature_bound=5.0,
                                 seed=3, threads=t).estimate], threads, reps)

    n, d = 1_000_000, 20
    X = rng.standard_t(5, size=(n, d))
    y = X @ (rng.normal(size=d) / np.sqrt(d)) + rng.standard_t(5, size=n)
    for method, rows, steps in (("clipped-gd", n, 16), ("lipschitz-extension", 200_000, None)):
        def fit(t, method=method, rows=rows, steps=steps):
            r = dpstats.fit(X[:rows], y[:rows], task="heavy-tailed", method=method, epsilon=1.0,
                            domain_radius=2.0, moment_bound=5.0, centre=False, steps=steps,
                            seed=3, threads=t)
            return [r.estimate]
        scale(f"heavy-tailed {method}, n = {rows}, d = {d}" + (f", {steps} steps" if steps else ""),
              fit, threads, reps)

    n, d, k = 60_000, 100, 10
    lab = rng.integers(0, k, size=n)
    F = rng.normal(size=(n, d)) + 0.3 * lab[:, None]
    def train(t):
        r = dpstats.fit(F, lab, task="classify", model="mlp", hidden=128,
                        optimizer="dp-adam-jme", epsilon=2.0, delta=1e-5, feature_scale=10.0,
                        epochs=1, batch_size=256, classes=k, seed=3, threads=t)
        return [r.estimate.parameters if hasattr(r.estimate, "parameters") else r.estimate]
    scale(f"training dp-adam-jme, MLP 128 hidden, n = {n}, d = {d}, 1 epoch", train, threads, 1)

    steps, d = 4, 1_000_000
    M = rng.normal(size=(steps, d)) / 2000
    def push(t):
        r = dpstats.moments(M, method="jme", clip=1.0, epsilon=1.0, delta=1e-6, diagonal=True,
                            seed=3, threads=t)
        return [r.first, r.second]
    scale(f"moments push, d = {d} diagonal (seconds per step)", push, threads, reps, per=steps)


if __name__ == "__main__":
    main()
