// Internals of the moments driver shared by the streaming estimator (estimator.cpp) and the batch
// API (batch.cpp). Not installed; not part of the public API.
#pragma once
#include <cstddef>
#include <span>

#include "dpstats/moments/estimator.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::moments::detail {

// validate: every option; `batch` (estimate_moments) accepts a missing clip.
void validate_config(const MomentsConfig& c, bool batch);
// The release's own account (target and accountant). `pre_rho`: the zCDP spent before the stream,
// counted in the target of a noise-multiplier budget (an epsilon or rho target includes it).
ReleaseBudget release_account(const MomentsConfig& c, const MomentsPlan& p, Budget* caller,
                              double pre_rho);
// ||x||_2 after checking every value is finite (InvalidArgument naming step otherwise).
double row_norm(std::span<const double> x, std::size_t step);

}  // namespace dpstats::moments::detail
