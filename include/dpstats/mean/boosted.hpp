// Boosting a private mean's success probability (PRIME §3 and Remark 1; docs/proofs/mean.md
// "Boosting"): split the rows uniformly at random into m disjoint parts, run the base estimator
// on each part at the full (ε, δ), and release the part estimate j* whose ball holding a strict
// majority of the part estimates is the smallest (the "median of means" selection of Remark 1).
//
// Privacy: the split is data-independent and each row enters one part, so the m releases are
// (ε, δ)-DP together by parallel composition; the selection is post-processing. Charged as one
// entry of the target's (ε, δ).
// Utility: if each part's estimate is within r of μ with probability >= p > 1/2, independently
// across parts (disjoint i.i.d. parts, independent noise), the release is within 3r of μ except
// with probability P(Bin(m, p) <= (m − 1)/2) (proofs). m is the smallest odd number with that
// probability <= ζ.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

inline constexpr double kBoostPartSuccess = 0.75;  // the constant success probability assumed

// P(Bin(m, p) <= (m − 1)/2): the probability that no strict majority of m parts succeeds.
double boost_failure_bound(int m, double part_success);

// The smallest odd m <= 999 with boost_failure_bound(m, p) <= zeta; InvalidArgument for ζ outside
// (0, 1) or p outside (1/2, 1).
int boost_parts(double zeta, double part_success = kBoostPartSuccess);

// The selection (post-processing): for each present estimate j, r_j = the distance from μ_j to
// its (⌊m/2⌋ + 1)-th nearest estimate (itself included, absent ones excluded); returns the j with
// the least r_j (ties: the lowest j), or nullopt when fewer than ⌊m/2⌋ + 1 estimates are present.
std::optional<std::size_t> boost_select(const std::vector<std::optional<Vector>>& estimates,
                                        double* radius = nullptr);

// One part's release: the base estimator run on `part` at the target, charged on `part_budget` (a
// Budget of the target: a part whose plan exceeds it is refused before it draws).
using BoostPartRunner =
    std::function<Release<Vector>(const ConstMatrixRef& part, Rng& rng, Budget* part_budget)>;

// What every rank checks before boosting splits the rows (comm/fingerprint.hpp): the base, the
// part count and the target; each part's base run then checks its own options.
struct BoostingFacts {
  std::string_view base_method;
  int parts = 1;
  PrivacyTarget target;
  NoiseMode noise = NoiseMode::secure;
};

template <class V>
void visit_fields(const BoostingFacts& o, V& v) {
  v("base_method", o.base_method);
  v("parts", o.parts);
  v("epsilon", o.target.epsilon);
  v("delta", o.target.delta);
  v("noise", o.noise);
}

// Runs `run_part` on `parts` disjoint random parts of X (each at least 2 rows) and releases the
// selected estimate, charged as one (ε, δ) parallel composite on `caller` (when given) before any
// part runs; the parts' own ledgers are its blocks (privacy/composite.hpp). Abstains when no
// strict majority of the parts returned an estimate. certified iff every part is.
// comm (not null, several ranks): X is this rank's rows; rank 0 draws the partition of the global
// rows, and run_part gets this rank's rows of each part (it must run the base over the same
// ranks); a part holds its rows in global row order, in one process too.
Release<Vector> boosted_release(const ConstMatrixRef& X, const PrivacyTarget& target, int parts,
                                const std::string& base_method, const BoostPartRunner& run_part,
                                NoiseMode noise, Rng& rng, Budget* caller = nullptr,
                                Communicator* comm = nullptr);

}  // namespace dpstats
