#!/usr/bin/env python3
"""Independent fine-grid PLD reference for the Poisson-subsampled Gaussian (add/remove).

Writes tests/reference/subsampled_gaussian_pld.csv, read by tests/unit/test_pld.cpp
(Pld.SmallDeltaReferenceTable). Run from the repository root:

    /usr/bin/python3 tests/reference/pld_reference.py > tests/reference/subsampled_gaussian_pld.csv

(NumPy and SciPy only; about a minute.) Nothing here is shared with src/privacy/: the pairs are
derived again below, the composition runs on one fixed fine grid, without dpstats' coarsening, with
its own tail and FFT handling.

Method, for each row (q, sigma, T, delta):
  * Both directions of the dominating pair, on Delta = 1: remove (q N(1, s^2) + (1-q) N(0, s^2),
    N(0, s^2)) and add mirrored (N(1, s^2), (1-q) N(1, s^2) + q N(0, s^2)). The loss is monotone
    in x; each loss cell (k h, (k+1) h] is an x-interval whose P- and Q-masses are normal CDF
    differences (each taken in its own tail), split between the two grid points keeping mass and
    Q-mass ("connect the dots", Doroshenko et al. 2022): a pessimistic discretisation.
  * P-mass beyond 12 sigma of P's components (< 2e-33): the lower tail is moved up onto the lowest
    grid point, the upper tail to +infinity.
  * T-fold composition by repeated squaring on the one fixed grid (no coarsening); each
    convolution takes the 512 largest masses of each side directly and the rest by FFT
    (scipy.signal.fftconvolve; its signed rounding noise is kept, not clipped, so that it adds no
    bias), and cuts from each tail (the upper part to +infinity, the lower onto the lowest kept
    point): the upper tail at most delta 1e-6 scaled by 2^j / T for the 2^j-fold base, which
    enters the result T / 2^j times (together at most about 2 log2(T) delta 1e-6 at +infinity),
    the lower tail at most delta 1e-6 per level.
  * epsilon(delta): the exact read-out of the discrete PLD, the larger of the two directions.
The grid h_ref is chosen per row so that the single step's loss standard deviation spans at
least 8 cells; `eps_pld_2h` is the same computation on 2 h_ref: the two agree to the digits
shown in the table's `convergence` column (|eps(h) - eps(2h)| / eps(h)), which bounds how far
the fine-grid value can be above the true epsilon (the error of connect-the-dots shrinks as h
decreases, and it is an upper bound at every h).
"""
import math
import sys

import numpy as np
from scipy import signal, special

ROWS = [
    # q, sigma, steps, delta: the issue-32 regimes (small q, sigma < 1, T >= 1e6, delta <= 1e-8)
    (2e-4, 0.6, 1_000_000, 1e-8),
    (1e-4, 1.0, 1_000_000, 1e-8),
    (1e-4, 0.8, 10_000_000, 1e-8),
]


def log_ndtr(x):
    return special.log_ndtr(x)


def cell_masses(edges, centre, s):
    """P(N(centre, s^2) in (e_i, e_{i+1}]) for consecutive edges, accurate in both tails."""
    z = (edges - centre) / s
    lower = special.ndtr(z)          # F(z)
    upper = special.ndtr(-z)         # 1 - F(z)
    diff_low = np.diff(lower)
    diff_up = -np.diff(upper)
    mid = 0.5 * (z[:-1] + z[1:])
    return np.maximum(np.where(mid < 0, diff_low, diff_up), 0.0)


def pair(q, direction):
    """(p1, p2): P = p1 A + (1-p1) B, Q = p2 A + (1-p2) B, A = N(1, s^2), B = N(0, s^2)."""
    return (q, 0.0) if direction == "remove" else (1.0, 1.0 - q)


