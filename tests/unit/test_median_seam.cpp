// The geometric median on the seam (issue #14) and with an unknown scale (issue #15): every
// method's guarantee is what its ledger composes to, a caller's Budget is charged all or nothing
// before any noise, enum names and the registry are the library's, and the default (no
// domain_radius) is equivariant to the data's units and shift.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dpstats/synthetic/gaussian_cluster.hpp"
#include "dpstats/synthetic/shifted_cluster.hpp"
#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/weiszfeld.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "../counting_rng.hpp"
#include "guarantee.hpp"

using namespace dpstats;

namespace {

RowMatrix cluster(std::int64_t n, std::int64_t d, std::uint64_t seed, double R = 50) {
  SeededRng rng(seed);
  return gaussian_cluster(R, n, d, 0.1, 0.9, rng);
}

GeometricMedianOptions base(double R = 50) {
  GeometricMedianOptions o;
  o.privacy = {1, 1e-6};
  o.domain_radius = R;
  o.localization_steps = 20;
  return o;
}

// Every method and profile of the median command.
std::vector<GeometricMedianOptions> every_method() {
  std::vector<GeometricMedianOptions> all;
  all.push_back(base());
  auto paper = base();
  paper.profile = Profile::paper;
  all.push_back(paper);
  paper.boosting = PaperBoosting::stable;
  all.push_back(paper);
  paper.boosting = PaperBoosting::fixed_order;
  paper.center = PaperCenter::fast_center;
  all.push_back(paper);
  auto hsu = base();
  hsu.method = MedianMethod::hsu24;
  all.push_back(hsu);
  return all;
}

}  // namespace

TEST(MedianSeam, EveryMethodStatesWhatItsLedgerComposesTo) {
  const RowMatrix X = cluster(1500, 4, 1);
  for (const auto& o : every_method()) {
    for (double check : {0.0, 0.01}) {
      auto c = o;
      c.bound_check_share = check;
      SeededRng rng(2);
      const auto r = geometric_median(X, c, rng);
      SCOPED_TRACE(std::string(name_of(c.method)) + " " + std::string(name_of(c.profile)));
      dpstats::testing::expect_guarantee_from_ledger(r);
      EXPECT_LE(r.privacy.epsilon, 1.0);
      EXPECT_LE(r.privacy.delta, 1e-6);
      EXPECT_EQ(r.status, Status::ok);
      EXPECT_EQ(r.diagnostics["domain_radius_source"], "given");
      EXPECT_EQ(r.diagnostics.contains("domain_radius_check"), check > 0);
    }
  }
}

TEST(MedianSeam, CallerBudgetIsChargedOrNothingIsDrawn) {
  const RowMatrix X = cluster(800, 3, 3);
  for (const auto& o : every_method()) {
    Budget enough(PrivacyLoss::approximate(2, 1e-5), Accountant::basic);
    SeededRng rng(4);
    const auto r = geometric_median(X, o, rng, &enough);
    // A basic caller counts a basic release's entries themselves, and a zCDP release (whose
    // entries it cannot count) as the release's own (ε, δ): charged once, for the whole plan.
    const PrivacyLoss spent = enough.spent_epsilon_delta();
    EXPECT_GE(spent.delta, r.privacy.delta * (1 - 1e-12));
    EXPECT_GE(spent.epsilon, r.privacy.epsilon * (1 - 1e-12));
    EXPECT_NEAR(spent.epsilon, r.privacy.epsilon, 1e-12);
    Budget small(PrivacyLoss::approximate(0.5, 1e-5), Accountant::basic);
    SeededRng a(5), b(5);
    EXPECT_THROW(geometric_median(X, o, a, &small), BudgetExceeded);
    EXPECT_TRUE(small.ledger().empty());
    EXPECT_EQ(a.next_u64(), b.next_u64());  // no noise was drawn
  }
}

