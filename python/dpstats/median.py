"""Private geometric median (KLTY "Private geometric median in nearly-linear time", with the HSU24
baselines).

``geometric_median`` releases a private estimate of argmin_x (1/n) sum_i ||x - x_i||.
``quantile_radius`` releases a private estimate of the 0.75-quantile radius of the data around
its geometric median (a point of the grid min_radius * 2^t). Neighbouring datasets differ in
one replaced row; ``radius`` is a public bound on the data's scale (privacy never relies on it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _dpstats
from .release import Release


@dataclass(frozen=True)
class WeiszfeldResult:
    """The non-private geometric median: no privacy fields, ``private`` is False."""

    estimate: np.ndarray
    objective: float
    iterations: int
    rel_gap_bound: float
    converged: bool
    private: bool = False


def _matrix(X) -> np.ndarray:
    try:
        X = np.asarray(X, dtype=np.float64, order="C")
    except (TypeError, ValueError) as e:
        raise ValueError(f"X must be numeric: {e}") from None
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    return X


def _opt_float(x, name: str) -> Optional[float]:
    if x is None:
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None


def _seed(seed):
    from . import _seed as seed_check
    return seed_check(seed)


def geometric_median(X, method: str = "fast", epsilon: Optional[float] = None,
                     delta: Optional[float] = None, radius: Optional[float] = None,
                     min_radius: Optional[float] = None, seed: Optional[int] = None, *,
                     rho: Optional[float] = None, profile: str = "practical"):
    """Private geometric median of the rows of ``X`` (n x d; a 1-D array is one column).

    method="fast" (default): KLTY's pipeline. profile="practical" (default) is the measured-best
    proven combination (permutation-design FastRadius on a subsample, geometric-step noisy
    localization, a few DP-GD passes with private Weiszfeld step sizes); profile="paper" runs FastRadius (Alg. 2), the HSU24
    localization and FixedOrderDPSGD with the paper's budget split (needs epsilon and delta).
    method="hsu24": the HSU24 baseline (RadiusFinder, localization, DP-GD fine-tuning; O(n^2 d)).
    method="weiszfeld": the non-private solver; returns a :class:`WeiszfeldResult` (no privacy).
    Budget: ``epsilon`` with ``delta``, or ``rho`` (zCDP). ``radius`` (public bound R) is required
    for the private methods; ``min_radius`` is the radius grid's start (default R / 2^20).
    """
    X = _matrix(X)
    if method == "weiszfeld":
        if any(v is not None for v in (epsilon, delta, rho, seed)):
            raise ValueError("method='weiszfeld' is not private: it takes no epsilon, delta, "
                             "rho or seed")
        est, f, it, gap, conv = _dpstats.weiszfeld(X, 1e-10, 10000)
        return WeiszfeldResult(estimate=est, objective=f, iterations=it, rel_gap_bound=gap,
                               converged=conv)
    if radius is None:
        raise ValueError("radius (public bound R on the data's scale) is required")
    est, fields = _dpstats.geometric_median(
        X, str(method), str(profile), _opt_float(epsilon, "epsilon"), _opt_float(delta, "delta"),
        _opt_float(rho, "rho"), float(_opt_float(radius, "radius")),
        _opt_float(min_radius, "min_radius"), _seed(seed))
    return Release._from_native(est, fields)


def quantile_radius(X, method: str = "fast-radius", epsilon: Optional[float] = None,
                    delta: Optional[float] = None, min_radius: Optional[float] = None,
                    radius: Optional[float] = None, seed: Optional[int] = None) -> Release:
    """Private 0.75-quantile radius of ``X`` around its geometric median.

    method="fast-radius": KLTY Alg. 2 ((epsilon, delta)-DP); "fast-radius-permuted": the
    permutation design (pure epsilon-DP; delta unused); "radius-finder": HSU24 (pure
    epsilon-DP, O(n^2 d)). ``min_radius`` and ``radius`` (the grid r * 2^t up to R) are required.
    """
    from . import _required
    epsilon = _required.epsilon(epsilon)
    if method == "fast-radius":
        delta = _required.delta(delta, "method 'fast-radius'")
    elif delta is None:
        delta = 0.0
    X = _matrix(X)
    if min_radius is None or radius is None:
        raise ValueError("min_radius and radius (the search grid) are required")
    est, fields = _dpstats.quantile_radius(
        X, str(method), float(_opt_float(epsilon, "epsilon")), float(_opt_float(delta, "delta")),
        float(_opt_float(min_radius, "min_radius")), float(_opt_float(radius, "radius")),
        _seed(seed))
    return Release._from_native(np.asarray(est, dtype=np.float64), fields)
