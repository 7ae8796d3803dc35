// The held-out validation loss (issue 27 item 3; solvers/holdout.hpp): the split, the mechanism's
// stated intervals, and each fit's statement checked against the loss of its released model on a
// fresh sample of the same population.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <random>
#include <set>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/heavy_tailed/heavy_tailed.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/training/train_classifier.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "guarantee.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {

// Whether the statement's population interval holds `truth` (the expected clipped loss of the
// released model, measured on a fresh sample), and its noise interval the released loss clamped
// to [0, L]: `loss` is released as drawn (noise can put it below 0 or above L), the intervals are
// clamped, and each holds min(max(loss, 0), L) (docs/proofs/training.md §5, "Clamping").
void expect_covers(const nlohmann::json& h, double truth) {
  ASSERT_TRUE(h.contains("population_interval_95")) << h.dump();
  const auto iv = h["population_interval_95"].get<std::vector<double>>();
  EXPECT_LE(iv[0], truth) << h.dump();
  EXPECT_GE(iv[1], truth) << h.dump();
  const double clamped =
      std::clamp(h["loss"].get<double>(), 0.0, h["loss_bound"].get<double>());
  EXPECT_LE(h["interval_95"][0].get<double>(), clamped) << h.dump();
  EXPECT_GE(h["interval_95"][1].get<double>(), clamped) << h.dump();
  EXPECT_LE(iv[0], clamped) << h.dump();
  EXPECT_GE(iv[1], clamped) << h.dump();
}

}  // namespace

TEST(Holdout, SplitHoldsOutTheFractionIndependentlyOfTheData) {
  SeededRng a(1), b(1), c(2);
  const HoldoutSplit s(0.2, a), same(0.2, b), other(0.2, c);
  int held = 0, agree = 0;
  const int n = 100000;
  for (int id = 0; id < n; ++id) {
    const double row[] = {static_cast<double>(id), 1.0};  // a row's values, then its label
    held += s.held_out(row);
    EXPECT_EQ(s.held_out(row), same.held_out(row));  // a seeded key: reproducible
    agree += s.held_out(row) == other.held_out(row);
  }
  EXPECT_NEAR(held, 0.2 * n, 5 * std::sqrt(0.16 * n));
  EXPECT_NEAR(agree, 0.68 * n, 5 * std::sqrt(0.2176 * n));  // another key: independent
  EXPECT_THROW(HoldoutSplit(0, a), InvalidArgument);
  EXPECT_THROW(HoldoutSplit(0.6, a), InvalidArgument);
}

// The replace-one fits' split (issue 30): exactly round(f N) units held out, so both counts are
// public; replacing one unit changes each side by at most one replaced unit (docs/proofs/
// user-level.md §5), duplicates included; the same flags on 3 ranks as in one process.
TEST(Holdout, ExactSplitHoldsOutAPublicCountAndNeighboursDifferByOneUnit) {
  using Units = std::vector<std::vector<std::uint64_t>>;
  const auto held_set = [](const Units& u, const std::vector<char>& f, bool held) {
    std::multiset<std::vector<std::uint64_t>> s;
    for (std::size_t i = 0; i < u.size(); ++i)
      if ((f[i] != 0) == held) s.insert(u[i]);
    return s;
  };
  const auto differ = [](const auto& a, const auto& b) {  // units of a missing from b
    std::vector<std::vector<std::uint64_t>> out;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out.size();
  };
  Units units;
  for (std::uint64_t i = 0; i < 1000; ++i) units.push_back({i % 700, 7});  // 300 duplicated
  SeededRng rng(3);
  const HoldoutSplit split(0.2, rng);
  EXPECT_EQ(split.held_units(1000), 200);
  EXPECT_EQ(split.held_units(2), 1);
  EXPECT_THROW(split.held_units(1), InvalidArgument);
  const std::vector<char> flags = split.smallest(units, 1000);
  EXPECT_EQ(std::count(flags.begin(), flags.end(), 1), 200);
  for (std::size_t at : {0, 5, 699, 999}) {
    for (std::uint64_t v : {5000, 12, 3}) {  // a new unit, and copies of existing ones
      Units other = units;
      other[at] = {v, 7};
      const std::vector<char> g = split.smallest(other, 1000);
      EXPECT_EQ(std::count(g.begin(), g.end(), 1), 200);
      for (bool held : {true, false}) {
        EXPECT_LE(differ(held_set(units, flags, held), held_set(other, g, held)), 1u);
        EXPECT_LE(differ(held_set(other, g, held), held_set(units, flags, held)), 1u);
      }
    }
  }
  std::vector<char> ranked(units.size());  // 3 ranks of 400, 350 and 250 units
  std::mutex m;
  run_local_ranks(3, [&](Communicator& c) {
    const std::size_t begin[] = {0, 400, 750, 1000};
    const auto r = static_cast<std::size_t>(c.rank());
    const Units mine(units.begin() + static_cast<std::ptrdiff_t>(begin[r]),
                     units.begin() + static_cast<std::ptrdiff_t>(begin[r + 1]));
    SeededRng key(3);
    const std::vector<char> f = HoldoutSplit(0.2, key, &c).smallest(mine, 1000, &c);
    const std::lock_guard<std::mutex> lock(m);
    std::copy(f.begin(), f.end(), ranked.begin() + static_cast<std::ptrdiff_t>(begin[r]));
  });
  EXPECT_EQ(ranked, flags);
}