TEST(MedianSeam, EnumNamesAndRegistry) {
  EXPECT_EQ(parse_enum<MedianMethod>("hsu24"), MedianMethod::hsu24);
  EXPECT_EQ(parse_enum<PaperBoosting>("stable"), PaperBoosting::stable);
  EXPECT_EQ(parse_enum<PaperCenter>("fast-center"), PaperCenter::fast_center);
  EXPECT_EQ(parse_enum<RadiusMethod>("radius-finder"), RadiusMethod::radius_finder);
  EXPECT_EQ(name_of(RadiusMethod::fast_radius_permuted), "fast-radius-permuted");
  EXPECT_THROW(parse_enum<MedianMethod>("weiszfeld"), InvalidArgument);  // not private
  EXPECT_EQ(method_names(median_methods()), (std::vector<std::string>{"fast", "hsu24", "weiszfeld"}));
  const auto& hsu = find_method(median_methods(), "median", "hsu24");
  const std::vector<std::string> profile{"profile"};
  EXPECT_THROW(check_options_apply(median_methods(), hsu, profile), InvalidArgument);
  EXPECT_THROW(find_method(median_methods(), "median", "nope"), InvalidArgument);
}

TEST(MedianSeam, GivenRadiusThatExcludesRowsIsReported) {
  // 20% of the rows at norm ~1000 with domain_radius 50: the private count says so.
  RowMatrix X = cluster(2000, 3, 6);
  for (int i = 0; i < 400; ++i) X.row(i) = Vector::Constant(3, 600).transpose();
  auto o = base();
  o.bound_check_share = 0.01;
  SeededRng rng(7);
  const auto r = geometric_median(X, o, rng);
  EXPECT_NEAR(r.diagnostics["domain_radius_check"]["fraction_beyond"].get<double>(), 0.2, 0.05);
  EXPECT_TRUE(r.diagnostics.contains("domain_radius_warning"));
  const auto clean = geometric_median(cluster(2000, 3, 6), o, rng);
  EXPECT_FALSE(clean.diagnostics.contains("domain_radius_warning"));
}

namespace {

// Rows around mu with per-column scales `scales` (a Student-t with 3 degrees of freedom when
// heavy), and a fraction `corrupt` of rows at `far`.
RowMatrix realistic(std::int64_t n, const Vector& mu, const Vector& scales, bool heavy,
                    double corrupt, const Vector& far, std::uint64_t seed) {
  SeededRng g(seed);
  RowMatrix X(n, mu.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < mu.size(); ++j) {
      double z = standard_normal(g);
      if (heavy) {
        double chi = 0;
        for (int k = 0; k < 3; ++k) chi += std::pow(standard_normal(g), 2);
        z /= std::sqrt(chi / 3);
      }
      X(i, j) = mu[j] + scales[j] * z;
    }
  const auto bad = static_cast<std::int64_t>(corrupt * static_cast<double>(n));
  for (std::int64_t i = 0; i < bad; ++i) X.row(i) = far.transpose();
  return X;
}

// Mean over seeds of ‖estimate − x*‖ / scale, for options `o` on data X (the default: no R).
double mean_error(const RowMatrix& X, const GeometricMedianOptions& o, double scale) {
  const Vector x_star = weiszfeld(X).x;
  double sum = 0;
  const int seeds = 4;
  for (int s = 0; s < seeds; ++s) {
    SeededRng rng(100 + s);
    const auto r = geometric_median(X, o, rng);
    dpstats::testing::expect_guarantee_from_ledger(r);
    if (r.status != Status::ok) {
      ADD_FAILURE() << r.diagnostics.dump();
      continue;
    }
    sum += (r.estimate - x_star).norm() / scale;
  }
  return sum / seeds;
}

std::vector<GeometricMedianOptions> default_of_every_method() {
  std::vector<GeometricMedianOptions> all;
  for (auto o : every_method()) {
    o.domain_radius.reset();
    // n = 3000 rows in d = 4: at (1, 1e-6) the scale estimate's rank error (t ≈ 1800) is too
    // large and the release rightly abstains (TooFewRowsAbstainWithAReason); at (4, 1e-6) it
    // is t/n ≈ 0.15.
    o.privacy = {4, 1e-6};
    if (o.center == PaperCenter::fast_center) continue;  // needs n >~ 10^4 (fast_center.hpp)
    all.push_back(o);
  }
  return all;
}

// One method's default against its data multiplied by 1e-3 and 1e3 and shifted by 1e4 × scale:
// the mean error in the data's units may grow by at most 1.5x.
void expect_equivariant(const GeometricMedianOptions& o) {
  const Vector mu{{3, -1, 2, 0.5}};
  const Vector ones = Vector::Ones(4);
  // hsu24 is O(n^2 d): 3000 rows; the others 8000 (the paper profile's pure-DP share needs them).
  const RowMatrix X = realistic(o.method == MedianMethod::hsu24 ? 3000 : 8000, mu, ones, false, 0,
                                mu, 11);
  const double e1 = mean_error(X, o, 1);
  for (const double a : {1e-3, 1e3}) {
    const RowMatrix Y = X * a;
    EXPECT_LE(mean_error(Y, o, a), 1.5 * e1 + 1e-12) << "scale " << a;
  }
  const RowMatrix S = X.rowwise() + (1e4 * ones).transpose();
  EXPECT_LE(mean_error(S, o, 1), 1.5 * e1 + 1e-12) << "shift";
  // Within the data's own scale (the paper profile's Stable DP-SGD is not, at this n: its error
  // is the paper's, docs/results/geometric-median.md).
  if (o.profile == Profile::practical || o.method == MedianMethod::hsu24) EXPECT_LT(e1, 1.0);
}

GeometricMedianOptions default_of(MedianMethod m, Profile p, PaperBoosting b) {
  for (const auto& o : default_of_every_method())
    if (o.method == m && o.profile == p && o.boosting == b) return o;
  throw std::logic_error("no such method");
}

}  // namespace

