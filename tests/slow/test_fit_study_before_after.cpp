// The heavy-tailed default before and after issue #15 round 3 on the study task (slow: n = 40 000;
// docs/results/real-data.md and docs/results/heavy-tailed.md quote its output).
#include <gtest/gtest.h>

#include <iostream>

#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/synthetic/heavy_tailed_data.hpp"
#include "guarantee.hpp"

namespace dpstats::optimize {
namespace {

// x . w, plus the intercept when the release has one (a centred fit: d + 1 entries).
Vector predict(const RowMatrix& X, const Vector& w) {
  if (w.size() == X.cols() + 1) return (X * w.head(X.cols())).array() + w[X.cols()];
  return X * w;
}

// The study's L1 Student-t task (d = 5, nu = 5, ||w*|| = 0.8, R = 2, epsilon = 1), moment bound
// estimated: the previous default (clipped-gd, card schedule T = min(n eps / d, 1000), no
// intercept; centre = false) against the new default (centred when n allows it, then the tuned
// short schedule; below that, the private offset check first). Excess absolute risk over w* on
// 20000 public evaluation records.
TEST(FitRealDataSlow, HeavyTailedStudyTaskDefaultBeforeAfter) {
  HeavyTailedTask task;
  SeededRng ge(77);
  const HeavyTailedSample eval = generate_heavy_tailed(task, 20000, ge);
  const Vector w_star = heavy_tailed_w_star(task);
  const auto risk = [&](const Vector& w) {
    return (predict(eval.X, w) - eval.y).array().abs().mean() -
           (eval.X * w_star - eval.y).array().abs().mean();
  };
  for (std::int64_t n : {4000, 40000}) {
    SeededRng g(78 + static_cast<std::uint64_t>(n));
    const HeavyTailedSample train = generate_heavy_tailed(task, n, g);
    HeavyTailedOptions o;
    o.privacy.epsilon = 1;
    o.domain_radius = 2;
    constexpr int kSeeds = 12;
    double before = 0, after = 0;
    bool centred = false, checked = false;
    for (int s = 0; s < kSeeds; ++s) {
      HeavyTailedOptions old = o;
      old.centre = false;
      SeededRng a(90 + s), b(90 + s);
      const auto r_old = fit_heavy_tailed(train.X, train.y, old, a);
      const auto r_new = fit_heavy_tailed(train.X, train.y, o, b);
      dpstats::testing::expect_guarantee_from_ledger(r_new);
      ASSERT_EQ(r_new.status, Status::ok) << r_new.diagnostics.dump();
      centred = r_new.diagnostics.value("intercept", false);
      checked = r_new.diagnostics["centring"].contains("offset_check");
      before += risk(r_old.estimate) / kSeeds;
      after += risk(r_new.estimate) / kSeeds;
    }
    std::cout << "| fit heavy-tailed clipped-gd (default), study task n = " << n
              << " | excess absolute risk " << before << " (previous default) | " << after
              << (centred ? " (centred, short schedule)" : " (not centred: too few records)")
              << " |\n";
    EXPECT_EQ(centred, n == 40000);
    // Below the centring threshold the default is the previous default's run after the private
    // offset check (issue 15, round 4), which spends scale_share of epsilon so that a table far
    // from 0 abstains instead of a fit with no intercept; the study task passes it and pays its
    // share: measured 0.321 -> 0.344 over 30 seeds (+0.023, 2.2 standard errors; 12 seeds:
    // 0.380 -> 0.421). Centred at 40 000: 0.0100 -> 0.00028.
    EXPECT_EQ(checked, !centred);
    if (centred)
      EXPECT_LT(after, before);
    else
      EXPECT_LT(after, 1.25 * before);
  }
}

}  // namespace
}  // namespace dpstats::optimize
