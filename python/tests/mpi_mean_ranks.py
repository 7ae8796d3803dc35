"""Run by test_mpi.py under `mpirun -np P`: each rank takes its block of the rows, calls
dpstats.mean with comm=MPI.COMM_WORLD, and rank 0 prints the release as JSON (estimate in hex)."""
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
rel = dpstats.mean(mine, comm=comm, **kwargs)
if r == 0:
    print(json.dumps({"estimate": [float(v).hex() for v in rel.estimate], "release": rel.to_json()}))
