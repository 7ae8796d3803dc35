"""Privacy calculator: the same answers as ``dpstats account``."""
from __future__ import annotations

import json
from typing import Optional

from . import _dpstats

# Direct conversions (exact; see docs/guide.md).
zcdp_to_epsilon = _dpstats.zcdp_to_epsilon
zcdp_to_delta = _dpstats.zcdp_to_delta
epsilon_delta_to_zcdp = _dpstats.epsilon_delta_to_zcdp
gdp_to_delta = _dpstats.gdp_to_delta
gdp_to_epsilon = _dpstats.gdp_to_epsilon
analytic_gaussian_sigma = _dpstats.analytic_gaussian_sigma


def calibrate(mechanism: str, sensitivity: float, epsilon: float, delta: float = 0.0) -> dict:
    """Noise scale: {"scale", ...} for "laplace", {"sigma", "secure_sigma", ...} for "gaussian"."""
    return json.loads(_dpstats.account_calibrate(str(mechanism), float(sensitivity),
                                                 float(epsilon), float(delta)))


def convert(*, rho: Optional[float] = None, mu: Optional[float] = None,
            delta: float) -> dict:
    """rho-zCDP or mu-GDP (exactly one) to (epsilon, delta): {"epsilon": ..., "delta": ...}."""
    return json.loads(_dpstats.account_convert(rho, mu, float(delta)))


def compose(epsilon: float, delta: float, times: int, delta_slack: float) -> dict:
    """k-fold composition of (epsilon, delta): the best of basic, advanced and optimal."""
    if isinstance(times, bool) or not isinstance(times, int):
        raise ValueError(f"times must be an integer >= 1, got {times!r}")
    return json.loads(_dpstats.account_compose(float(epsilon), float(delta), times,
                                               float(delta_slack)))