def loss_of_x(x, q, s, direction):
    p1, p2 = pair(q, direction)
    log_r = (2 * x - 1) / (2 * s * s)
    def mix(p):
        if p == 0.0:
            return np.zeros_like(log_r)
        if p == 1.0:
            return log_r
        return np.logaddexp(math.log(p) + log_r, math.log1p(-p))
    return mix(p1) - mix(p2)


def x_of_loss(l, q, s, direction):
    """Inverse of loss_of_x (l a grid array); +-inf outside the loss range."""
    p1, p2 = pair(q, direction)
    # (p1 r + 1 - p1) = e^l (p2 r + 1 - p2)  ->  r = (e^l (1 - p2) - (1 - p1)) / (p1 - p2 e^l)
    el = np.exp(l)
    num = el * (1 - p2) - (1 - p1)
    den = p1 - p2 * el
    with np.errstate(divide="ignore", invalid="ignore"):
        log_r = np.where(num <= 0, -np.inf, np.where(den <= 0, np.inf, np.log(num) - np.log(den)))
    return log_r * s * s + 0.5


def discretise(q, s, h, direction):
    """Connect-the-dots PMF: (offset k0, masses on (k0 + i) h, mass at +infinity)."""
    # P-mass beyond these is below Phi(-12) = 1.8e-33: moved pessimistically (below)
    x_lo = (-12 * s) if direction == "remove" else (1 - 12 * s)
    x_hi = 1 + 12 * s
    l_lo, l_hi = loss_of_x(np.array([x_lo, x_hi]), q, s, direction)
    k_lo, k_hi = math.floor(l_lo / h), math.ceil(l_hi / h)
    ks = np.arange(k_lo, k_hi + 1)
    edges = x_of_loss(ks * h, q, s, direction)
    edges[0] = max(edges[0], -np.inf)
    p1, p2 = pair(q, direction)
    a_cells = cell_masses(edges, 1.0, s)
    b_cells = cell_masses(edges, 0.0, s)
    p = p1 * a_cells + (1 - p1) * b_cells
    qm = p2 * a_cells + (1 - p2) * b_cells
    a = ks[:-1] * h
    mb = np.clip((p - qm * np.exp(a)) / -math.expm1(-h), 0.0, p)
    mass = np.zeros(len(ks))
    mass[:-1] += p - mb
    mass[1:] += mb
    # tails: below edges[0] onto k_lo (pessimistic), above edges[-1] to +infinity
    below = p1 * special.ndtr((edges[0] - 1) / s) + (1 - p1) * special.ndtr(edges[0] / s)
    above = p1 * special.ndtr(-(edges[-1] - 1) / s) + (1 - p1) * special.ndtr(-edges[-1] / s)
    mass[0] += below
    nz = np.nonzero(mass)[0]
    return k_lo + nz[0], mass[nz[0]:nz[-1] + 1], above


def truncate(k0, mass, infinity, tail, tail_low):
    """Cuts at most `tail` from the upper end (to +infinity) and `tail_low` from the lower end
    (onto the lowest kept point): both pessimistic. The sums are signed (the FFT's noise averages
    out)."""
    up = np.cumsum(mass[::-1])
    n_up = int(np.argmax(up > tail)) if np.any(up > tail) else len(mass) - 1
    if n_up > 0:
        infinity += max(0.0, up[n_up - 1])
        mass = mass[: len(mass) - n_up]
    low = np.cumsum(mass)
    n_low = int(np.argmax(low > tail_low)) if np.any(low > tail_low) else len(mass) - 1
    n_low = min(n_low, len(mass) - 1)
    if n_low > 0:
        mass = mass[n_low:].copy()
        mass[0] += low[n_low - 1]
        k0 += n_low
    return k0, mass, infinity


