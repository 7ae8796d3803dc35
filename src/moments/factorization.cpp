#include "dpstats/moments/factorization.hpp"

#include <fmt/format.h>

#include <cmath>

#include <algorithm>

#include "dpstats/error.hpp"
#include "dpstats/moments/theory.hpp"
#include "blt.hpp"
#include "spec_head.hpp"

namespace dpstats::moments {
namespace {

// The head word of a factorization spec, parsed once; blt and banded take a number (blt:M,
// banded:B), the others none.
enum class FactorizationHead { automatic, input, output, sqrt, blt, banded };

constexpr std::string_view kFactorizationSyntax =
    "factorization must be auto, input, output, sqrt, banded:B or blt:M";

}  // namespace
}  // namespace dpstats::moments

template <>
struct dpstats::EnumNames<dpstats::moments::FactorizationHead> {
  using F = dpstats::moments::FactorizationHead;
  static constexpr std::string_view parameter = "factorization";
  static constexpr std::array<std::pair<F, std::string_view>, 6> names = {
      {{F::automatic, "auto"}, {F::input, "input"}, {F::output, "output"}, {F::sqrt, "sqrt"},
       {F::blt, "blt"}, {F::banded, "banded"}}};
};

namespace dpstats::moments {
namespace {

// The integer after "blt:" or "banded:" in `spec`, in [1, hi]; InvalidArgument naming `form`
// ("blt:M needs an integer M in [1, 12]") otherwise.
std::size_t spec_count(const std::string& spec, std::size_t colon, long long hi,
                       std::string_view form) {
  const std::string text = spec.substr(colon + 1);
  std::size_t used = 0;
  long long m = 0;
  try {
    m = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == text.size() && !text.empty() && m >= 1 && m <= hi,
          fmt::format("{}, got '{}'", form, spec));
  return static_cast<std::size_t>(m);
}

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

// ||A C^{-1}||_F^2 for a Toeplitz C with first column c, C^{-1}'s coefficients streamed by forward
// substitution over the last c.size() - 1 of them (a ring): O(n c.size()) time, O(c.size())
// memory.
double toeplitz_b_frobenius_sq(const Workload& A, const std::vector<double>& c) {
  const std::size_t cap = c.size() - 1;
  std::vector<double> ring(std::max<std::size_t>(cap, 1), 0.0);
  std::size_t t = 0;
  return detail::stream_b_norms(A, [&] {
    double acc = t == 0 ? 1.0 : 0.0;
    for (std::size_t j = 1; j <= std::min(t, cap); ++j) acc -= c[j] * ring[(t - j) % cap];
    const double ci = acc / c[0];
    if (cap > 0) ring[t % cap] = ci;
    ++t;
    return ci;
  }).frobenius_sq;
}

// The square root C of A's Toeplitz part T has A C^{-1} = D T C^{-1} = D C (C and T commute), so
// ||A C^{-1}||_F^2 = sum_t D_t^2 sum_{k<=t} c_k^2: O(n).
double root_b_frobenius_sq(const Workload& A, const std::vector<double>& c) {
  double cum = 0, total = 0;
  for (std::size_t t = 0; t < A.steps(); ++t) {
    cum += c[t] * c[t];
    total += A.row_scale(t) * A.row_scale(t) * cum;
  }
  return total;
}

}  // namespace

double jme_error_factor(const Workload& A, const Factorization& C) {
  const double n2 = C.norm_1_to_2() * C.norm_1_to_2();
  switch (C.kind()) {
    case FactorizationKind::blt:
      return n2 * detail::blt_b_norms(A, {C.kappa(), C.theta(), C.omega()}).frobenius_sq;
    case FactorizationKind::square_root:
      if (C.coefficients().size() == A.steps() &&
          C.coefficients() == sqrt_coefficients(A, A.steps()))  // A's own root
        return n2 * root_b_frobenius_sq(A, C.coefficients());
      [[fallthrough]];
    case FactorizationKind::banded:
    case FactorizationKind::toeplitz:
    case FactorizationKind::input: return n2 * toeplitz_b_frobenius_sq(A, C.coefficients());
    case FactorizationKind::output: break;
  }
  return n2 * moments::sum(moments::b_row_norms_sq(A, C));
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
  f.kappa_ = kappa;
  f.theta_ = std::move(theta);
  f.omega_ = std::move(omega);
  // The first column's norms, computed from its n coefficients as the stream generates them
  // (Toeplitz: the first column has the largest norm), in O(buffers) memory.
  detail::BltColumn column({f.kappa_, f.theta_, f.omega_});
  double s = 0, l1 = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const double v = column.next();
    s += v * v;
    l1 += std::abs(v);
  }
  f.norm_ = std::sqrt(s);
  f.l1_ = l1;
  return f;
}