// The noise-only interval holds the held-out units' mean clipped loss in about 95% of draws
// (Gaussian and Laplace), and the ledger entry is the mechanism's at sensitivity L.
TEST(Holdout, LossIntervalHasItsStatedCoverage) {
  std::vector<double> losses;
  std::mt19937_64 gen(3);
  std::exponential_distribution<double> e(1.0);
  for (int i = 0; i < 400; ++i) losses.push_back(e(gen));  // some above L = 5: clipped
  double truth = 0;
  for (double v : losses) truth += std::min(v, 5.0) / 400;
  for (const HoldoutLoss& h : {HoldoutLoss::gaussian(5, 0.01, NoiseMode::secure),
                               HoldoutLoss::laplace(5, 0.2, NoiseMode::secure)}) {
    EXPECT_EQ(h.ledger_entry().sensitivity, 5);
    SeededRng rng(4);
    int covered = 0;
    const int draws = 400;
    for (int t = 0; t < draws; ++t) {
      const auto j = h.release(losses, rng);
      EXPECT_EQ(j["units"], 400);
      covered += j["interval_95"][0].get<double>() <= truth &&
                 truth <= j["interval_95"][1].get<double>();
    }
    EXPECT_GE(covered, 0.91 * draws);  // 95%: a correct interval falls below w.p. < 1e-4
    EXPECT_LE(covered, 0.99 * draws);
  }
}

// With a private held-out count (issue 28) the statement divides by the public f·N and states
// no count: two neighbouring held-out sets (one unit more) give the same public fields, the
// lattice is the public capacity's, and more units than the capacity are refused.
TEST(Holdout, APrivateCountIsNeverStated) {
  std::vector<double> losses(400, 1.0);
  const HoldoutLoss h = HoldoutLoss::gaussian(5, 0.01, NoiseMode::secure);
  const HoldoutLoss::PublicCount count{2000, 0.2, 2000};
  SeededRng a(4), b(4);
  const auto j = h.release(losses, a, nullptr, count);
  losses.push_back(1.0);
  const auto k = h.release(losses, b, nullptr, count);
  EXPECT_FALSE(j.contains("units"));
  EXPECT_EQ(j["units_expected"], 400.0);
  for (const char* field : {"units_expected", "noise_sd", "loss_bound", "rule", "statement"})
    EXPECT_EQ(j[field], k[field]) << field;
  EXPECT_NEAR(j["loss"].get<double>(), 1.0, 5 * j["noise_sd"].get<double>());
  const auto p = j["population_interval_95"].get<std::vector<double>>();
  EXPECT_LE(p[0], 1.0);
  EXPECT_GE(p[1], 1.0);
  SeededRng c(5);
  EXPECT_THROW(h.release(losses, c, nullptr, {2000, 0.2, 400}), InvalidArgument);
}

