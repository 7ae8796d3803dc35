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

#include "moments_tables.hpp"

using namespace dpstats;
using namespace dpstats::moments;

namespace {

std::pair<RowMatrix, Vector> table(const std::string& kind, std::uint64_t seed, Eigen::Index n) {
  return dpstats::testing::realistic_moments_table(kind, seed, n);
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
