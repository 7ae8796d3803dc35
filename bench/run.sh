#!/usr/bin/env bash
# make bench: Google Benchmark for the samplers (secure noise vs std::normal_distribution in the
# same run) and the bounded mean against NumPy. JSON results go to BUILD/bench/.
set -euo pipefail
BUILD=${1:-build}
mkdir -p "$BUILD/bench"
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
if [ -x "$BUILD/bench/dpstats_bench" ]; then
  "$BUILD/bench/dpstats_bench" --benchmark_out="$BUILD/bench/noise.json" \
    --benchmark_out_format=json --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
fi
PYTHONPATH="$BUILD/python" /usr/bin/python3 bench/bench_mean.py --out "$BUILD/bench/mean.json"
echo "== results in $BUILD/bench/ (noise.json, mean.json); see docs/benchmarks.md"
