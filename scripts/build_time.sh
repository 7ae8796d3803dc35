#!/usr/bin/env bash
# What a newcomer waits for (issue 30; docs/benchmarks.md "Build time"): for each TARGET
# (default: demo, then test), `make TARGET` in a fresh clone of REF (default HEAD), first with an
# empty ccache (CCACHE_DIR a new, empty folder), then warm (a second fresh clone, the same
# CCACHE_DIR as the first left it: a rebuild after a checkout, or CI with a kept cache).
# The Debian packages must be present (make runs scripts/install-deps.sh, which then installs
# nothing). Prints one line per run: wall seconds, CPU seconds of make and all it ran (user +
# sys), ccache's hits and misses, and the load average before and after: on a shared machine
# the wall time moves with the load. `make test` includes running the default suite.
# Usage: scripts/build_time.sh [REF [TARGET...]]      e.g. scripts/build_time.sh HEAD demo
set -euo pipefail
ref=${1:-HEAD}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- demo test
src=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)  # the checkout this script is in
commit=$(git -C "$src" rev-parse "$ref^{commit}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

clone() {  # a fresh clone of the commit at $1
  git clone -q --no-checkout "$src" "$1"
  git -C "$1" checkout -q "$commit"
}

hits() {  # ccache's counters since the last zeroing, as "H hits, M misses"
  ccache --print-stats | awk '$1 ~ /^(direct|preprocessed)_cache_hit$/ { h += $2 }
    $1 == "cache_miss" { m = $2 } END { printf "%d hits, %d misses", h, m }'
}

timed() {  # timed TARGET CACHE_STATE DIR: one make in DIR, one line out
  local target=$1 state=$2 dir=$3 before
  before=$(cut -d' ' -f1 /proc/loadavg)
  ccache -z >/dev/null
  if ! /usr/bin/time -o "$work/time" -f "%e %U %S" make -C "$dir" "$target" >"$work/make.log" 2>&1; then
    tail -20 "$work/make.log"
    echo "build_time: make $target failed (log above)" >&2
    exit 1
  fi
  read -r wall user sys <"$work/time"
  printf 'build_time: make %s at %s, ccache %s: wall %.0f s, CPU %.0f s (user + sys), ccache %s; load %s -> %s; %s cores\n' \
    "$target" "${commit:0:7}" "$state" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$(hits)" "$before" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$(nproc)"
}

command -v ccache >/dev/null || { echo "build_time: ccache is not installed (scripts/install-deps.sh)" >&2; exit 1; }
for target in "$@"; do
  export CCACHE_DIR="$work/ccache-$target"
  mkdir -p "$CCACHE_DIR"
  clone "$work/cold-$target"
  timed "$target" "empty" "$work/cold-$target"
  clone "$work/warm-$target"
  timed "$target" "warm" "$work/warm-$target"
  rm -rf "$work/cold-$target" "$work/warm-$target"
done
