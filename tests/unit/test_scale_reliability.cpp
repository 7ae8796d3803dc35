// The one reliability rule (scale/reliability.hpp): usable iff the cell is inside its grid, the
// spread is not degenerate and t / n + alpha <= tolerance; the reason names the estimate, the
// cause and what would suffice; each estimate of the scale layer is judged by it.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/dry_run.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {
namespace {

TEST(ScaleReliability, RankErrorAgainstRows) {
  SelectionFacts f{.rank_error = 300, .n = 1000, .tolerance = 0.3, .alpha = 0, .epsilon = 0.1};
  EXPECT_TRUE(assess(f, "the bounds", "--bounds").usable);
  f.n = 999;
  const Reliability r = assess(f, "the bounds", "--bounds");
  ASSERT_FALSE(r.usable);
  EXPECT_NE(r.reason().find("the bounds"), std::string::npos);
  EXPECT_NE(r.would_suffice.find("1000 rows"), std::string::npos) << r.would_suffice;
  EXPECT_NE(r.would_suffice.find("--bounds"), std::string::npos);
  // nothing left for the rank error when alpha takes the whole tolerance
  EXPECT_FALSE(assess({.rank_error = 0, .n = 1e9, .alpha = 0.3}, "x", "").usable);
}

// What would suffice names the option in both spellings when given its name or flag, any other
// text as it is, and counts in the estimate's unit (users for a user-level bound).
TEST(ScaleReliability, WouldSufficeSpeaksToTheToolAndPython) {
  SelectionFacts f{.rank_error = 300, .n = 999, .tolerance = 0.3, .alpha = 0, .epsilon = 0.1};
  EXPECT_NE(assess(f, "x", "--bounds").would_suffice.find("give --bounds (Python: bounds=)"),
            std::string::npos);
  EXPECT_NE(assess(f, "x", "feature_bound").would_suffice.find(
                "give --feature-bound (Python: feature_bound=)"),
            std::string::npos);
  const std::string text = assess(f, "x", "moment_bound (--moment-bound)").would_suffice;
  EXPECT_NE(text.find("give moment_bound (--moment-bound)"), std::string::npos) << text;
  EXPECT_EQ(text.find("Python"), std::string::npos) << text;
  f.unit = "users";
  const Reliability r = assess(f, "x", "");
  EXPECT_NE(r.cause.find("rank error 300 users is more than 0.3 of the 999 users"),
            std::string::npos) << r.cause;
  EXPECT_NE(r.would_suffice.find("1000 users at this epsilon"), std::string::npos);
}

// A dry run's rows needed (dpstats/dry_run.hpp) are exactly where the rule turns usable.
TEST(ScaleReliability, RowsNeededIsTheRuleSolvedForN) {
  for (double t : {0.0, 1.0, 299.9, 300.0, 1234.5678, 1e7 / 3})
    for (double tolerance : {0.25, 0.3, 0.5})
      for (double alpha : {0.0, 0.05}) {
        SelectionFacts f{.rank_error = t, .tolerance = tolerance, .alpha = alpha};
        const double n = rows_needed(f);
        f.n = n;
        EXPECT_TRUE(assess(f, "x", "").usable) << t << " " << tolerance << " " << alpha;
        if (n < 1) continue;
        f.n = n - 1;
        EXPECT_FALSE(assess(f, "x", "").usable) << t << " " << tolerance << " " << alpha;
      }
  EXPECT_TRUE(std::isinf(rows_needed({.rank_error = 1, .tolerance = 0.3, .alpha = 0.3})));
}

TEST(ScaleReliability, GridEndAndDegenerateAreUnusable) {
  EXPECT_FALSE(assess({.rank_error = 1, .n = 1e6, .at_grid_end = true}, "x", "--clip").usable);
  const Reliability r = assess({.rank_error = 1, .n = 1e6, .degenerate = true}, "x", "--clip");
  EXPECT_FALSE(r.usable);
  EXPECT_NE(r.cause.find("equal"), std::string::npos);
}

TEST(ScaleReliability, FirstUnusableWins) {
  const std::vector<Reliability> parts = {Reliability::ok("a"),
                                          Reliability::unusable("b", "c", "d"),
                                          Reliability::unusable("e", "f", "g")};
  EXPECT_EQ(first_unusable(parts, "all").estimate, "b");
  EXPECT_TRUE(first_unusable(std::span(parts).first(1), "all").usable);
  EXPECT_EQ(first_unusable({}, "all").estimate, "all");
}

// A constant column and a column too short for the share are both unusable bounds.
TEST(ScaleReliability, ScaleEstimateColumns) {
  RowMatrix X(400, 2);
  SeededRng gen(1);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    X(i, 0) = 5;
    X(i, 1) = gen.uniform01();
  }
  ScaleOptions o;
  o.loss = PrivacyLoss::pure(50);
  ReleaseBudget account(PrivacyLoss::pure(50), Accountant::basic, nullptr);
  SeededRng rng(2);
  const Reliability r = reliability(private_scale(X, o, account, rng), "--bounds");
  ASSERT_FALSE(r.usable);
  EXPECT_EQ(r.estimate, "the location and scale of column 1");
  o.loss = PrivacyLoss::pure(0.01);
  ReleaseBudget small(PrivacyLoss::pure(0.01), Accountant::basic, nullptr);
  const RowMatrix uniform = X.col(1);
  EXPECT_FALSE(reliability(private_scale(uniform, o, small, rng), "--bounds").usable);
}

}  // namespace
}  // namespace dpstats
