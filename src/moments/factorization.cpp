#include "dpstats/moments/factorization.hpp"

#include <fmt/format.h>

#include <cmath>

#include <Eigen/Dense>
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include "dpstats/error.hpp"
#include "dpstats/moments/theory.hpp"

namespace dpstats::moments {
namespace {

// Squared norm of the first column of D·T(a) over n rows (the output factorization).
double output_norm_sq(const Workload& A) {
  double s = 0;
  for (std::size_t t = 0; t < A.steps(); ++t) {
    const double v = A.row_scale(t) * A.coefficient(t);
    s += v * v;
  }
  return s;
}

// Square-root coefficients of the Toeplitz part of A, first m (docs/proofs/moments.md).
std::vector<double> sqrt_coefficients(const Workload& A, std::size_t m) {
  switch (A.kind()) {
    case WorkloadKind::prefix:
    case WorkloadKind::average: return prefix_sqrt_coefficients(m);
    case WorkloadKind::decay:
    case WorkloadKind::adam: {
      // E_beta^{1/2} = c_k beta^k; Adam's T_beta = (1 - beta) E_beta.
      auto c = prefix_sqrt_coefficients(m);
      const double f = A.kind() == WorkloadKind::adam ? std::sqrt(1 - A.beta()) : 1.0;
      double p = f;
      for (std::size_t k = 0; k < m; ++k, p *= A.beta()) c[k] *= p;
      return c;
    }
    case WorkloadKind::window: {
      // W_k = k^{-1}(1 - x^k)/(1 - x): sqrt = k^{-1/2} (1 - x^k)^{1/2} (1 - x)^{-1/2}, so
      // coef_m = k^{-1/2} sum_j c'_j c_{m - jk} with c the E1 root and c' its inverse.
      const std::size_t k = A.window_size();
      const auto c = prefix_sqrt_coefficients(m);
      const auto ci = toeplitz_inverse(c, m / k + 1);
      std::vector<double> out(m, 0.0);
      const double f = 1 / std::sqrt(static_cast<double>(k));
      for (std::size_t i = 0; i < m; ++i) {
        double s = 0;
        for (std::size_t j = 0; j * k <= i; ++j) s += ci[j] * c[i - j * k];
        out[i] = f * s;
      }
      return out;
    }
  }
  return {};
}

// First n coefficients of a BLT C and of its inverse (the impulse response of the buffered
// forward substitution v_t = w_t / kappa - sum_i omega_i r_i, r_i <- theta_i r_i + v_{t-1}).
void blt_coefficients(double kappa, const std::vector<double>& theta,
                      const std::vector<double>& omega, std::size_t n, std::vector<double>* c,
                      std::vector<double>* ci) {
  const std::size_t m = theta.size();
  if (c) {
    c->assign(n, 0.0);
    std::vector<double> p(m, 1.0);
    if (n > 0) (*c)[0] = kappa;
    for (std::size_t k = 1; k < n; ++k) {
      double v = 0;
      for (std::size_t i = 0; i < m; ++i) {
        v += omega[i] * p[i];
        p[i] *= theta[i];
      }
      (*c)[k] = kappa * v;
    }
  }
  if (ci) {
    ci->assign(n, 0.0);
    std::vector<double> r(m, 0.0);
    double prev = 0;
    for (std::size_t k = 0; k < n; ++k) {
      double v = (k == 0 ? 1.0 / kappa : 0.0);
      for (std::size_t i = 0; i < m; ++i) {
        r[i] = theta[i] * r[i] + prev;
        v -= omega[i] * r[i];
      }
      (*ci)[k] = v;
      prev = v;
    }
  }
}

// ||A C^{-1}||_F^2 from the inverse coefficients of a Toeplitz C: b = T(a) c' through the workload
// recursion (O(n) except O(n k) for windows), rows scaled by D_t.
double b_frobenius_sq(const Workload& A, const std::vector<double>& ci) {
  WorkloadState st(A, 1);
  double cum = 0, total = 0;
  for (std::size_t t = 0; t < ci.size(); ++t) {
    double out = 0;
    st.push(&ci[t], &out);  // out = D_t b_t
    const double D = A.row_scale(t);
    const double b = out / D;
    cum += b * b;
    total += D * D * cum;
  }
  return total;
}

double blt_objective(const Workload& A, double kappa, const std::vector<double>& theta,
                     const std::vector<double>& omega) {
  std::vector<double> c, ci;
  blt_coefficients(kappa, theta, omega, A.steps(), &c, &ci);
  double norm2 = 0;
  for (double v : c) norm2 += v * v;
  const double f = norm2 * b_frobenius_sq(A, ci);
  return std::isfinite(f) ? f : std::numeric_limits<double>::infinity();
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

}  // namespace

double jme_error_factor(const Workload& A, const Factorization& C) {
  const double n2 = C.norm_1_to_2() * C.norm_1_to_2();
  if (C.kind() == FactorizationKind::blt) {
    std::vector<double> ci;
    blt_coefficients(C.kappa(), C.theta(), C.omega(), A.steps(), nullptr, &ci);
    return n2 * b_frobenius_sq(A, ci);
  }
  return n2 * theory::sum(theory::b_row_norms_sq(A, C));
}

Factorization Factorization::blt(double kappa, std::vector<double> theta,
                                 std::vector<double> omega, std::size_t n) {
  require(n >= 1, "steps must be >= 1, got 0");
  require(std::isfinite(kappa) && kappa > 0, "blt needs kappa > 0");
  require(theta.size() == omega.size() && !theta.empty(),
          "blt needs as many decays theta as weights omega (at least one)");
  for (std::size_t i = 0; i < theta.size(); ++i)
    require(std::isfinite(theta[i]) && theta[i] > 0 && theta[i] < 1 && std::isfinite(omega[i]),
            "blt needs decays theta in (0, 1) and finite weights omega");
  Factorization f;
  f.kind_ = FactorizationKind::blt;
  f.n_ = n;
  blt_coefficients(kappa, theta, omega, n, &f.c_, nullptr);
  double s = 0;
  for (double v : f.c_) s += v * v;  // Toeplitz: the first column has the largest norm
  f.norm_ = std::sqrt(s);
  f.kappa_ = kappa;
  f.theta_ = std::move(theta);
  f.omega_ = std::move(omega);
  return f;
}

Factorization Factorization::fit_blt(const Workload& A, std::size_t buffers) {
  require(buffers >= 1 && buffers <= 12, fmt::format("blt needs 1 to 12 buffers, got {}", buffers));
  const std::size_t n = A.steps();
  const std::size_t fit_len = std::min<std::size_t>(n, 1 << 16);
  const auto root = sqrt_coefficients(A, fit_len);
  const double kappa = root[0];
  const std::size_t m = buffers;
  // Decays log-spaced between 1/2 and 1 - 1/n, weights by least squares on the root's tail.
  std::vector<double> theta(m), omega(m, 0.0);
  const double lo = std::log(0.5), hi = std::log(1.0 / static_cast<double>(std::max<std::size_t>(n, 4)));
  for (std::size_t i = 0; i < m; ++i)
    theta[i] = 1 - std::exp(m == 1 ? lo : lo + (hi - lo) * static_cast<double>(i) /
                                                      static_cast<double>(m - 1));
  if (fit_len > 1) {
    Eigen::MatrixXd M(static_cast<Eigen::Index>(fit_len - 1), static_cast<Eigen::Index>(m));
    Eigen::VectorXd y(static_cast<Eigen::Index>(fit_len - 1));
    for (std::size_t k = 1; k < fit_len; ++k) {
      // Relative weighting so that the slowly decaying tail counts.
      const double w = 1 / std::max(std::abs(root[k]), 1e-300);
      y[static_cast<Eigen::Index>(k - 1)] = root[k] / kappa * w;
      for (std::size_t i = 0; i < m; ++i)
        M(static_cast<Eigen::Index>(k - 1), static_cast<Eigen::Index>(i)) =
            std::pow(theta[i], static_cast<double>(k - 1)) * w;
    }
    const Eigen::VectorXd sol = M.colPivHouseholderQr().solve(y);
    for (std::size_t i = 0; i < m; ++i) omega[i] = std::isfinite(sol[static_cast<Eigen::Index>(i)]) ? sol[static_cast<Eigen::Index>(i)] : 0.0;
  }
  // Refine: theta_i = sigmoid(p_i), omega_i free.
  auto unpack = [&](const std::vector<double>& p, std::vector<double>& th, std::vector<double>& om) {
    th.resize(m);
    om.resize(m);
    for (std::size_t i = 0; i < m; ++i) {
      th[i] = std::clamp(1 / (1 + std::exp(-p[i])), 1e-9, 1 - 1e-12);
      om[i] = p[m + i];
    }
  };
  std::vector<double> p0(2 * m);
  for (std::size_t i = 0; i < m; ++i) {
    p0[i] = std::log(theta[i] / (1 - theta[i]));
    p0[m + i] = omega[i];
  }
  auto objective = [&](const std::vector<double>& p) {
    std::vector<double> th, om;
    unpack(p, th, om);
    return blt_objective(A, kappa, th, om);
  };
  std::vector<double> best = p0;
  for (int round = 0; round < 3; ++round) best = nelder_mead(objective, best, 0.3, 400 * static_cast<int>(m));
  unpack(best, theta, omega);
  return blt(kappa, theta, omega, n);
}
std::vector<double> prefix_sqrt_coefficients(std::size_t m) {
  std::vector<double> c(m);
  if (m == 0) return c;
  c[0] = 1;
  for (std::size_t k = 1; k < m; ++k)
    c[k] = c[k - 1] * (2.0 * static_cast<double>(k) - 1) / (2.0 * static_cast<double>(k));
  return c;
}

std::vector<double> toeplitz_square_root(const std::vector<double>& a, std::size_t m) {
  require(!a.empty() && a[0] > 0 && std::isfinite(a[0]),
          "the square-root factorization needs a workload with a_0 > 0");
  std::vector<double> s(m, 0.0);
  if (m == 0) return s;
  s[0] = std::sqrt(a[0]);
  for (std::size_t i = 1; i < m; ++i) {
    double acc = i < a.size() ? a[i] : 0.0;
    for (std::size_t j = 1; j < i; ++j) acc -= s[j] * s[i - j];
    s[i] = acc / (2 * s[0]);
  }
  return s;
}

std::vector<double> toeplitz_inverse(const std::vector<double>& c, std::size_t m) {
  require(!c.empty() && c[0] != 0 && std::isfinite(c[0]),
          "a Toeplitz factor needs c_0 != 0 (it must be invertible)");
  std::vector<double> y(m, 0.0);
  if (m == 0) return y;
  y[0] = 1 / c[0];
  for (std::size_t i = 1; i < m; ++i) {
    double acc = 0;
    const std::size_t top = std::min(i, c.size() - 1);
    for (std::size_t j = 1; j <= top; ++j) acc += c[j] * y[i - j];
    y[i] = -acc / c[0];
  }
  return y;
}

Factorization Factorization::input(std::size_t n) {
  require(n >= 1, "steps must be >= 1, got 0");
  Factorization f;
  f.kind_ = FactorizationKind::input;
  f.n_ = n;
  f.c_ = {1.0};
  f.norm_ = 1;
  return f;
}

Factorization Factorization::output(const Workload& A) {
  for (std::size_t t = 1; t < A.steps(); ++t)
    require(A.row_scale(t) <= A.row_scale(t - 1),
            "output factorization needs a non-increasing row scale");  // holds for every kind
  Factorization f;
  f.kind_ = FactorizationKind::output;
  f.n_ = A.steps();
  f.A_ = A;
  f.norm_ = std::sqrt(output_norm_sq(A));
  return f;
}

Factorization Factorization::toeplitz(std::vector<double> c, std::size_t n) {
  require(n >= 1, "steps must be >= 1, got 0");
  require(!c.empty(), "a Toeplitz factorization needs at least one coefficient");
  require(std::isfinite(c[0]) && c[0] > 0,
          fmt::format("a Toeplitz factorization needs c_0 > 0 (invertible), got {}",
                      format_number(c[0])));
  for (double v : c) require(std::isfinite(v), "Toeplitz coefficients must be finite");
  if (c.size() > n) c.resize(n);
  Factorization f;
  f.kind_ = FactorizationKind::toeplitz;
  f.n_ = n;
  double s = 0;
  for (double v : c) s += v * v;  // columns of a Toeplitz C are truncations of the first
  f.norm_ = std::sqrt(s);
  f.c_ = std::move(c);
  return f;
}

Factorization Factorization::square_root(const Workload& A) {
  Factorization f = toeplitz(sqrt_coefficients(A, A.steps()), A.steps());
  f.kind_ = FactorizationKind::square_root;
  return f;
}

Factorization Factorization::banded(const Workload& A, std::size_t bands) {
  require(bands >= 1, "banded factorization needs bands >= 1, got 0");
  Factorization f = toeplitz(sqrt_coefficients(A, std::min(bands, A.steps())), A.steps());
  f.kind_ = bands >= A.steps() ? FactorizationKind::square_root : FactorizationKind::banded;
  return f;
}

Factorization Factorization::parse(const std::string& spec, const Workload& A) {
  if (spec == "input") return input(A.steps());
  if (spec == "output") return output(A);
  if (spec == "sqrt") return square_root(A);
  if (spec.rfind("blt:", 0) == 0) {
    const std::string text = spec.substr(4);
    std::size_t used = 0;
    long long m = 0;
    try {
      m = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == text.size() && !text.empty() && m >= 1 && m <= 12,
            fmt::format("blt:M needs an integer M in [1, 12], got '{}'", spec));
    return fit_blt(A, static_cast<std::size_t>(m));
  }
  if (spec.rfind("banded:", 0) == 0) {
    const std::string text = spec.substr(7);
    std::size_t used = 0;
    long long b = 0;
    try {
      b = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == text.size() && !text.empty() && b >= 1 && b <= 100000000,
            fmt::format("banded:B needs an integer B in [1, 10^8], got '{}'", spec));
    return banded(A, static_cast<std::size_t>(b));
  }
  throw InvalidArgument(fmt::format(
      "factorization must be input, output, sqrt, banded:B or blt:M, got '{}'", spec));
}

std::string Factorization::name() const {
  switch (kind_) {
    case FactorizationKind::input: return "input";
    case FactorizationKind::output: return "output";
    case FactorizationKind::square_root: return "sqrt";
    case FactorizationKind::banded: return fmt::format("banded:{}", c_.size());
    case FactorizationKind::toeplitz: return fmt::format("toeplitz:{}", c_.size());
    case FactorizationKind::blt: return fmt::format("blt:{}", theta_.size());
  }
  return "?";
}

std::size_t Factorization::history() const {
  switch (kind_) {
    case FactorizationKind::input: return 0;
    case FactorizationKind::output: return n_;  // only PP inverts it
    case FactorizationKind::blt: return theta_.size();
    default: return c_.size() - 1;
  }
}

RowMatrix Factorization::materialize() const {
  if (kind_ == FactorizationKind::output) return A_->materialize();
  RowMatrix C = RowMatrix::Zero(n_, n_);
  for (std::size_t t = 0; t < n_; ++t)
    for (std::size_t j = 0; j < c_.size() && j <= t; ++j) C(t, t - j) = c_[j];
  return C;
}

}  // namespace dpstats::moments
