// Issue #15 for the mean family: no silent unit scale. Every method's default (scale absent) is
// equivariant under rescaling and shifting the data, and realistic tables (columns of different
// scales, corrupted rows, heavy tails) come out close to the truth or abstain with a reason.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <random>

#include "../guarantee.hpp"
#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/methods.hpp"

using namespace dpstats;

namespace {

// n rows of two columns with means (40, 65000) and scales (15, 20000): an (age, salary) table.
RowMatrix age_salary(std::int64_t n, double corrupted, std::uint64_t seed) {
  SeededRng rng(seed);
  RowMatrix X(n, 2);
  const auto bad = static_cast<std::int64_t>(std::round(corrupted * static_cast<double>(n)));
  for (std::int64_t i = 0; i < n; ++i) {
    X(i, 0) = 40 + 15 * standard_normal(rng);
    X(i, 1) = 65000 + 20000 * standard_normal(rng);
    if (i < bad) {
      X(i, 0) = 999;
      X(i, 1) = 9.9e6;
    }
  }
  return X;
}

MeanRequest request(const std::string& method) {
  MeanRequest r;
  r.method = method;
  r.privacy = {2, 1e-6};
  if (method == "bounded") r.privacy.delta = 0;
  if (method == "prime" || method == "prime-ht" || method == "filter" || method == "exp-time")
    r.alpha = 0.05;
  if (method == "exp-time") r.uncertified_window = true;  // exact resilience needs n <~ 20
  return r;
}

// Mean over seeds of the error in the data's own units: max_j |est_j − truth_j| / scale_j.
double unit_error(const RowMatrix& X, const Vector& truth, const Vector& scale,
                  const MeanRequest& r, int seeds) {
  double total = 0;
  for (int s = 0; s < seeds; ++s) {
    SeededRng rng(100 + s);
    const auto rel = run_mean(X, r, rng);
    EXPECT_EQ(rel.status, Status::ok) << r.method << ": " << rel.diagnostics.dump();
    if (rel.status != Status::ok) return INFINITY;
    dpstats::testing::expect_guarantee_from_ledger(rel);
    total += ((rel.estimate - truth).cwiseQuotient(scale)).cwiseAbs().maxCoeff();
  }
  return total / seeds;
}

void expect_equivariant(const std::string& method, std::int64_t d, int seeds = 12) {
  SeededRng g(7);
  const std::int64_t n = 20000;
  RowMatrix X(n, d);
  Vector truth(d), scale(d);
  for (std::int64_t j = 0; j < d; ++j) {
    truth[j] = 3.0 - 5.0 * static_cast<double>(j);
    scale[j] = std::pow(10.0, static_cast<double>(j));
  }
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j) X(i, j) = truth[j] + scale[j] * standard_normal(g);
  const MeanRequest r = request(method);
  // The mean of `seeds` seeded errors: 4 left the ratio at the mercy of one draw.
  const double base = unit_error(X, truth, scale, r, seeds);
  struct Map {
    const char* name;
    double factor, shift;  // x -> factor·x + shift·scale
  };
  for (const Map& m : {Map{"x 1e-3", 1e-3, 0}, Map{"x 1e3", 1e3, 0}, Map{"+ 1e4 scale", 1, 1e4}}) {
    RowMatrix Y = X * m.factor;
    for (std::int64_t j = 0; j < d; ++j) Y.col(j).array() += m.shift * scale[j];
    const Vector t = truth * m.factor + m.shift * scale;
    const double e = unit_error(Y, t, scale * m.factor, r, seeds);
    EXPECT_LE(e, 1.5 * base) << method << " " << m.name << ": " << e << " vs " << base;
    EXPECT_GE(e, base / 1.5) << method << " " << m.name << ": " << e << " vs " << base;
  }
}

}  // namespace

TEST(MeanEquivariance, Prime) { expect_equivariant("prime", 2); }
TEST(MeanEquivariance, PrimeHt) { expect_equivariant("prime-ht", 2, 24); }
TEST(MeanEquivariance, Filter) { expect_equivariant("filter", 2); }
TEST(MeanEquivariance, DpMean) { expect_equivariant("dp-mean", 2); }
TEST(MeanEquivariance, Bounded) { expect_equivariant("bounded", 2); }
TEST(MeanEquivariance, ExpTime) { expect_equivariant("exp-time", 1); }

