#!/usr/bin/env bash
# `pip install --no-build-isolation .` from the checkout, then `import dpstats` from another
# directory. The package goes into a fresh virtual environment that sees Debian's packages
# (numpy, setuptools) and is offline (--no-index). The extension is taken from the already built
# tree so that the test does not recompile the library: when that tree is the checkout's build/
# (the Makefile's), setup.py must find it by itself, through the venv's link to the interpreter the
# tree was configured for; otherwise DPSTATS_CMAKE_BUILD_DIR names it.
# Usage: test_pip_install.sh BUILD_DIR SOURCE_DIR PYTHON
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
python=${3:-/usr/bin/python3}
venv="$build/pip-venv"
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
given=()
[ "$build" = "$src/build" ] || given=("DPSTATS_CMAKE_BUILD_DIR=$build")
away=$(mktemp -d)
trap 'rm -rf "$away"' EXIT
env "${given[@]}" "$venv/bin/python" -m pip install -v --no-index --no-build-isolation "$src" \
  >"$away/pip.log" 2>&1 || { tail -20 "$away/pip.log"; exit 1; }
grep -qF "dpstats: building the _dpstats target in the CMake tree $build" "$away/pip.log" || {
  echo "pip install did not reuse the build tree $build:"; grep -F "dpstats:" "$away/pip.log"; exit 1; }
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
