"""Run by test_mpi.py under `mpirun -np P`: each rank takes its block of the rows, calls
dpstats.mean (or the dpstats function argv[3] names: "bounds", "median", "quantiles",
"variance", ...) with comm=MPI.COMM_WORLD, and rank 0 prints the release as JSON (estimate in
hex)."""
import json
import sys

import numpy as np
from mpi4py import MPI

import dpstats

comm = MPI.COMM_WORLD
X = np.load(sys.argv[1])
kwargs = json.loads(sys.argv[2])
n, r, p = X.shape[0], comm.Get_rank(), comm.Get_size()
mine = X[n * r // p: n * (r + 1) // p]
if len(sys.argv) > 3 and sys.argv[3] == "bounds":
    rel = dpstats.bounds(mine, comm=comm, **kwargs)
    estimate = {k: [float(v).hex() for v in np.atleast_1d(rel.estimate[k])] for k in rel.estimate}
elif len(sys.argv) > 3 and sys.argv[3] == "histogram":  # categories: column 1 in thousands
    rel = dpstats.histogram(np.round(mine[:, 1] / 1e3).astype(np.int64), comm=comm, **kwargs)
    estimate = {str(k): float(v).hex() for k, v in rel.estimate.items()}
else:
    function = getattr(dpstats, sys.argv[3] if len(sys.argv) > 3 else "mean")
    rel = function(mine, comm=comm, **kwargs)
    values = np.ravel(rel.estimate)
    if sys.argv[3:4] == ["moments"]:  # both series
        values = np.concatenate([values, np.ravel(rel.second)])
    estimate = [float(v).hex() for v in values]
if r == 0:
    print(json.dumps({"estimate": estimate, "release": rel.to_json()}))
