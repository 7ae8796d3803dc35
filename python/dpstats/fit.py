"""Private model fitting. ``fit(X, y, task=...)`` dispatches on the task:

- ``task="user-level"`` (implied by ``users=``): user-level DP convex optimisation (docs/proofs/user-level.md),
  below;
- ``task="classify"``: private classifiers trained with DP-SGD / DP-Adam (dpstats.classify);
- ``task="heavy-tailed"``: pure epsilon-DP convex optimisation with heavy-tailed gradients
  (dpstats.heavy_tailed).

``fit(X, y, users=ids, task="user-level", ...)`` protects the whole data of one user (all rows
with the same id): neighbouring datasets replace one user's rows, and the number of users is
public. ``.estimate`` is the weight vector; ``.diagnostics["gradient_evaluations"]`` counts
per-item gradients (it depends on public sizes only).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import _dpstats, _options, _table
from .budget import native
from .release import Release

_METHODS = tuple(_dpstats.fit_methods("user-level"))  # the library's registry


def _float(x, name: str) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None



def _user_ids(users) -> np.ndarray:
    """``users`` as int64 ids: integers as they are, text ids (airport codes, names) mapped to
    integers. Only which rows share a user matters; the mapping is never released."""
    ids = np.asarray(users)
    if ids.ndim != 1:
        raise ValueError("users must be a 1-D array of ids (integers or text)")
    if ids.size and ids.dtype.kind in "USO":
        _, ids = np.unique(ids.astype(str), return_inverse=True)
    elif ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError("users must hold integer or text ids (content not shown)")
    return np.ascontiguousarray(ids, dtype=np.int64)


@_options.documented("fit", "task", "users", "loss", "method", "centre")
def fit(X, y, users=None, task: Optional[str] = None, **options) -> Release:
    """Private fit of a model to rows ``X`` and labels ``y``; see the module doc for ``task``.
    ``task`` is required, except that giving ``users`` (one id per row, integers or text) means
    task='user-level'."""
    if task is None:
        if users is None:
            raise ValueError("task is required: 'user-level' (with users=, one id per row), "
                             "'classify' or 'heavy-tailed'")
        task = "user-level"
    kind = _dpstats._fit_task(str(task))  # the library's names (EnumNames<FitTask>)
    if kind == _dpstats.FitTask.user_level:
        if users is None:
            raise ValueError("task='user-level' needs users (one id per row of X: integers or "
                             "text)")
        return _fit_user_level(X, y, users, **options)
    if users is not None:
        raise ValueError(f"users applies to task='user-level' only, not {task!r}")
    if kind == _dpstats.FitTask.classify:
        from .classify import fit_classify
        return fit_classify(X, y, **options)
    from .heavy_tailed import fit_heavy_tailed
    return fit_heavy_tailed(X, y, **options)


@_options.request_keywords("fit", _dpstats._user_level_options())
def _fit_user_level(X, y, users, loss: str = "logistic",
                    method: Optional[str] = None, epsilon: Optional[float] = None,
                    delta: Optional[float] = None, domain_radius: Optional[float] = None,
                    seed: Optional[int] = None, *, profile: Optional[str] = None,
                    steps: Optional[int] = None, step_size: Optional[float] = None,
                    clip: Optional[float] = None, feature_bound: Optional[float] = None,
                    label_bound: Optional[float] = None, scale_share: Optional[float] = None,
                    budget=None, centre: Optional[bool] = None, threads: Optional[int] = None,
                    comm=None, holdout: Optional[float] = None,
                    holdout_share: Optional[float] = None,
                    holdout_loss_bound: Optional[float] = None, **options) -> Release:
    """User-level private fit of a linear model on rows ``X`` (rows x d), labels ``y``, ids ``users``.

    ``comm``: an mpi4py communicator when the rows are spread over MPI ranks (X, y, users: this
    rank's rows, in rank order; a user's rows may be on several ranks). Every row moves to its
    user's home rank before any per-user clip; every private method gives the single-process
    release, with or without feature_bound / label_bound and centring (phased-sgd, accelerated
    and nonsmooth run on rank 0 over every rank's users); non-private refuses (docs/guide.md
    "Running on a cluster").

    epsilon and delta (in (0, 1)) are required (no defaults); so is domain_radius, the radius of
    the ball around 0 that holds the weights.
    loss: "logistic" (labels ±1, or {0, 1} mapped 0 -> -1), "hinge" (the same), "squared",
    "huber" (kappa = 1).
    method: None picks the recommended "dp-gd-user" (full-batch DP-GD on per-user clipped mean
    gradients, zCDP accounting); "dp-sgd-user" (one pass over disjoint user batches),
    "dp-sgd-group" (item-level DP-SGD made user-level by group privacy), "phased-sgd" (Alg 1 of
    Lowy-Liu-Asi; ``profile`` "practical" or "paper"), "accelerated" (Alg 3 with Alg 2 inside:
    phased ERM with accelerated minibatch SGD; "paper" = the AboveThreshold gate and outlier
    filter with Thm C.3 constants, "practical" = exact clipped sums and zCDP; smooth losses),
    "nonsmooth" (randomized smoothing + Alg 3 for hinge-type losses; ``smoothing_radius``),
    "non-private" (one-pass SGD; no privacy). For "accelerated"/"nonsmooth" practical, ``steps``
    is T per phase, ``clip`` the per-user clip, ``step_size`` 1/L_f of AC-SA and
    ``users_per_step`` the users sampled per step (default all).
    Rows are clipped to ``feature_bound`` and labels to ``label_bound`` (public bounds; when absent
    they are estimated privately from ``scale_share`` of the budget, and the estimates are in
    ``.diagnostics["bounds"]``; a supplied feature_bound that clips many users is reported); each user
    is truncated or padded (with its own rows) to ``items_per_user`` rows (required: the public
    number of rows per user; it is not taken from the data, whose row count is private when one
    user's whole data may change).
    The domain is the ball of radius ``domain_radius`` around 0.
    ``budget``: a :class:`dpstats.Budget` the release is charged to.
    ``centre``: None (default) centres the features privately and fits an intercept (estimate
    (w_1..w_d, b)) when their location is unknown (a given feature_bound bounds the norms, not
    the location: the fit still centres) and the users suffice; below that, a private offset
    check abstains on columns far from 0. True: always centre (abstain when the users are too
    few); False: never (x . w in the data's units, no check).
    ``holdout``: a fraction in (0, 0.5] of the users held out of the fit by a secret random
    split; ``.diagnostics["holdout"]`` states the released model's private mean clipped loss on
    them (``holdout_loss_bound``, default 5) with 95% intervals, from ``holdout_share`` (0.05) of
    rho.
    ``threads``: worker threads for the per-user gradient passes (default: the library's
    default); a seeded fit is the same for any value.
    """
    from . import _required
    from .heavy_tailed import _centre
    if method is None:
        method = "dp-gd-user"
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
    if "epsilon" in _dpstats.fit_method_options("user-level", method):  # its registry line
        epsilon = _required.epsilon(epsilon)
        delta = _required.delta(delta)
    else:  # a reference run, not private
        epsilon = 1.0 if epsilon is None else epsilon  # unused: the run is not private
        delta = 0.5 if delta is None else delta  # unused: the run is not private
        if budget is not None:
            raise ValueError(f"budget does not apply to method {method!r} (its output is not "
                             "private)")
    X = _table.table(X, None, "X")  # a text column: ValueError naming it, not its content
    try:
        y = np.asarray(y, dtype=np.float64, order="C")
    except (TypeError, ValueError):
        raise ValueError("y must be numeric (content not shown)") from None
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    ids = _user_ids(users)
    from . import _seed
    if steps is not None and (not isinstance(steps, (int, np.integer)) or steps < 1):
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if domain_radius is None:
        raise ValueError("domain_radius is required: the radius of the ball B(0, R) that holds "
                         "the weights")
    if threads is not None and (isinstance(threads, bool)
                                or not isinstance(threads, (int, np.integer))):
        raise ValueError(f"threads must be an integer, got {threads!r}")
    est, fields = _dpstats.fit_user_level(
        X, y, ids, str(loss), method, None if profile is None else str(profile),
        0.0 if epsilon is None else _float(epsilon, "epsilon"),
        0.0 if delta is None else _float(delta, "delta"), _float(domain_radius, "domain_radius"),
        options, None if steps is None else int(steps),
        None if step_size is None else _float(step_size, "step_size"),
        None if clip is None else _float(clip, "clip"),
        None if feature_bound is None else _float(feature_bound, "feature_bound"),
        None if label_bound is None else _float(label_bound, "label_bound"), _seed(seed),
        None if scale_share is None else _float(scale_share, "scale_share"), native(budget),
        _centre(centre), None if threads is None else int(threads), comm,
        None if holdout is None else _float(holdout, "holdout"),
        None if holdout_share is None else _float(holdout_share, "holdout_share"),
        None if holdout_loss_bound is None else _float(holdout_loss_bound, "holdout_loss_bound"))
    return Release._from_native(est, fields, "fit/user-level")
