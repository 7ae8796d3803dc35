// Noise throughput: the secure lattice mechanisms and their exact samplers against
// std::normal_distribution<double> on std::mt19937_64 (the reference), in the same run. Each
// benchmark reports items_per_second and, measured on a separate untimed pass, the 64-bit random
// words it consumes per sample (`words_per_sample`): with SecureRng a word costs a share of an
// AES-CTR block, so words per sample bound the secure paths from below.
#include <benchmark/benchmark.h>

#include <random>

#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/random/discrete_gaussian.hpp"
#include "dpstats/random/discrete_laplace.hpp"
#include "dpstats/random/rng.hpp"

namespace {

using dpstats::Rng;

class CountingRng final : public Rng {
 public:
  explicit CountingRng(Rng& inner) : inner_(inner) {}
  std::uint64_t next_u64() override {
    ++words_;
    return inner_.next_u64();
  }
  bool seeded() const noexcept override { return inner_.seeded(); }
  std::uint64_t words() const { return words_; }

 private:
  Rng& inner_;
  std::uint64_t words_ = 0;
};

// Words per sample of `draw(rng)` over an untimed pass.
template <class Draw>
double words_per_sample(Rng& rng, Draw&& draw, int samples = 100000) {
  CountingRng counting(rng);
  for (int i = 0; i < samples; ++i) benchmark::DoNotOptimize(draw(counting));
  return static_cast<double>(counting.words()) / samples;
}

template <class Draw>
void run(benchmark::State& state, Rng& rng, Draw&& draw, int items_per_call = 1) {
  state.counters["words_per_sample"] = words_per_sample(rng, draw) / items_per_call;
  for (auto _ : state) benchmark::DoNotOptimize(draw(rng));
  state.SetItemsProcessed(state.iterations() * items_per_call);
}

void BM_StdNormal(benchmark::State& state) {
  std::mt19937_64 generator(42);
  std::normal_distribution<double> normal;
  for (auto _ : state) benchmark::DoNotOptimize(normal(generator));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StdNormal);

// Secure Gaussian mechanism, (ε, δ) = (1, 1e-5), Δ = 1: lattice 2^-20, noise ~ 2^21.9 steps.
const auto& gaussian_mechanism() {
  static const auto m = dpstats::GaussianMechanism::from_epsilon_delta(1, 1, 1e-5);
  return m;
}

void BM_SecureGaussian(benchmark::State& state) {
  dpstats::SecureRng rng;
  run(state, rng, [](Rng& r) { return gaussian_mechanism().apply(0.5, r); });
}
BENCHMARK(BM_SecureGaussian);

void BM_SecureGaussianSeeded(benchmark::State& state) {
  dpstats::SeededRng rng(42);
  run(state, rng, [](Rng& r) { return gaussian_mechanism().apply(0.5, r); });
}
BENCHMARK(BM_SecureGaussianSeeded);

// A 1000-vector per call: one bit reader serves all coordinates (no lookahead discarded).
void BM_SecureGaussianVector(benchmark::State& state) {
  dpstats::SecureRng rng;
  static const auto m = dpstats::GaussianMechanism::from_epsilon_delta(1, 1, 1e-5, 1000);
  const Eigen::VectorXd x = Eigen::VectorXd::Zero(1000);
  run(
      state, rng, [&](Rng& r) { return m.apply(x, r)[0]; }, 1000);
}
BENCHMARK(BM_SecureGaussianVector);

void BM_FastFloatGaussian(benchmark::State& state) {
  dpstats::SecureRng rng;
  static const auto m =
      dpstats::GaussianMechanism::from_epsilon_delta(1, 1, 1e-5, 1, dpstats::NoiseMode::fast_float);
  run(state, rng, [](Rng& r) { return m.apply(0.5, r); });
}
BENCHMARK(BM_FastFloatGaussian);

void BM_SecureLaplace(benchmark::State& state) {
  dpstats::SecureRng rng;
  static const dpstats::LaplaceMechanism m(1, 1);
  run(state, rng, [](Rng& r) { return m.apply(0.5, r); });
}
BENCHMARK(BM_SecureLaplace);

// The raw samplers at lattice scale: sigma = 2^20, t = 2^20.
void BM_DiscreteGaussian(benchmark::State& state) {
  dpstats::SecureRng rng;
  static const dpstats::DiscreteGaussian sampler(std::uint64_t{1} << 40, 1);
  run(state, rng, [](Rng& r) { return sampler(r); });
}
BENCHMARK(BM_DiscreteGaussian);

// 1000 draws from one bit reader per call (how the vector mechanisms draw): the binned sampler
// (the default at this sigma) against CKS20 Alg. 3 at the same sigma^2 = 2^40, same run.
template <dpstats::DiscreteGaussian::Sampler kWhich>
void BM_DiscreteGaussianStream(benchmark::State& state) {
  dpstats::SecureRng rng;
  static const dpstats::DiscreteGaussian sampler(std::uint64_t{1} << 40, 1, kWhich);
  run(
      state, rng,
      [](Rng& r) {
        dpstats::RandomBits bits(r);
        std::int64_t sum = 0;
        for (int i = 0; i < 1000; ++i) sum += sampler(bits);
        return sum;
      },
      1000);
}
BENCHMARK(BM_DiscreteGaussianStream<dpstats::DiscreteGaussian::Sampler::automatic>)
    ->Name("BM_DiscreteGaussianStream/binned");
BENCHMARK(BM_DiscreteGaussianStream<dpstats::DiscreteGaussian::Sampler::cks>)
    ->Name("BM_DiscreteGaussianStream/cks");

void BM_DiscreteLaplace(benchmark::State& state) {
  dpstats::SecureRng rng;
  static const dpstats::DiscreteLaplace sampler(std::uint64_t{1} << 20, 1);
  run(state, rng, [](Rng& r) { return sampler(r); });
}
BENCHMARK(BM_DiscreteLaplace);

void BM_SecureRngWord(benchmark::State& state) {
  dpstats::SecureRng rng;
  Rng& r = rng;
  for (auto _ : state) benchmark::DoNotOptimize(r.next_u64());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SecureRngWord);

}  // namespace

BENCHMARK_MAIN();