// Classifier: the held-out rows are not trained on, the release is charged in the same ledger and
// its population interval holds the released model's loss on a fresh sample.
TEST(Holdout, ClassifierStatesItsValidationLoss) {
  auto blobs = [](Eigen::Index n, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> normal;
    std::pair<RowMatrix, std::vector<int>> t{RowMatrix(n, 3), std::vector<int>()};
    for (Eigen::Index i = 0; i < n; ++i) {
      const int c = static_cast<int>(gen() % 3);
      t.second.push_back(c);
      for (int j = 0; j < 3; ++j) t.first(i, j) = (j == c ? 2.0 : 0.0) + normal(gen);
    }
    return t;
  };
  const auto train = blobs(6000, 5), fresh = blobs(50000, 6);
  for (std::uint64_t seed : {7, 8}) {
    ClassifyOptions o;
    o.privacy = {2.0, 1e-6};
    o.epochs = 2;
    o.holdout = 0.2;
    o.n_public = 6000;
    SeededRng rng(seed);
    const auto r = train_classifier(Classifier::logistic(3, 3), train.first, train.second, o, rng);
    dpstats::testing::expect_guarantee_from_ledger(r);
    ASSERT_EQ(r.status, Status::ok) << r.diagnostics.dump();
    EXPECT_NE(r.ledger.back().purpose.find("holdout"), std::string::npos);
    const auto& h = r.diagnostics["holdout"];
    EXPECT_EQ(h["units_expected"].get<double>(), 1200);  // public: n_public x 0.2
    EXPECT_FALSE(h.contains("units"));  // the exact held-out count is private
    EXPECT_EQ(h["unit"], "row");
    Eigen::Index k = 0;  // the expected clipped loss, on the fresh sample
    double truth = 0;
    for (Eigen::Index i = 0; i < fresh.first.rows(); ++i, ++k)
      truth += std::min(r.estimate.mean_loss(fresh.first.middleRows(i, 1),
                                             {fresh.second[static_cast<std::size_t>(i)]}),
                        o.loss_bound);
    expect_covers(h, truth / static_cast<double>(k));
  }
}

TEST(Holdout, UserLevelAndHeavyTailedStateTheirValidationLoss) {
  std::mt19937_64 gen(9);
  std::normal_distribution<double> normal;
  auto draw = [&](Eigen::Index n, int m, RowMatrix& X, Vector& y, std::vector<std::int64_t>& ids) {
    X.resize(n * m, 2);
    y.resize(n * m);
    for (Eigen::Index i = 0; i < n * m; ++i) {
      X(i, 0) = normal(gen), X(i, 1) = normal(gen);
      y[i] = X(i, 0) - 0.5 * X(i, 1) + 0.5 * normal(gen) > 0 ? 1 : -1;
      ids.push_back(i / m);
    }
  };
  RowMatrix X, Xf;
  Vector y, yf;
  std::vector<std::int64_t> ids, idf;
  draw(3000, 3, X, y, ids);
  draw(30000, 1, Xf, yf, idf);
  auto fresh_loss = [&](const Vector& w, GlmKind kind) {  // x . w, clipped to 5, fresh rows
    const auto loss = make_loss(kind);
    double total = 0;
    for (Eigen::Index i = 0; i < Xf.rows(); ++i)
      total += std::min(loss->phi(Xf.row(i).dot(w.head(2)) + (w.size() > 2 ? w[2] : 0), yf[i]), 5.0);
    return total / static_cast<double>(Xf.rows());
  };
  UserLevelOptions u;
  u.privacy = {2.0, 1e-6};
  u.domain_radius = 3;
  u.feature_bound = 4;
  u.centre = false;
  u.holdout = 0.2;
  SeededRng a(10);
  const auto r = fit_user_level(UserDataset(X, y, ids, 3), u, a);
  dpstats::testing::expect_guarantee_from_ledger(r);
  ASSERT_EQ(r.status, Status::ok) << r.diagnostics.dump();
  EXPECT_EQ(r.diagnostics["holdout"]["unit"], "user");
  // Public counts (issue 30): round(0.2 x 3000) users held out, the rest trained on.
  EXPECT_EQ(r.diagnostics["holdout"]["units"], 600);
  EXPECT_EQ(r.diagnostics["n_users"], 2400);
  expect_covers(r.diagnostics["holdout"], fresh_loss(r.estimate, GlmKind::logistic));
  HeavyTailedOptions h;
  h.loss = GlmKind::logistic;
  h.privacy = {2.0, 0};
  h.domain_radius = 3;
  h.moment_bound = 4;
  h.centre = false;
  h.holdout = 0.2;
  SeededRng b(11);
  const auto t = fit_heavy_tailed(X, y, h, b);
  dpstats::testing::expect_guarantee_from_ledger(t);
  ASSERT_EQ(t.status, Status::ok) << t.diagnostics.dump();
  EXPECT_EQ(t.diagnostics["holdout"]["unit"], "record");
  EXPECT_EQ(t.diagnostics["holdout"]["units"], 1800);  // round(0.2 x 9000) records
  // The whole plan is charged before any noise; the held-out loss is drawn last (of the model).
  EXPECT_NE(t.ledger.back().purpose.find("holdout"), std::string::npos) << ledger_json(t.ledger);
  expect_covers(t.diagnostics["holdout"], fresh_loss(t.estimate, GlmKind::logistic));
}
