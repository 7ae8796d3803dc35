#!/usr/bin/env bash
# Installs exactly the Debian packages dpstats needs to build, test, benchmark and plot.
# Idempotent: does nothing when everything is present; runs `apt-get update` only when a
# package is missing. Needs root (or sudo) only in that case.
set -euo pipefail

PACKAGES=(
  g++ cmake make pkg-config
  ccache                          # compiler cache: rebuilds after a checkout or a branch switch
  libeigen3-dev libspectra-dev    # linear algebra, partial eigensolvers
  libssl-dev                      # OS CSPRNG through OpenSSL RAND_bytes
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libboost-dev                    # header-only Boost.Multiprecision (exact sampler bounds)
  zlib1g-dev                      # .npz input (deflated members)
  libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-matplotlib
  python3-pandas                  # optional DataFrame input to the Python module (tested)
  python3-venv python3-pip python3-setuptools  # `pip install .` (no build isolation) and its test
  openmpi-bin libopenmpi-dev python3-mpi4py  # `mpirun dpstats`, the MPI communicator, comm=
  time                            # /usr/bin/time: peak-memory checks in tests/cli/test_input.sh
  dataset-fashion-mnist           # geometric-median repro/benchmark only (tests never need it)
)

# `--fuzz` adds what `make fuzz` needs (clang with libFuzzer); `make test` never needs it.
if [ "${1:-}" = "--fuzz" ]; then PACKAGES+=(clang libclang-rt-dev); fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} Debian packages present."
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-deps: error: these packages are missing and you are not root: ${missing[*]}" >&2
    echo "install-deps: run 'apt-get install ${missing[*]}' as root, or rerun this script as root." >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} package(s)."
