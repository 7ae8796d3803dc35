"""Run by test_fit.py under `mpirun -np P`: each rank takes its block of the rows (user id, label,
features; a user's rows fall in several blocks), calls the user-level fit with
comm=MPI.COMM_WORLD, and rank 0 prints the release (estimate in hex)."""
import json
import sys

import numpy as np
from mpi4py import MPI

import dpstats

comm = MPI.COMM_WORLD
D = np.load(sys.argv[1])
kwargs = json.loads(sys.argv[2])
n, r, p = D.shape[0], comm.Get_rank(), comm.Get_size()
mine = D[n * r // p: n * (r + 1) // p]
rel = dpstats.fit(mine[:, 2:], mine[:, 1], mine[:, 0].astype(np.int64), task="user-level",
                  comm=comm, **kwargs)
if r == 0:
    print(json.dumps({"estimate": [float(v).hex() for v in rel.estimate], "release": rel.to_json()}))
