// AboveThreshold / sparse vector (Dwork & Roth Alg. 1; Lyu, Su & Li 2017 Alg. 1): answers a stream
// of sensitivity-Δ queries with "below" until the first noisy answer above the noisy threshold,
// then halts. ε-DP in total: ε/2 on the threshold (Laplace 2Δ/ε), ε/2 on the queries (Laplace
// 4Δ/ε, or 2Δ/ε for monotone queries). Noise is the secure lattice Laplace.
#pragma once
#include <optional>

#include "dpstats/mechanisms/laplace.hpp"

namespace dpstats {

class AboveThreshold {
 public:
  AboveThreshold(double threshold, double sensitivity, double epsilon, Rng& rng,
                 bool monotone = false);
  // True when the noisy query is above the noisy threshold; after the first true the object is
  // spent and further calls throw InvalidArgument.
  bool query(double value);
  bool halted() const { return halted_; }
  PrivacyLoss loss() const { return PrivacyLoss::pure(epsilon_); }
  LedgerEntry ledger_entry(std::string purpose) const;

 private:
  double sensitivity_, epsilon_;
  Rng* rng_;
  LaplaceMechanism threshold_noise_, query_noise_;
  double noisy_threshold_;
  bool halted_ = false;
};

}  // namespace dpstats
