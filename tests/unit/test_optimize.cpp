// Shared optimisation pieces (docs/proofs/user-level.md §1, §3): losses, domains, the per-user
// view, exact clipped sums and the SGD subroutine.
#include <gtest/gtest.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/solvers/domain.hpp"
#include "dpstats/solvers/dp_sgd.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/solvers/loss.hpp"
#include "dpstats/user_level/user_data.hpp"
#include "dpstats/random/rng.hpp"

using namespace dpstats;
using namespace dpstats::optimize;

namespace {
Vector random_vector(std::int64_t d, double scale, Rng& rng) {
  Vector v(d);
  for (auto& x : v) x = scale * (2 * rng.uniform01() - 1);
  return v;
}
}  // namespace

TEST(Losses, GradientsMatchCentralDifferences) {
  SeededRng rng(1);
  const Ball X(Vector::Zero(4), 2);
  for (const char* name : {"logistic", "squared", "huber", "hinge"}) {
    const auto loss = make_loss(name);
    for (int trial = 0; trial < 50; ++trial) {
      const Vector x = random_vector(4, 1, rng), a = random_vector(4, 0.5, rng);
      const double y = std::string(name) == "logistic" || std::string(name) == "hinge"
                           ? (rng.bit() ? 1.0 : -1.0)
                           : 2 * rng.uniform01() - 1;
      const double u = x.dot(a);
      if (std::string(name) == "hinge" && std::abs(1 - y * u) < 1e-3) continue;
      if (std::string(name) == "huber" && std::abs(std::abs(u - y) - 1) < 1e-3) continue;
      Vector g = Vector::Zero(4);
      GradientCounter c;
      loss->add_gradient(x, a.data(), y, 1.0, g, c);
      EXPECT_EQ(c.evaluations, 1);
      for (int j = 0; j < 4; ++j) {
        const double h = 1e-5;
        Vector xp = x, xm = x;
        xp[j] += h;
        xm[j] -= h;
        const double fd = (loss->value(xp, a.data(), y) - loss->value(xm, a.data(), y)) / (2 * h);
        EXPECT_NEAR(g[j], fd, 1e-6 * std::max(1.0, std::abs(fd))) << name << " coord " << j;
      }
    }
  }
}

TEST(Losses, LipschitzAndSmoothnessBoundsHold) {
  SeededRng rng(2);
  const double A = 1.5, B = 2;
  const Ball X(Vector::Zero(3), 3);
  for (const char* name : {"logistic", "squared", "huber", "hinge"}) {
    const auto loss = make_loss(name);
    const double L = loss->lipschitz(A, B, X);
    const auto beta = loss->smoothness(A);
    for (int trial = 0; trial < 2000; ++trial) {
      Vector x = random_vector(3, 3, rng), x2 = random_vector(3, 3, rng);
      X.project(x);
      X.project(x2);
      Vector a = random_vector(3, 1, rng);
      a *= A / a.norm() * rng.uniform01();
      const double y = (2 * rng.uniform01() - 1) * B;
      const double yy = std::string(name) == "logistic" || std::string(name) == "hinge"
                            ? (y > 0 ? 1.0 : -1.0) : y;
      GradientCounter c;
      Vector g = Vector::Zero(3), g2 = Vector::Zero(3);
      loss->add_gradient(x, a.data(), yy, 1, g, c);
      loss->add_gradient(x2, a.data(), yy, 1, g2, c);
      EXPECT_LE(g.norm(), L * (1 + 1e-12)) << name;
      if (beta) EXPECT_LE((g - g2).norm(), *beta * (x - x2).norm() * (1 + 1e-9) + 1e-15) << name;
    }
  }
  EXPECT_THROW(make_loss("cauchy"), InvalidArgument);
  EXPECT_FALSE(make_loss("hinge")->smoothness(1).has_value());
  EXPECT_DOUBLE_EQ(*make_loss("logistic")->smoothness(2), 1.0);
}

TEST(Domains, ProjectionIsIdempotentNonExpansiveAndLandsInside) {
  SeededRng rng(3);
  Vector lo(3), hi(3);
  lo << -1, 0, 2;
  hi << 1, 0.5, 4;
  const Ball ball(Vector::Ones(3), 2);
  const Box box(lo, hi);
  for (const Domain* X : {static_cast<const Domain*>(&ball), static_cast<const Domain*>(&box)}) {
    for (int t = 0; t < 500; ++t) {
      Vector a = random_vector(3, 10, rng), b = random_vector(3, 10, rng);
      const Vector a0 = a, b0 = b;
      X->project(a);
      X->project(b);
      EXPECT_TRUE(X->contains(a, 1e-12));
      EXPECT_LE((a - b).norm(), (a0 - b0).norm() * (1 + 1e-12));
      Vector aa = a;
      X->project(aa);
      EXPECT_LE((aa - a).norm(), 1e-12);
    }
  }
  EXPECT_DOUBLE_EQ(ball.diameter(), 4);
  EXPECT_DOUBLE_EQ(box.diameter(), std::sqrt(4 + 0.25 + 4));
  EXPECT_THROW(Ball(Vector::Zero(2), 0), InvalidArgument);
  EXPECT_THROW(Box(hi, lo), InvalidArgument);
}