// The headline failure of issue #15: 5% of the rows at (999, 9.9e6). The robust methods' default
// lands within 2% of the clean mean (or abstains with a reason); none releases the corrupted
// value with status ok.
TEST(MeanRealData, CorruptedAgeSalaryTable) {
  const RowMatrix X = age_salary(40000, 0.05, 11);
  const Vector clean = age_salary(40000, 0.0, 11).bottomRows(38000).colwise().mean();
  for (const char* method : {"prime", "prime-ht", "filter"}) {
    MeanRequest r = request(method);
    r.privacy = {1, 1e-6};
    SeededRng rng(12);
    const auto rel = run_mean(X, r, rng);
    dpstats::testing::expect_guarantee_from_ledger(rel);
    if (rel.status == Status::abstained) {
      EXPECT_FALSE(rel.diagnostics["abstained"].get<std::string>().empty());
      continue;
    }
    // Within the release's stated error (issue #15's contract) and within 5% of the clean mean:
    // the standard-deviation-like units (winsorised second moment) cost PRIME 2-3% on salary at
    // this seed, against ~1.3% with the MAD units they replaced (which biased skewed columns low
    // with status ok); the hand-standardised PRIME reached 0.9%.
    const auto radius = rel.diagnostics["stated_error"]["radius"];
    for (int j = 0; j < 2; ++j) {
      EXPECT_LE(std::abs(rel.estimate[j] - clean[j]), radius[j].get<double>()) << method;
      EXPECT_NEAR(rel.estimate[j], clean[j], 0.05 * clean[j]) << method << rel.diagnostics.dump();
    }
  }
  // DP Mean is not robust: it abstains when the 5% corrupted rows lie beyond 3 private scales
  // (its sub-Gaussian model allows fewer); were it to release, its shift is bounded by what it
  // states, far from 9.9e6.
  SeededRng rng(13);
  MeanRequest r = request("dp-mean");
  r.privacy = {1, 1e-6};
  const auto dm = run_mean(X, r, rng);
  if (dm.status != Status::ok) {
    EXPECT_NE(dm.diagnostics["abstained"].get<std::string>().find("beyond 3 estimated scales"),
              std::string::npos) << dm.diagnostics.dump();
    return;
  }
  const auto shift = dm.diagnostics["corruption_shift_per_fraction"];
  for (int j = 0; j < 2; ++j)
    EXPECT_LE(std::abs(dm.estimate[j] - clean[j]), 0.06 * shift[j].get<double>()) << j;
  EXPECT_LT(dm.estimate[1], 2 * clean[1]);
}

// A supplied scale five times too small is reported, not silently used.
TEST(MeanRealData, ASuppliedScaleThatBitesIsReported) {
  const RowMatrix X = age_salary(20000, 0.0, 14);
  MeanRequest r = request("prime");
  r.scale = std::vector<double>{3.0, 4000.0};
  SeededRng rng(15);
  const auto rel = run_mean(X, r, rng);
  dpstats::testing::expect_guarantee_from_ledger(rel);
  ASSERT_TRUE(rel.diagnostics.contains("clipped")) << rel.diagnostics.dump();
  EXPECT_TRUE(rel.diagnostics["clipped"].contains("warning")) << rel.diagnostics.dump();
}

TEST(MeanRegistry, OptionsThatDoNotApplyAreRefused) {
  const RowMatrix X = age_salary(100, 0.0, 16);
  SeededRng rng(17);
  MeanRequest r = request("dp-mean");
  r.alpha = 0.05;
  EXPECT_THROW(run_mean(X, r, rng), InvalidArgument);
  r = request("prime");
  r.alpha.reset();
  EXPECT_THROW(run_mean(X, r, rng), InvalidArgument);
  r = request("bounded");
  r.T = 3;
  EXPECT_THROW(run_mean(X, r, rng), InvalidArgument);
  r = request("nope");
  EXPECT_THROW(run_mean(X, r, rng), InvalidArgument);
  r = request("prime");
  r.privacy.epsilon = 0;  // no default epsilon
  EXPECT_THROW(run_mean(X, r, rng), InvalidArgument);
}

