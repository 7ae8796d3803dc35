// Geometric median benchmarks (docs/benchmarks.md "Geometric median"): the radius searches against
// n (FastRadius as printed, its permutation design, HSU24 RadiusFinder; GaussianCluster R = 4,
// d = 10, ε = 1, δ = 1e-5) and the practical private pipeline against our Weiszfeld solved to
// 1e-6 relative accuracy (GaussianCluster R = 50, d = 50, σ = 0.1, ρ = 0.5), single thread, in
// the same run so that the ratios are meaningful.
#include <benchmark/benchmark.h>

#include <time.h>

#include <map>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/synthetic/gaussian_cluster.hpp"
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

// Issue 17 item 6: FastRadius (Alg. 2) against RadiusFinder on the same data in the same run,
// both single-threaded: per iteration one RadiusFinder and five FastRadius searches, each timed in
// thread CPU time (the machine is shared: wall time counts other processes' work); counters: the mean time of each, their ratio, and each estimate over the true
// 0.75-quantile radius around the (Weiszfeld) geometric median (target: both in [1, 4]).
void BM_FastRadiusVsRadiusFinder(benchmark::State& state) {
  const RowMatrix& X = data(state.range(0), 10, 4);
  const double r_true = quantile_radius(X, weiszfeld(X).x, 0.75);
  SecureRng rng;
  const auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  double rf_s = 0, fr_s = 0, rf_ratio = 0, fr_lo = 1e300, fr_hi = 0;
  int rf_runs = 0, fr_runs = 0;
  for (auto _ : state) {
    double t0 = cpu_now();
    const double rf = radius_finder(X, 0.01, 4, 1, 0.05, rng).r_hat;
    rf_s += cpu_now() - t0;
    rf_ratio = rf / r_true;
    ++rf_runs;
    for (int i = 0; i < 5; ++i, ++fr_runs) {
      t0 = cpu_now();
      const double fr = fast_radius(X, 0.01, 4, 1, 1e-5, rng).r_hat;
      fr_s += cpu_now() - t0;
      fr_lo = std::min(fr_lo, fr / r_true);
      fr_hi = std::max(fr_hi, fr / r_true);
    }
  }
  state.counters["rf_ms"] = 1e3 * rf_s / rf_runs;
  state.counters["fr_ms"] = 1e3 * fr_s / fr_runs;
  state.counters["ratio"] = (rf_s / rf_runs) / (fr_s / fr_runs);
  state.counters["rf_over_true"] = rf_ratio;
  state.counters["fr_over_true_min"] = fr_lo;
  state.counters["fr_over_true_max"] = fr_hi;
}
BENCHMARK(BM_FastRadiusVsRadiusFinder)->Arg(10000)->Unit(benchmark::kMillisecond)->Iterations(3);

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

// Issue 17 thread scaling: the practical pipeline on 10^6 × 50 (R = 50 given) at 1, 2, … threads
// (the same seeded release for any count); wall time (UseRealTime).
void BM_PrivateMedianThreads(benchmark::State& state) {
  const RowMatrix& X = data(1000000, 50, 50);
  SecureRng rng;
  GeometricMedianOptions o;
  o.privacy = {zcdp_to_epsilon(0.5, 1e-6), 1e-6};
  o.domain_radius = 50;
  o.run.threads = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(geometric_median(X, o, rng).estimate);
}
// Issue 18 strong scaling, in-process ranks (run_local_ranks: P threads of this process, each
// rank its contiguous 1/P of the rows, one thread per rank): the practical pipeline on 10^6 × 50
// at P = 1, 2, 4; the ratio to P = 1 is the distributed code's own scaling (no MPI transport).
void BM_PrivateMedianLocalRanks(benchmark::State& state) {
  const RowMatrix& X = data(1000000, 50, 50);
  const int P = static_cast<int>(state.range(0));
  GeometricMedianOptions o;
  o.privacy = {zcdp_to_epsilon(0.5, 1e-6), 1e-6};
  o.domain_radius = 50;
  for (auto _ : state)
    run_local_ranks(P, [&](Communicator& comm) {
      const Eigen::Index n = X.rows(), r = comm.rank();
      const Eigen::Index begin = n * r / P, end = n * (r + 1) / P;
      auto mo = o;
      mo.run.comm = &comm;
      SecureRng rng;
      benchmark::DoNotOptimize(geometric_median(X.middleRows(begin, end - begin), mo, rng).estimate);
    });
}
BENCHMARK(BM_PrivateMedianLocalRanks)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_PrivateMedianThreads)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
