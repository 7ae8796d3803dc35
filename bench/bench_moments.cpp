// Continual moments: the per-step cost of the estimator against t and d for each factorization,
// beside the noise-free running sums (first moment and the same second-moment form) measured in
// the same run. Secure noise unless the name says fast_float.
#include <benchmark/benchmark.h>

#include <string>

#include "dpstats/moments/estimator.hpp"

using namespace dpstats;
using namespace dpstats::moments;

namespace {

Vector unit_row(std::size_t d) {
  Vector x = Vector::Constant(static_cast<Eigen::Index>(d), 1.0);
  return x / x.norm() * 0.9;
}

// Noise-free running sums of x and of x x^T (full) or x∘x (diagonal).
void BM_RunningSum(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const bool full = state.range(1) != 0;
  const Vector x = unit_row(d);
  Vector y = Vector::Zero(static_cast<Eigen::Index>(d));
  RowMatrix S = RowMatrix::Zero(full ? d : 1, full ? d : 1);
  Vector diag = Vector::Zero(static_cast<Eigen::Index>(d));
  for (auto _ : state) {
    y += x;
    if (full) {
      S.noalias() += x * x.transpose();
    } else {
      diag += x.cwiseProduct(x);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(S.data());
    benchmark::DoNotOptimize(diag.data());
  }
}

// One push of JME at step ~t (the first t steps are pushed before timing).
void step_bench(benchmark::State& state, const std::string& factorization, NoiseMode mode,
                int threads = 1) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const bool full = state.range(1) != 0;
  const auto t0 = static_cast<std::size_t>(state.range(2));
  const auto timed = static_cast<std::size_t>(state.max_iterations);
  MomentsConfig c = make_config(t0 + timed + 1, d, "jme", "prefix", factorization, !full);
  c.privacy.epsilon = 1;
  c.clip = 1;
  c.clip_check_share = 0;  // rows of norm <= 1 by construction: the clip never bites
  c.privacy.delta = 1e-6;
  c.run.noise = mode;
  c.run.threads = threads;
  SecureRng rng;
  MomentEstimator est(c, rng);
  const Vector x = unit_row(d);
  for (std::size_t s = 0; s < t0; ++s) est.push({x.data(), d});
  for (auto _ : state) {
    est.push({x.data(), d});
    benchmark::DoNotOptimize(est.second().data());
  }
  state.counters["t"] = static_cast<double>(t0);
}

void BM_Input(benchmark::State& s) { step_bench(s, "input", NoiseMode::secure); }
void BM_Output(benchmark::State& s) { step_bench(s, "output", NoiseMode::secure); }
void BM_Sqrt(benchmark::State& s) { step_bench(s, "sqrt", NoiseMode::secure); }
void BM_Banded16(benchmark::State& s) { step_bench(s, "banded:16", NoiseMode::secure); }
// Noise sampled on two threads (GaussianMechanism::apply_each); timed on the wall clock.
void BM_Input2Threads(benchmark::State& s) { step_bench(s, "input", NoiseMode::secure, 2); }
void BM_Banded16_2Threads(benchmark::State& s) { step_bench(s, "banded:16", NoiseMode::secure, 2); }
// blt:2, the streaming factorization within 5% of the dense root (docs/results/jme.md, "Scale").
void BM_Blt2(benchmark::State& s) { step_bench(s, "blt:2", NoiseMode::secure); }
void BM_Blt2_2Threads(benchmark::State& s) { step_bench(s, "blt:2", NoiseMode::secure, 2); }
void BM_Banded16FastFloat(benchmark::State& s) {
  step_bench(s, "banded:16", NoiseMode::fast_float);
}

}  // namespace

// args: d, full (1) or diagonal (0), steps before timing.
BENCHMARK(BM_RunningSum)->Args({10, 1, 0})->Args({100, 1, 0})->Args({1000000, 0, 0})
    ->Unit(benchmark::kMicrosecond);
// The estimator has a fixed horizon, so these run a fixed number of timed steps.
BENCHMARK(BM_Input)->Args({10, 1, 0})->Args({100, 1, 0})->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Input)->Args({1000000, 0, 0})->Iterations(10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Output)->Args({10, 1, 0})->Args({100, 1, 0})->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sqrt)->Args({10, 1, 100})->Args({10, 1, 1000})->Args({10, 1, 4000})
    ->Args({100, 1, 100})->Args({100, 1, 1000})->Iterations(50)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Banded16)->Args({10, 1, 100})->Args({10, 1, 4000})->Args({100, 1, 100})
    ->Args({100, 1, 1000})->Iterations(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Banded16)->Args({1000000, 0, 20})->Iterations(10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Input2Threads)->Args({1000000, 0, 0})->Iterations(10)->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Banded16_2Threads)->Args({1000000, 0, 20})->Iterations(10)->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Blt2)->Args({10, 1, 100})->Args({10, 1, 4000})->Args({100, 1, 100})
    ->Args({100, 1, 1000})->Iterations(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Blt2)->Args({1000000, 0, 20})->Iterations(10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Blt2_2Threads)->Args({1000000, 0, 20})->Iterations(10)->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Banded16FastFloat)->Args({100, 1, 100})->Iterations(100)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Banded16FastFloat)->Args({1000000, 0, 20})->Iterations(10)
    ->Unit(benchmark::kMillisecond);
