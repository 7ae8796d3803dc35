// Geometric median benchmarks (docs/benchmarks.md "Geometric median"): the radius searches against
// n (FastRadius as printed, its permutation design, HSU24 RadiusFinder; GaussianCluster R = 4,
// d = 10, ε = 1, δ = 1e-5) and the practical private pipeline against our Weiszfeld solved to
// 1e-6 relative accuracy (GaussianCluster R = 50, d = 50, σ = 0.1, ρ = 0.5), single thread, in
// the same run so that the ratios are meaningful.
#include <benchmark/benchmark.h>

#include <map>

#include "dpstats/data/gaussian_cluster.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/median/radius.hpp"
#include "dpstats/median/weiszfeld.hpp"

namespace {

using namespace dpstats;

const RowMatrix& data(std::int64_t n, std::int64_t d, double R) {
  static std::map<std::tuple<std::int64_t, std::int64_t, double>, RowMatrix> cache;
  auto key = std::make_tuple(n, d, R);
  auto it = cache.find(key);
  if (it == cache.end()) {
    SeededRng rng(static_cast<std::uint64_t>(n * 31 + d));
    it = cache.emplace(key, gaussian_cluster(R, n, d, 0.1, 0.9, rng)).first;
  }
  return it->second;
}

void BM_FastRadius(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), 10, 4);
  SecureRng rng;
  for (auto _ : state) benchmark::DoNotOptimize(fast_radius(X, 0.01, 4, 1, 1e-5, rng).r_hat);
}
BENCHMARK(BM_FastRadius)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_FastRadiusPermuted(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), 10, 4);
  SecureRng rng;
  for (auto _ : state) benchmark::DoNotOptimize(fast_radius_permuted(X, 0.01, 4, 1, rng).r_hat);
}
BENCHMARK(BM_FastRadiusPermuted)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// O(n² d): n = 10^5 would take about 20 minutes, so the run stops at 3·10^4.
void BM_RadiusFinder(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), 10, 4);
  SecureRng rng;
  for (auto _ : state) benchmark::DoNotOptimize(radius_finder(X, 0.01, 4, 1, 0.05, rng).r_hat);
}
BENCHMARK(BM_RadiusFinder)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Weiszfeld1e6(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), 50, 50);
  WeiszfeldOptions lo;
  lo.rel_tol = 1e-12;
  lo.max_iterations = 200;
  WeiszfeldOptions o;
  o.target_objective = weiszfeld(X, lo).f * (1 + 1e-6);
  for (auto _ : state) benchmark::DoNotOptimize(weiszfeld(X, o).f);
}
BENCHMARK(BM_Weiszfeld1e6)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

void BM_PrivateMedianPractical(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), 50, 50);
  SecureRng rng;
  GeometricMedianOptions o;
  o.privacy = {zcdp_to_epsilon(0.5, 1e-6), 1e-6};
  o.domain_radius = 50;
  for (auto _ : state) benchmark::DoNotOptimize(geometric_median(X, o, rng).estimate);
}
BENCHMARK(BM_PrivateMedianPractical)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace
