#!/usr/bin/env bash
# `pip install --no-build-isolation .` from the checkout, then `import dpstats` from another
# directory. The package goes into a fresh virtual environment that sees Debian's packages
# (numpy, setuptools) and is offline (--no-index). The extension is taken from the already built
# tree (DPSTATS_CMAKE_BUILD_DIR) so that the test does not recompile the library.
# Usage: test_pip_install.sh BUILD_DIR SOURCE_DIR PYTHON
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
python=${3:-/usr/bin/python3}
venv="$build/pip-venv"
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
DPSTATS_CMAKE_BUILD_DIR="$build" "$venv/bin/python" -m pip install --quiet --no-index \
  --no-build-isolation "$src"
away=$(mktemp -d)
trap 'rm -rf "$away"' EXIT
cd "$away"
"$venv/bin/python" - <<'PY'
import os, sys
import numpy as np
import dpstats
assert "site-packages" in dpstats.__file__, dpstats.__file__
r = dpstats.laplace(np.array([120.0, 37.0]), sensitivity=1.0, epsilon=0.5, seed=1)
assert r.epsilon == 0.5 and r.estimate.shape == (2,)
# The guide's session starts with `python3 -m dpstats.examples`: the installed package has it.
from dpstats import examples
examples.write("people.csv", examples.people(500))
X, names = dpstats.read_table("people.csv", columns=["age", "salary"], drop_missing=True)
assert names == ["age", "salary"] and X.shape[1] == 2
print("pip install: import dpstats from", os.path.dirname(dpstats.__file__), "ok")
PY
