#!/usr/bin/env bash
# The build's cost, measured as docs/benchmarks.md "Build time" reports it: clones this checkout
# (REF, default HEAD) into a temporary directory and runs `make TARGET` (default demo) there with
# every compile and link wrapped in /usr/bin/time (so ccache is not used: a cold build). Prints
# the wall time, the CPU seconds (user + system) of all compiler and linker processes together,
# the load average before and after, and the ten heaviest units. On a shared machine the CPU
# seconds are the fair measure; wall depends on the load.
# Usage: scripts/build_time.sh [TARGET] [REF]
set -euo pipefail
target=${1:-demo}
ref=${2:-HEAD}
src=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$src" "$work/clone"
git -C "$work/clone" checkout -q "$(git -C "$src" rev-parse "$ref")"
cat >"$work/time.sh" <<'SH'
#!/bin/bash
log=$1; shift
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
exec /usr/bin/time -a -o "$log" -f "%e %U %S $out" "$@"
SH
chmod +x "$work/time.sh"
launch="$work/time.sh;$work/units.log"
echo "build_time: make $target at $(git -C "$src" rev-parse --short "$ref"); load: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
make -C "$work/clone" "$target" >"$work/make.log" 2>&1 \
  CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER='$launch' -DCMAKE_CXX_LINKER_LAUNCHER='$launch'" ||
  { tail -20 "$work/make.log"; exit 1; }
end=$(date +%s)
echo "build_time: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v wall=$((end - start)) '{cpu += $2 + $3} END {
  printf "build_time: %d units, wall %.0f s, CPU %.0f s (user + sys)\n", NR, wall, cpu }' "$work/units.log"
sort -k2 -n -r "$work/units.log" | head -10 | awk '{ printf "  %6.1f s  %s\n", $2 + $3, $4 }'
