"""``dpstats.fit`` returns a fitted model (sklearn-style ``predict``, ``predict_proba``,
``score``) together with the Release that states what it cost (``model.release``).

Tasks (the ``task=`` argument of :func:`fit`):

- ``"user-level"`` (default; needs ``users=``): user-level private convex optimisation; all rows of
  one user are protected together. A linear model ``w``; ``loss`` "logistic" or "hinge" (labels
  +-1) classify, "squared" and "huber" regress.
- ``"heavy-tailed"``: pure epsilon-DP convex optimisation that only assumes a moment bound on the
  gradients. Linear model ``w``; "absolute", "squared", "huber" regress, "hinge" and "logistic"
  classify (labels +-1).
- ``"classify"``: a softmax classifier (``model="logistic"``) or a one-hidden-layer ReLU network
  (``model="mlp"``) trained with DP-SGD / DP-Adam; labels 0..classes-1.

Every option of the task's function is accepted as a keyword; ``help(dpstats.fit)`` lists
them for each task. ``epsilon`` (and ``delta`` where the method needs one) are required.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import _dpstats
from . import _dry
from .fit import fit as _task_fit
from .release import Release


class FittedModel:
    """A privately fitted model. ``coef_`` holds the released weights (and ``intercept_`` the
    intercept of a linear fit that centred its features privately, else 0; "classify" keeps all
    its parameters in ``coef_``), ``release`` the Release (privacy, ledger, diagnostics);
    predictions are post-processing and cost nothing."""

    def __init__(self, release: Release, task: str, loss: str = None, model: str = None,
                 classes: int = None, hidden: int = None):
        self.release = release
        self.task = task
        # The task parsed once (EnumNames<FitTask>): predictions dispatch on it, not on text.
        self._classify = _dpstats._fit_task(str(task)) == _dpstats.FitTask.classify
        self.loss = loss
        self.model = model
        # The loss and the classify model parsed once too (EnumNames<GlmKind>, <ModelKind>).
        self._loss = None if loss is None else _dpstats._glm_kind(str(loss))
        self._mlp = model is not None and _dpstats._model_kind(str(model)) == _dpstats.ModelKind.mlp
        self.classes = classes
        self.hidden = hidden
        est = np.asarray(release.estimate, dtype=np.float64)
        centred = not self._classify and "intercept" in release.diagnostics and est.size > 0
        self.coef_ = est[:-1] if centred else est
        self.intercept_ = float(est[-1]) if centred else 0.0

    def __getattr__(self, name):
        # The release's fields read through the model (model.epsilon, model.ledger, ...).
        if name == "release":
            raise AttributeError(name)
        return getattr(self.release, name)

    def to_dict(self) -> dict:
        return {"task": self.task, "loss": self.loss, "model": self.model,
                **self.release.to_dict()}

    # ---- which kind of model ----
    @property
    def is_classifier(self) -> bool:
        return self._classify or (self._loss is not None and _dpstats._binary_labels(self._loss))

    def _X(self, X) -> np.ndarray:
        if self.release.status != "ok":
            raise ValueError(f"the fit abstained ({self.release.diagnostics.get('abstained')}); "
                             "there is no model to predict with")
        X = np.asarray(X, dtype=np.float64)
        return X.reshape(-1, 1) if X.ndim == 1 else X

    def _logits(self, X) -> np.ndarray:
        X = self._X(X)
        n, d = X.shape
        w = self.coef_
        if self._mlp:
            # (d + 1) h + (h + 1) c weights: the hidden width is read off the release itself
            h = self.hidden or (w.size - self.classes) // (d + 1 + self.classes)
            W1 = w[:(d + 1) * h].reshape(d + 1, h)
            W2 = w[(d + 1) * h:].reshape(h + 1, self.classes)
            a = np.maximum(np.hstack([X, np.ones((n, 1))]) @ W1, 0)
            return np.hstack([a, np.ones((n, 1))]) @ W2
        return np.hstack([X, np.ones((n, 1))]) @ w.reshape(d + 1, self.classes)

    def decision_function(self, X) -> np.ndarray:
        """``X @ coef_ + intercept_`` for the linear tasks (the intercept is 0 unless the fit
        centred privately, ``diagnostics["intercept"]``), the class scores for "classify"."""
        if self._classify:
            return self._logits(X)
        return self._X(X) @ self.coef_ + self.intercept_

    def predict(self, X) -> np.ndarray:
        """Labels (+-1, or 0..classes-1 for "classify") or, for regression losses, values."""
        if self._classify:
            return np.argmax(self._logits(X), axis=1)
        f = self.decision_function(X)
        return np.where(f >= 0, 1.0, -1.0) if self.is_classifier else f

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities: softmax for "classify", the logistic link for loss "logistic"
        (columns: P(y = -1), P(y = +1)). Other models have none (AttributeError)."""
        if self._classify:
            z = self._logits(X)
            z = np.exp(z - z.max(axis=1, keepdims=True))
            return z / z.sum(axis=1, keepdims=True)
        if self._loss == _dpstats.GlmKind.logistic:
            p = 1 / (1 + np.exp(-self.decision_function(X)))
            return np.column_stack([1 - p, p])
        raise AttributeError(f"loss {self.loss!r} gives no probabilities")

    def score(self, X, y) -> float:
        """Accuracy for classifiers, R^2 for regression (as scikit-learn). Computed on the data
        given: a score on private data is not private, use held-out public data."""
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        pred = self.predict(X)
        if self.is_classifier:
            return float(np.mean(pred == y))
        ss_res = float(np.sum((y - pred) ** 2))
        ss_tot = float(np.sum((y - y.mean()) ** 2))
        return 1 - ss_res / ss_tot if ss_tot > 0 else float("nan")

    def __repr__(self) -> str:
        kind = self.model if self._classify else self.loss
        return (f"FittedModel(task={self.task!r}, {kind}, {self.coef_.size} parameters, "
                f"epsilon={self.release.epsilon:g}, delta={self.release.delta:g}, "
                f"status={self.release.status!r})")


