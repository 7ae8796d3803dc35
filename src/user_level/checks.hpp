// Internal: the problem checks shared by Alg 1 (alg1.cpp) and Alg 2/3 (accelerated.cpp).
#pragma once
#include <fmt/format.h>

#include <cstdint>

#include "dpstats/error.hpp"
#include "dpstats/user_level/user_level.hpp"

namespace dpstats::optimize {

// n >= 2 users, m >= 1 items each, a valid (ε, δ > 0) and positive problem constants.
inline void check_problem(std::int64_t n, std::int64_t m, double epsilon, double delta,
                          const ProblemConstants& k, const char* algorithm) {
  require(n >= 2, fmt::format("{} needs n >= 2 users", algorithm));
  require(m >= 1, "items per user m must be >= 1");
  check_epsilon(epsilon);
  check_delta_positive(delta);
  check_positive(k.L, "L");
  check_positive(k.R, "R");
  require(k.d >= 1, "d must be >= 1");
}

}  // namespace dpstats::optimize
