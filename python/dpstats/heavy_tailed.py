"""fit(task="heavy-tailed"): pure epsilon-DP convex optimisation with heavy-tailed gradients
(docs/proofs/heavy-tailed.md; only a public k-th moment bound G_k of the per-record gradient
norm is assumed, no Lipschitz constant).

``dpstats.fit(X, y, task="heavy-tailed", loss="absolute", method=None, epsilon=..., domain_radius=...,
moment_order=4, moment_bound=None, seed=None)`` returns a Release whose ``.estimate`` is the weight
vector w (domain: the ball of radius ``domain_radius`` around 0). Guarantee: pure epsilon-DP
(delta = 0) under replacement of one row, for every method except "dp-sgd" (the approximate
(epsilon, delta) Gaussian baseline, which needs ``delta``). A run whose optimisation accuracy
cannot be certified aborts: ``.status == "abstained"`` and ``.estimate`` is empty.

loss: "absolute" |<x,w> - y|, "hinge" (labels +-1), "huber" (kappa = 1), "logistic" (labels +-1),
"squared".
method: None picks "clipped-gd" (pure-DP noisy clipped GD, l2-Laplace: no data-dependent abort,
so its whole output is covered by its guarantee); "lipschitz-extension" (practical profile:
Pop-Localize with a certified Lipschitz-extension output perturbation, then localized noisy
clipped GD) and "output-perturbation" release ``privacy.certified == False``: whether their
certificate aborts depends on the data and is not covered by the epsilon-DP statement;
"dp-sgd" (Gaussian, (epsilon, delta)).
inner (lipschitz-extension): "glm-one-stage" (default, docs/proofs/heavy-tailed.md §2.13) or "double-output-perturbation"
(Alg 4 with Alg 2, the paper's main algorithm; lens domains certified through the Lagrangian).
final_clip_rule (practical profile): "private-quantile" (default: the final GD phase's clip is a
pure-DP quantile of the per-record gradient norms at phase 1's output, 1/16 of that block's
epsilon) or "public" (from the moment bound only).
moment_order k, moment_bound G_k (and moment_bound_2 G_2): PUBLIC bounds
E[sup_W |grad f(w, z)|^k] <= G_k^k (for absolute, hinge and logistic losses sup_W |grad f| = |x|).
Without moment_bound, G_k is estimated privately from ``scale_share`` of epsilon (the estimate is
in ``.diagnostics["scale"]``). epsilon and domain_radius are required.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import _dpstats, _dry, _options, _table
from .budget import native
from .release import Release

_LOSSES = tuple(_dpstats.glm_losses())  # the library's names
_METHODS = tuple(_dpstats.fit_methods("heavy-tailed"))  # the library's registry


def _float(x, name: str) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None


def _opt_int(x, name: str) -> Optional[int]:
    if x is None:
        return None
    if not isinstance(x, (int, np.integer)) or isinstance(x, bool) or x < 1:
        raise ValueError(f"{name} must be a positive integer, got {x!r}")
    return int(x)


def _centre(centre):
    if centre is None or isinstance(centre, (bool, np.bool_)):
        return None if centre is None else bool(centre)
    raise ValueError(f"centre must be True, False or None, got {centre!r}")


@_dry.dry_runnable("fit heavy-tailed", "moment_bound=", _dry.table_stand_in("X", vectors=("y",), ids=("users",), absent=("X_test", "y_test")))
@_options.request_keywords("fit", _dpstats._heavy_tailed_options())
def fit_heavy_tailed(X, y, loss: str = "absolute", method: Optional[str] = None,
                     epsilon: Optional[float] = None, domain_radius: Optional[float] = None,
                     seed: Optional[int] = None, *, delta: Optional[float] = None,
                     profile: str = "practical", scale_share: Optional[float] = None,
                     steps: Optional[int] = None, step_size: Optional[float] = None,
                     clip: Optional[float] = None, budget=None,
                     centre: Optional[bool] = None, threads: Optional[int] = None,
                     comm=None, holdout: Optional[float] = None,
                     holdout_share: Optional[float] = None,
                     holdout_loss_bound: Optional[float] = None, **options) -> Release:
    """Pure epsilon-DP fit with heavy-tailed gradients; see the module doc. ``budget``: a
    :class:`dpstats.Budget` the release is charged to. ``centre``: None (default) centres the
    features privately and fits an intercept when their scale is unknown and the records suffice;
    below that, a private offset check abstains on columns far from 0. True: always centre
    (abstain when the records are too few); False: never (x . w in the data's units, no check).
    ``threads``: worker threads of the data passes (None: the library's default); a seeded
    release is the same for any count. ``comm``: an mpi4py communicator when the rows are spread
    over MPI ranks (X, y: this rank's rows, in rank order); every private method gives the
    single-process release, with or without moment_bound and centring (lipschitz-extension and
    output-perturbation send the rows to rank 0 for their certified solver); non-private and
    inner="double-output-perturbation" refuse (docs/guide.md "Running on a cluster").
    ``holdout``: a fraction in (0, 0.5] of the records held out of the fit by a secret random
    split; ``.diagnostics["holdout"]`` states the released model's private mean clipped loss on
    them (``holdout_loss_bound``, default 5) with 95% intervals, from ``holdout_share`` (0.05) of
    epsilon (dp-sgd: of rho)."""
    from . import _required
    epsilon = _required.epsilon(epsilon)
    if method is None:
        method = "clipped-gd"
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {', '.join(_LOSSES)}, got {loss!r}")
    # delta: the library's one rule (dp-sgd requires it in (0, 1); every other method is pure
    # DP); the options a method does not read: the library's too (its registry line).
    X = _table.table(X, None, "X")  # a text column: ValueError naming it, not its content
    try:
        y = np.asarray(y, dtype=np.float64, order="C")
    except (TypeError, ValueError):
        raise ValueError("y must be numeric (content not shown)") from None
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    from . import _seed
    if domain_radius is None:
        raise ValueError("domain_radius is required: the radius of the ball B(0, R) that holds "
                         "the weights")
    opt = lambda v, name: None if v is None else _float(v, name)  # noqa: E731
    est, fields = _dpstats.fit_heavy_tailed(
        X, y, loss, method, str(profile), 0.0 if epsilon is None else _float(epsilon, "epsilon"),
        0.0 if delta is None else _float(delta, "delta"), _float(domain_radius, "domain_radius"),
        options, _opt_int(steps, "steps"), opt(step_size, "step_size"), opt(clip, "clip"),
        _seed(seed), opt(scale_share, "scale_share"), native(budget), _centre(centre),
        _opt_int(threads, "threads"), comm, opt(holdout, "holdout"),
        opt(holdout_share, "holdout_share"), opt(holdout_loss_bound, "holdout_loss_bound"))
    return Release._from_native(est, fields, "fit/heavy-tailed")
