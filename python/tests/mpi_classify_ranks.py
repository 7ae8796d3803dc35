"""Run by test_classify.py under `mpirun -np P`: each rank takes its block of the rows, trains
with comm=MPI.COMM_WORLD, and rank 0 prints the release (parameters in hex)."""
import json
import sys

import numpy as np
from mpi4py import MPI

import dpstats

comm = MPI.COMM_WORLD
D = np.load(sys.argv[1])
kwargs = json.loads(sys.argv[2])
n, r, p = D.shape[0], comm.Get_rank(), comm.Get_size()
cut = [0, n // 3, n] if p == 2 else [n * k // p for k in range(p + 1)]  # uneven for P = 2
mine = D[cut[r]:cut[r + 1]]
rel = dpstats.fit(mine[:, 1:], mine[:, 0].astype(np.int64), task="classify", comm=comm, **kwargs)
if r == 0:
    out = json.loads(rel.to_json())
    print(json.dumps({"estimate": [float(v).hex() for v in rel.estimate], "release": out}))
