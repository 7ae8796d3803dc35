"""The Release object every private function returns (docs/architecture.md, "Release<T>")."""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field, fields as dc_fields
from typing import Any, Optional

import numpy as np


def _plain(v):
    """JSON-ready copy of ``v`` (arrays to lists, NumPy scalars to Python, inf/nan to strings)."""
    if isinstance(v, np.ndarray):
        return _plain(v.tolist())
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else str(f)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


@dataclass(frozen=True)
class Release:
    """A private output together with the privacy it cost.

    ``estimate`` is the released value. ``epsilon``/``delta`` (and ``rho`` when the run was
    accounted in zCDP) state the guarantee; ``accountant`` says how the ledger was counted
    ("basic", "zcdp", "gdp"; None for a non-private run). ``unit`` is the privacy unit ("record":
    one row; "user": all rows of one user) and ``neighbouring`` the relation ("replace-one",
    "add-remove"). ``certified`` is true only when a proof covers exactly what ran. ``status`` is
    ``"ok"`` or ``"abstained"`` (an abstention is itself private; the reason is in
    ``diagnostics["abstained"]``). ``seeded`` is true when the noise came from a seed
    (reproducible, not secure). ``ledger`` lists every mechanism call; ``diagnostics`` holds
    public values only.

    ``to_dict()``/``to_json()`` give the same fields as the tool's JSON output (``json.dumps``
    needs ``r.to_dict()``, since the estimate is a NumPy array).

    Every field is declared once as public, released or derived (``dpstats.output_fields()``,
    docs/threat-model.md "What each output field is"); a Release carries only declared fields.
    """

    estimate: np.ndarray
    epsilon: float
    delta: float
    rho: Optional[float]
    certified: bool
    status: str
    seeded: bool
    noise: str
    neighbouring: str
    diagnostics: dict = field(default_factory=dict)
    ledger: list = field(default_factory=list)
    unit: str = "record"
    accountant: Optional[str] = None

    @staticmethod
    def _fields(fields_json: str, scope: str) -> dict:
        """The keyword arguments of every Release field except ``estimate``: the fields the
        declaration of ``scope`` (the tool's command, e.g. "mean", "fit/classify") keeps."""
        from . import _dpstats
        kept, removed = _dpstats._declared_fields(fields_json, scope)
        if removed:  # a bug (an undeclared field); the release is still correct without it
            warnings.warn(f"dpstats: internal: undeclared output fields of {scope!r} left out: "
                          f"{', '.join(removed)}", RuntimeWarning, stacklevel=3)
        f: dict[str, Any] = json.loads(kept)
        p = f["privacy"]
        return dict(epsilon=p["epsilon"], delta=p["delta"], rho=p["rho"],
                    certified=p["certified"], status=f["status"], seeded=f["seeded"],
                    noise=f["noise"], neighbouring=p["neighbouring"],
                    diagnostics=f["diagnostics"], ledger=f["ledger"],
                    unit=p.get("unit", "record"), accountant=p.get("accountant"))

    @classmethod
    def _from_native(cls, estimate: np.ndarray, fields_json: str, scope: str) -> "Release":
        return cls(estimate=estimate, **cls._fields(fields_json, scope))

    def to_dict(self) -> dict:
        """Plain Python values (lists, floats, str), laid out like the tool's JSON: estimate,
        status, privacy {epsilon, delta, rho, certified, neighbouring, unit, accountant}, seeded,
        noise, diagnostics, ledger, and any extra fields of a subclass."""
        out = {"estimate": _plain(self.estimate), "status": self.status,
               "privacy": {"epsilon": _plain(self.epsilon), "delta": _plain(self.delta),
                           "rho": _plain(self.rho), "certified": self.certified,
                           "neighbouring": self.neighbouring, "unit": self.unit,
                           "accountant": self.accountant},
               "seeded": self.seeded, "noise": self.noise,
               "diagnostics": _plain(self.diagnostics), "ledger": _plain(self.ledger)}
        base = {f.name for f in dc_fields(Release)}
        for f in dc_fields(self):
            if f.name not in base:
                out[f.name] = _plain(getattr(self, f.name))
        return out

    def to_json(self, **kwargs) -> str:
        """``json.dumps(self.to_dict(), **kwargs)``."""
        return json.dumps(self.to_dict(), **kwargs)

    def __repr__(self) -> str:
        est = np.asarray(self.estimate)
        shown = (np.array2string(est, precision=4, threshold=8, separator=", ")
                 if est.size <= 8 or est.ndim != 1 else
                 f"array of {est.size}: {np.array2string(est[:4], precision=4, separator=', ')} ...")
        priv = f"epsilon={self.epsilon:g}, delta={self.delta:g}"
        if self.rho is not None:
            priv += f", rho={self.rho:g}"
        if self.accountant is not None:
            priv += f" ({self.accountant})"
        flags = f"unit={self.unit!r}, certified={self.certified}, status={self.status!r}"
        if self.seeded:
            flags += ", seeded=True"
        return (f"{type(self).__name__}(estimate={shown}, {priv}, {flags}, "
                f"ledger=[{len(self.ledger)} entries])")
