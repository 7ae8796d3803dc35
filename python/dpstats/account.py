"""Privacy calculator: the same answers as ``dpstats account``."""
from __future__ import annotations

import json
from typing import Optional, Sequence, Union

from . import _dpstats, _options

# Direct conversions (exact; see docs/guide.md).
zcdp_to_epsilon = _dpstats.zcdp_to_epsilon
zcdp_to_delta = _dpstats.zcdp_to_delta
epsilon_delta_to_zcdp = _dpstats.epsilon_delta_to_zcdp
gdp_to_delta = _dpstats.gdp_to_delta
gdp_to_epsilon = _dpstats.gdp_to_epsilon
analytic_gaussian_sigma = _dpstats.analytic_gaussian_sigma


def _checked(command: str, **values):
    """Each value against its declaration under ``command`` (the tool's --flag's range)."""
    for name, value in values.items():
        _options.check(command, name, value)


@_options.documented("account calibrate", "mechanism", "sensitivity", "epsilon", "delta")
def calibrate(mechanism: str, sensitivity: float, epsilon: float, delta: float = 0.0) -> dict:
    """Noise scale: {"scale", ...} for "laplace", {"sigma", "secure_sigma", ...} for "gaussian"."""
    _checked("account calibrate", sensitivity=sensitivity, epsilon=epsilon, delta=delta)
    return json.loads(_dpstats.account_calibrate(str(mechanism), float(sensitivity),
                                                 float(epsilon), float(delta)))


@_options.documented("account convert", "rho", "mu", "delta")
def convert(*, rho: Optional[float] = None, mu: Optional[float] = None,
            delta: float) -> dict:
    """rho-zCDP or mu-GDP (exactly one) to (epsilon, delta): {"epsilon": ..., "delta": ...}."""
    _checked("account convert", rho=rho, mu=mu, delta=delta)
    return json.loads(_dpstats.account_convert(rho, mu, float(delta)))


@_options.documented("account compose", "epsilon", "delta", "times", "delta_slack", "accountant",
                     "loss")
def compose(epsilon: Union[float, Sequence[str]], delta: float, times: Optional[int] = None,
            delta_slack: Optional[float] = None, *, accountant: str = "best") -> dict:
    """k-fold composition of (epsilon, delta): the best of basic, advanced and optimal.

    With a list of losses instead, ``compose(["pure:1", "gaussian:sigma=2",
    "subsampled-gaussian:q=0.01,sigma=1.1,steps=1000"], delta=1e-5)``: heterogeneous composition
    by the PLD and RDP accountants (syntax in docs/guide.md); the answer names its "accountant"
    and is an upper bound ("upper_bound": true).
    """
    _checked("account compose", delta=delta, delta_slack=delta_slack)
    if isinstance(epsilon, (list, tuple)):
        if times is not None or delta_slack is not None:
            raise ValueError("compose(losses, delta): times and delta_slack belong to the k-fold form")
        return json.loads(_dpstats.account_compose_losses([str(x) for x in epsilon], float(delta),
                                                          str(accountant)))
    if times is None or delta_slack is None:
        raise ValueError("compose(epsilon, delta, times, delta_slack): give times and delta_slack")
    if isinstance(times, bool) or not isinstance(times, int):
        raise ValueError(f"times must be an integer >= 1, got {times!r}")
    _checked("account compose", epsilon=epsilon, times=times)
    return json.loads(_dpstats.account_compose(float(epsilon), float(delta), times,
                                               float(delta_slack)))


@_options.documented("account dp-sgd", "sampling_rate", "noise_multiplier", "epsilon", "steps",
                     "delta", "accountant")
def dp_sgd(sampling_rate: float, steps: int, delta: float, *,
           noise_multiplier: Optional[float] = None, epsilon: Optional[float] = None,
           accountant: str = "best") -> dict:
    """DP-SGD (Poisson-subsampled Gaussian, add/remove): epsilon from noise_multiplier, or the
    noise multiplier from epsilon (exactly one). The tighter of the PLD and RDP accountants unless
    ``accountant`` is "pld" or "rdp"; the answer names it and is an upper bound."""
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    _checked("account dp-sgd", sampling_rate=sampling_rate, noise_multiplier=noise_multiplier,
             epsilon=epsilon, steps=steps, delta=delta)
    return json.loads(_dpstats.account_dp_sgd(
        float(sampling_rate), None if noise_multiplier is None else float(noise_multiplier),
        None if epsilon is None else float(epsilon), steps, float(delta), str(accountant)))
