#include "dpstats/median/radius.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/above_threshold.hpp"

namespace dpstats {

namespace {

double squared_distance(const ConstMatrixRef& X, Eigen::Index a, Eigen::Index b) {
  const Eigen::Index d = X.cols();
  const double* x = X.data() + a * d;
  const double* y = X.data() + b * d;
  double s = 0;
  for (Eigen::Index j = 0; j < d; ++j) {
    const double t = x[j] - y[j];
    s += t * t;
  }
  return s;
}

void check_radii(double r_min, double R) {
  check_positive(r_min, "min_radius");
  check_positive(R, "radius");
}

// Grid radius r·2^(t−1) (t is 1-based).
double grid_radius(double r_min, int t) { return std::ldexp(r_min, t - 1); }

LedgerEntry radius_entry(const char* purpose, double sensitivity, double epsilon,
                         PrivacyLoss loss) {
  LedgerEntry e;
  e.mechanism = "above_threshold";
  e.purpose = purpose;
  e.sensitivity = sensitivity;
  e.noise_scale = 4 * sensitivity / epsilon;  // query noise Laplace(4Δ/ε)
  e.loss = loss;
  return e;
}

// Uniform random permutation of {0, …, m−1} (Fisher–Yates on the secure or seeded bits).
std::vector<std::int64_t> random_permutation(std::int64_t m, RandomBits& bits) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(m));
  std::iota(p.begin(), p.end(), 0);
  for (std::int64_t i = m - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

}  // namespace

LedgerEntry fast_radius_ledger(double epsilon, double delta) {
  check_epsilon(epsilon);
  check_delta_positive(delta);
  return radius_entry("fast_radius (KLTY Alg. 2)", kFastRadiusSensitivity, epsilon,
                      PrivacyLoss::approximate(epsilon, delta));
}
LedgerEntry permuted_radius_ledger(double epsilon) {
  check_epsilon(epsilon);
  return radius_entry("fast_radius (permutation design)", kPermutedRadiusSensitivity, epsilon,
                      PrivacyLoss::pure(epsilon));
}
LedgerEntry radius_finder_ledger(double epsilon) {
  check_epsilon(epsilon);
  return radius_entry("radius_finder (HSU24 Alg. 1)", kRadiusFinderSensitivity, epsilon,
                      PrivacyLoss::pure(epsilon));
}

int fast_radius_steps(double r_min, double R) {
  check_radii(r_min, R);
  return static_cast<int>(std::ceil(std::log2(R / r_min)));
}

int fast_radius_partners(int steps, double delta) {
  check_delta_positive(delta);
  require(steps >= 1, "steps must be >= 1");
  return static_cast<int>(std::ceil(3.0 * std::log(4.0 * steps / delta)));
}

RadiusResult fast_radius(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                         double delta, Rng& rng) {
  check_data(X);
  check_epsilon(epsilon);
  check_delta_positive(delta);
  const int T = fast_radius_steps(r_min, R);
  RadiusResult r;
  r.ledger = fast_radius_ledger(epsilon, delta);
  r.grid_size = std::max(T, 0);
  if (T <= 0) {  // nothing to search (docs/proofs/median.md §2)
    r.r_hat = R;
    r.fell_back = true;
    return r;
  }
  const int k = fast_radius_partners(T, delta);
  const Eigen::Index n = X.rows();
  AboveThreshold at(kFastRadiusThreshold * static_cast<double>(n), kFastRadiusSensitivity, epsilon,
                    rng);
  for (int t = 1; t <= T; ++t) {
    const double rt = grid_radius(r_min, t);
    const double rt2 = rt * rt;
    std::int64_t hits = 0;
    {
      RandomBits bits(rng);  // fresh partners S_t^(i) for every (t, i)
      for (Eigen::Index i = 0; i < n; ++i)
        for (int s = 0; s < k; ++s) {
          const auto j = static_cast<Eigen::Index>(bits.uniform_below(static_cast<std::uint64_t>(n)));
          hits += squared_distance(X, i, j) <= rt2;
        }
    }
    r.distance_evaluations += static_cast<std::int64_t>(n) * k;
    if (at.query(static_cast<double>(hits) / k)) {  // q_t = (1/n) Σ_i (n/k)·hits_i
      r.r_hat = rt;
      r.step = t;
      return r;
    }
  }
  r.r_hat = R;
  r.fell_back = true;
  return r;
}

RadiusResult fast_radius_permuted(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                                  Rng& rng, const PermutedRadiusOptions& o) {
  check_data(X);
  check_epsilon(epsilon);
  require(o.permutations >= 1, fmt::format("permutations must be >= 1, got {}", o.permutations));
  require(o.subsample >= 1, fmt::format("subsample must be >= 1, got {}", o.subsample));
  const int T = fast_radius_steps(r_min, R);
  RadiusResult r;
  r.ledger = permuted_radius_ledger(epsilon);
  r.grid_size = std::max(T, 0);
  if (T <= 0) {
    r.r_hat = R;
    r.fell_back = true;
    return r;
  }
  const auto n = static_cast<std::int64_t>(X.rows());
  const std::int64_t m = std::min(n, o.subsample);
  const int k = o.permutations;
  // hits_at[t] = #{pairs with squared distance <= r_t²}: each of the m·k distances is binned
  // once by binary search over the T grid radii, then the bins are accumulated.
  std::vector<double> grid2(static_cast<std::size_t>(T));
  for (int t = 1; t <= T; ++t) grid2[static_cast<std::size_t>(t - 1)] = std::pow(grid_radius(r_min, t), 2);
  std::vector<std::int64_t> bin(static_cast<std::size_t>(T) + 1, 0);
  {
    RandomBits bits(rng);
    // Data-independent subsample: the first m entries of a partial Fisher–Yates shuffle.
    std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    if (m < n)
      for (std::int64_t i = 0; i < m; ++i) {
        const auto j = i + static_cast<std::int64_t>(bits.uniform_below(static_cast<std::uint64_t>(n - i)));
        std::swap(rows[static_cast<std::size_t>(i)], rows[static_cast<std::size_t>(j)]);
      }
    for (int l = 0; l < k; ++l) {
      const auto pi = random_permutation(m, bits);
      for (std::int64_t i = 0; i < m; ++i) {
        const double d2 = squared_distance(X, rows[static_cast<std::size_t>(i)],
                                           rows[static_cast<std::size_t>(pi[static_cast<std::size_t>(i)])]);
        // First grid index t (0-based) with d2 <= r_t²; T when beyond the grid.
        ++bin[static_cast<std::size_t>(std::lower_bound(grid2.begin(), grid2.end(), d2) - grid2.begin())];
      }
    }
  }
  r.distance_evaluations = m * k;
  AboveThreshold at(kFastRadiusThreshold * static_cast<double>(m), kPermutedRadiusSensitivity,
                    epsilon, rng);
  std::int64_t hits = 0;
  for (int t = 1; t <= T; ++t) {
    hits += bin[static_cast<std::size_t>(t - 1)];
    if (at.query(static_cast<double>(hits) / k)) {
      r.r_hat = grid_radius(r_min, t);
      r.step = t;
      return r;
    }
  }
  r.r_hat = R;
  r.fell_back = true;
  return r;
}

RadiusResult radius_finder(const ConstMatrixRef& X, double r_min, double R, double epsilon,
                           double beta, Rng& rng, double gamma) {
  check_data(X);
  check_epsilon(epsilon);
  check_radii(r_min, R);
  require(beta > 0 && beta < 1, fmt::format("beta must be in (0, 1), got {}", beta));
  require(gamma >= 0.5 && gamma <= 1, fmt::format("gamma must be in [0.5, 1], got {}", gamma));
  const auto n = static_cast<std::int64_t>(X.rows());
  const int J = std::max(0, static_cast<int>(std::floor(std::log2(2 * R / r_min))));
  const int T = J + 1;
  RadiusResult r;
  r.grid_size = T;
  r.ledger = radius_finder_ledger(epsilon);
  const auto m = static_cast<std::int64_t>(std::ceil(gamma * static_cast<double>(n) - 1e-9));
  // bins[i*(T+1) + b] = #{l : b is the first grid index with ||x_i − x_l||² <= r_b²} (b = T:
  // beyond the grid; self included at b = 0). Each pair's distance is computed once and binned
  // for both rows: O(n² log T) instead of sorting every row's n distances.
  const auto width = static_cast<std::size_t>(T) + 1;
  std::vector<std::int32_t> bins(static_cast<std::size_t>(n) * width, 0);
  std::vector<double> r2(static_cast<std::size_t>(T));
  for (int j = 0; j < T; ++j) r2[static_cast<std::size_t>(j)] = std::pow(grid_radius(r_min, j + 1), 2);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t* own = bins.data() + static_cast<std::size_t>(i) * width;
    ++own[0];
    for (std::int64_t l = i + 1; l < n; ++l) {
      const double d2 = squared_distance(X, i, l);
      const auto b = static_cast<std::size_t>(std::lower_bound(r2.begin(), r2.end(), d2) - r2.begin());
      ++own[b];
      ++bins[static_cast<std::size_t>(l) * width + b];
    }
  }
  // counts[j*n + i] = #{l : ||x_i − x_l|| <= r_j}: the prefix sums of row i's bins.
  std::vector<std::int32_t> counts(static_cast<std::size_t>(n) * T);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int32_t running = 0;
    for (int j = 0; j < T; ++j) {
      running += bins[static_cast<std::size_t>(i) * width + static_cast<std::size_t>(j)];
      counts[static_cast<std::size_t>(j * n + i)] = running;
    }
  }
  r.distance_evaluations = n * (n - 1) / 2;
  const double theta =
      static_cast<double>(m) + 18.0 / epsilon * std::log(2.0 * T / beta);
  AboveThreshold at(theta, kRadiusFinderSensitivity, epsilon, rng);
  std::vector<std::int32_t> c(static_cast<std::size_t>(n));
  for (int j = 0; j < T; ++j) {
    std::copy_n(counts.begin() + j * n, n, c.begin());
    std::nth_element(c.begin(), c.begin() + (m - 1), c.end(), std::greater<>());
    const double q = static_cast<double>(std::accumulate(c.begin(), c.begin() + m, std::int64_t{0})) /
                     static_cast<double>(m);
    if (at.query(q)) {
      r.r_hat = grid_radius(r_min, j + 1);
      r.step = j + 1;
      return r;
    }
  }
  r.r_hat = grid_radius(r_min, T);  // HSU24: r_J, flagged
  r.fell_back = true;
  return r;
}

}  // namespace dpstats
