"""The privacy target is never defaulted (as in the tool): a function called without epsilon, or
without delta where its method needs one, raises ValueError saying what to give."""
from __future__ import annotations

import os

from . import _options

# The default `threads` of every function, as the tool's --threads: the machine's cores (capped at
# 256; the declared range is [1, 1024]). A seeded release is the same for any thread count.
THREADS = max(1, min(os.cpu_count() or 1, 256))

_EPSILON = ("epsilon is required (> 0): the privacy loss this release may cost; smaller is more "
            "private and noisier (0.1-1 is common, as in the tool's --epsilon)")
_DELTA = ("delta is required: the probability the epsilon guarantee may fail; give 0 for pure "
          "DP where the method allows it, else well below 1/n (e.g. 1e-6), as in the tool's "
          "--delta")


def epsilon(value, why: str = ""):
    """``value`` as a float; ValueError when it is None (``why`` says what it bounds there)."""
    if value is None:
        raise ValueError(_EPSILON + (f" ({why})" if why else ""))
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number, got {value!r}") from None
    return _options.check("", "epsilon", x)  # its declared range (dpstats/options.hpp)


def delta(value, why: str = ""):
    """``value`` as a float; ValueError when it is None (``why`` names the method needing it)."""
    if value is None:
        raise ValueError(_DELTA + (f" ({why})" if why else ""))
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"delta must be a number, got {value!r}") from None
    return _options.check("", "delta", x)
