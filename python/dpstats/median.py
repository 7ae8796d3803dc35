"""Private geometric median (KLTY "Private geometric median in nearly-linear time", with the HSU24
baselines; the proofs are in docs/proofs/median.md).

``geometric_median`` releases a private estimate of argmin_x (1/n) sum_i ||x - x_i||.
``quantile_radius`` releases a private estimate of the 0.75-quantile radius of the data around
its geometric median (a point of the grid min_radius * 2^t). Neighbouring datasets differ in
one replaced row; ``domain_radius`` is the radius of the ball holding the median (estimated
privately when absent; privacy never relies on it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from . import _dpstats, _dry, _options, _table
from .budget import Budget, native
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


def _matrix(X, columns=None) -> np.ndarray:
    return _table.table(X, columns, "X", two_d=True)


def _opt_float(x, name: str) -> Optional[float]:
    if x is None:
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None


def _declared(name: str, x) -> Optional[float]:
    """``x`` as a float, checked against the option's declaration (dpstats/options.hpp)."""
    return _options.check("median", name, _opt_float(x, name))


def _seed(seed):
    from . import _seed as seed_check
    return seed_check(seed)


def _methods():
    return {name: (summary, options) for name, summary, options in _dpstats.median_methods()}


@_dry.dry_runnable("median", "domain_radius=")
@_options.request_keywords("median", _dpstats._median_options(),
                           shared=("epsilon", "delta", "threads", "seed"))
def geometric_median(X, method: str = "fast", epsilon: Optional[float] = None,
                     delta: Optional[float] = None, *, seed: Optional[int] = None,
                     columns: Optional[Sequence] = None, budget: Optional[Budget] = None,
                     threads: Optional[int] = None, comm=None, **options):
    """Private geometric median argmin_x (1/n) sum_i ||x - x_i|| of the rows of ``X``.

    ``X`` is n x d (a 1-D array is one column), or a pandas DataFrame; ``columns`` picks
    columns (names of a DataFrame, 0-based indices of an array). ``budget``: a
    :class:`dpstats.Budget` the release is charged to (refused, nothing charged, when it would
    overspend). Returns a :class:`Release` whose estimate has
    length d (``dpstats.median`` is the same function).

    Privacy: ``epsilon`` (> 0) and ``delta`` (in (0, 1)) are required; neighbouring datasets
    differ in one replaced row.

    method="fast" (default): KLTY's pipeline. profile="practical" (default) is the measured-best
    proven combination (permutation-design FastRadius on a subsample, geometric-step noisy
    localization, a few DP-GD passes with private Weiszfeld step sizes); profile="paper" runs
    FastRadius (Alg. 2), the HSU24 localization and FixedOrderDPSGD with the paper's budget split;
    with center="fast-center" the paper's own FastCenter (Alg. 3, certified with integer scores,
    weights and sum; its gate needs n of about 10^4 or more) replaces the localization.
    method="hsu24": the HSU24 baseline (RadiusFinder, localization, DP-GD fine-tuning; O(n^2 d)).
    method="weiszfeld": the non-private solver; returns a :class:`WeiszfeldResult` (no privacy).

    ``domain_radius``: radius of the ball around the origin that holds the median. When absent
    it is estimated privately from ``scale_share`` of the budget (absent: planned from n, d and
    the budget within [0.1, 0.5], stated in ``diagnostics["scale_share"]``; when 0.5 is not
    enough the release abstains before anything is charged): a private
    per-coordinate median c0 and a private 0.8-quantile of ||x_i - c0||; the estimate and its
    cost are in ``release.diagnostics["domain_radius_estimate"]``. When given, a private count
    of the rows beyond it (share ``bound_check_share``, default 0.01; 0 turns it off) is in
    ``diagnostics["domain_radius_check"]``, with a warning when it exceeds 5% of the rows.
    ``min_radius`` is the radius grid's start (default domain_radius / 2^20).
    If the private scale estimate finds too few rows, the release abstains
    (``release.status == "abstained"``, the reason in ``diagnostics["abstained"]``).
    ``threads``: worker threads for the data passes (default: the library's default); a seeded
    release is the same for any value.
    ``comm``: an mpi4py communicator when the rows are spread over MPI ranks (run under
    ``mpirun``): each rank passes its own rows and every rank gets the release of all of them,
    byte-identical to one process for a seed (method "fast", profile "practical"; the others are
    refused on several ranks, with the reason).
    """
    X = _matrix(X, columns)
    methods = _methods()
    if method not in methods:
        raise ValueError(f"method for median must be one of "
                         f"{', '.join(repr(m) for m in methods)}, got {method!r}")
    shared = [name for name, value in (("epsilon", epsilon), ("delta", delta), ("seed", seed),
                                       ("budget", budget)) if value is not None]
    if not _dpstats._median_is_private(str(method)):  # weiszfeld, the non-private solver
        _dpstats._median_check(str(method), options, shared)  # it takes no privacy options
        est, f, it, gap, conv = _dpstats.weiszfeld(X, 1e-10, 10000)
        return WeiszfeldResult(estimate=est, objective=f, iterations=it, rel_gap_bound=gap,
                               converged=conv)
    est, fields = _dpstats.geometric_median(
        X, str(method), options, shared, _declared("epsilon", epsilon) or 0.0,
        _declared("delta", delta) or 0.0, _seed(seed), native(budget),
        _options.check("median", "threads", _threads(threads)), comm)
    return Release._from_native(est, fields, "median")


def _threads(threads):
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ValueError(f"threads must be an integer, got {threads!r}")
    return int(threads)


@_dry.dry_runnable("median quantile_radius", "domain_radius=")
def quantile_radius(X, method: str = "fast-radius", epsilon: Optional[float] = None,
                    delta: float = 0.0, min_radius: Optional[float] = None,
                    domain_radius: Optional[float] = None,
                    seed: Optional[int] = None, *, columns: Optional[Sequence] = None,
                    budget: Optional[Budget] = None) -> Release:
    """Private 0.75-quantile radius of ``X`` around its geometric median.

    method="fast-radius": KLTY Alg. 2 ((epsilon, delta)-DP); "fast-radius-permuted": the
    permutation design (pure epsilon-DP; delta unused); "radius-finder": HSU24 (pure
    epsilon-DP, O(n^2 d)). ``epsilon`` is required (and ``delta`` > 0 for "fast-radius");
    ``min_radius`` and ``domain_radius`` (the grid r * 2^t up to R) are required. ``columns``
    and ``budget`` as in :func:`geometric_median`.
    """
    X = _matrix(X, columns)
    if min_radius is None or domain_radius is None:
        raise ValueError("min_radius and domain_radius (the search grid) are required")
    est, fields = _dpstats.quantile_radius(
        X, str(method), _opt_float(epsilon, "epsilon") or 0.0, float(_opt_float(delta, "delta")),
        float(_opt_float(min_radius, "min_radius")),
        float(_opt_float(domain_radius, "domain_radius")), _seed(seed), native(budget))
    return Release._from_native(np.asarray(est, dtype=np.float64), fields,
                                "quantile-radius")