TEST(MedianScale, FastPracticalIsEquivariant) {
  expect_equivariant(default_of(MedianMethod::fast, Profile::practical, PaperBoosting::fixed_order));
}
TEST(MedianScale, FastPaperFixedOrderIsEquivariant) {
  expect_equivariant(default_of(MedianMethod::fast, Profile::paper, PaperBoosting::fixed_order));
}
TEST(MedianScale, FastPaperStableIsEquivariant) {
  expect_equivariant(default_of(MedianMethod::fast, Profile::paper, PaperBoosting::stable));
}
TEST(MedianScale, Hsu24IsEquivariant) {
  expect_equivariant(default_of(MedianMethod::hsu24, Profile::practical, PaperBoosting::fixed_order));
}

TEST(MedianScale, RealisticTablesLandCloseOrAbstain) {
  // Age in years and salary in dollars (columns 4 orders of magnitude apart), heavy tails, and 5%
  // corrupted rows at (999, 9.9e6).
  const Vector mu{{41, 52000}};
  const Vector scales{{12, 18000}};
  const Vector far{{999, 9.9e6}};
  const RowMatrix X = realistic(20000, mu, scales, true, 0.05, far, 12);
  const Vector x_star = weiszfeld(X).x;
  for (auto o : default_of_every_method()) {
    if (o.method == MedianMethod::hsu24) continue;  // O(n^2 d) at n = 20000
    o.privacy = {1, 1e-6};
    SeededRng rng(13);
    const auto r = geometric_median(X, o, rng);
    dpstats::testing::expect_guarantee_from_ledger(r);
    if (r.status == Status::abstained) {
      EXPECT_TRUE(r.diagnostics.contains("abstained"));
      continue;
    }
    // The default lands within 5% of the salary scale of the non-private geometric median; the
    // paper profile only has to stay finite (its accuracy at this n is the paper's).
    EXPECT_TRUE(r.estimate.allFinite());
    if (o.profile == Profile::practical)
      EXPECT_LT((r.estimate - x_star).norm(), 0.05 * 18000) << r.diagnostics.dump();
    EXPECT_EQ(r.diagnostics["domain_radius_source"], "estimated");
  }
}

