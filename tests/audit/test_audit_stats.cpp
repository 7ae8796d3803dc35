// Audits of the everyday statistics (stats/stats.hpp) on worst-case neighbouring tables, at the
// guarantee each release states.
#include <gtest/gtest.h>

#include "auditor.hpp"
#include "dpstats/stats/stats.hpp"

namespace dpstats::audit {
namespace {

AuditOptions options() {
  AuditOptions o;
  o.samples = 60000;
  o.seed = 21;
  return o;
}

// One column; D and D' differ in one replaced row, from the lower to the upper bound.
std::pair<RowMatrix, RowMatrix> replaced_pair(int n) {
  RowMatrix D = RowMatrix::Constant(n, 1, 0.5), Dp = D;
  D(0, 0) = 0;
  Dp(0, 0) = 1;
  return {D, Dp};
}

stats::StatOptions opts() {
  stats::StatOptions o;
  o.privacy = {1, 0};
  o.bounds = {{0, 1}};
  o.quantiles = {0.5};
  o.grid_size = 16;
  return o;
}

TEST(AuditStats, MeanStatesItsEpsilon) {
  const auto [D, Dp] = replaced_pair(20);
  const auto o = opts();
  auto on = [&o](const RowMatrix& X) {
    return [&o, &X](Rng& g) { return stats::mean(X, o, g).estimate[0]; };
  };
  SeededRng rng(1);
  const double eps = stats::mean(D, o, rng).privacy.epsilon;
  const auto r = audit_scalar(on(D), on(Dp), eps, 0, options());
  std::printf("    %s\n", r.summary().c_str());
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.5) << r.summary();  // the mean carries most of the loss
}

TEST(AuditStats, VarianceStatesItsEpsilon) {
  const auto [D, Dp] = replaced_pair(20);
  const auto o = opts();
  auto on = [&o](const RowMatrix& X) {
    return [&o, &X](Rng& g) { return stats::variance(X, o, g).estimate[0]; };
  };
  SeededRng rng(1);
  const double eps = stats::variance(D, o, rng).privacy.epsilon;
  const auto r = audit_scalar(on(D), on(Dp), eps, 0, options());
  std::printf("    %s\n", r.summary().c_str());
  EXPECT_FALSE(r.violation) << r.summary();
}

TEST(AuditStats, QuantileStatesItsEpsilon) {
  // 1001 rows (a few hundred abstain at this epsilon: the rank error, which counts the rows the
  // bounds may clip, would exceed a quarter of them): the median moves across the grid when the
  // one row moves from 0 to 1. An abstention is an outcome too (-1); at this n the release is ok.
  RowMatrix D(1001, 1), Dp(1001, 1);
  for (int i = 0; i < 1001; ++i) D(i, 0) = Dp(i, 0) = i < 500 ? 0.2 : 0.8;
  D(500, 0) = 0.0;
  Dp(500, 0) = 1.0;
  const auto o = opts();
  auto on = [&o](const RowMatrix& X) {
    return [&o, &X](Rng& g) {
      const auto r = stats::quantiles(X, o, g);
      return r.status == Status::ok ? r.estimate[0] : -1.0;
    };
  };
  SeededRng rng(1);
  const auto first = stats::quantiles(D, o, rng);
  ASSERT_EQ(first.status, Status::ok) << first.diagnostics.dump();
  const auto r = audit_scalar(on(D), on(Dp), first.privacy.epsilon, 0, options());
  std::printf("    %s\n", r.summary().c_str());
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.1) << r.summary();  // the test can see a loss
}

TEST(AuditStats, CountAndHistogramAddRemove) {
  RowMatrix D = RowMatrix::Zero(10, 1), Dp = RowMatrix::Zero(11, 1);
  stats::StatOptions o;
  o.privacy = {1, 0};
  auto on = [&o](const RowMatrix& X) {
    return [&o, &X](Rng& g) { return stats::count(X, o, g).estimate[0]; };
  };
  const auto r = audit_scalar(on(D), on(Dp), 1.0, 0, options());
  std::printf("    %s\n", r.summary().c_str());
  EXPECT_FALSE(r.violation) << r.summary();
  EXPECT_GT(r.epsilon_lower_bound, 0.7) << r.summary();

  // Partition selection: a category present in only one of the two datasets.
  std::vector<std::string> h(20, "a"), hp = h;
  hp.push_back("b");
  stats::StatOptions ho;
  ho.privacy = {1, 1e-3};
  auto hist = [&ho](const std::vector<std::string>& v) {
    return [&ho, &v](Rng& g) {
      const auto r = stats::histogram(v, ho, g);
      double b = -1;
      for (std::size_t k = 0; k < r.estimate.categories.size(); ++k)
        if (r.estimate.categories[k] == "b") b = r.estimate.counts[static_cast<Eigen::Index>(k)];
      return b;
    };
  };
  const auto rh = audit_scalar(hist(h), hist(hp), 1.0, 1e-3, options());
  std::printf("    %s\n", rh.summary().c_str());
  EXPECT_FALSE(rh.violation) << rh.summary();
}

}  // namespace
}  // namespace dpstats::audit
