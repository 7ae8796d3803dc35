"""Continual release of first and second moments (docs/proofs/moments.md).

A stream of vectors arrives one per step; after every step the estimator releases private
estimates of the weighted first moment ``Y_t = sum_i A1[t, i] x_i`` and second moment
``S_t = sum_i A2[t, i] x_i x_i^T`` (or its diagonal). The whole stream is one Gaussian mechanism
(matrix factorization A = B C), so there is no composition across steps.

Methods: ``"jme"`` (joint moment estimation, the default), ``"lambda-jme"``, ``"ime"``,
``"cs"``, ``"pp"`` and ``"pp-debiased"`` (``lambda_``, the tool's ``--lambda``, scales
``"lambda-jme"``; ``lambda`` is a Python keyword). Workloads: ``"prefix"``, ``"average"``,
``"decay:BETA"``, ``"window:K"``, ``"adam:BETA"``. Factorizations: ``"auto"`` (the default: a
buffered-linear-Toeplitz ``"blt:M"`` sized from the horizon, O(M) a step for any horizon;
``"banded:4K"`` for ``"window:K"``), ``"input"``, ``"output"``, ``"sqrt"`` (the dense square
root, O(t) a step), ``"banded:B"`` and ``"blt:M"``. Rows with norm above ``clip`` (the
l2 clip norm of one row, in the data's units) are clipped (``on_norm="clip"``) or rejected.
Without ``clip``, ``moments(X, ...)`` estimates it privately (3 x a private median of the row
norms) from ``scale_share`` of the budget (its cost is in the ledger, the value in
``diagnostics["clip"]``) and abstains with a reason when that quantile cannot be trusted; with a
``clip`` it states a private count of the clipped rows from ``clip_check_share`` of the budget
(``diagnostics["clip_check"]``, and ``diagnostics["warning"]`` when the clip bites). Without a
``clip`` and on a table long enough for it, ``moments`` also centres the rows on a private
per-column location (``diagnostics["centre"]``, half of ``scale_share``; ``centre=False`` turns it
off) and reconstructs the raw moments. The streaming ``MomentEstimator`` without a ``clip`` learns
one privately per block of ``clip_block`` rows (adaptive clip; the first block is held and
entered with the first clipped row; ``estimator.clip`` is the current clip). ``epsilon`` and ``delta`` have no defaults.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import _dpstats, _dry, _required, _table
from ._options import check as _check, documented as _documented, request_keywords
from .budget import Budget, native
from .release import Release


@dataclass(frozen=True)
class MomentsRelease(Release):
    """A moments release: ``.first`` is T x d, ``.second`` T x d x d (T x d when diagonal).

    ``.estimate`` is ``.first``.
    """

    first: Optional[np.ndarray] = None
    second: Optional[np.ndarray] = None

    @classmethod
    def _from_parts(cls, first: np.ndarray, second: np.ndarray, fields_json: str):
        return cls(estimate=first, first=first, second=second,
                   **cls._fields(fields_json, "moments"))

    def __repr__(self) -> str:
        return (f"MomentsRelease(first.shape={self.first.shape}, second.shape="
                f"{self.second.shape}, epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"rho={self.rho}, certified={self.certified}, seeded={self.seeded})")


def _seed(seed):
    from . import _seed as check
    return check(seed)


def _opt_float(x, name: str) -> Optional[float]:
    if x is None:
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None


def _int(x, name: str) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 1:
        raise ValueError(f"{name} must be a positive integer, got {x!r}")
    return int(x)


# The moments' declared options (MomentsRequest's one field list). clip_block is the live
# stream's (MomentEstimator), centre the table's (moments).
_FIELDS = tuple(_dpstats._moments_options())
_TABLE = [f for f in _FIELDS if f[0] != "clip_block"]
_LIVE = [f for f in _FIELDS if f[0] != "centre"]


def _options(steps, dim, method, epsilon, delta, threads, options):
    if epsilon is None and options.get("rho") is None and options.get("noise_multiplier") is None:
        raise ValueError("give epsilon (with delta), rho or noise_multiplier")
    if epsilon is not None:  # 0 is out of its range ("must be > 0"), not an absent epsilon
        epsilon = _required.epsilon(epsilon)
    delta = _required.delta(delta, "it states the release's epsilon")
    return _dpstats._moments_options_of(
        steps, dim, str(method), options, float(_opt_float(epsilon, "epsilon") or 0.0),
        float(_opt_float(delta, "delta")), None if threads is None else _int(threads, "threads"))


@_documented("moments", "steps")
class MomentEstimator:
    """Streaming continual release: ``push(x)`` returns this step's ``(first, second)``.

    ``first`` has shape (dim,), ``second`` (dim, dim) or (dim,) when ``diagonal``. The budget
    (``epsilon``/``delta``, or ``rho``, or ``noise_multiplier``) covers all ``steps`` pushes and is
    charged at construction; a push after ``steps`` raises ``ValueError``, as do NaN/Inf rows.
    ``threads`` runs each step of large releases (>= 32768 coordinates) on that many threads;
    with a ``seed`` the output is the same for any ``threads``. ``budget``: a
    :class:`dpstats.Budget` the whole stream is charged to at construction.
    """

    @request_keywords("moments", _LIVE)
    def __init__(self, dim: int, method: str = "jme", workload: str = "prefix",
                 factorization: str = "auto", clip: Optional[float] = None,
                 epsilon: Optional[float] = None, delta: Optional[float] = None, *, steps: int,
                 diagonal: bool = False, seed: Optional[int] = None,
                 threads: Optional[int] = None, budget: Optional[Budget] = None, **options):
        steps = _int(_check("moments", "steps", steps), "steps")  # the declared range
        options.update(workload=workload, factorization=factorization, clip=clip,
                       diagonal=diagonal)
        opts = _options(steps, _int(dim, "dim"), method, epsilon, delta, threads, options)
        self._native = _dpstats._MomentEstimator(opts, _seed(seed), native(budget))
        self.dim = int(dim)
        self.steps = int(steps)

    def push(self, x) -> Tuple[np.ndarray, np.ndarray]:
        try:
            v = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1))
        except (TypeError, ValueError) as e:
            raise ValueError(f"x must be numeric: {e}") from None
        return self._native.push(v)

    @property
    def step(self) -> int:
        return self._native.step()

    @property
    def clip(self) -> float:
        """The clip the next row runs at, in the data's units (without a ``clip``: learnt
        privately per block of ``clip_block`` rows; 0 during the first block)."""
        return self._native.clip()

    @property
    def privacy(self) -> dict:
        """The privacy fields (privacy, ledger, diagnostics) of the whole stream: the fields the
        declaration of "moments" keeps (docs/threat-model.md)."""
        return json.loads(_dpstats._declared_fields(self._native.fields(), "moments")[0])


@_dry.dry_runnable("moments", "clip=")
@request_keywords("moments", _TABLE, shared=("method",))
def moments(X, method: str = "jme", workload: str = "prefix", factorization: str = "auto",
            clip: Optional[float] = None, epsilon: Optional[float] = None, delta: Optional[float] = None,
            diagonal: bool = False, seed: Optional[int] = None, *,
            threads: Optional[int] = None, columns: Optional[Sequence] = None,
            budget: Optional[Budget] = None, comm=None, **options) -> MomentsRelease:
    """Continual release over the rows of ``X`` (T x d): the moments after every step.

    ``X`` may be a pandas DataFrame; ``columns`` picks columns (names, or 0-based indices of an
    array). ``budget``: a :class:`dpstats.Budget` the release is charged to (on rank 0 only
    with ``comm``). ``comm``: an mpi4py communicator when the rows are spread over MPI ranks
    (run under ``mpirun``): each rank passes its own rows (rank 0's are the first steps), and
    every rank gets the release of the whole stream, byte-identical to one process for a seed
    (every rank gathers the rows and replays rank 0's draws). The other options are described
    below.
    """
    X = _table.table(X, columns, "X", two_d=True)
    if X.ndim != 2 or (comm is None and X.shape[0] < 1) or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    options.update(workload=workload, factorization=factorization, clip=clip, diagonal=diagonal)
    opts = _options(X.shape[0], X.shape[1], method, epsilon, delta, threads, options)
    first, second, fields = _dpstats.moments(X, opts, _seed(seed), native(budget), comm)
    return MomentsRelease._from_parts(first, second, fields)


# help(dpstats.moments) and help(dpstats.MomentEstimator) show the methods, workloads and clip
# rules too (the attribute dpstats.moments is the function, which hides this module's doc).
moments.__doc__ = (moments.__doc__ or "") + "\n" + (__doc__ or "")
MomentEstimator.__doc__ = (MomentEstimator.__doc__ or "") + "\n" + (__doc__ or "")