namespace {

// A flight-like table (issue #15): delay = −5 + Exp(mean 15) minutes, with 5% of the rows from a
// Pareto(1.5) tail of scale 60 (x = 60·U^(−1/1.5)); distance = 800·exp(0.6 z) miles.
RowMatrix flights(std::int64_t n, std::uint64_t seed) {
  SeededRng rng(seed);
  RowMatrix X(n, 2);
  for (std::int64_t i = 0; i < n; ++i) {
    const double u = std::max(rng.uniform01(), 1e-300);
    X(i, 0) = rng.uniform01() < 0.05 ? -5 + 60 * std::pow(u, -1 / 1.5) : -5 - 15 * std::log(u);
    X(i, 1) = 800 * std::exp(0.6 * standard_normal(rng));
  }
  return X;
}

// Every release either abstains with a reason or lands within its stated error of `truth`.
void expect_within_stated_error(const Release<Vector>& rel, const Vector& truth,
                                const std::string& what) {
  dpstats::testing::expect_guarantee_from_ledger(rel);
  if (rel.status == Status::abstained) {
    EXPECT_FALSE(rel.diagnostics["abstained"].get<std::string>().empty()) << what;
    return;
  }
  ASSERT_EQ(rel.status, Status::ok) << what;
  ASSERT_TRUE(rel.diagnostics.contains("stated_error")) << what << rel.diagnostics.dump();
  const auto radius = rel.diagnostics["stated_error"]["radius"];
  for (Eigen::Index j = 0; j < truth.size(); ++j)
    EXPECT_LE(std::abs(rel.estimate[j] - truth[j]), radius[j].get<double>())
        << what << " column " << j << ": estimate " << rel.estimate[j] << " truth " << truth[j]
        << " " << rel.diagnostics.dump();
}

const char* const kAllMethods[] = {"prime", "prime-ht", "filter", "dp-mean", "bounded"};

}  // namespace

// Issue #15: on the skewed, heavy-tailed flight table no method returns status ok with an
// estimate off by more than its stated error (the old MAD units biased the filters low by
// ~0.37 standard deviations with status ok).
TEST(MeanRealData, FlightTableWithinStatedErrorOrAbstains) {
  const RowMatrix X = flights(50000, 21);
  const Vector truth = X.colwise().mean().transpose();
  for (const char* method : kAllMethods) {
    MeanRequest r = request(method);
    r.privacy.epsilon = 1;
    for (std::uint64_t seed : {22u, 23u}) {
      SeededRng rng(seed);
      expect_within_stated_error(run_mean(X, r, rng), truth, method);
    }
  }
  // exp-time is one-dimensional: the delay column.
  const RowMatrix D = X.col(0);
  MeanRequest r = request("exp-time");
  SeededRng rng(24);
  const auto rel = run_mean(D, r, rng);
  dpstats::testing::expect_guarantee_from_ledger(rel);
  if (rel.status == Status::ok && rel.diagnostics.contains("stated_error"))
    expect_within_stated_error(rel, truth.head(1), "exp-time");
}

// The corrupted (age, salary) table: every method within its stated error of the clean mean, or
// abstains with a reason.
TEST(MeanRealData, CorruptedTableWithinStatedErrorOrAbstains) {
  const RowMatrix X = age_salary(40000, 0.05, 31);
  const Vector clean = age_salary(40000, 0.0, 31).bottomRows(38000).colwise().mean().transpose();
  for (const char* method : kAllMethods) {
    MeanRequest r = request(method);
    r.privacy.epsilon = 1;
    SeededRng rng(32);
    expect_within_stated_error(run_mean(X, r, rng), clean, method);
  }
}

// The winsorised scale matches a Gaussian's standard deviation and exceeds the MAD scale on a
// skewed column.
TEST(MeanUnits, EstimatedScaleIsStandardDeviationLike) {
  const RowMatrix X = flights(50000, 41);
  MeanRequest r = request("dp-mean");
  r.privacy.epsilon = 1;
  SeededRng rng(42);
  const auto rel = run_mean(X, r, rng);
  // DP Mean abstains on the skewed delays (more rows beyond 3 scales than its sub-Gaussian model
  // allows) and still states the units it estimated, which is what this test reads.
  if (rel.status != Status::ok)
    EXPECT_NE(rel.diagnostics["abstained"].get<std::string>().find("beyond 3 estimated scales"),
              std::string::npos) << rel.diagnostics.dump();
  ASSERT_TRUE(rel.diagnostics.contains("units")) << rel.diagnostics.dump();
  const auto& u = rel.diagnostics["units"];
  for (int j = 0; j < 2; ++j)
    EXPECT_GE(u["values"][j].get<double>(), u["mad_scale"][j].get<double>()) << u.dump();
  // Gaussian column: the winsorised scale is within 7% of sigma.
  const RowMatrix G = age_salary(40000, 0.0, 43);
  SeededRng rng2(44);
  const auto g = run_mean(G, r, rng2);
  ASSERT_EQ(g.status, Status::ok);
  EXPECT_NEAR(g.diagnostics["units"]["winsorized"]["columns"][0]["scale"].get<double>(), 15, 1.05);
  EXPECT_NEAR(g.diagnostics["units"]["winsorized"]["columns"][1]["scale"].get<double>(), 20000,
              1400);
}
