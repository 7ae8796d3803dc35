#!/usr/bin/env bash
# Fuzzes every reader harness (tests/fuzz/) for MINUTES each with libFuzzer + ASan + UBSan.
# Usage: scripts/fuzz.sh [BUILD_DIR=build-fuzz] [MINUTES=1]. New inputs go to BUILD_DIR/corpus/,
# crashes to BUILD_DIR/artifacts/ (copy a crash into tests/fuzz/corpus/<harness>/ once fixed, so
# that `make test` replays it). Prints executions and coverage per harness.
set -euo pipefail
BUILD=${1:-build-fuzz}
MINUTES=${2:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$BUILD/artifacts"
status=0
for h in csv npy table; do
  mkdir -p "$BUILD/corpus/$h"
  echo "fuzz: $h for $MINUTES minute(s)"
  if ! "$BUILD/tests/fuzz/fuzz_$h" -max_total_time=$((MINUTES * 60)) -max_len=65536 -rss_limit_mb=2048 \
      -malloc_limit_mb=64 -timeout=10 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$h-" \
      "$BUILD/corpus/$h" "$ROOT/tests/fuzz/corpus/$h" >"$BUILD/fuzz_$h.log" 2>&1; then
    status=1
    echo "fuzz: $h FOUND A CRASH (see $BUILD/fuzz_$h.log and $BUILD/artifacts/)"
  fi
  grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$BUILD/fuzz_$h.log" | tail -2 || true
done
exit $status