Factorization Factorization::fit_blt(const Workload& A, std::size_t buffers) {
  require(buffers >= 1 && buffers <= 12, fmt::format("blt needs 1 to 12 buffers, got {}", buffers));
  detail::BltParameters p = detail::fit_blt(A, buffers);
  return blt(p.kappa, std::move(p.theta), std::move(p.omega), A.steps());
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
  f.norm_ = f.l1_ = 1;
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
  double s = 0, l1 = 0;
  for (double v : c) s += v * v, l1 += std::abs(v);  // other columns truncate the first
  f.norm_ = std::sqrt(s);
  f.l1_ = l1;
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

std::size_t Factorization::automatic_buffers(std::size_t n) {
  std::size_t m = 1;
  for (double p = 10; p < static_cast<double>(n) && m < 8; p *= 10) ++m;  // ceil(log10 n)
  return m;
}

std::size_t Factorization::automatic_bands(std::size_t n, std::size_t window) {
  return std::min(n, 4 * window);
}

Factorization Factorization::automatic(const Workload& A) {
  if (A.kind() == WorkloadKind::window)
    return banded(A, automatic_bands(A.steps(), A.window_size()));
  return fit_blt(A, automatic_buffers(A.steps()));
}

Factorization Factorization::parse(const std::string& spec, const Workload& A) {
  const auto colon = spec.find(':');
  const auto head =
      detail::spec_head<FactorizationHead>(spec.substr(0, colon), spec, kFactorizationSyntax);
  const bool numbered = head == FactorizationHead::blt || head == FactorizationHead::banded;
  require(numbered == (colon != std::string::npos),
          fmt::format("{}, got '{}'", kFactorizationSyntax, spec));
  switch (head) {
    case FactorizationHead::automatic: return automatic(A);
    case FactorizationHead::input: return input(A.steps());
    case FactorizationHead::output: return output(A);
    case FactorizationHead::sqrt: return square_root(A);
    case FactorizationHead::blt:
      return fit_blt(A, spec_count(spec, colon, 12, "blt:M needs an integer M in [1, 12]"));
    case FactorizationHead::banded: break;
  }
  return banded(A, spec_count(spec, colon, 100000000, "banded:B needs an integer B in [1, 10^8]"));
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

std::vector<double> Factorization::column(std::size_t m) const {
  m = std::min(m, n_);
  if (kind_ == FactorizationKind::output) {
    std::vector<double> c(m);
    for (std::size_t k = 0; k < m; ++k) c[k] = A_->row_scale(k) * A_->coefficient(k);
    return c;
  }
  if (kind_ == FactorizationKind::blt) {
    detail::BltColumn column({kappa_, theta_, omega_});
    std::vector<double> c(m);
    for (auto& v : c) v = column.next();
    return c;
  }
  std::vector<double> c(m, 0.0);
  std::copy_n(c_.begin(), std::min(m, c_.size()), c.begin());
  return c;
}

std::vector<double> Factorization::inverse_column(std::size_t m) const {
  require(kind_ != FactorizationKind::output, "inverse_column: output is not Toeplitz");
  m = std::min(m, n_);
  if (kind_ != FactorizationKind::blt) return toeplitz_inverse(c_, m);
  detail::BltInverseColumn inverse({kappa_, theta_, omega_});
  std::vector<double> y(m);
  for (auto& v : y) v = inverse.next();
  return y;
}

RowMatrix Factorization::materialize() const {
  if (kind_ == FactorizationKind::output) return A_->materialize();
  const auto c = column(n_);
  RowMatrix C = RowMatrix::Zero(n_, n_);
  for (std::size_t t = 0; t < n_; ++t)
    for (std::size_t j = 0; j <= t; ++j) C(t, t - j) = c[j];
  return C;
}

}  // namespace dpstats::moments
