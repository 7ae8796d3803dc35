// Ranks against one process (issue 18): the heavy-tailed clipped GD at n = 10^6, d = 20 with its
// rows split over P ranks run as threads of this process (run_local_ranks, the in-process
// communicator of the unit tests), against the single-process call on the same rows in the same
// run. Each rank runs its data passes on one thread. arg: P (0 = one process, no communicator).
#include <benchmark/benchmark.h>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"

namespace {

using namespace dpstats;
using namespace dpstats::optimize;

const HeavyTailedSample& rows() {
  static const HeavyTailedSample s = [] {
    HeavyTailedTask t;
    t.d = 20;
    t.nu = 5;
    SeededRng rng(3);
    return generate_heavy_tailed(t, 1000000, rng);
  }();
  return s;
}

HeavyTailedOptions gd_options() {
  HeavyTailedOptions o;
  o.method = HeavyTailedMethod::clipped_gd;
  o.privacy.epsilon = 1;
  o.domain_radius = 2;
  o.moment_bound = 5;
  o.steps = 16;
  return o;
}

void BM_HeavyTailedGdRanks(benchmark::State& state) {
  const int P = static_cast<int>(state.range(0));
  const auto& s = rows();
  for (auto _ : state) {
    if (P == 0) {
      SeededRng rng(1);
      benchmark::DoNotOptimize(fit_heavy_tailed(s.X, s.y, gd_options(), rng).estimate.data());
      continue;
    }
    run_local_ranks(P, [&](Communicator& c) {
      const Eigen::Index n = s.X.rows(), b = n * c.rank() / P, e = n * (c.rank() + 1) / P;
      HeavyTailedOptions o = gd_options();
      o.run.comm = &c;
      SeededRng rng(1);
      const auto r = fit_heavy_tailed(s.X.middleRows(b, e - b), s.y.segment(b, e - b), o, rng);
      benchmark::DoNotOptimize(r.estimate.data());
    });
  }
}
BENCHMARK(BM_HeavyTailedGdRanks)->Arg(0)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
