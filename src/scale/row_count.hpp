// The rows an estimate's rank checks are made against (docs/proofs/scale.md §6): n itself under
// replace-one (public), or under add/remove -- where n is private -- the lower confidence bound of
// a Laplace count of the rows that the estimate charges as part of its plan (1/8 of its share;
// the selections share the rest). Internal to src/scale.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/release.hpp"
#include "dpstats/scale/share.hpp"

namespace dpstats::scale_detail {

inline bool counts_rows(Neighbouring nb) { return nb == Neighbouring::add_remove; }

// What the selections of an estimate share: all of it, or 7/8 of it under add/remove.
inline PrivacyLoss selection_share(const PrivacyLoss& share, Neighbouring nb) {
  if (!counts_rows(nb)) return share;
  const double f = 7.0 / 8 * (1 - 0x1p-45);
  return share.kind == LossKind::pure ? PrivacyLoss::pure(share.epsilon * f)
                                      : PrivacyLoss::zcdp(share.rho * f);
}

// The count's mechanism: Laplace, sensitivity 1, at 1/8 of the share.
inline LaplaceMechanism row_count_mechanism(const PrivacyLoss& share) {
  return LaplaceMechanism(1.0, units_epsilon(share, 1, 8));
}

inline LedgerEntry row_count_entry(const PrivacyLoss& share, const std::string& estimate) {
  return row_count_mechanism(share).ledger_entry(
      fmt::format("{}: count of the rows (n is private under add/remove)", estimate));
}

// How far below the count its lower confidence bound lies: b ln(1/beta) under add/remove, 0 under
// replace-one (a dry run adds it to the rows an estimate needs, dry_run.hpp).
inline double count_margin(const PrivacyLoss& share, Neighbouring nb, double beta) {
  return counts_rows(nb) ? row_count_mechanism(share).noise_scale() * std::log(1 / beta) : 0.0;
}

// n, or under add/remove floor(n~ - b ln(1/beta)) (at least 1) for the count n~ drawn on rank 0:
// below n with probability >= 1 - beta (the Laplace tail P(n~ - n >= b x) <= e^-x).
inline double rows_for_checks(std::int64_t n, const PrivacyLoss& share, Neighbouring nb,
                              double beta, Communicator& comm, Rng& rng) {
  if (!counts_rows(nb)) return static_cast<double>(n);
  const LaplaceMechanism count = row_count_mechanism(share);
  const double noisy = on_root(comm, [&] { return count.apply(static_cast<double>(n), rng); });
  return std::max(1.0, std::floor(noisy - count_margin(share, nb, beta)));
}

// The rows a plan judges its rank errors against before anything is drawn: n under replace-one;
// under add/remove, n being a caller's declared (or lower-bound) row count, the count's lower
// confidence bound with its noise at 0 (floor(n - b ln(1/beta)), at least 1).
inline double rows_for_plan(double n, const PrivacyLoss& share, Neighbouring nb, double beta) {
  if (!counts_rows(nb)) return n;
  const double b = row_count_mechanism(share).noise_scale();
  return std::max(1.0, std::floor(n - b * std::log(1 / beta)));
}

}  // namespace dpstats::scale_detail
