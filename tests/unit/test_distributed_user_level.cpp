// User-level fits over ranks (issue 18 item 3): rows are moved to their user's home rank before
// any per-user clip, so on P = 1..4 in-process ranks (run_local_ranks), with every user's rows
// spread over the ranks, the seeded release -- estimate, diagnostics, ledger -- is the
// single-process release on every rank, and only rank 0 draws (as many words as one process).
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/user_level/home_rank.hpp"
#include "dpstats/user_level/user_level.hpp"
#include "../ranks_harness.hpp"

namespace dpstats::optimize {
namespace {

// Rows in an interleaved order: user u's rows are far apart, so every contiguous cut into P
// blocks splits most users over several ranks. Users have 1..7 rows (some truncated to m, some
// padded), ids are sparse and signed.
struct Rows {
  RowMatrix X;
  Vector y;
  std::vector<std::int64_t> users;
};

Rows interleaved(int n_users, bool zero_one, double third = 0) {
  SeededRng g(11);
  const auto unif = [&] { return static_cast<double>(g.next_u64() >> 11) * 0x1p-53; };
  std::vector<std::int64_t> ids;
  for (int u = 0; u < n_users; ++u) {
    const int rows = 1 + u % 7;
    for (int k = 0; k < rows; ++k) ids.push_back(37 * u - 1000);
  }
  // A fixed shuffle of the rows (Fisher-Yates on the test's own generator).
  for (std::size_t i = ids.size() - 1; i > 0; --i) std::swap(ids[i], ids[g.next_u64() % (i + 1)]);
  Rows r{RowMatrix(static_cast<Eigen::Index>(ids.size()), 3),
         Vector(static_cast<Eigen::Index>(ids.size())), ids};
  for (Eigen::Index i = 0; i < r.X.rows(); ++i) {
    const double a = unif() - 0.5, b = unif() - 0.5;
    // A few rows above the feature bound; `third` shifts the third column (0: in [0, 1]).
    r.X.row(i) << a, b, i % 53 == 0 ? 40.0 : unif() + third;
    const bool pos = a + 0.5 * b + 0.2 * (unif() - 0.5) > 0;
    r.y[i] = pos ? 1 : (zero_one ? 0 : -1);
  }
  return r;
}

// Returns the single-process release (checked to be ok unless `abstains`); rank r of P holds the
// rows [n·r/P, n·(r+1)/P), most users' rows spread over several ranks.
// m: the public rows per user (4: the mean of interleaved's 1..7).
std::string expect_same_on_ranks(const Rows& rows, const UserLevelOptions& base, std::int64_t m = 4,
                                 std::optional<double> data_bound = std::nullopt,
                                 bool abstains = false) {
  const std::string single = ranks_harness::expect_same_on_ranks(
      rows.X.rows(), [](Eigen::Index n, int P, int r) { return n * r / P; }, 7,
      [&](Eigen::Index lo, Eigen::Index hi, Communicator* c, Rng& rng) {
        UserLevelOptions o = base;
        o.run.comm = c;
        if (!c) return ranks_harness::dump(
            fit_user_level(UserDataset(rows.X, rows.y, rows.users, m, data_bound), o, rng));
        const std::vector<std::int64_t> ids(rows.users.begin() + lo, rows.users.begin() + hi);
        return ranks_harness::dump(fit_user_level(
            gather_users(*c, rows.X.middleRows(lo, hi - lo), rows.y.segment(lo, hi - lo), ids, m,
                         data_bound),
            o, rng));
      });
  EXPECT_NE(single.find(abstains ? "\"status\":\"abstained\"" : "\"status\":\"ok\""),
            std::string::npos)
      << single;
  return single;
}

UserLevelOptions dp_gd(UserLevelMethod method) {
  UserLevelOptions o;
  o.method = method;
  o.privacy = {1.0, 1e-6};
  o.domain_radius = 3;
  o.feature_bound = 2;  // public: also runs the private count of clipped users
  o.centre = false;     // the third column lies in [0, 1]: with centring, the offset check abstains
  o.steps = 12;
  return o;
}

TEST(DistributedUserLevel, HomeRankIsAFixedFunctionOfTheId) {
  EXPECT_EQ(home_rank(12345, 1), 0);
  std::vector<int> hits(4, 0);
  for (std::int64_t id = 0; id < 400; ++id) {
    const int h = home_rank(id, 4);
    ASSERT_TRUE(h >= 0 && h < 4);
    EXPECT_EQ(h, home_rank(id, 4));
    ++hits[static_cast<std::size_t>(h)];
  }
  for (int h : hits) EXPECT_GT(h, 60);  // consecutive ids spread over the ranks
  EXPECT_THROW(home_rank(1, 0), InvalidArgument);
}

TEST(DistributedUserLevel, GatherUsersGivesTheOneProcessUsers) {
  const Rows rows = interleaved(61, false);
  const UserDataset one(rows.X, rows.y, rows.users, 3);
  const Eigen::Index n = rows.X.rows();
  run_local_ranks(3, [&](Communicator& c) {
    const Eigen::Index lo = n * c.rank() / 3, hi = n * (c.rank() + 1) / 3;
    const std::vector<std::int64_t> ids(rows.users.begin() + lo, rows.users.begin() + hi);
    const UserDataset local =
        gather_users(c, rows.X.middleRows(lo, hi - lo), rows.y.segment(lo, hi - lo), ids, 3);
    EXPECT_EQ(local.total_users(), 61);
    // Each home user's m items are the one-process user's items, bit for bit.
    for (std::int64_t u = 0; u < local.num_users(); ++u) {
      const std::int64_t id = local.ids()[static_cast<std::size_t>(u)];
      EXPECT_EQ(home_rank(id, 3), c.rank());
      const auto at = std::find(one.ids().begin(), one.ids().end(), id) - one.ids().begin();
      for (std::int64_t k = 0; k < 3; ++k) {
        EXPECT_EQ(local.label(u, k), one.label(at, k));
        for (int j = 0; j < 3; ++j) EXPECT_EQ(local.features(u, k)[j], one.features(at, k)[j]);
      }
    }
  });
}

TEST(DistributedUserLevel, DpGdUserIsTheSingleProcessRelease) {
  expect_same_on_ranks(interleaved(230, false), dp_gd(UserLevelMethod::dp_gd_user));
}

TEST(DistributedUserLevel, DpGdUserZeroOneLabelsAndGivenItemsPerUser) {
  // {0, 1} labels are mapped from every rank's labels together; m = 4 truncates and pads.
  expect_same_on_ranks(interleaved(150, true), dp_gd(UserLevelMethod::dp_gd_user), 4);
}

TEST(DistributedUserLevel, DpGdUserSquaredLossOnBoundedData) {
  UserLevelOptions o = dp_gd(UserLevelMethod::dp_gd_user);
  o.loss = GlmKind::squared;
  o.feature_bound.reset();  // the data's own bound: no clipped-user count
  o.label_bound = 1;
  expect_same_on_ranks(interleaved(120, false), o, 4, 1.5);
}

TEST(DistributedUserLevel, DpGdFilterIsTheSingleProcessRelease) {
  expect_same_on_ranks(interleaved(200, false), dp_gd(UserLevelMethod::dp_gd_filter));
}

TEST(DistributedUserLevel, DpSgdUserBatchesAreRankZerosPermutationOfTheUsers) {
  // The batch permutation is drawn on rank 0 over the global user order (sorted ids).
  UserLevelOptions o = dp_gd(UserLevelMethod::dp_sgd_user);
  o.steps = 7;
  expect_same_on_ranks(interleaved(213, false), o);
}

TEST(DistributedUserLevel, DpSgdGroupBatchesAreRankZerosPermutationOfTheItems) {
  // Item batches: a permutation of the global items (user index · m + k) drawn on rank 0.
  UserLevelOptions o = dp_gd(UserLevelMethod::dp_sgd_group);
  o.steps = 9;
  expect_same_on_ranks(interleaved(140, false), o, 3);
}

TEST(DistributedUserLevel, NonPrivateRefusesOnEveryRank) {
  const Rows rows = interleaved(80, false);
  const Eigen::Index n = rows.X.rows();
  const auto refuses = [&](const UserLevelOptions& base, const std::string& words) {
    std::mutex mu;
    int refused = 0;
    run_local_ranks(2, [&](Communicator& c) {
      const Eigen::Index lo = n * c.rank() / 2, hi = n * (c.rank() + 1) / 2;
      const std::vector<std::int64_t> ids(rows.users.begin() + lo, rows.users.begin() + hi);
      const UserDataset local =
          gather_users(c, rows.X.middleRows(lo, hi - lo), rows.y.segment(lo, hi - lo), ids, 3);
      UserLevelOptions o = base;
      o.run.comm = &c;
      SeededRng rng(1);
      try {
        fit_user_level(local, o, rng);
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        const std::lock_guard lock(mu);
        ++refused;
      }
    });
    EXPECT_EQ(refused, 2) << words;
  };
  UserLevelOptions o = dp_gd(UserLevelMethod::non_private);
  refuses(o, "method non-private does not run on 2 ranks");
}

TEST(DistributedUserLevel, PhasedMethodsRunOnRankZeroOverEveryRanksUsers) {
  // Alg 1 and Alg 3 (practical) walk the users in sequential SGD: rank 0 runs them on every
  // rank's users, stacked in id order; the release and the draws are the one-process ones.
  const Rows rows = interleaved(300, false);
  for (auto m : {UserLevelMethod::phased_sgd, UserLevelMethod::accelerated,
                 UserLevelMethod::nonsmooth}) {
    UserLevelOptions o = dp_gd(m);
    o.steps.reset();
    if (m != UserLevelMethod::phased_sgd) o.steps = 5;
    expect_same_on_ranks(rows, o, 3);
  }
}

// The scale step over ranks: the bounds' estimates (one value per home user), the private
// centring (one row per user) and the offset check merge exact counts; rank 0 draws.
UserLevelOptions defaults(UserLevelMethod method, double epsilon) {
  UserLevelOptions o;
  o.method = method;
  o.privacy = {epsilon, 1e-6};
  o.domain_radius = 3;
  o.steps = 8;
  return o;
}

TEST(DistributedUserLevel, DefaultCentringAndFeatureBoundEstimateAreTheOneProcessRelease) {
  // Enough users at epsilon = 4 for the private centring: no bound given, centre absent.
  const Rows rows = interleaved(2600, false);
  for (auto m : {UserLevelMethod::dp_gd_user, UserLevelMethod::dp_sgd_user}) {
    const std::string single = expect_same_on_ranks(rows, defaults(m, 4));
    EXPECT_NE(single.find("\"intercept\":true"), std::string::npos) << single;
    EXPECT_NE(single.find("\"estimated\":true"), std::string::npos) << single;
  }
}

TEST(DistributedUserLevel, LabelBoundEstimateAndCentreTrueOnRanks) {
  UserLevelOptions o = defaults(UserLevelMethod::dp_gd_filter, 4);
  o.loss = GlmKind::squared;  // the label bound is estimated too
  o.centre = true;
  const std::string single = expect_same_on_ranks(interleaved(2600, false), o, 3);
  EXPECT_NE(single.find("label_bound"), std::string::npos) << single;
  EXPECT_NE(single.find("\"intercept\":true"), std::string::npos) << single;
}

TEST(DistributedUserLevel, OffsetCheckBelowTheCentringThresholdOnRanks) {
  // At epsilon = 1 the users are enough for the bound's estimate, too few to centre: the offset
  // check runs over every rank's users. Centred columns pass; a shifted one abstains everywhere.
  const UserLevelOptions o = defaults(UserLevelMethod::dp_gd_user, 1);
  const std::string passed = expect_same_on_ranks(interleaved(1300, false, -0.5), o);
  EXPECT_NE(passed.find("offset_check"), std::string::npos) << passed;
  const std::string far = expect_same_on_ranks(interleaved(1300, false, 30), o, 4, std::nullopt, true);
  EXPECT_NE(far.find("far from 0"), std::string::npos) << far;
}

}  // namespace
}  // namespace dpstats::optimize
