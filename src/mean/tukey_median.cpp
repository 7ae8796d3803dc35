// The private Tukey median, d = 1 and the d = 2 grid (mean/tukey_median.hpp; docs/proofs/mean.md
// §9).
#include "dpstats/mean/tukey_median.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {
namespace {

constexpr int kSubSteps = 1 << 10;  // lattice steps per grid step

// Angular order of nonzero integer vectors: the half [0, π) first, then by the exact cross product.
bool upper_half(std::int64_t x, std::int64_t y) { return y > 0 || (y == 0 && x > 0); }
bool angle_less(const std::array<std::int64_t, 2>& a, const std::array<std::int64_t, 2>& b) {
  const bool ha = upper_half(a[0], a[1]), hb = upper_half(b[0], b[1]);
  if (ha != hb) return ha;
  return a[0] * b[1] - a[1] * b[0] > 0;
}

std::int64_t depth_1d(const std::vector<std::int64_t>& Q, std::int64_t p) {
  std::int64_t le = 0, ge = 0;
  for (const std::int64_t q : Q) le += q <= p, ge += q >= p;
  return std::min(le, ge);
}

// d = 2: depth = (#rows at p) + n' − (the most nonzero q_i = x_i − p in an open half-plane through
// p). The best open half-plane can be taken as the angles [θ_i, θ_i + π) of some q_i.
std::int64_t depth_2d(const std::vector<std::int64_t>& Q, const std::int64_t* p) {
  std::vector<std::array<std::int64_t, 2>> v;
  v.reserve(Q.size() / 2);
  std::int64_t at_p = 0;
  for (std::size_t i = 0; i + 1 < Q.size(); i += 2) {
    const std::int64_t x = Q[i] - p[0], y = Q[i + 1] - p[1];
    if (x == 0 && y == 0) ++at_p;
    else v.push_back({x, y});
  }
  const auto m = static_cast<std::int64_t>(v.size());
  if (m == 0) return at_p;
  std::sort(v.begin(), v.end(), angle_less);
  // In [θ_i, θ_i + π): same direction as v_i, or strictly counter-clockwise within π.
  auto within = [&](const std::array<std::int64_t, 2>& a, const std::array<std::int64_t, 2>& b) {
    const std::int64_t cross = a[0] * b[1] - a[1] * b[0];
    return cross > 0 || (cross == 0 && a[0] * b[0] + a[1] * b[1] > 0);
  };
  std::int64_t best = 0, j = 0;  // j: points counted from i on, in the doubled circle
  for (std::int64_t i = 0; i < m; ++i) {
    if (j < i + 1) j = i + 1;
    while (j < i + m && within(v[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(j % m)])) ++j;
    best = std::max(best, j - i);
  }
  return at_p + m - best;
}

struct Box {
  std::vector<double> lo, hi;
};

Box box_of(const std::vector<double>& b, Eigen::Index d) {
  require(b.size() == 2 || b.size() == static_cast<std::size_t>(2 * d),
          "bounds must hold one (lo, hi) pair for every column or one pair per column (d = {}), "
          "got {} numbers", d, b.size());
  Box box;
  for (Eigen::Index j = 0; j < d; ++j) {
    const std::size_t k = b.size() == 2 ? 0 : static_cast<std::size_t>(2 * j);
    check_finite(b[k], "bounds (lo)");
    check_finite(b[k + 1], "bounds (hi)");
    require(b[k] < b[k + 1], "bounds must satisfy lower < upper, got lower = {}, upper = {}", b[k],
            b[k + 1]);
    box.lo.push_back(b[k]);
    box.hi.push_back(b[k + 1]);
  }
  return box;
}

// Row coordinate → lattice integer in [0, (G − 1)·kSubSteps] (clamped: a function of the row).
std::int64_t lattice(double x, double lo, double hi, std::int64_t top) {
  const double u = std::clamp((x - lo) / (hi - lo), 0.0, 1.0) * static_cast<double>(top);
  return static_cast<std::int64_t>(std::nearbyint(u));
}

}  // namespace

std::int64_t tukey_depth_count(const std::vector<std::int64_t>& Q, int d, const std::int64_t* p) {
  require(d == 1 || d == 2, "tukey depth: d must be 1 or 2, got {}", d);
  return d == 1 ? depth_1d(Q, p[0]) : depth_2d(Q, p);
}

Release<Vector> tukey_median(const ConstMatrixRef& X, const TukeyMedianOptions& o, Rng& rng,
                             Budget* budget) {
  PrivacyTarget pure = o.privacy;
  pure.delta = 0;
  validate(pure);
  validate(o.run);
  check_data(X);
  const Eigen::Index n = X.rows(), d = X.cols();
  require(d == 1 || d == 2,
          "the private Tukey median runs for d = 1 or 2 (exact depth; the grid has G^d points), "
          "got d = {}", d);
  require(n >= 1, "the private Tukey median needs n >= 1 rows");
  require(!o.bounds.empty(), "the private Tukey median needs bounds (the public candidate box)");
  const Box box = box_of(o.bounds, d);
  const int G = o.grid > 0 ? o.grid : (d == 1 ? 4097 : 129);
  require(G >= 2 && std::pow(static_cast<double>(G), static_cast<double>(d)) <= 1048576.0,
          "grid must be >= 2 with grid^d <= 2^20 candidates, got grid = {} at d = {}", G, d);
  // Plan and charge: one exponential mechanism, quality = depth count, sensitivity 1, pure ε.
  ExponentialMechanismOptions em;
  em.epsilon = pure.epsilon;
  em.sensitivity = 1;
  ReleaseBudget account(pure.loss(), Accountant::basic, budget);
  account.charge(exponential_mechanism_entry(
      em, fmt::format("Tukey median over a grid of {}^{} candidates", G, d)));
  const std::int64_t top = static_cast<std::int64_t>(G - 1) * kSubSteps;
  std::vector<std::int64_t> Q(static_cast<std::size_t>(n * d));
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j)
      Q[static_cast<std::size_t>(i * d + j)] = lattice(X(i, j), box.lo[j], box.hi[j], top);
  const auto cands = static_cast<std::int64_t>(std::llround(std::pow(G, static_cast<double>(d))));
  std::vector<double> quality(static_cast<std::size_t>(cands));
  std::int64_t p[2] = {0, 0};
  for (std::int64_t c = 0; c < cands; ++c) {
    p[0] = (c % G) * kSubSteps;
    p[1] = (c / G) * kSubSteps;
    quality[static_cast<std::size_t>(c)] = static_cast<double>(tukey_depth_count(Q, static_cast<int>(d), p));
  }
  const std::size_t pick = o.run.noise == NoiseMode::secure ? permute_and_flip(quality, em, rng)
                                                            : gumbel_max(quality, em, rng);
  Vector est(d);
  const std::int64_t idx[2] = {static_cast<std::int64_t>(pick) % G, static_cast<std::int64_t>(pick) / G};
  for (Eigen::Index j = 0; j < d; ++j)
    est[j] = box.lo[j] + (box.hi[j] - box.lo[j]) * static_cast<double>(idx[j]) / (G - 1);
  SealFacts facts(true);  // docs/proofs/mean.md
  facts.noise = o.run.noise;
  nlohmann::json diag = {{"grid", G}, {"candidates", cands}};
  return seal(std::move(est), account, facts, rng, std::move(diag));
}

}  // namespace dpstats
