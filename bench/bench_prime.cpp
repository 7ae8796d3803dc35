// PRIME time against n and d (issue 3), with one pass of XᵀX over the same data measured in the
// same run as the unit. Data: the paper's shifted cluster (α = 0.05); PRIME practical, ε = 10,
// δ = 0.01, seeded noise, all of the machine's cores and 1 thread.
//   BM_XtX/n/d            : Eigen's symmetric rank update XᵀX (the unit)
//   BM_Prime/n/d/threads  : one full PRIME release (range, medians, clipping, filter, final mean)
//   BM_DpMean/n/d         : the DP Mean baseline on the same data
//   BM_PrimeHt/n/d/threads, BM_PrivateFilter/n/d/threads : the rest of the family (practical)
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/prime_ht.hpp"
#include "dpstats/mean/private_filter.hpp"
#include "dpstats/parallel.hpp"

using namespace dpstats;

namespace {

const RowMatrix& data(std::int64_t n, std::int64_t d) {
  static std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<RowMatrix>> cache;
  auto& slot = cache[{n, d}];
  if (!slot) {
    cache.clear();  // keep one data set in memory at a time
    auto& fresh = cache[{n, d}];
    SeededRng g(static_cast<std::uint64_t>(n * 1000 + d));
    fresh = std::make_unique<RowMatrix>(shifted_cluster(n, d, 0.05, 1.5, g));
    return *fresh;
  }
  return *slot;
}

void BM_XtX(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), state.range(1));
  for (auto _ : state) {
    Eigen::MatrixXd G = Eigen::MatrixXd::Zero(X.cols(), X.cols());
    G.selfadjointView<Eigen::Lower>().rankUpdate(X.transpose());
    benchmark::DoNotOptimize(G.data());
  }
}

// The PRIME drivers at the setting (ε = 10, δ = 0.01, α = 0.05, no fallback).
template <class Run>
void prime_bench(benchmark::State& state, Run run) {
  const RowMatrix& X = data(state.range(0), state.range(1));
  PrimeOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 10;
  o.privacy.delta = 0.01;
  o.alpha = 0.05;
  o.run.threads = static_cast<int>(state.range(2));
  o.fallback = false;
  SeededRng rng(1);
  for (auto _ : state) {
    auto r = run(X, o, rng);
    benchmark::DoNotOptimize(r.estimate.data());
  }
}

void BM_Prime(benchmark::State& state) {
  prime_bench(state, [](const RowMatrix& X, const PrimeOptions& o, Rng& r) { return prime(X, o, r); });
}

void BM_PrimeHt(benchmark::State& state) {
  prime_bench(state,
              [](const RowMatrix& X, const PrimeOptions& o, Rng& r) { return prime_ht(X, o, r); });
}

void BM_PrivateFilter(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), state.range(1));
  PrivateFilterOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 10;
  o.privacy.delta = 0.01;
  o.alpha = 0.05;
  o.run.threads = static_cast<int>(state.range(2));
  SeededRng rng(1);
  for (auto _ : state) {
    auto r = private_filter(X, o, rng);
    benchmark::DoNotOptimize(r.estimate.data());
  }
}

void BM_DpMean(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), state.range(1));
  DpMeanOptions o;
  o.scale = std::vector<double>{1.0};
  o.clip_check_share = 0;
  o.privacy.epsilon = 10;
  o.privacy.delta = 0.01;
  SeededRng rng(1);
  for (auto _ : state) {
    auto r = dp_mean(X, o, rng);
    benchmark::DoNotOptimize(r.estimate.data());
  }
}

void shapes(benchmark::internal::Benchmark* b, bool threads) {
  const std::pair<std::int64_t, std::int64_t> grid[] = {
      {10000, 10},   {10000, 50},   {10000, 200},  {100000, 10},  {100000, 50},
      {100000, 100}, {100000, 200}, {1000000, 10}, {1000000, 50}, {1000000, 100}};
  for (auto [n, d] : grid) {
    if (threads) {
      if (default_threads() > 1) b->Args({n, d, default_threads()});  // all of the machine's cores
      b->Args({n, d, 1});
    } else {
      b->Args({n, d});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_XtX)->Apply([](auto* b) { shapes(b, false); });
BENCHMARK(BM_Prime)->Apply([](auto* b) { shapes(b, true); });
BENCHMARK(BM_DpMean)->Apply([](auto* b) { shapes(b, false); });
BENCHMARK(BM_PrimeHt)->Apply([](auto* b) { shapes(b, true); });
BENCHMARK(BM_PrivateFilter)->Apply([](auto* b) { shapes(b, true); });
