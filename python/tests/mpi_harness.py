"""Runs a helper script of this folder under `mpirun -np P` for the comm= tests (issue 18): as
root and with more ranks than cores (the variables are set here, not by hand); skips the test
when mpi4py or mpirun is missing (scripts/install-deps.sh installs both)."""
import os
import shutil
import subprocess
import sys

import pytest


def mpirun(p, script, *args, timeout=120):
    pytest.importorskip("mpi4py")
    exe = shutil.which("mpirun")
    if exe is None:
        pytest.skip("mpirun not installed (scripts/install-deps.sh)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    return subprocess.run([exe, "-np", str(p), "--oversubscribe", "--bind-to", "none",
                           sys.executable, os.path.join(os.path.dirname(__file__), script),
                           *map(str, args)],
                          env=env, capture_output=True, text=True, timeout=timeout)
