// BLT coefficient streams, the closed-form JME error factor and the fit (blt.hpp).
#include "blt.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>

#include "dpstats/moments/factorization.hpp"

namespace dpstats::moments::detail {
namespace {

using Matrix = Eigen::MatrixXd;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Over j < L, with T_j = P^j X P^jT: G = sum_j T_j, K = sum_j (L - j) T_j, and P^L.
struct PowerSums {
  Matrix G, K, power;
  std::uint64_t L = 0;
};

// The sums over a's range followed by b's (b shifted by a.L steps): every term is positive
// semi-definite, so nothing cancels.
PowerSums then(const PowerSums& a, const PowerSums& b) {
  const Matrix& P = a.power;
  return {a.G + P * b.G * P.transpose(),
          a.K + static_cast<double>(b.L) * a.G + P * b.K * P.transpose(), P * b.power, a.L + b.L};
}

// The sums for L steps by doubling: O(d^3 log L).
PowerSums power_sums(const Matrix& P, const Matrix& X, std::uint64_t L) {
  const auto d = P.rows();
  PowerSums acc{Matrix::Zero(d, d), Matrix::Zero(d, d), Matrix::Identity(d, d), 0};
  PowerSums block{X, X, P, 1};
  while (L != 0) {
    if (L & 1) acc = then(acc, block);
    L >>= 1;
    if (L != 0) block = then(block, block);
  }
  return acc;
}

// ||C||_{1->2}^2 / kappa^2 = 1 + sum_{i,j} omega_i omega_j sum_{k < n-1} (theta_i theta_j)^k.
double norm_sq_closed(const BltParameters& p, std::size_t n) {
  double s = 1;
  const std::size_t m = p.theta.size();
  const auto terms = static_cast<double>(n) - 1;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < m; ++j) {
      const double z = p.theta[i] * p.theta[j];
      const double one_minus = (1 - p.theta[i]) + p.theta[i] * (1 - p.theta[j]);
      s += p.omega[i] * p.omega[j] * -std::expm1(terms * std::log(z)) / one_minus;
    }
  return s;
}

// Nelder-Mead minimisation (standard coefficients), for the small BLT fits.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int max_evals) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> simplex(n + 1, x0);
  std::vector<double> fx(n + 1);
  for (std::size_t i = 0; i < n; ++i) simplex[i + 1][i] += step;
  int evals = 0;
  for (std::size_t i = 0; i <= n; ++i) fx[i] = f(simplex[i]), ++evals;
  std::vector<std::size_t> order(n + 1);
  while (evals < max_evals) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return fx[a] < fx[b]; });
    const std::size_t best = order[0], worst = order[n], second = order[n - 1];
    if (std::abs(fx[worst] - fx[best]) <= 1e-12 * std::abs(fx[best])) break;
    std::vector<double> centre(n, 0.0);
    for (std::size_t i = 0; i <= n; ++i)
      if (i != worst)
        for (std::size_t j = 0; j < n; ++j) centre[j] += simplex[i][j] / static_cast<double>(n);
    auto along = [&](double a) {
      std::vector<double> p(n);
      for (std::size_t j = 0; j < n; ++j) p[j] = centre[j] + a * (simplex[worst][j] - centre[j]);
      return p;
    };
    const auto xr = along(-1);
    const double fr = f(xr);
    ++evals;
    if (fr < fx[best]) {
      const auto xe = along(-2);
      const double fe = f(xe);
      ++evals;
      if (fe < fr) {
        simplex[worst] = xe, fx[worst] = fe;
      } else {
        simplex[worst] = xr, fx[worst] = fr;
      }
    } else if (fr < fx[second]) {
      simplex[worst] = xr, fx[worst] = fr;
    } else {
      const auto xc = along(fr < fx[worst] ? -0.5 : 0.5);
      const double fc = f(xc);
      ++evals;
      if (fc < std::min(fr, fx[worst])) {
        simplex[worst] = xc, fx[worst] = fc;
      } else {
        for (std::size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (std::size_t j = 0; j < n; ++j)
            simplex[i][j] = simplex[best][j] + 0.5 * (simplex[i][j] - simplex[best][j]);
          fx[i] = f(simplex[i]);
          ++evals;
        }
      }
    }
  }
  const auto it = std::min_element(fx.begin(), fx.end());
  return simplex[static_cast<std::size_t>(it - fx.begin())];
}

// The start: decays log-spaced between 1/2 and 1 - 1/n, weights by least squares on the root's
// tail (relative weighting, so that the slowly decaying tail counts).
BltParameters start(const Workload& A, std::size_t m) {
  const std::size_t n = A.steps(), fit_len = std::min<std::size_t>(n, 1 << 16);
  const auto root = Factorization::banded(A, fit_len).coefficients();  // the root's head
  BltParameters p{root[0], std::vector<double>(m), std::vector<double>(m, 0.0)};
  const double lo = std::log(0.5);
  const double hi = std::log(1.0 / static_cast<double>(std::max<std::size_t>(n, 4)));
  for (std::size_t i = 0; i < m; ++i)
    p.theta[i] = 1 - std::exp(m == 1 ? lo : lo + (hi - lo) * static_cast<double>(i) /
                                                      static_cast<double>(m - 1));
  if (fit_len < 2) return p;
  const auto rows = static_cast<Eigen::Index>(fit_len - 1), cols = static_cast<Eigen::Index>(m);
  Matrix M(rows, cols);
  Eigen::VectorXd y(rows);
  for (Eigen::Index k = 0; k < rows; ++k) {
    const double w = 1 / std::max(std::abs(root[static_cast<std::size_t>(k + 1)]), 1e-300);
    y[k] = root[static_cast<std::size_t>(k + 1)] / p.kappa * w;
    for (Eigen::Index i = 0; i < cols; ++i)
      M(k, i) = std::pow(p.theta[static_cast<std::size_t>(i)], static_cast<double>(k)) * w;
  }
  const Eigen::VectorXd sol = M.colPivHouseholderQr().solve(y);
  for (Eigen::Index i = 0; i < cols; ++i)
    p.omega[static_cast<std::size_t>(i)] = std::isfinite(sol[i]) ? sol[i] : 0.0;
  return p;
}

