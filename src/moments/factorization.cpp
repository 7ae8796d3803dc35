#include "dpstats/moments/factorization.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"

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

// Square-root coefficients of the Toeplitz part of A, first m (card §1.4 closed forms).
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

}  // namespace

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
      "factorization must be input, output, sqrt or banded:B, got '{}'", spec));
}

std::string Factorization::name() const {
  switch (kind_) {
    case FactorizationKind::input: return "input";
    case FactorizationKind::output: return "output";
    case FactorizationKind::square_root: return "sqrt";
    case FactorizationKind::banded: return fmt::format("banded:{}", c_.size());
    case FactorizationKind::toeplitz: return fmt::format("toeplitz:{}", c_.size());
  }
  return "?";
}

std::size_t Factorization::history() const {
  switch (kind_) {
    case FactorizationKind::input: return 0;
    case FactorizationKind::output: return n_;  // only PP inverts it
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
