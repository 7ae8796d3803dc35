#!/usr/bin/env bash
# usage: DPSTATS=build/dpstats compare.sh P ARGS...
# Runs `dpstats ARGS` in one process and `mpirun -np P dpstats ARGS` and requires the same bytes on
# stdout and exit status 0 from both (ARGS should hold --seed: a secure run differs every time),
# and a release with "status": "ok": two identical abstentions would compare nothing of the
# distributed computation (issue 28).
set -euo pipefail
: "${DPSTATS:?set DPSTATS to the dpstats binary}"
P=$1
shift
# mpirun as root (containers, CI) and more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$DPSTATS" "$@" >"$tmp/single" 2>"$tmp/single.err"; then
  echo "single-process run failed:"; cat "$tmp/single.err"; exit 1
fi
if ! mpirun -np "$P" --oversubscribe --bind-to none "$DPSTATS" "$@" >"$tmp/ranks" 2>"$tmp/ranks.err"; then
  echo "mpirun -np $P failed:"; cat "$tmp/ranks.err"; exit 1
fi
if ! cmp -s "$tmp/single" "$tmp/ranks"; then
  echo "P = $P: the release differs from the single-process release"
  diff <(tr ',' '\n' <"$tmp/single") <(tr ',' '\n' <"$tmp/ranks") | head -40
  exit 1
fi
[ -s "$tmp/single" ] || { echo "empty release"; exit 1; }
if ! head -1 "$tmp/single" | /usr/bin/python3 -c 'import json, sys; sys.exit(json.load(sys.stdin).get("status") != "ok")'; then
  echo "P = $P: the release is not status ok (an abstention compares nothing):"
  head -c 600 "$tmp/single"; echo
  exit 1
fi
echo "P = $P: byte-identical ($(wc -c <"$tmp/single") bytes)"
