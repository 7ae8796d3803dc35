// PRIME's building blocks (docs/proofs/mean.md §2, §3): MMW weights, value-based top-k, the filter
// step and its replay, DPthreshold's rule, the non-private filter, and a χ² quantile.
#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "dpstats/error.hpp"
#include "dpstats/mean/prime.hpp"
#include "prime_kernels.hpp"

namespace dpstats {

void mmw_weights(const Matrix& A, double eta, Matrix& Q, Vector& w) {
  require(A.rows() == A.cols() && A.rows() > 0, "mmw_weights: A must be square and non-empty");
  check_finite(eta, "eta");
  require(eta >= 0, fmt::format("eta must be >= 0, got {}", eta));
  Eigen::SelfAdjointEigenSolver<Matrix> es(A);
  require(es.info() == Eigen::Success, "mmw_weights: eigendecomposition failed");
  Q = es.eigenvectors();
  const Vector& a = es.eigenvalues();
  const double amax = a.maxCoeff();
  // Softmax with the max shift: never overflows; exp(−∞·0) cannot occur since eta >= 0.
  w = ((a.array() - amax) * eta).exp();
  w /= w.sum();
}

Matrix mmw_weights(const Matrix& A, double eta) {
  Matrix Q;
  Vector w;
  mmw_weights(A, eta, Q, w);
  return Q * w.asDiagonal() * Q.transpose();
}

namespace {

// Value-based order: larger score first, then the lexicographically larger row, then the
// smaller index (only identical rows reach it).
// One cell of a matrix, or of the filter's processed rows (recomputed).
double cell(const ConstMatrixRef& X, Eigen::Index i, Eigen::Index j) { return X(i, j); }
double cell(const mean_detail::ClippedRows& Z, Eigen::Index i, Eigen::Index j) {
  return Z.at(i, j);
}

template <class Rows>
struct RankBefore {
  std::span<const double> score;  // indexed like S (position p)
  const Rows* X;
  std::span<const std::uint32_t> S;
  bool operator()(std::uint32_t p, std::uint32_t q) const {
    if (score[p] != score[q]) return score[p] > score[q];
    for (Eigen::Index j = 0; j < X->cols(); ++j) {
      const double a = cell(*X, S[p], j), b = cell(*X, S[q], j);
      if (a != b) return a > b;
    }
    return S[p] < S[q];
  }
};

template <class Rows>
std::vector<std::uint32_t> top_k_positions(std::span<const double> score, const Rows& X,
                                           std::span<const std::uint32_t> S, std::int64_t k) {
  const auto m = static_cast<std::int64_t>(S.size());
  k = std::clamp<std::int64_t>(k, 0, m);
  std::vector<std::uint32_t> pos(static_cast<std::size_t>(m));
  std::iota(pos.begin(), pos.end(), 0u);
  const RankBefore<Rows> before{score, &X, S};
  if (k < m) std::nth_element(pos.begin(), pos.begin() + k, pos.end(), before);
  pos.resize(static_cast<std::size_t>(k));
  std::sort(pos.begin(), pos.end(), before);
  return pos;
}

}  // namespace

std::vector<std::uint32_t> top_k_tiebreak(std::span<const float> score, const ConstMatrixRef& X,
                                          std::span<const std::uint32_t> S, std::int64_t k) {
  require(score.size() == S.size(), "top_k_tiebreak: one score per index of S");
  std::vector<double> s(score.begin(), score.end());
  std::vector<std::uint32_t> out;
  for (auto p : top_k_positions(s, X, S, k)) out.push_back(S[p]);
  return out;
}

namespace {

template <class Rows>
std::vector<char> drops(std::span<const double> tau, double cut, const Rows& X,
                        std::span<const std::uint32_t> S, std::int64_t k) {
  std::int64_t above = 0;
  for (double t : tau) above += t >= cut;
  std::vector<char> drop(S.size(), 0);
  if (above <= k) {
    for (std::size_t p = 0; p < S.size(); ++p) drop[p] = tau[p] >= cut;
  } else {
    for (auto p : top_k_positions(tau, X, S, k)) drop[p] = 1;  // all of them are >= cut
  }
  return drop;
}

}  // namespace

std::vector<char> mean_detail::filter_drops(std::span<const double> tau, double cut,
                                             const ConstMatrixRef& X,
                                             std::span<const std::uint32_t> S, std::int64_t k) {
  return drops(tau, cut, X, S, k);
}

std::vector<char> mean_detail::filter_drops(std::span<const double> tau, double cut,
                                             const ClippedRows& Z,
                                             std::span<const std::uint32_t> S, std::int64_t k) {
  return drops(tau, cut, Z, S, k);
}

namespace {

std::vector<std::uint32_t> filter_with_scores(std::span<const double> tau, double cut,
                                              const ConstMatrixRef& X,
                                              std::span<const std::uint32_t> S, std::int64_t k) {
  const auto drop = mean_detail::filter_drops(tau, cut, X, S, k);
  std::vector<std::uint32_t> kept;
  kept.reserve(S.size());
  for (std::size_t p = 0; p < S.size(); ++p)
    if (!drop[p]) kept.push_back(S[p]);
  return kept;
}

// P = Q diag(√w) stored row-major, so that τ = ‖Pᵀ(x − μ)‖² = (x − μ)ᵀ U (x − μ).
std::vector<double> score_factor(const Matrix& U) {
  Matrix Q;
  Vector w;
  Eigen::SelfAdjointEigenSolver<Matrix> es(U);
  Q = es.eigenvectors();
  w = es.eigenvalues().cwiseMax(0.0);
  const auto d = U.rows();
  std::vector<double> P(static_cast<std::size_t>(d * d));
  for (Eigen::Index k = 0; k < d; ++k)
    for (Eigen::Index j = 0; j < d; ++j) P[k * d + j] = Q(k, j) * std::sqrt(w[j]);
  return P;
}

}  // namespace

std::vector<std::uint32_t> filter_step(const FilterRound& p, const ConstMatrixRef& X,
                                       std::span<const std::uint32_t> S) {
  const auto P = p.factor.empty() ? score_factor(p.U) : p.factor;
  std::vector<double> tau(S.size());
  mean_detail::scores(X, S, P.data(), p.centre.data(), tau.data(), 1);
  return filter_with_scores(tau, p.rho * p.Z, X, S, p.k);
}

std::vector<std::uint32_t> replay_filter(std::span<const FilterRound> rounds,
                                         const ConstMatrixRef& X) {
  std::vector<std::uint32_t> S(static_cast<std::size_t>(X.rows()));
  std::iota(S.begin(), S.end(), 0u);
  for (const auto& r : rounds) S = filter_step(r, X, S);
  return S;
}

int dp_threshold_bin(double tau, int L) {
  if (!(tau >= 0.25)) return 0;
  int e = 0;
  std::frexp(tau, &e);  // tau = f 2^e, f in [0.5, 1): tau in [2^{e-1}, 2^e)
  return std::min(L, e + 2);  // [2^{j-3}, 2^{j-2}) with j - 2 = e
}

double dp_threshold_rule(std::span<const double> h, double psi_tilde) {
  const int L = static_cast<int>(h.size());
  auto edge = [](int j) { return std::ldexp(1.0, j - 3); };
  for (int l = L; l >= 1; --l) {
    double lhs = 0;
    for (int j = l; j <= L; ++j) lhs += (edge(j) - edge(l)) * h[static_cast<std::size_t>(j - 1)];
    if (lhs >= 0.31 * psi_tilde) return edge(l);
  }
  return edge(1);
}

// ---- non-private filter (docs/proofs/mean.md, Alg 4) ----
Vector robust_filter_nonprivate(const ConstMatrixRef& X, double alpha, double C, Rng& rng,
                                int max_rounds) {
  check_data(X);
  require(alpha > 0 && alpha < 0.5, fmt::format("alpha must be in (0, 0.5), got {}", alpha));
  const auto n = X.rows();
  const auto d = X.cols();
  if (max_rounds <= 0) max_rounds = static_cast<int>(4 * d + 20);
  const auto k = static_cast<std::int64_t>(std::ceil(2 * alpha * static_cast<double>(n)));
  std::vector<std::uint32_t> S(static_cast<std::size_t>(n));
  std::iota(S.begin(), S.end(), 0u);
  Vector mu = X.colwise().mean().transpose();
  for (int t = 0; t < max_rounds; ++t) {
    const auto m = static_cast<Eigen::Index>(S.size());
    RowMatrix Y(m, d);
    for (Eigen::Index r = 0; r < m; ++r) Y.row(r) = X.row(S[static_cast<std::size_t>(r)]);
    mu = Y.colwise().mean().transpose();
    Y.rowwise() -= mu.transpose();
    // D14: normalised by |S|.
    Matrix Cov = (Y.transpose() * Y) / static_cast<double>(m);
    Eigen::SelfAdjointEigenSolver<Matrix> es(Cov);
    const Vector ev = es.eigenvalues();
    const double norm = std::max(std::abs(ev[0] - 1), std::abs(ev[d - 1] - 1));
    if (norm < C * alpha * std::log(1 / alpha)) break;
    const Vector v = es.eigenvectors().col(d - 1);
    std::vector<double> tau(static_cast<std::size_t>(m));
    double tmax = 0;
    for (Eigen::Index r = 0; r < m; ++r) {
      const double p = Y.row(r).dot(v);
      tau[static_cast<std::size_t>(r)] = p * p;
      tmax = std::max(tmax, p * p);
    }
    const double Z = rng.uniform01();
    auto next = filter_with_scores(tau, Z * tmax, X, S, k);
    if (next.size() == S.size()) continue;
    if (static_cast<Eigen::Index>(next.size()) < n / 2) break;  // keep at least half the rows
    S = std::move(next);
  }
  return mu;
}

// ---- χ² quantile ----
namespace {

// Regularised upper incomplete gamma Q(a, x) (series for x < a + 1, Lentz continued fraction
// otherwise; Numerical Recipes §6.2), in log space for the tiny tails used here.
double log_gamma_q(double a, double x) {
  if (x <= 0) return 0;
  const double lg = std::lgamma(a);
  if (x < a + 1) {
    double sum = 1 / a, term = sum, ap = a;
    for (int i = 0; i < 10000; ++i) {
      ap += 1;
      term *= x / ap;
      sum += term;
      if (std::abs(term) < std::abs(sum) * 1e-16) break;
    }
    const double P = std::exp(std::log(sum) - x + a * std::log(x) - lg);
    return std::log1p(-std::min(P, 1.0));
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, dd = 1 / b, h = dd;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    dd = an * dd + b;
    if (std::abs(dd) < tiny) dd = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    dd = 1 / dd;
    const double del = dd * c;
    h *= del;
    if (std::abs(del - 1) < 1e-16) break;
  }
  return std::log(h) - x + a * std::log(x) - lg;
}

}  // namespace

double chi_square_upper_quantile(double d, double p) {
  require(d > 0, "chi_square_upper_quantile: d must be > 0");
  require(p > 0 && p < 1, "chi_square_upper_quantile: p must be in (0, 1)");
  const double target = std::log(p);
  double lo = 0, hi = d + 10 * std::sqrt(d) + 20 * (1 - target);
  while (log_gamma_q(d / 2, hi / 2) > target) hi *= 2;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (log_gamma_q(d / 2, mid / 2) > target ? lo : hi) = mid;
  }
  return hi;
}

Matrix symmetric_noise_release(const Matrix& M, const GaussianMechanism& g, bool goe, Rng& rng,
                               bool noiseless) {
  const auto d = M.rows();
  require(M.cols() == d, "symmetric_noise_release: M must be square");
  require(g.dimension() == static_cast<std::size_t>(d * (d + 1) / 2),
          fmt::format("symmetric_noise_release: mechanism dimension {} != d(d+1)/2 = {}",
                      g.dimension(), d * (d + 1) / 2));
  const double w = goe ? std::sqrt(2.0) : 1.0;
  Vector packed(d * (d + 1) / 2);
  Eigen::Index c = 0;
  for (Eigen::Index a = 0; a < d; ++a)
    for (Eigen::Index b = a; b < d; ++b) packed[c++] = (a == b ? 1 : w) * M(a, b);
  const Vector noisy = noiseless ? packed : g.apply(packed, rng);
  Matrix out(d, d);
  c = 0;
  for (Eigen::Index a = 0; a < d; ++a)
    for (Eigen::Index b = a; b < d; ++b) {
      const double v = noisy[c++] / (a == b ? 1 : w);
      out(a, b) = v;
      out(b, a) = v;
    }
  return out;
}

}  // namespace dpstats
