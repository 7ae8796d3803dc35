// PLD accountant time (issue #20): DP-SGD, Poisson-subsampled Gaussian, q = 0.01, sigma = 1.1,
// delta = 1e-5, add/remove; the whole query (discretisation, self-composition by FFT squaring,
// epsilon read-out) from scratch per iteration. dp_accounting's PLD at discretisation 1e-4 takes
// 0.70 s (T = 1e4) and 0.86 s (T = 1e5) on the machine.
//   BM_PldDpSgd/T   : epsilon at delta by the PLD accountant (default options)
//   BM_RdpDpSgd/T   : the same by the RDP accountant (accounting_rdp_orders)
#include <benchmark/benchmark.h>

#include "dpstats/privacy/pld.hpp"
#include "dpstats/privacy/rdp.hpp"

using namespace dpstats;

static void BM_PldDpSgd(benchmark::State& state) {
  const auto steps = static_cast<std::uint64_t>(state.range(0));
  double eps = 0;
  for (auto _ : state) {
    eps = PrivacyLossDistribution::subsampled_gaussian(0.01, 1.1, Sampling::poisson,
                                                       Neighbouring::add_remove)
              .self_compose(steps)
              .epsilon_for_delta(1e-5);
    benchmark::DoNotOptimize(eps);
  }
  state.counters["epsilon"] = eps;
}
BENCHMARK(BM_PldDpSgd)->Arg(1000)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

static void BM_RdpDpSgd(benchmark::State& state) {
  const auto steps = static_cast<std::size_t>(state.range(0));
  double eps = 0;
  for (auto _ : state) {
    RdpAccountant acc(accounting_rdp_orders());
    acc.compose_subsampled_gaussian(0.01, 1.1, steps);
    eps = acc.epsilon(1e-5).epsilon;
    benchmark::DoNotOptimize(eps);
  }
  state.counters["epsilon"] = eps;
}
BENCHMARK(BM_RdpDpSgd)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