// The objective the fit minimises for A: the closed form where A's Toeplitz part is
// s/(1 - beta x) (row scales left out for average and bias-corrected adam), else the streamed one.
std::function<double(const BltParameters&)> objective(const Workload& A) {
  const std::size_t n = A.steps();
  switch (A.kind()) {
    case WorkloadKind::prefix:
    case WorkloadKind::average:
      return [n](const BltParameters& p) { return blt_error_factor_closed(p, 1.0, 1.0, n); };
    case WorkloadKind::decay:
      return [n, b = A.beta()](const BltParameters& p) { return blt_error_factor_closed(p, b, 1.0, n); };
    case WorkloadKind::adam:
      return [n, b = A.beta()](const BltParameters& p) {
        return blt_error_factor_closed(p, b, 1 - b, n);
      };
    case WorkloadKind::window: break;
  }
  return [A](const BltParameters& p) {
    BltColumn c(p);
    double norm = 0;
    for (std::size_t k = 0; k < A.steps(); ++k) {
      const double v = c.next();
      norm += v * v;
    }
    const double f = norm * blt_b_norms(A, p).frobenius_sq;
    return std::isfinite(f) ? f : kInf;
  };
}

}  // namespace

double BltColumn::next() {
  if (first_) {
    first_ = false;
    return p_.kappa;
  }
  double v = 0;
  for (std::size_t i = 0; i < power_.size(); ++i) {
    v += p_.omega[i] * power_[i];
    power_[i] *= p_.theta[i];
  }
  return p_.kappa * v;
}

double BltInverseColumn::next() {
  double v = first_ ? 1.0 / p_.kappa : 0.0;
  first_ = false;
  for (std::size_t i = 0; i < r_.size(); ++i) {
    r_[i] = p_.theta[i] * r_[i] + previous_;
    v -= p_.omega[i] * r_[i];
  }
  previous_ = v;
  return v;
}

BNorms blt_b_norms(const Workload& A, const BltParameters& p) {
  BltInverseColumn inverse(p);
  return stream_b_norms(A, [&] { return inverse.next(); });
}

// With r(1) = ci_0 1 and r(t+1) = (Theta - 1 omega^T) r(t), ci_t = -omega^T r(t) (t >= 1), and
// b_t = beta b_{t-1} + s ci_t: the state z_t = (r(t), b_{t-1}) runs through
// P = [[Theta - 1 omega^T, 0], [-s omega^T, beta]], b_t = (-s omega, beta)^T z_t, so
// ||B||_F^2 = sum_t (n - t) b_t^2 = n b_0^2 + h^T K_{n-1} h over X = z_1 z_1^T.
double blt_error_factor_closed(const BltParameters& p, double beta, double scale, std::size_t n) {
  const auto m = static_cast<Eigen::Index>(p.theta.size());
  Matrix P = Matrix::Zero(m + 1, m + 1);
  Eigen::VectorXd h(m + 1), z(m + 1);
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index j = 0; j < m; ++j) P(i, j) = -p.omega[static_cast<std::size_t>(j)];
    P(i, i) += p.theta[static_cast<std::size_t>(i)];
    P(m, i) = -scale * p.omega[static_cast<std::size_t>(i)];
    h(i) = -scale * p.omega[static_cast<std::size_t>(i)];
    z(i) = 1 / p.kappa;
  }
  P(m, m) = beta;
  h(m) = beta;
  const double b0 = scale / p.kappa;
  z(m) = b0;
  const PowerSums s = power_sums(P, z * z.transpose(), n - 1);
  const double frobenius = static_cast<double>(n) * b0 * b0 + h.dot(s.K * h);
  const double f = p.kappa * p.kappa * norm_sq_closed(p, n) * frobenius;
  return std::isfinite(f) && f > 0 ? f : kInf;
}


BltParameters fit_blt(const Workload& A, std::size_t buffers) {
  const std::size_t m = buffers;
  const BltParameters initial = start(A, m);
  // Refine: theta_i = sigmoid(x_i), omega_i free; the log of the factor.
  auto unpack = [&](const std::vector<double>& x) {
    BltParameters p{initial.kappa, std::vector<double>(m), std::vector<double>(m)};
    for (std::size_t i = 0; i < m; ++i) {
      p.theta[i] = std::clamp(1 / (1 + std::exp(-x[i])), 1e-9, 1 - 1e-12);
      p.omega[i] = x[m + i];
    }
    return p;
  };
  std::vector<double> x(2 * m);
  for (std::size_t i = 0; i < m; ++i) {
    x[i] = std::log(initial.theta[i] / (1 - initial.theta[i]));
    x[m + i] = initial.omega[i];
  }
  const auto f = objective(A);
  auto log_factor = [&](const std::vector<double>& y) {
    const double v = f(unpack(y));
    return v < kInf ? std::log(v) : kInf;
  };
  for (int round = 0; round < 3; ++round)
    x = nelder_mead(log_factor, x, 0.3, 400 * static_cast<int>(m));
  return unpack(x);
}

}  // namespace dpstats::moments::detail
