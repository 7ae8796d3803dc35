"""The everyday statistics: private count, sum, mean, variance, standard deviation, quantiles and
histograms of a table's columns (the tool's ``dpstats stat``; docs/guide.md "The everyday statistics").

Every function takes ``epsilon`` and ``delta`` (required; ``delta=0`` gives pure DP with Laplace
noise, ``delta > 0`` Gaussian noise), an optional :class:`dpstats.Budget` (``budget=``) that the
release is charged to, and ``seed`` (reproducible, not secure). ``X`` is n x d (a 1-D array is one
column); results have one value per column.

``X`` may be a pandas DataFrame; ``columns`` picks its columns by name (0-based indices for an
array), as for every function taking a table (``columns=["age", "salary"]``).

``bounds``: the public clipping range of each column -- one ``(lo, hi)`` for every column or a
list of one per column. Values outside are clipped, and a small private count of clipped rows
(5% of the budget) is reported in ``diagnostics["clipped_rows"]`` with a warning when it is
large. Without ``bounds`` they are estimated privately from ``scale_share`` (default 0.6; quantiles:
planned from n, d, the probabilities and the budget, stated in ``diagnostics["scale_share"]``) of the budget
(stated in ``diagnostics["bounds_estimate"]``; the release abstains, naming the cause and what
would suffice, when the estimate is not reliable), and the rows outside them are counted the
same way. Every release states its error in ``diagnostics["stated_error"]`` (noise plus the
clipped rows' term, at confidence 0.99).

``comm``: an mpi4py communicator when the rows are spread over MPI ranks (run under ``mpirun``):
each rank passes its own rows and every rank gets the release of all of them, byte-identical to
one process for a seed (``histogram`` too: each rank passes its own values).

Neighbouring: ``count`` and ``histogram`` protect the addition or removal of one row; the others
the replacement of one row (n public).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from . import _dpstats, _dry, _options, _required, _table
from .budget import Budget, native
from .release import Release


def _matrix(X, columns=None) -> np.ndarray:
    X = _table.table(X, columns, "X", two_d=True)
    if X.ndim != 2:
        raise ValueError(f"X must be 1-D or 2-D, got shape {X.shape}")
    return X


def _rows(X) -> np.ndarray:
    """Counting rows reads no cell (the tool's ``stat count`` without ``--columns``): a table with
    text columns (names, dates, codes) is fine; only its number of rows enters the count."""
    shape = np.shape(X) if isinstance(X, np.ndarray) else (len(X),) if hasattr(X, "__len__") else ()
    if len(shape) not in (1, 2):
        raise ValueError(f"X must be 1-D or 2-D, got shape {shape}")
    return np.zeros((shape[0], 1))


def _seed(seed):
    from . import _seed as check
    return check(seed)


def _threads(threads) -> int:
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    return int(threads)


@_dry.dry_runnable("stat stat", "bounds=")
@_options.request_keywords("stat", _dpstats._stat_options(),
                           shared=("epsilon", "delta", "threads", "seed"))
def stat(statistic: str, X, epsilon: Optional[float] = None, delta: Optional[float] = None, *,
         budget: Optional[Budget] = None, seed: Optional[int] = None,
         threads: int = _required.THREADS, columns: Optional[Sequence] = None,
         comm=None, **options) -> Release:
    """One statistic by name ("count", "sum", "mean", "variance", "std", "quantiles"); the
    functions below call it. The keywords are the statistics' declared options (a statistic's
    own are those whose declaration names it); one a statistic does not read raises ValueError."""
    epsilon = _required.epsilon(epsilon)
    delta = _required.delta(delta)
    table = _rows(X) if statistic == "count" and columns is None else _matrix(X, columns)
    est, fields = _dpstats.stat(str(statistic), table, epsilon, delta, options, _seed(seed),
                                _threads(threads), native(budget), comm)
    if statistic == "quantiles" and est.size:
        est = est.reshape(-1, len(options["quantiles"]))
    return Release._from_native(est, fields, "stat")


@_dry.dry_runnable("stat count", "bounds=")
def count(X, epsilon: Optional[float] = None, delta: Optional[float] = None, *,
          budget: Optional[Budget] = None, seed: Optional[int] = None,
          columns: Optional[Sequence] = None, comm=None) -> Release:
    """Private number of rows of ``X`` (add/remove one row; estimate of shape (1,)). Without
    ``columns`` no cell is read, so text columns are fine; with ``columns`` the rows of those
    (numeric) columns are counted."""
    return stat("count", X, epsilon, delta, budget=budget, seed=seed, columns=columns, comm=comm)


@_dry.dry_runnable("stat sum", "bounds=")
def sum(X, epsilon: Optional[float] = None, delta: Optional[float] = None, *, bounds=None,
        scale_share: Optional[float] = None, budget: Optional[Budget] = None,
        seed: Optional[int] = None, threads: int = _required.THREADS,
        columns: Optional[Sequence] = None, comm=None) -> Release:
    """Private per-column sum of ``X`` clipped to ``bounds`` (``help(dpstats.stats)``: bounds, clipped-row counts, neighbouring)."""
    return stat("sum", X, epsilon, delta, bounds=bounds, scale_share=scale_share, budget=budget,
                seed=seed, threads=threads, columns=columns, comm=comm)


@_dry.dry_runnable("stat column_mean", "bounds=")
def column_mean(X, epsilon: Optional[float] = None, delta: Optional[float] = None, *,
                bounds=None, scale_share: Optional[float] = None,
                budget: Optional[Budget] = None, seed: Optional[int] = None,
                threads: int = _required.THREADS, columns: Optional[Sequence] = None,
                comm=None) -> Release:
    """Private per-column mean of ``X`` clipped to per-column ``bounds`` (``dpstats.mean`` holds
    the robust and high-dimensional means)."""
    return stat("mean", X, epsilon, delta, bounds=bounds, scale_share=scale_share, budget=budget,
                seed=seed, threads=threads, columns=columns, comm=comm)


@_dry.dry_runnable("stat variance", "bounds=")
def variance(X, epsilon: Optional[float] = None, delta: Optional[float] = None, *, bounds=None,
             scale_share: Optional[float] = None, budget: Optional[Budget] = None,
             seed: Optional[int] = None, threads: int = _required.THREADS,
             columns: Optional[Sequence] = None, comm=None) -> Release:
    """Private per-column variance (population, 1/n) of ``X`` clipped to ``bounds``: half the
    budget for the mean, half for the mean square (``help(dpstats.stats)``: bounds, clipped-row counts)."""
    return stat("variance", X, epsilon, delta, bounds=bounds, scale_share=scale_share,
                budget=budget, seed=seed, threads=threads, columns=columns, comm=comm)


@_dry.dry_runnable("stat std", "bounds=")
def std(X, epsilon: Optional[float] = None, delta: Optional[float] = None, *, bounds=None,
        scale_share: Optional[float] = None, budget: Optional[Budget] = None,
        seed: Optional[int] = None, threads: int = _required.THREADS,
        columns: Optional[Sequence] = None, comm=None) -> Release:
    """Private per-column standard deviation: the square root of :func:`variance`."""
    return stat("std", X, epsilon, delta, bounds=bounds, scale_share=scale_share, budget=budget,
                seed=seed, threads=threads, columns=columns, comm=comm)


@_dry.dry_runnable("stat quantiles", "bounds=")
def quantiles(X, quantiles: Sequence[float], epsilon: Optional[float] = None,
              delta: Optional[float] = None, *, bounds=None, grid_size: Optional[int] = None,
              scale_share: Optional[float] = None, budget: Optional[Budget] = None,
              seed: Optional[int] = None, columns: Optional[Sequence] = None,
              comm=None) -> Release:
    """Private quantiles of each column of ``X``: ``estimate[j, k]`` is column j's quantile at
    probability ``quantiles[k]`` (nondecreasing in the probability). Each (column, probability)
    is a private selection of one cell of ``grid_size`` (default 1024) evenly spaced points over
    the column's range, at an equal share of epsilon: the ``bounds``, or without them the
    privately estimated bounds widened three times about their centre, so that a quantile in a
    heavy tail is not capped. ``diagnostics["stated_error"]`` states the rank error t and the
    resolution h: with probability 0.99 each estimate lies between the (q - t/n)- and
    (q + (t+1)/n)-quantiles, widened by h (t counts the rows outside the range, privately); the
    release abstains when t/n would exceed 0.25."""
    return stat("quantiles", X, epsilon, delta, bounds=bounds, quantiles=quantiles,
                grid_size=grid_size, scale_share=scale_share, budget=budget, seed=seed, columns=columns,
                comm=comm)


@_dry.dry_runnable("stat histogram", stand_in=_dry.category_stand_in())
def histogram(values, epsilon: Optional[float] = None, delta: Optional[float] = None, *,
              categories: Optional[Sequence] = None, budget: Optional[Budget] = None,
              seed: Optional[int] = None, columns: Optional[Sequence] = None,
              comm=None) -> Release:
    """Private counts of a categorical column (strings or integer codes; add/remove one row).

    With ``categories`` (public), each listed category gets a noisy count (others are dropped;
    pure DP with ``delta=0``). Without, the categories to release are selected privately (a
    stability histogram: rare categories are suppressed; needs ``delta > 0``). The estimate is a
    dict {category: noisy count}, categories in the type of the input (int codes stay ints).
    ``values`` may be a list, a 1-D array, a pandas Series, or a DataFrame with ``columns`` naming
    its one text column (``histogram(df, 1.0, 1e-6, columns="dept")``).
    """
    epsilon = _required.epsilon(epsilon)
    delta = _required.delta(delta)
    arr = np.asarray(_table.category_column(values, columns))
    if arr.ndim != 1:
        raise ValueError(f"values must be one column (1-D), got shape {arr.shape}")
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)  # float codes (a column of a float table): 3.0 is category 3
    # from the dtype alone: a rank holding no values (comm=) names the categories like the others
    integer = np.issubdtype(arr.dtype, np.integer)
    as_text = [str(v) for v in arr.tolist()]
    given = {"categories": _options._converted("categories", "texts", categories)}
    names, counts, fields = _dpstats.stat_histogram(as_text, given, epsilon, delta, _seed(seed),
                                                    native(budget), comm)
    keys = [int(n) for n in names] if integer else list(names)
    return Release._from_native(dict(zip(keys, counts.tolist())), fields, "stat")


registry = {name: {"summary": summary, "options": list(options)}
            for name, summary, options in _dpstats.stat_registry()}