@_dry.dry_runnable("fit", "the task's public scale (feature_scale=, feature_bound=)",
                    _dry.table_stand_in("X", vectors=("y",), ids=("users",), absent=("X_test", "y_test")))
def fit(X, y, users=None, task: Optional[str] = None, *, columns=None, budget=None,
        **options) -> FittedModel:
    """Private fit of a model to rows ``X`` and labels ``y``; returns a :class:`FittedModel`
    (``predict``, ``predict_proba`` where it applies, ``score``, and ``.release``).

    ``task`` is required, except that giving ``users`` (one id per row: integers or text such
    as airport codes) means ``task="user-level"``; ``"heavy-tailed"`` and ``"classify"`` take
    no users. ``epsilon`` is required, ``delta`` where the method needs one.

    Tables: ``X`` may be a pandas DataFrame; ``columns`` picks the feature columns (names, or
    0-based indices of an array). With a DataFrame, ``y`` and ``users`` may be column names
    (``fit(df, "label", users="user_id", ...)``); the features are then ``columns``, or every
    other column. ``budget``: a :class:`dpstats.Budget` the release is charged to (refused with
    :class:`dpstats.BudgetExceeded`, nothing charged, when it would overspend).

    The options of each task follow; worked examples are in docs/guide.md "An analyst's session"
    (in the source tree) and §9-§11 there.
    """
    if task is None:
        if users is None:
            raise ValueError("task is required: 'user-level' (with users=, one id per row), "
                             "'classify' or 'heavy-tailed'")
        task = "user-level"
    X, y, users = _table_inputs(X, y, users, columns)
    release = _task_fit(X, y, users=users, task=task, budget=budget, **options)
    kind = _dpstats._fit_task(str(task))
    if kind == _dpstats.FitTask.classify:
        return FittedModel(release, task, model=options.get("model", "logistic"),
                           classes=options.get("classes"), hidden=options.get("hidden"))
    default_loss = "absolute" if kind == _dpstats.FitTask.heavy_tailed else "logistic"
    return FittedModel(release, task, loss=options.get("loss", default_loss))


def _table_inputs(X, y, users, columns):
    """(X as a float64 matrix, y, users) through the one table helper (dpstats/_table.py)."""
    from . import _table
    if columns is None and _table.is_dataframe(X):
        named = {v for v in (y, users) if isinstance(v, str)}
        if named:
            columns = [c for c in X.columns if c not in named]
    y_out = _table.vector(y, X, "y")
    users_out = None if users is None else _table.vector(users, X, "users")
    return _table.table(X, columns, "X", two_d=True), y_out, users_out


def _task_docs() -> str:
    import importlib
    parts = [__doc__]
    for task, module, name in (("user-level", "dpstats.fit", "_fit_user_level"),
                               ("heavy-tailed", "dpstats.heavy_tailed", "fit_heavy_tailed"),
                               ("classify", "dpstats.classify", "fit_classify")):
        m = importlib.import_module(module)
        f = getattr(m, name)
        parts.append(f"task={task!r}: {m.__doc__ or ''}\n{f.__name__}{_signature(f)}\n"
                     f"{f.__doc__ or ''}")
    return "\n\n".join(p.strip() for p in parts)


def _signature(f) -> str:
    import inspect
    return str(inspect.signature(f))


fit.__doc__ = (fit.__doc__ or "") + "\n" + _task_docs()