TEST(MedianScale, TooFewRowsAbstainWithAReason) {
  const RowMatrix X = cluster(3000, 4, 14);
  auto o = base();  // (1, 1e-6)
  o.domain_radius.reset();
  SeededRng rng(15);
  const auto r = geometric_median(X, o, rng);
  EXPECT_EQ(r.status, Status::abstained);
  EXPECT_EQ(r.estimate.size(), 0);
  EXPECT_TRUE(r.diagnostics.contains("abstained"));
  dpstats::testing::expect_guarantee_from_ledger(r);
}


// ---- Threads (issue 17): a seeded release is byte-identical for any thread count ----------------

namespace {

std::string seeded_release(const RowMatrix& X, GeometricMedianOptions o, int threads) {
  o.run.threads = threads;
  SeededRng rng(7);
  const auto r = geometric_median(X, o, rng);
  std::string bytes(reinterpret_cast<const char*>(r.estimate.data()),
                    sizeof(double) * static_cast<std::size_t>(r.estimate.size()));
  return bytes + release_fields_json(r).dump();
}

}  // namespace

// The practical profile at n = 2·10^5 (the gradient passes split into parts of >= 65,536 rows),
// the paper profile (FastRadius's blocks split over threads) and the HSU24 baseline.
TEST(MedianThreads, SeededReleaseIsIdenticalForOneTwoThreeThreads) {
  const RowMatrix big = cluster(200000, 3, 11);
  const RowMatrix small = cluster(4000, 3, 12);
  auto practical = base();
  auto estimated = base();
  estimated.domain_radius.reset();
  auto paper = base();
  paper.profile = Profile::paper;
  auto hsu = base();
  hsu.method = MedianMethod::hsu24;
  const std::vector<std::pair<const RowMatrix*, GeometricMedianOptions>> cases = {
      {&big, practical}, {&big, estimated}, {&small, paper}, {&small, hsu}};
  for (const auto& [X, o] : cases) {
    const std::string one = seeded_release(*X, o, 1);
    EXPECT_EQ(seeded_release(*X, o, 2), one) << name_of(o.method) << " " << name_of(o.profile);
    EXPECT_EQ(seeded_release(*X, o, 3), one) << name_of(o.method) << " " << name_of(o.profile);
  }
}

// ---- Ranks (issue 18): the practical median on P = 1..4 ranks equals the one-process release --

namespace {

// Rows [cut[r], cut[r+1]) for rank r: uneven cuts, one rank may hold a single row.
std::vector<std::int64_t> cuts(std::int64_t n, int ranks, std::uint64_t seed) {
  std::vector<std::int64_t> c = {0};
  SeededRng rng(seed);
  for (int r = 1; r < ranks; ++r)
    c.push_back(std::max(c.back() + 1, static_cast<std::int64_t>(rng.uniform_below(static_cast<std::uint64_t>(n)))));
  std::sort(c.begin(), c.end());
  c.push_back(n);
  return c;
}

// Columns in odd units (x 1e-3; x 1e3 shifted by 5e4) and 30 rows corrupted by x 1e6: the data
// the default command's private domain-radius estimate (no domain_radius) must cope with.
RowMatrix odd_units(std::int64_t n, std::uint64_t seed) {
  RowMatrix X = cluster(n, 3, seed);
  X.col(0) *= 1e-3;
  X.col(1) = (X.col(1).array() * 1e3 + 5e4).matrix();
  for (std::int64_t i = 0; i < 30; ++i) X.row(i * (n / 30)) *= 1e6;
  return X;
}

// The release of o on P ranks holding the rows [c[r], c[r+1]) (threads differ between ranks);
// every rank's bytes.
std::vector<std::string> ranks_release(const RowMatrix& X, const GeometricMedianOptions& o, int P,
                                       const std::vector<std::int64_t>& c) {
  std::vector<std::string> got(static_cast<std::size_t>(P));
  run_local_ranks(P, [&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    const RowMatrix mine = X.middleRows(c[r], c[r + 1] - c[r]);
    auto mo = o;
    mo.run.comm = &comm;
    got[r] = seeded_release(mine, mo, 1 + comm.rank() % 2);
  });
  return got;
}

}  // namespace

