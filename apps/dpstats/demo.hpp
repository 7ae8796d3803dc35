// Pieces shared by the two halves of `dpstats demo` (cmd_demo.cpp, demo_papers.cpp).
#pragma once
#include <string>

#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats::cli {

// "(eps=1, delta=1e-06)-DP, certified" and the like.
std::string privacy_text(const PrivacyGuarantee& p);

// Sections 5 onwards: the geometric median, continual moments, optimisation.
void demo_papers(Rng& rng);

}  // namespace dpstats::cli
