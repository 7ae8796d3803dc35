"""fit(X, y, task="classify", ...): private softmax classifiers trained with DP-SGD or a DP-Adam
variant (docs/guide.md "Private training").

``optimizer``: "dp-adam-jme" (default; Adam whose second moment is a JME release of the clipped
per-example squares), "dp-adam-debiased", "dp-adam" (vanilla, post-processing), "dp-adam-joint-clip",
"dp-sgd", or "adam" (non-private; epsilon = inf, certified False). Poisson subsampling with
expected batch ``batch_size``, per-example clipping to ``clip`` (of the model on the features
divided by ``feature_scale``; absent, each column is standardised on its private median and robust
sd when the table is long enough, else divided by the private median row norm / sqrt(d), from
a planned share of the budget; a given ``scale_share`` is the per-column standardisation's only,
since one scale for columns in different units trains the majority class; when no estimate is
reliable at this size the release abstains before spending anything and says how many rows,
which epsilon or scale_share would do),
secure lattice Gaussian noise; privacy is (epsilon, delta)-DP under
add/remove of one row, accounted by the tighter of the PLD and integer-order RDP (the lattice
Gaussian is counted through its coupling to a continuous one, docs/proofs/accounting.md §8-§9). ``epsilon`` and ``delta`` are required for a private optimizer;
``noise_multiplier`` fixes the noise instead of calibrating it (the run must fit in epsilon).
``n_public`` (required for a private optimizer) is the public number of training rows: the
sampling rate is ``batch_size / n_public``, the run has ``epochs * round(n_public / batch_size)``
steps and the train loss is divided by it, because under add/remove the exact row count is
private (give the dataset's published size or a round number near it; X may hold up to twice
as many rows).
``classes`` is the public number of classes (labels are integers 0..classes-1). ``step_size`` is
the learning rate (the tool's ``--step-size``, the name every fit uses; None: max(1e-3, 0.5 / the
planned steps)), ``lambda_`` JME's scaling (``--lambda``; ``lambda`` is a Python keyword).
``holdout``: a fraction in (0, 0.5] of the rows held out of training by a secret random split;
``.diagnostics["holdout"]`` states the model's private mean clipped cross-entropy on them
(``holdout_loss_bound``, default 5, also the epoch losses' clip) with 95% intervals, from
``holdout_share`` (0.05) of rho.

``.estimate`` is the flat parameter vector: layer 1 as a (features+1) x out row-major block (last
row the bias), then for ``model="mlp"`` layer 2 as (hidden+1) x classes.
``.diagnostics["test_accuracy"]`` (one per epoch) needs ``X_test``/``y_test`` (public data; when
``X_test`` is ``X`` itself, ``diagnostics["test_accuracy_warning"]`` says the accuracy is not
private);
``.diagnostics["train_loss"]`` is a private per-epoch estimate (its noise is in the budget).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import numpy as np

from . import _dpstats
from . import _dry, _options, _required
from .budget import native
from .release import Release



def _labels(y, name):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of integer labels")
    if y.size and not np.issubdtype(y.dtype, np.integer):
        if y.dtype.kind not in "fb":
            raise ValueError(f"{name} must hold integer labels 0..classes-1, got {y.dtype.kind!r} "
                             "(text or objects; content not shown): map them to integers first, "
                             "e.g. with pandas.factorize")
        if not np.all(np.isfinite(y)) or not np.all(y == np.round(y)):
            raise ValueError(f"{name} must hold integer labels")
    return np.ascontiguousarray(y, dtype=np.int64)


@_dry.dry_runnable("fit classify", "feature_scale=", _dry.table_stand_in("X", vectors=("y",), ids=("users",), absent=("X_test", "y_test")))
@_options.request_keywords("fit", _dpstats._classify_options())
def fit_classify(X, y, epsilon: Optional[float] = None, delta: Optional[float] = None,
                 scale_share: Optional[float] = None, epochs: int = 10,
                 batch_size: int = 256, step_size: Optional[float] = None, clip: float = 1.0,
                 X_test=None, y_test=None, threads: Optional[int] = None,
                 seed: Optional[int] = None, budget=None, comm=None,
                 holdout: Optional[float] = None, holdout_share: Optional[float] = None,
                 holdout_loss_bound: Optional[float] = None, **options) -> Release:
    """Private classifier on rows ``X`` (n x d) with labels ``y`` in 0..classes-1; see the module
    doc. ``budget``: a :class:`dpstats.Budget` the whole run is charged to (on rank 0 only under
    ``comm``). ``comm``: an mpi4py communicator when the rows are spread over MPI ranks (X, y:
    this rank's rows, rank r's after those of ranks 0..r-1; every rank passes the same options
    and X_test): the private optimizers give the one-process release on every rank (docs/guide.md
    "Running on a cluster"); optimizer="adam" refuses several ranks. The task's own options
    (model, optimizer, classes, ...) are its declared keywords, listed below."""
    # Whether the test set is the training data: object identity or shared memory (public facts,
    # never a comparison of rows, which would itself reveal membership).
    test_is_train = X_test is not None and (X_test is X or (
        isinstance(X_test, np.ndarray) and isinstance(X, np.ndarray)
        and np.shares_memory(X_test, X)))
    private = _dpstats._classify_is_private(options)  # the options checked by the library
    classes = options.get("classes")
    if classes is None:
        raise ValueError("classes (the public number of classes) is required")
    if private:
        epsilon = _required.epsilon(epsilon, "a private optimizer's whole run; with "
                                    "noise_multiplier, the cap the run must fit in")
        delta = _required.delta(delta, "a private optimizer, in (0, 1)")
    elif epsilon is not None or delta is not None or scale_share is not None or budget is not None:
        raise ValueError(f"optimizer={options['optimizer']!r} is not private: epsilon, delta, "
                         "scale_share and budget do not apply")
    for name, v in (("epochs", epochs), ("batch_size", batch_size),
                    ("threads", 1 if threads is None else threads)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    try:
        X = np.ascontiguousarray(X, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"X must be numeric: {e}") from None
    if X.ndim != 2:
        raise ValueError("X must be a 2-D array (rows are records)")
    y = _labels(y, "y")
    Xt = yt = None
    if (X_test is None) != (y_test is None):
        raise ValueError("give both X_test and y_test, or neither")
    if X_test is not None:
        Xt = np.ascontiguousarray(X_test, dtype=np.float64)
        yt = _labels(y_test, "y_test")
        if np.any(yt >= classes) or np.any(yt < 0):
            raise ValueError(f"y_test labels must be in 0..{classes - 1}")
    from . import _seed
    est, fields = _dpstats.fit_classify(
        X, y, options, None if epsilon is None else float(epsilon),
        None if delta is None else float(delta),
        None if scale_share is None else float(scale_share), int(epochs), int(batch_size),
        None if step_size is None else float(step_size), float(clip), Xt, yt,
        None if threads is None else int(threads), _seed(seed), native(budget), comm,
        bool(test_is_train), None if holdout is None else float(holdout),
        None if holdout_share is None else float(holdout_share),
        None if holdout_loss_bound is None else float(holdout_loss_bound))
    r = Release._from_native(est, fields, "fit/classify")
    if not private:
        r = replace(r, epsilon=math.inf)
    return r
