// docs/results/real-data.md, "Continual moments", third round: the realistic tables at n = 12 000
// (long enough at epsilon = 1 for the batch path's private centre and for the live stream's
// adaptive clip), batch default (centred) and live stream without a clip. Slow (~20 s): it prints
// the rows of the results page and checks each release lands within its stated error.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <string>

#include "dpstats/moments/estimator.hpp"
#include "guarantee.hpp"

using namespace dpstats;
using namespace dpstats::moments;

namespace {

// As tests/unit/test_moments_scale.cpp's realistic(): salary (5% rows at (999, 9.9e6)) or flights
// (heavy right tail), n rows; returns the table and the clean rows' mean.
std::pair<RowMatrix, Vector> table(const std::string& kind, std::uint64_t seed, Eigen::Index n) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> z;
  std::uniform_real_distribution<double> u(0, 1);
  std::exponential_distribution<double> ex(1.0 / 60);
  RowMatrix X(n, 2);
  Vector sum = Vector::Zero(2);
  double clean = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (kind == "salary") {
      X.row(i) << 40 + 12 * z(g), 5e4 * std::exp(0.5 * z(g));
      if (i % 20 == 19) {
        X.row(i) << 999, 9.9e6;
        continue;
      }
    } else {
      X.row(i) << 200 + 2300 * u(g), u(g) < 0.85 ? 5 + 10 * z(g) : 5 + ex(g);
    }
    sum += X.row(i).transpose();
    clean += 1;
  }
  return {X, sum / clean};
}

}  // namespace

TEST(MomentsRealData, CentredBatchAndLiveStreamAtTwelveThousandRows) {
  const Eigen::Index n = 12000;
  for (const std::string kind : {"salary", "flights"})
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const auto [X, truth] = table(kind, seed, n);
      MomentsConfig c = make_config(n, 2, "jme", "average", "sqrt", false);
      c.privacy = {.epsilon = 1, .delta = 1e-6};
      SeededRng rng(seed);
      const auto r = estimate_moments(X, c, rng);  // the batch default
      dpstats::testing::expect_guarantee_from_ledger(r);
      ASSERT_EQ(r.status, Status::ok);
      EXPECT_TRUE(r.diagnostics.contains("centre"));
      const Vector est = r.estimate.first.row(n - 1).transpose();
      const double sd = r.diagnostics.at("first_noise_std_final").get<double>();
      const double clip = r.diagnostics.at("clip").get<double>();
      std::cout << kind << " seed " << seed << " batch (centred): truth " << truth.transpose()
                << " est " << est.transpose() << " clip " << clip << " std " << sd << "\n";
      const double corrupt = kind == "salary" ? 0.05 : 0.0;
      for (int j = 0; j < 2; ++j)
        EXPECT_LE(std::abs(est[j] - truth[j]),
                  4 * sd + corrupt * (clip + std::abs(truth[j] - r.diagnostics["centre"][j].get<double>())));
      // The live stream, no clip: the held first block and the adaptive clip.
      MomentsConfig live = c;
      SeededRng lr(seed);
      MomentEstimator e(live, lr);
      Vector row;
      for (Eigen::Index t = 0; t < n; ++t) {
        row = X.row(t).transpose();
        e.push({row.data(), 2});
      }
      const Vector le = Eigen::Map<const Vector>(e.first().data(), 2);
      const auto d = e.diagnostics();
      const double bound_sd = d.at("first_noise_std_final").get<double>();
      const double max_clip = bound_sd / d.at("first_noise_std_final_per_unit_clip").get<double>();
      std::cout << kind << " seed " << seed << " live (adaptive clip): est " << le.transpose()
                << " final clip " << e.clip() << " std (bound) " << bound_sd << " block "
                << d.at("adaptive_clip").at("block") << "\n";
      for (int j = 0; j < 2; ++j)
        EXPECT_LE(std::abs(le[j] - truth[j]),
                  4 * bound_sd + corrupt * (max_clip + std::abs(truth[j])));
    }
}
