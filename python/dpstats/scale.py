"""Private scale with no public range (issue #15; docs/guide.md "Scale: finding bounds privately").

``bounds`` releases, for every column of ``X``, a private location (median), a robust scale
(1.4826 x the private MAD), and clipping bounds ``location -/+ widen * scale``, found on a
logarithmic grid that covers every double: no public range or scale is needed, and the answer
moves with the data when they are rescaled or shifted. Optionally also a quantile of the row
norms (a clip for gradients, features or a median radius).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from . import _dpstats
from . import _dry
from . import _options
from . import _required
from .release import Release


@_dry.dry_runnable("bounds")
@_options.request_keywords("bounds", _dpstats._bounds_options())
def bounds(X, epsilon: float, delta: float = 0.0, *, neighbouring: str = "replace-one",
           threads: int = _required.THREADS, seed: Optional[int] = None,
           columns: Optional[Sequence] = None, budget=None, comm=None, **options) -> Release:
    """Private per-column location, scale and clipping bounds of ``X`` (n x d; 1-D: one column).

    ``delta=0`` (default): pure epsilon-DP; ``delta>0``: zCDP accounting of (epsilon, delta),
    better for many columns. ``release.estimate`` is a dict with arrays ``location``, ``scale``,
    ``lo``, ``hi`` (and the float ``norm_quantile`` when asked, which then gets ``norm_share`` of
    the budget; norms are about the private location, or about 0 with ``norm_centre="zero"``).
    With ``coverage`` (in (0, 0.5)) it also holds ``clip_lo`` and ``clip_hi``: clipping bounds for
    means and sums designed to leave that fraction of the rows outside (half on each side, up to
    the rank error in ``release.diagnostics["clip_bounds"]``), from ``clip_share`` of the budget;
    they cover zero-inflated and discrete columns (no spread needed).
    ``alpha`` is the corrupted fraction tolerated (in [0, 0.3)). Each column's status ("ok",
    "degenerate" for (nearly) constant columns, "insufficient_data" when n is too small for the
    budget) and reason are in ``release.diagnostics["scale"]["columns"]``.
    ``X`` may be a pandas DataFrame; ``columns`` picks columns (names, or 0-based indices of an
    array). ``budget``: a :class:`dpstats.Budget` the release is charged to.
    ``comm``: an mpi4py communicator; each rank passes its own rows and gets the release of the
    union of the rows, byte-identical to one process (noise on rank 0; pass ``budget`` on rank 0
    only).
    """
    from . import _seed, _float, _array
    from .budget import native
    X = _array(X, "X", columns)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ValueError(f"threads must be an integer, got {threads!r}")
    _options.check("bounds", "threads", int(threads))  # the declared range, [1, 1024]
    est, fields = _dpstats.bounds(
        X, _float(epsilon, "epsilon"), _float(delta, "delta"), str(neighbouring), int(threads),
        _seed(seed), options, native(budget), comm)
    return Release._from_native(est, fields, "bounds")
