// PRIME's plan (internal to src/mean, not installed): every mechanism and its public noise scale,
// fixed from (n, d, options) before any data are read (prime_plan.cpp), and the run that spends it
// (prime_run.cpp). prime.cpp composes them into the releases.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

#include "dpstats/mean/prime.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "robust_mean_core.hpp"

namespace dpstats::mean_detail {

// ---------------------------------------------------------------------------------------------
// The plan: every mechanism and its public noise scale, fixed from (n, d, options) before any
// data are read. The whole plan is charged to the budget up front (the planned maximum).
// Everything is in scale units (mean/units.hpp).
// ---------------------------------------------------------------------------------------------
struct Plan : ClipPlan {
  Profile profile = Profile::practical;
  bool ht = false;         // PRIME-ht (Alg 3/16/17)
  std::int64_t n = 0, d = 0;
  int T1 = 0, T2 = 0;
  std::int64_t k = 0;      // top-k size
  double kappa = 0;        // shrink-mean floor
  // range step (ClipPlan): practical ball radius r, paper box half-side B/2 or ht ball √d·B/2
  double e_med = 0;        // public bound on the median's error (scale units)
  double box_side = 0;     // paper: B
  int L = 0;               // DPthreshold bins
  double stop_threshold = 0;
  // mechanisms (scale units)
  Mech lambda_outer, lambda_inner, count_outer, count_inner, sigma, psi, psi_tilde, centre, hist,
      final_mean, count_psi;
  ExponentialMechanismOptions med;          // practical: the coordinate medians
  std::vector<LedgerEntry> filter_entries;  // charged after the range entries
  double eps1 = 0, eps2 = 0, delta1 = 0, delta2 = 0;  // paper budgets (golden values)
  double rho_filter = 0;
  AuxPlan aux;             // private units or the clipped-row count

  // Everything the release charges, in order: auxiliary step, range, medians, filter.
  Ledger ledger() const {
    return front_ledger(*this, profile == Profile::practical, filter_entries);
  }
};

// Every option, from public values only (the data's shape included), before anything is read.
void validate(const PrimeOptions& o, std::int64_t n, std::int64_t d);

// Every public value the plan reads (the scale's values do not enter it, only whether one is
// supplied).
Plan make_plan(std::int64_t n, std::int64_t d, const PrimeOptions& o);

// The verdict on PRIME's units at a share (public values only), for resolve_share.
inline auto units_verdict(std::int64_t n, std::int64_t d) {
  return [n, d](const PrimeOptions& at) {
    return robust_units_plan(n, d, at, at.profile == Profile::practical);
  };
}

nlohmann::json plan_diagnostics(const Plan& p, const PrimeFeasibility& feas);

// The filter and the final mean on the charged account, from the front end onwards.
Release<Vector> filter_and_seal(const ConstMatrixRef& X, const PrimeOptions& o, const Plan& p,
                                const FrontResult& fr, ReleaseBudget& account, SealFacts facts,
                                nlohmann::json& diag, Rng& rng, PrimeTrace* trace,
                                Communicator& comm, bool off);

}  // namespace dpstats::mean_detail
