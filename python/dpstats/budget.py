"""One privacy budget across many releases (the C++ ``Budget``; docs/guide.md "An analyst's
session")."""
from __future__ import annotations

import json
import os
import tempfile
from typing import Optional

from . import _dpstats, _options

BudgetExceeded = _dpstats.BudgetExceeded
BudgetExceeded.__doc__ = (
    "Raised when a release would exceed its Budget's total: it is refused before any noise is "
    "drawn, nothing is released and nothing is charged. A ValueError, like every refused input.")


class Budget:
    """A total privacy loss that every release passed ``budget=`` is charged against.

    ``Budget(epsilon=3, delta=1e-5, accountant="zcdp")`` composes heterogeneous releases -- pure
    (Laplace, quantiles), approximate (stability histograms), zCDP (Gaussian noise), RDP of
    subsampled runs -- against one (epsilon, delta) total. ``accountant`` says how the ledger is
    counted: "basic" (epsilons and deltas add; pure and approximate releases only), "zcdp" (rho
    adds; pure epsilon counts as epsilon^2/2; the total is met through the tight conversion),
    "gdp" (mu^2 adds), "rdp" (Renyi curves add: every kind of release, subsampled training
    included -- the accountant for a session that mixes statistics and a ``fit(task="classify")``)
    or "pld" (privacy-loss distributions; no zCDP releases). A release that would exceed the
    total raises :class:`BudgetExceeded` before any noise is drawn, and nothing is charged.
    ``rho=`` (accountant "zcdp") or ``mu=`` (accountant "gdp") give a total in those units.

    ``save(path)``/``Budget.load(path)`` keep it across sessions (the format of the tool's
    ``--budget FILE``; the spend is recomputed from the saved ledger when loading).
    """

    @_options.documented("budget init", "epsilon", "delta", "rho", "mu", "accountant")
    def __init__(self, epsilon: Optional[float] = None, delta: Optional[float] = None, *,
                 accountant: str = "basic", rho: Optional[float] = None,
                 mu: Optional[float] = None, _native=None):
        if _native is not None:
            self._native = _native
            return
        for name, value in (("epsilon", epsilon), ("delta", delta), ("rho", rho), ("mu", mu)):
            _options.check("budget init", name, value)  # the tool's `budget init` ranges
        given = sum(v is not None for v in (epsilon, rho, mu))
        if given != 1:
            raise ValueError("give exactly one total: epsilon (with delta), rho or mu")
        if epsilon is not None:
            if delta is None:
                raise ValueError("delta is required with epsilon (0 for a pure-DP total)")
            total = ({"kind": "pure", "epsilon": float(epsilon)} if float(delta) == 0 else
                     {"kind": "approximate", "epsilon": float(epsilon), "delta": float(delta)})
        elif rho is not None:
            total = {"kind": "zcdp", "rho": float(rho)}
            if delta:
                total["delta"] = float(delta)
        else:
            total = {"kind": "gdp", "mu": float(mu)}
        self._native = _dpstats._Budget(json.dumps(total), str(accountant))

    # ---- state ----
    def to_dict(self) -> dict:
        """The saved form: format, version, accountant, total, ledger, spent."""
        return json.loads(self._native.to_json())

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str) -> "Budget":
        return cls(_native=_dpstats._Budget.from_json(text))

    def save(self, path) -> None:
        """Writes the budget to ``path`` (atomically: a temporary file renamed over it)."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".budget-")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(self.to_json(indent=2) + "\n")
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path) -> "Budget":
        with open(os.fspath(path)) as f:
            return cls.from_json(f.read())

    @property
    def accountant(self) -> str:
        return self.to_dict()["accountant"]

    @property
    def total(self) -> dict:
        return self.to_dict()["total"]

    @property
    def ledger(self) -> list:
        """Every mechanism call charged so far, as in a release's ledger."""
        return self.to_dict()["ledger"]

    @property
    def spent(self) -> dict:
        """{"epsilon", "delta"} of everything charged (zeros before the first release); for the
        rdp and pld accountants also "analysis": which of their analyses (pld, rdp, zcdp, basic)
        gave the smallest epsilon, the one reported (docs/proofs/accounting.md §10)."""
        return self.to_dict().get("spent", {"epsilon": 0.0, "delta": 0.0})

    def __repr__(self) -> str:
        d = self.to_dict()
        s = d.get("spent", {"epsilon": 0.0, "delta": 0.0})
        return (f"Budget(total={d['total']}, accountant={d['accountant']!r}, "
                f"spent=(epsilon={s['epsilon']:g}, delta={s['delta']:g}), "
                f"ledger=[{len(d['ledger'])} entries])")


def native(budget: Optional[Budget]):
    """The C++ Budget behind ``budget`` (None passes through)."""
    if budget is None:
        return None
    if not isinstance(budget, Budget):
        raise ValueError(f"budget must be a dpstats.Budget or None, got {type(budget).__name__}")
    return budget._native
