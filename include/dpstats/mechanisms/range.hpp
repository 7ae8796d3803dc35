// q_range: private coarse range of sub-Gaussian data (card prime-robust-private-mean.md §2.2,
// Alg 5, from Karwa-Vadhan / [58]). For each coordinate, a stability histogram over bins of width
// 2σ picks the most populated bin; its centre is x̄_j (the card's correction D13). The per-coordinate
// budget comes from composition over d coordinates with the best valid rule (pitfall 4.3; the
// paper profile uses Lemma G.13 with the 0.9 cap). Returns the centre and the public box side
// B = 8σ sqrt(ln(d n / ζ)), or abstains when every bin of some coordinate was suppressed.
#pragma once
#include <Eigen/Core>
#include <optional>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

struct RangeOptions {
  double epsilon = 1;
  double delta = 1e-6;
  double sigma = 1;    // known scale of the data
  double zeta = 0.1;   // failure probability of the range step
  bool paper_cap = false;  // Lemma G.13 with min(ε, 0.9) (paper profile) instead of the best rule
};

struct RangeResult {
  Eigen::VectorXd centre;  // x̄
  double side = 0;         // B: the box is x̄ + [-B/2, B/2]^d
  LedgerEntry entry;       // one folded entry for the d histograms
};

// std::nullopt when the range step abstains (every bin of some coordinate suppressed). Either
// outcome is private.
std::optional<RangeResult> q_range(const ConstMatrixRef& X, const RangeOptions& o, Rng& rng);

}  // namespace dpstats
