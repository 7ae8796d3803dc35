// The private scale layer at the PRIME benchmark's size (issue 27 item 6), in units of one XᵀX
// pass measured in the same run (BM_XtX in bench_prime.cpp, bench_xtx_avx2): bench/scale_passes.sh.
//   BM_Bounds/n/d/threads      : private_bounds at epsilon 1 (what `dpstats bounds` runs)
//   BM_ClipBounds/n/d/threads  : private_clip_bounds at epsilon 1 (coverage 0.01)
//   BM_PrimeDefault/n/d/threads: PRIME at epsilon 10, delta 0.01, alpha 0.05 with no scale given
//                                (the scale layer estimates the units), no fallback
// Data: the paper's shifted cluster (α = 0.05, shift 1.5), as bench_prime.cpp.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "dpstats/mean/prime.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/bounds.hpp"
#include "dpstats/scale/clip_bounds.hpp"
#include "dpstats/synthetic/shifted_cluster.hpp"

namespace {

using namespace dpstats;

const RowMatrix& cluster(std::int64_t n, std::int64_t d) {
  static std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<RowMatrix>> cache;
  auto& slot = cache[{n, d}];
  if (!slot) {
    SeededRng g(static_cast<std::uint64_t>(n * 1000 + d));
    slot = std::make_unique<RowMatrix>(shifted_cluster(n, d, 0.05, 1.5, g));
  }
  return *slot;
}

void BM_Bounds(benchmark::State& state) {
  const RowMatrix& X = cluster(state.range(0), state.range(1));
  BoundsOptions o;
  o.privacy.epsilon = 1;
  o.run.threads = static_cast<int>(state.range(2));
  SeededRng rng(1);
  for (auto _ : state) {
    auto r = private_bounds(X, o, rng);
    benchmark::DoNotOptimize(r.estimate.scale.columns.data());
  }
}

void BM_ClipBounds(benchmark::State& state) {
  const RowMatrix& X = cluster(state.range(0), state.range(1));
  ClipBoundsOptions o;
  o.threads = static_cast<int>(state.range(2));
  SeededRng rng(1);
  for (auto _ : state) {
    ReleaseBudget account(o.loss, Accountant::basic);
    auto r = private_clip_bounds(X, o, account, rng);
    benchmark::DoNotOptimize(r.columns.data());
  }
}

void BM_PrimeDefault(benchmark::State& state) {
  const RowMatrix& X = cluster(state.range(0), state.range(1));
  PrimeOptions o;
  o.privacy.epsilon = 10;
  o.privacy.delta = 0.01;
  o.alpha = 0.05;
  o.run.threads = static_cast<int>(state.range(2));
  o.fallback = false;
  SeededRng rng(1);
  for (auto _ : state) {
    auto r = prime(X, o, rng);
    benchmark::DoNotOptimize(r.estimate.data());
  }
}

void sizes(benchmark::internal::Benchmark* b) {
  for (auto [n, d] : {std::pair<std::int64_t, std::int64_t>{1000000, 100}, {1000000, 10}, {3000, 1}}) {
    b->Args({n, d, 1});
    if (default_threads() > 1) b->Args({n, d, default_threads()});  // all of the machine's cores
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
}

}  // namespace

BENCHMARK(BM_Bounds)->Apply(sizes);
BENCHMARK(BM_ClipBounds)->Apply(sizes);
BENCHMARK(BM_PrimeDefault)->Apply(sizes);
