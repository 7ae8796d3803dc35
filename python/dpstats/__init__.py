"""dpstats: differentially private statistics that stay accurate on corrupted, heavy-tailed
or streaming data.

Every function returns a :class:`Release` whose privacy is stated on it. Noise comes from the OS
CSPRNG unless ``seed`` is given (then ``release.seeded`` is True: reproducible, not secure).
Bad input raises ``ValueError`` with the same message as the C++ library.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from . import _dpstats
from . import _options
from . import _required
from . import account
from . import _table
from . import _dry
from .release import Release
from .moments import MomentEstimator, moments
from .median import geometric_median, quantile_radius
# `dpstats.median(X, ...)` is the geometric median itself (the submodule stays importable as
# `dpstats.median` through sys.modules; the attribute is the function).
median = geometric_median
from .model import FittedModel, fit
from .budget import Budget, BudgetExceeded, native as _native
from .stats import (count, sum, column_mean, variance, std, quantiles, histogram,  # noqa: A004
                    stat)
from .scale import bounds

__version__ = _dpstats.__version__
__all__ = ["Release", "read_table", "mean", "mean_methods", "laplace", "gaussian", "account",
           "__version__", "MomentEstimator", "moments", "geometric_median", "median",
           "quantile_radius", "fit", "bounds", "Budget", "BudgetExceeded", "count", "sum",
           "column_mean", "variance", "std", "quantiles", "histogram", "stat", "FittedModel",
           "output_fields"]


def _seed(seed: Optional[int]) -> Optional[int]:
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be in [0, 2^64), got {seed}")
    return int(seed)


def _float(x, name: str) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None


def output_fields() -> dict:
    """What each output field is, as declared once in the library (dpstats/output_fields.hpp):
    ``{scope: {"summary": ..., "fields": {path: {"kind": "public" | "released" | "derived" |
    "non-private", "what": ...}}}}``. Scopes are the tool's commands ("mean", "fit/classify", ...;
    the Python functions use the same). A Release carries only declared fields; the public ones are
    the same on neighbouring data sets (docs/threat-model.md "What each output field is")."""
    import json
    return json.loads(_dpstats._output_fields())


@_options.documented("input", "columns", "header", "drop_missing", "array", "max_bytes",
                     "max_line_bytes")
def read_table(path: str, *, columns: Optional[Sequence] = None, header: Optional[bool] = None,
               drop_missing: bool = False, array: Optional[str] = None,
               max_bytes: Optional[int] = None, max_line_bytes: Optional[int] = None,
               text: bool = False):
    """Reads a CSV, .npy or .npz file (or "-" for stdin) through the tool's input layer.

    Returns ``(X, names)``: an n x d float64 array and the column names ([] without a header).
    ``columns``: names, or 0-based indices. ``header``: None detects (refusing when unsure),
    True/False declares. ``drop_missing``: drop rows with a missing value (empty, NA, NaN) in a
    used column instead of raising. ``array``: the .npz member. Limits as the tool's
    --max-input-bytes / --max-line-bytes. Errors never quote a cell (docs/threat-model.md).

    ``text=True`` keeps the selected columns as text instead: ``(columns, names)`` where
    ``columns[j]`` is the list of column j's cells (quotes removed), e.g. a department column for
    :func:`histogram`: ``(dept,), _ = dpstats.read_table(p, columns=["dept"], text=True)``.
    """
    for name, value in (("max_bytes", max_bytes), ("max_line_bytes", max_line_bytes)):
        _options.check("input", name, value)  # the tool's --max-input-bytes, --max-line-bytes
    if isinstance(columns, (str, int, np.integer)):
        columns = [columns]
    cols = [] if columns is None else [c if isinstance(c, str) else int(c) for c in columns]
    if text:
        return _dpstats.read_text(str(path), cols, header, bool(drop_missing), array or "",
                                  max_bytes, max_line_bytes)
    return _dpstats.read_table(str(path), cols, header, bool(drop_missing), array or "",
                               max_bytes, max_line_bytes)


def _array(X, name: str, columns: Optional[Sequence] = None) -> np.ndarray:
    """float64, C-ordered (no copy when X already is); DataFrames and ``columns`` through the
    one table helper (dpstats/_table.py)."""
    return _table.table(X, columns, name)


@_dry.dry_runnable("mean", "bounds= (bounded) or scale=")
@_options.request_keywords("mean", _dpstats._mean_options(),
                           shared=("epsilon", "delta", "threads", "seed"))
def mean(X, method: Optional[str] = None, epsilon: Optional[float] = None, delta: float = 0.0, *,
         seed: Optional[int] = None, threads: int = _required.THREADS,
         columns: Optional[Sequence] = None, budget: Optional[Budget] = None, comm=None,
         **options) -> Release:
    """Private mean of the rows of ``X`` (n x d; a 1-D array is one column).

    ``epsilon`` is required (no default); ``delta`` > 0 for every method but "bounded".
    Methods (``dpstats.mean_methods()``; the tool's ``dpstats mean --method`` reads the same
    registry, so options and errors agree):

    method=None (default): "robust" when ``alpha`` is given, otherwise "bounded" (the clipped
    mean on private clipping bounds when ``bounds`` is not given).
    method="robust": the robust mean's one entry: each column's units are estimated privately
    and a private tail test (their count of rows beyond 3 scales) picks PRIME when the clean tail
    fits the sub-Gaussian model, PRIME-ht when it only fits bounded covariance, and abstains
    naming the column otherwise (``release.diagnostics["robust"]`` states the test and the
    choice). Takes PRIME's options but ``scale`` and ``profile``.
    method="prime": robust private mean (PRIME): up to a fraction ``alpha`` (required, in
    (0, 0.25]) of the rows may be adversarial. ``profile`` is "practical" (default; private
    median + l2 ball, zCDP accounting) or "paper". With ``fallback`` (default) the practical
    profile releases DP Mean instead when a check on public parameters predicts a
    noise-dominated filter; ``release.diagnostics["fallback"]`` then says so (when DP Mean
    abstains too, the reason says both).
    method="prime-ht": PRIME for heavy-tailed data (clean covariance only bounded).
    method="filter": the private iterative filter (``T`` rounds).
    method="exp-time": the exponential-time estimator, d = 1 only, a reference for tiny n.
    method="dp-mean": the PRIME paper's "DP Mean" baseline (not robust).
    method="prime-boosted" / "prime-ht-boosted": PRIME / PRIME-ht boosted to success
    probability 1 - ``boost_zeta`` (default 0.05; PRIME Remark 1): the rows are split at random
    into m disjoint parts (the least odd m with P(Bin(m, 3/4) <= m/2) <= boost_zeta), the base
    runs on each at the full (epsilon, delta) (parallel composition) and the part estimate with
    the smallest ball holding a strict majority of the estimates is released.
    method="tukey-median": the private Tukey median (PRIME Alg. 14): the exponential mechanism
    over a grid of the box ``bounds`` (required) with the exact Tukey depth as quality, pure
    epsilon-DP (``delta`` unused), d = 1 (4097 points) or d = 2 (129 x 129); exponential time.
    method="bounded": clip column j to ``bounds`` (one (lo, hi) pair for every column, or one
    pair per column); ``delta=0`` gives pure epsilon-DP (Laplace).

    Units: ``scale`` (one value, or one per column: each column's spread, e.g. its standard
    deviation) sets the data's units; when absent, every method but "bounded" estimates each
    column's location and scale privately from ``scale_share`` of the budget and runs in
    standard units (``release.diagnostics["units"]`` states the estimate and its cost); "bounded"
    estimates absent ``bounds`` the same way. Without ``scale_share`` the share is planned from
    n, d and the budget only (twice the smallest share whose rank errors meet the scale layer's
    reliability rule, within [0.1, 0.5], "bounded" within [0.1, 0.6]; stated in
    ``diagnostics["scale_share"]``); when the cap is not enough the release abstains before anything is read, drawn or charged, saying how many
    rows would suffice (docs/proofs/scale.md §9). A supplied scale or bounds that clips
    more rows than expected is reported in ``release.diagnostics["clipped"]``.
    Neighbouring datasets differ in one replaced row (n is public).
    ``X`` may be a pandas DataFrame; ``columns`` picks columns by name (DataFrame) or 0-based
    index (array). ``budget``: a :class:`dpstats.Budget` this release is charged to (refused
    with :class:`dpstats.BudgetExceeded`, nothing drawn or charged, when it would overspend).
    ``comm``: an mpi4py communicator when the rows are spread over MPI ranks (run under
    ``mpirun``; docs/guide.md "Running on a cluster"): ``X`` is then this rank's rows, every rank
    calls ``mean`` with the same options, rank 0 draws the noise, and every rank gets the release
    that one process holding all the rows (in rank order) would get with the same seed. Pass
    ``budget`` on rank 0 only. Methods "bounded" and "dp-mean" run on several ranks.
    """
    X = _array(X, "X", columns)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    epsilon = _required.epsilon(epsilon)
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ValueError(f"threads must be an integer, got {threads!r}")
    est, fields = _dpstats.mean(
        X, "" if method is None else str(method),
        _options.check("mean", "epsilon", _float(epsilon, "epsilon")),
        _options.check("mean", "delta", _float(delta, "delta")), _seed(seed),
        _options.check("mean", "threads", int(threads)), options, budget=_native(budget),
        comm=comm)
    return Release._from_native(est, fields, "mean")


def mean_methods():
    """The names of the methods of :func:`mean` (the library's registry, as the tool's --method)."""
    return list(_dpstats.mean_methods())


# The noise request's keywords (NoiseRequest): the mechanism is the function, the sensitivity its
# positional argument; a new field of the request becomes a keyword of both.
_NOISE_OPTIONS = [(n, k) for n, k in _dpstats._noise_options() if n != "mechanism"]


def _noise(mechanism, values, sensitivity, epsilon, delta, seed, budget, options) -> Release:
    v = _array(values, "values")
    options.update(mechanism=mechanism, sensitivity=sensitivity)  # a number (request_keywords)
    est, fields = _dpstats.noise(v, options, _float(epsilon, "epsilon"), delta, _seed(seed),
                                 _native(budget))
    return Release._from_native(est, fields, "noise")


@_dry.dry_runnable("noise laplace", stand_in=_dry.table_stand_in(None))
@_options.request_keywords("noise", _NOISE_OPTIONS)
def laplace(values, sensitivity: float, epsilon: float, seed: Optional[int] = None, *,
            budget: Optional[Budget] = None, **options) -> Release:
    """Adds Laplace noise to every entry of ``values`` (pure epsilon-DP).

    ``sensitivity`` is the l1 sensitivity of the whole array: the largest total change of its
    entries between neighbouring datasets. The estimate has the shape of ``values``.
    """
    return _noise("laplace", values, sensitivity, epsilon, 0.0, seed, budget, options)


@_dry.dry_runnable("noise gaussian", stand_in=_dry.table_stand_in(None))
@_options.request_keywords("noise", _NOISE_OPTIONS)
def gaussian(values, sensitivity: float, epsilon: float, delta: float,
             seed: Optional[int] = None, *, budget: Optional[Budget] = None,
             **options) -> Release:
    """Adds Gaussian noise to every entry of ``values`` ((epsilon, delta)-DP).

    ``sensitivity`` is the l2 sensitivity of the whole array. The estimate has the shape of
    ``values``.
    """
    return _noise("gaussian", values, sensitivity, epsilon, _float(delta, "delta"), seed, budget,
                  options)