def convolve(a, b, tail, tail_low, big=512):
    """Composition of two PMFs (k0, mass, infinity) on the same grid. The `big` largest masses
    of each side are convolved directly and only the rest by FFT, so that the FFT's rounding
    noise (relative to the l2 norms of what it convolves) stays far below the tails."""
    x, y = a[1], b[1]
    out = np.zeros(len(x) + len(y) - 1)
    xs, ys = x.copy(), y.copy()
    for i in np.argsort(x)[-big:]:
        out[i:i + len(y)] += x[i] * y
        xs[i] = 0.0
    for j in np.argsort(y)[-big:]:
        out[j:j + len(x)] += xs * y[j]
        ys[j] = 0.0
    # no clipping of the FFT's signed rounding noise: clipping would bias the mass upwards, and
    # that bias, added early, is multiplied by the number of compositions that follow
    out = out + signal.fftconvolve(xs, ys)
    infinity = a[2] + b[2] - a[2] * b[2]
    return truncate(a[0] + b[0], out, infinity, tail, tail_low)


def compose(k0, mass, inf_mass, steps, tail):
    """T-fold composition by repeated squaring on the fixed grid. The 2^j-fold base enters the
    result about T / 2^j times, so its truncations cut tail 2^j / T (mass moved to +infinity
    early is multiplied by the compositions that follow). The lower tail, moved up onto the
    lowest kept loss far below any epsilon of interest, is cut at `tail` at every level."""
    total, copies = steps, 1
    base = truncate(k0, mass, inf_mass, tail / total, tail)
    result = None
    while steps:
        if steps & 1:
            result = base if result is None else convolve(result, base, tail, tail)
        steps >>= 1
        if steps:
            copies *= 2
            base = convolve(base, base, tail * copies / total, tail)
    return result


def epsilon_for_delta(lo, mass, infinity, h, delta):
    if infinity >= delta:
        return math.inf
    losses = (lo + np.arange(len(mass))) * h
    s1 = np.cumsum(mass[::-1])[::-1] + infinity            # mass at losses >= l_i
    s2 = np.cumsum((mass * np.exp(-losses))[::-1])[::-1]
    # delta(eps) on (l_{i-1}, l_i] = s1_i - e^eps s2_i ; find the largest i with delta(l_{i-1}) > delta
    d_at = s1[1:] - np.exp(losses[:-1]) * s2[1:]            # delta at l_{i-1} using masses >= l_i
    over = np.nonzero(s1[1:] - np.exp(losses[:-1]) * s2[1:] > delta)[0]
    if len(over) == 0:
        return 0.0
    i = over[-1] + 1
    return max(0.0, math.log((s1[i] - delta) / s2[i]))


def epsilon(q, s, steps, delta, h):
    eps = 0.0
    for direction in ("remove", "add"):
        k0, mass, inf_mass = discretise(q, s, h, direction)
        # all truncations together move about 2 log2(T) delta 1e-6 pessimistically
        lo, out, infinity = compose(k0, mass, inf_mass, steps, tail=delta * 1e-6)
        eps = max(eps, epsilon_for_delta(lo, out, infinity, h, delta))
    return eps


def grid_for(q, s):
    """h_ref: the single step's loss spread (about q sqrt(e^{1/s^2} - 1)) over >= 8 cells."""
    spread = q * math.sqrt(math.expm1(1 / (s * s)))
    return 2.0 ** math.floor(math.log2(spread / 8))


def main():
    print("# Poisson-subsampled Gaussian, add/remove, sensitivity 1: epsilon at delta from an "
          "independent fine-grid pessimistic PLD (tests/reference/pld_reference.py; "
          "connect-the-dots on grid h_ref, T-fold by squaring on a fixed grid).")
    print("sampling_rate,noise_multiplier,steps,delta,h_ref,eps_pld,eps_pld_2h,convergence")
    for q, s, steps, delta in ROWS:
        h = grid_for(q, s)
        fine = epsilon(q, s, steps, delta, h)
        coarse = epsilon(q, s, steps, delta, 2 * h)
        print(f"{q},{s},{steps},{delta},{h:.6g},{fine:.6f},{coarse:.6f},"
              f"{abs(coarse - fine) / fine:.2e}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
