// Pure-DP heavy-tailed SCO (docs/proofs/heavy-tailed.md): the lattice l2-Laplace sampler
// against d (time per draw, acceptance rate, with the float Gamma-radius sampler and the
// per-coordinate lattice Laplace as same-run baselines), and the fits at n = 10^5, d = 20
// (the run-time target) with the secure noise.
#include <benchmark/benchmark.h>

#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"

namespace {

using namespace dpstats;
using namespace dpstats::optimize;

void BM_L2LaplaceLattice(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const L2LaplaceMechanism m(1.0, 1.0, d);
  const Eigen::VectorXd v = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(d));
  SecureRng rng;
  double proposals = 0, draws = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.apply(v, rng).data());
    proposals += static_cast<double>(m.last_proposals());
    draws += 1;
  }
  state.counters["acceptance"] = proposals > 0 ? draws / proposals : 1.0;
  state.SetLabel(m.sampler());
}
BENCHMARK(BM_L2LaplaceLattice)->Arg(1)->Arg(2)->Arg(5)->Arg(10)->Arg(20)->Arg(30)->Arg(64);

void BM_L2LaplaceFloat(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const L2LaplaceMechanism m(1.0, 1.0, d, NoiseMode::fast_float);
  const Eigen::VectorXd v = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(d));
  SecureRng rng;
  for (auto _ : state) benchmark::DoNotOptimize(m.apply(v, rng).data());
}
BENCHMARK(BM_L2LaplaceFloat)->Arg(5)->Arg(20);

void BM_CoordinateLaplace(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const LaplaceMechanism m(std::sqrt(static_cast<double>(d)), 1.0, d);
  const Eigen::VectorXd v = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(d));
  SecureRng rng;
  for (auto _ : state) benchmark::DoNotOptimize(m.apply(v, rng).data());
}
BENCHMARK(BM_CoordinateLaplace)->Arg(5)->Arg(20);

const HeavyTailedSample& big() {
  static const HeavyTailedSample s = [] {
    HeavyTailedTask t;
    t.d = 20;
    t.nu = 5;
    SeededRng rng(3);
    auto x = generate_heavy_tailed(t, 100000, rng);
    x.X.row(0).setConstant(1e6);
    x.y[0] = -1e7;
    return x;
  }();
  return s;
}

void BM_HeavyTailedFit(benchmark::State& state) {
  HeavyTailedOptions o;
  o.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
  o.privacy.epsilon = 1;
  o.moment_bound = 1;
  o.method = static_cast<HeavyTailedMethod>(state.range(0));
  o.profile = state.range(1) ? Profile::paper : Profile::practical;
  o.domain_radius = 2;
  HeavyTailedTask t;
  t.d = 20;
  t.nu = 5;
  set_moment(o, heavy_tailed_moment(t, 4));
  if (o.method == HeavyTailedMethod::clipped_gd) o.steps = 16;
  SecureRng rng;
  for (auto _ : state) {
    const auto r = fit_heavy_tailed(big().X, big().y, o, rng);
    benchmark::DoNotOptimize(r.estimate.data());
  }
  state.SetLabel(std::string(name_of(o.method)) + (state.range(1) ? " paper" : " practical"));
}
BENCHMARK(BM_HeavyTailedFit)
    ->Args({0, 0})->Args({0, 1})->Args({1, 0})->Args({2, 0})
    ->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