TEST(UserDataset, GroupsRowsByUserClipsAndPadsCyclically) {
  RowMatrix X(5, 2);
  X << 3, 4, 0.1, 0, 0, 0.2, 0.3, 0, 0, 0.4;
  Vector y(5);
  y << 1, -1, 1, 5, -1;
  const std::vector<std::int64_t> users = {7, 3, 7, 3, 3};
  const UserDataset D(X, y, users, 2, 1.0, 1.0);
  EXPECT_EQ(D.num_users(), 2);
  EXPECT_EQ(D.items_per_user(), 2);
  EXPECT_EQ(D.ids(), (std::vector<std::int64_t>{3, 7}));
  EXPECT_DOUBLE_EQ(D.features(0, 0)[0], 0.1);  // user 3: rows 1, 3 (row 4 truncated)
  EXPECT_DOUBLE_EQ(D.label(0, 1), 1.0);        // 5 clipped to the label bound 1
  EXPECT_NEAR(D.features(1, 0)[0], 0.6, 1e-15);  // (3, 4) clipped to norm 1
  const UserDataset E(X, y, users, 3, 1.0, 1.0);
  EXPECT_DOUBLE_EQ(E.features(1, 2)[0], E.features(1, 0)[0]);  // user 7 padded with its own rows
  EXPECT_THROW(UserDataset(X, y, std::vector<std::int64_t>{1, 2}, 1), InvalidArgument);
  // m is public and required (issue 28): never derived from the private row count.
  EXPECT_THROW(UserDataset(X, y, users, 0), InvalidArgument);
}

TEST(ClippedVectorSum, ReplacingOneVectorMovesTheSumByAtMostItsSensitivity) {
  SeededRng rng(4);
  const std::int64_t d = 5, k = 200;
  const double c = 0.37;
  std::vector<Vector> vs;
  for (int i = 0; i < k; ++i) vs.push_back(random_vector(d, 1, rng));
  ClippedVectorSum a(d, c, k);
  for (const auto& v : vs) a.add(v);
  const double sens = a.sensitivity();
  EXPECT_GT(sens, 2 * c);
  EXPECT_LT(sens, 2 * c * (1 + 1e-6));
  double worst = 0;
  for (int t = 0; t < 200; ++t) {
    ClippedVectorSum b(d, c, k);
    const int r = static_cast<int>(rng.uniform_below(k));
    for (int i = 0; i < k; ++i) b.add(i == r ? Vector(random_vector(d, 100, rng)) : vs[i]);
    worst = std::max(worst, (a.sum() - b.sum()).norm());
  }
  EXPECT_LE(worst, sens);
  EXPECT_GT(worst, c);  // the clip binds: replacements really move the sum
  // The sum is the sum of the clipped vectors up to the grid.
  Vector direct = Vector::Zero(d);
  for (const auto& v : vs) direct += v * std::min(1.0, c / v.norm());
  EXPECT_LT((a.sum() - direct).norm(), k * c * 1e-8);
  // Order does not matter: integer sums are exact.
  ClippedVectorSum rev(d, c, k);
  for (int i = k - 1; i >= 0; --i) rev.add(vs[i]);
  EXPECT_EQ(rev.sum(), a.sum());
}

TEST(ProjectedSgd, UsesEveryItemOnceAndAveragesThePointsWhereGradientsWereTaken) {
  RowMatrix X(4, 1);
  X << 1, 1, 1, 1;
  Vector y(4);
  y << 1, 1, 1, 1;
  const UserDataset D(X, y, 2, 1, 10);
  const SquaredLoss loss;
  const Ball dom(Vector::Zero(1), 10);
  GradientCounter c;
  std::vector<std::pair<std::int64_t, std::int64_t>> items = {{0, 0}, {1, 1}, {0, 1}};
  // f = ½(x − 1)², η = 0.5: y0 = 0, y1 = 0.5, y2 = 0.75; average of y0..y2 = 0.41666…
  const Vector out = projected_sgd(D, loss, dom, Vector::Zero(1), 0.5, items, c);
  EXPECT_EQ(c.evaluations, 3);
  EXPECT_NEAR(out[0], 1.25 / 3, 1e-15);
}
