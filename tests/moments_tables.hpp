// The moments tests' realistic tables (issue #15), shared by tests/unit/test_moments_scale.cpp
// and tests/slow/test_moments_real_data.cpp:
//  * salary: age ~ N(40, 12) years, salary ~ lognormal(median 50 000, sigma 0.5) dollars; every
//    20th row (5%) corrupted to (999, 9.9e6);
//  * flights: distance ~ U(200, 2500) miles, delay = N(5, 10) minutes for 85% of the rows,
//    5 + Exp(mean 60) for 15%: a heavy right tail.
// Returns the table and the clean rows' mean (the truth).
#pragma once
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "dpstats/release.hpp"

namespace dpstats::testing {

inline std::pair<RowMatrix, Vector> realistic_moments_table(const std::string& kind,
                                                            std::uint64_t seed, Eigen::Index n) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> z;
  std::uniform_real_distribution<double> u(0, 1);
  std::exponential_distribution<double> ex(1.0 / 60);
  RowMatrix X(n, 2);
  Vector sum = Vector::Zero(2);
  double clean = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (kind == "salary") {
      X.row(i) << 40 + 12 * z(g), 5e4 * std::exp(0.5 * z(g));
      if (i % 20 == 19) {
        X.row(i) << 999, 9.9e6;
        continue;
      }
    } else {
      X.row(i) << 200 + 2300 * u(g), u(g) < 0.85 ? 5 + 10 * z(g) : 5 + ex(g);
    }
    sum += X.row(i).transpose();
    clean += 1;
  }
  return {X, sum / clean};
}

}  // namespace dpstats::testing