// A given domain_radius, and the default: its private estimate (the per-coordinate median and the
// norm quantile count every rank's rows), on odd units with corrupted rows too.
TEST(MedianRanks, SeededReleaseIsIdenticalOnOneToFourRanks) {
  auto given = base();
  given.subsample = 5000;  // the radius search and the localization draw a global subsample
  auto estimated = given;
  estimated.domain_radius.reset();
  auto hsu = base();  // RadiusFinder's pairs cut over the ranks, its bins added exactly
  hsu.method = MedianMethod::hsu24;
  hsu.privacy = {8, 1e-6};  // RadiusFinder's threshold m + (18/ε) ln(2T/β) must stay below n
  const RowMatrix X = cluster(30000, 3, 21);
  const RowMatrix odd = odd_units(30000, 24);
  const RowMatrix small = cluster(1200, 3, 25);
  const std::vector<std::pair<const RowMatrix*, GeometricMedianOptions>> cases = {
      {&X, given}, {&X, estimated}, {&odd, estimated}, {&small, hsu}};
  for (const auto& [data, o] : cases) {
    const std::string one = seeded_release(*data, o, 1);
    EXPECT_NE(one.find("\"radius_fell_back\":false"), std::string::npos) << one;  // a real search
    for (int P = 1; P <= 4; ++P) {
      for (std::uint64_t split = 0; split < 2; ++split) {
        const auto got = ranks_release(*data, o, P, cuts(data->rows(), P, 100 * P + split));
        for (int r = 0; r < P; ++r)
          EXPECT_EQ(got[static_cast<std::size_t>(r)], one)
              << "P = " << P << ", rank " << r << " " << name_of(o.method)
              << (o.domain_radius ? " given" : " estimated");
      }
    }
  }
}

// Noise once: on P ranks, rank 0 draws exactly the words the one-process release draws, and no
// other rank draws any (a given domain_radius and its estimate).
TEST(MedianRanks, OnlyRankZeroDrawsAndAsMuchAsOneProcess) {
  const RowMatrix X = cluster(30000, 3, 23);
  const RowMatrix small = cluster(1500, 3, 26);
  auto given = base();
  given.subsample = 5000;
  auto estimated = given;
  estimated.domain_radius.reset();
  auto hsu = base();
  hsu.method = MedianMethod::hsu24;
  for (const auto& o : {given, estimated, hsu}) {
    const RowMatrix& data = o.method == MedianMethod::hsu24 ? small : X;
    CountingRng single(5);
    geometric_median(data, o, single);
    ASSERT_GT(single.draws, 0);
    for (int P = 2; P <= 4; ++P) {
      std::vector<long> draws(static_cast<std::size_t>(P), -1);
      run_local_ranks(P, [&](Communicator& comm) {
        const auto r = static_cast<std::size_t>(comm.rank());
        const Eigen::Index begin = data.rows() * comm.rank() / P;
        const Eigen::Index end = data.rows() * (comm.rank() + 1) / P;
        auto mo = o;
        mo.run.comm = &comm;
        CountingRng rng(5);
        geometric_median(data.middleRows(begin, end - begin), mo, rng);
        draws[r] = rng.draws;
      });
      EXPECT_EQ(draws[0], single.draws) << "P = " << P;
      for (int r = 1; r < P; ++r) EXPECT_EQ(draws[static_cast<std::size_t>(r)], 0) << "P = " << P;
    }
  }
}

TEST(MedianRanks, WhatIsNotDistributedIsRefusedWithTheReason) {
  const RowMatrix X = cluster(2000, 3, 22);
  auto paper = base();
  paper.profile = Profile::paper;
  auto paper_estimated = paper;
  paper_estimated.domain_radius.reset();
  for (const auto& o : {paper, paper_estimated}) {
    try {
      run_local_ranks(2, [&](Communicator& comm) {
        auto mo = o;
        mo.run.comm = &comm;
        SeededRng rng(1);
        geometric_median(X.middleRows(comm.rank() * 1000, 1000), mo, rng);
      });
      ADD_FAILURE() << "not refused";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("several ranks"), std::string::npos) << e.what();
    }
  }
}
