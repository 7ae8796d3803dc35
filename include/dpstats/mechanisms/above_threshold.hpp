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

  // The next query with its noise drawn before its value is known, for a caller that can settle
  // the comparison from bounds on the value without computing it exactly: above(v) is exactly
  // query(v)'s outcome for this noise draw, and is non-decreasing in v. The caller then reports
  // the outcome with record() (true halts, as query does). Same privacy as query: the outcome is
  // the same random variable (above_threshold.cpp).
  class Pending {
   public:
    bool above(double value) const;

   private:
    friend class AboveThreshold;
    double noise_ = 0, granularity_ = 0, threshold_ = 0;
  };
  Pending next_query();
  bool record(const Pending& query, bool above);
  PrivacyLoss loss() const { return PrivacyLoss::pure(epsilon_); }
  LedgerEntry ledger_entry(std::string purpose) const;
  // The ledger_entry of any AboveThreshold built with these parameters (a plan's entry, before
  // the run builds the object, whose threshold noise is drawn at construction).
  static LedgerEntry entry(double sensitivity, double epsilon, bool monotone, std::string purpose);

 private:
  double sensitivity_, epsilon_;
  Rng* rng_;
  LaplaceMechanism threshold_noise_, query_noise_;
  double noisy_threshold_;
  bool halted_ = false;
};

}  // namespace dpstats
