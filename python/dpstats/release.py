"""The Release object every private function returns (design.md §3)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np


@dataclass(frozen=True)
class Release:
    """A private output together with the privacy it cost.

    ``estimate`` is the released value. ``epsilon``/``delta`` (and ``rho`` when the run was
    accounted in zCDP) state the guarantee; ``certified`` is true only when a proof covers exactly
    what ran. ``status`` is ``"ok"`` or ``"abstained"`` (an abstention is itself private).
    ``seeded`` is true when the noise came from a seed (reproducible, not secure). ``ledger``
    lists every mechanism call; ``diagnostics`` holds public values only.
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

    @classmethod
    def _from_native(cls, estimate: np.ndarray, fields_json: str) -> "Release":
        f: dict[str, Any] = json.loads(fields_json)
        p = f["privacy"]
        return cls(estimate=estimate, epsilon=p["epsilon"], delta=p["delta"], rho=p["rho"],
                   certified=p["certified"], status=f["status"], seeded=f["seeded"],
                   noise=f["noise"], neighbouring=p["neighbouring"],
                   diagnostics=f["diagnostics"], ledger=f["ledger"])

    def __repr__(self) -> str:
        priv = f"epsilon={self.epsilon:g}, delta={self.delta:g}"
        if self.rho is not None:
            priv += f", rho={self.rho:g}"
        return (f"Release(estimate={np.array2string(np.asarray(self.estimate), precision=4)}, "
                f"{priv}, certified={self.certified}, status={self.status!r}, "
                f"seeded={self.seeded})")
