// User-level fits (docs/results/user-level.md metrics): wall time and exact gradient
// evaluations per fit for every method (Alg 3 practical and its smoothed variant included, at
// their defaults) on the study's task (n = 2000 users × m = 20, d = 10,
// (1, 1e-6), secure noise). The excess each method reaches is in docs/results/user-level.md.
#include <benchmark/benchmark.h>

#include "dpstats/synthetic/synthetic_users.hpp"
#include "dpstats/user_level/user_level.hpp"

namespace {

using namespace dpstats;
using namespace dpstats::optimize;

const UserDataset& bench_data() {
  static const UserDataset D = [] {
    UserTask t;
    t.n = 2000;
    t.m = 20;
    t.d = 10;
    SeededRng rng(1);
    const Vector w = make_w_star(t, rng);
    return make_user_task(t, w, rng);
  }();
  return D;
}

void BM_UserLevelFit(benchmark::State& state) {
  const auto method = static_cast<UserLevelMethod>(state.range(0));
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.method = method;
  o.domain_radius = 5;
  SecureRng rng;
  std::int64_t grads = 0;
  for (auto _ : state) {
    const auto r = fit_user_level(bench_data(), o, rng);
    grads = r.diagnostics["gradient_evaluations"].get<std::int64_t>();
    benchmark::DoNotOptimize(r.estimate.data());
  }
  state.SetLabel(std::string(name_of(method)));
  state.counters["gradient_evaluations"] = static_cast<double>(grads);
  state.counters["grads_per_s"] =
      benchmark::Counter(static_cast<double>(grads), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_UserLevelFit)
    ->Arg(static_cast<int>(UserLevelMethod::dp_gd_user))
    ->Arg(static_cast<int>(UserLevelMethod::dp_sgd_user))
    ->Arg(static_cast<int>(UserLevelMethod::dp_sgd_group))
    ->Arg(static_cast<int>(UserLevelMethod::phased_sgd))
    ->Arg(static_cast<int>(UserLevelMethod::accelerated))
    ->Arg(static_cast<int>(UserLevelMethod::nonsmooth))
    ->Arg(static_cast<int>(UserLevelMethod::non_private))
    ->Unit(benchmark::kMillisecond);

// Issue 17 thread scaling: DP-GD (dp-gd-user, T = 20) on 20,000 users × 20 items, d = 10, at
// 1, 2, … threads (the same seeded fit for any count); wall time (UseRealTime).
void BM_UserLevelDpGdThreads(benchmark::State& state) {
  static const UserDataset D = [] {
    UserTask t;
    t.n = 20000;
    t.m = 20;
    t.d = 10;
    SeededRng rng(2);
    const Vector w = make_w_star(t, rng);
    return make_user_task(t, w, rng);
  }();
  UserLevelOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = 5;
  o.feature_bound = 1;
  o.run.threads = static_cast<int>(state.range(0));
  SecureRng rng;
  for (auto _ : state) benchmark::DoNotOptimize(fit_user_level(D, o, rng).estimate.data());
}
BENCHMARK(BM_UserLevelDpGdThreads)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
