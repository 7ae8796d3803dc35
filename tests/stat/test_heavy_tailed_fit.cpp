// End-to-end statistical checks of the heavy-tailed fits (docs/proofs/heavy-tailed.md), seeded:
// one enormous record moves each method's output by less than its own noise spread, and the
// recommended method beats single-stage output perturbation and output 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"

namespace dpstats::optimize {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(HeavyTailedFitStat, EnormousRecordMovesOutputLessThanTheNoise) {
  HeavyTailedTask task;
  task.d = 5;
  task.nu = 5;
  SeededRng g(31);
  const auto s = generate_heavy_tailed(task, 8000, g);
  auto s2 = s;
  s2.X.row(0).setConstant(1e6);
  s2.y[0] = -1e7;
  HeavyTailedOptions base;
  base.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
  base.privacy.epsilon = 1;
  base.moment_bound = 1;
  base.domain_radius = 2;
  set_moment(base, heavy_tailed_moment(task, 4));
  for (int variant = 0; variant < 3; ++variant) {
    auto o = base;
    if (variant == 1) o.method = HeavyTailedMethod::output_perturbation;
    if (variant == 2) o.profile = Profile::paper;
    std::vector<double> shift, spread;
    for (int r = 0; r < 9; ++r) {
      SeededRng a(100 + r), b(100 + r), c(200 + r);
      const auto x = fit_heavy_tailed(s.X, s.y, o, a).estimate;
      const auto xp = fit_heavy_tailed(s2.X, s2.y, o, b).estimate;  // same noise draws
      const auto xn = fit_heavy_tailed(s.X, s.y, o, c).estimate;    // other noise draws
      shift.push_back((x - xp).norm());
      spread.push_back((x - xn).norm());
    }
    EXPECT_LT(median(shift), median(spread)) << variant;
  }
}

TEST(HeavyTailedFitStat, RecommendedBeatsOutputPerturbationAndZero) {
  HeavyTailedTask task;
  task.d = 5;
  task.nu = 5;
  const HeavyTailedRisk risk(task, 20000, 5);
  HeavyTailedOptions base;
  base.method = HeavyTailedMethod::lipschitz_extension;  // the pre-#15 default
  base.privacy.epsilon = 1;
  base.moment_bound = 1;
  base.domain_radius = 2;
  set_moment(base, heavy_tailed_moment(task, 4));
  std::vector<double> ours, op;
  for (int r = 0; r < 5; ++r) {
    SeededRng g(300 + r), n1(400 + r), n2(500 + r);
    auto s = generate_heavy_tailed(task, 20000, g);
    s.X.row(0).setConstant(1e6);
    s.y[0] = -1e7;
    auto o = base;
    ours.push_back(risk.excess(fit_heavy_tailed(s.X, s.y, o, n1).estimate));
    o.method = HeavyTailedMethod::output_perturbation;
    op.push_back(risk.excess(fit_heavy_tailed(s.X, s.y, o, n2).estimate));
  }
  EXPECT_LT(median(ours), 0.5 * median(op));
  EXPECT_LT(median(ours), 0.05 * risk.risk_at_zero());
}

}  // namespace
}  // namespace dpstats::optimize
