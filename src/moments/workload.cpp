#include "dpstats/moments/workload.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "spec_head.hpp"

namespace dpstats::moments {
namespace {

// The head word of a workload spec, parsed once ("decay" of "decay:0.9"; adam-plain is adam
// without bias correction); the heads that take a number are decay, adam, adam-plain, window.
enum class WorkloadHead { prefix, average, decay, adam, adam_plain, window };

constexpr std::string_view kWorkloadSyntax =
    "workload must be prefix, average, decay:BETA, window:K, adam:BETA or adam-plain:BETA";

}  // namespace
}  // namespace dpstats::moments

template <>
struct dpstats::EnumNames<dpstats::moments::WorkloadHead> {
  using W = dpstats::moments::WorkloadHead;
  static constexpr std::string_view parameter = "workload";
  static constexpr std::array<std::pair<W, std::string_view>, 6> names = {
      {{W::prefix, "prefix"}, {W::average, "average"}, {W::decay, "decay"}, {W::adam, "adam"},
       {W::adam_plain, "adam-plain"}, {W::window, "window"}}};
};

namespace dpstats::moments {
namespace {

void check_steps(std::size_t n) { require(n >= 1, "steps must be >= 1, got 0"); }

void check_beta(double beta) {
  require(std::isfinite(beta) && beta > 0 && beta < 1,
          fmt::format("beta must be in (0, 1), got {}", format_number(beta)));
}

// A number after "name:" in a spec, parsed strictly.
double spec_number(const std::string& spec, std::size_t colon, const char* what) {
  const std::string text = spec.substr(colon + 1);
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(!text.empty() && used == text.size() && std::isfinite(x),
          fmt::format("{} needs a number after ':', got '{}'", what, spec));
  return x;
}

}  // namespace

Workload Workload::prefix(std::size_t n) {
  check_steps(n);
  Workload w;
  w.kind_ = WorkloadKind::prefix;
  w.n_ = n;
  return w;
}

Workload Workload::decay(std::size_t n, double beta) {
  check_steps(n);
  check_beta(beta);
  Workload w;
  w.kind_ = WorkloadKind::decay;
  w.n_ = n;
  w.beta_ = beta;
  return w;
}

Workload Workload::average(std::size_t n) {
  check_steps(n);
  Workload w;
  w.kind_ = WorkloadKind::average;
  w.n_ = n;
  return w;
}

Workload Workload::window(std::size_t n, std::size_t k) {
  check_steps(n);
  require(k >= 1, "window size must be >= 1, got 0");
  Workload w;
  w.kind_ = WorkloadKind::window;
  w.n_ = n;
  w.window_ = k;
  return w;
}

Workload Workload::adam(std::size_t n, double beta, bool bias_correction) {
  check_steps(n);
  check_beta(beta);
  Workload w;
  w.kind_ = WorkloadKind::adam;
  w.n_ = n;
  w.beta_ = beta;
  w.bias_correction_ = bias_correction;
  return w;
}

Workload Workload::parse(const std::string& spec, std::size_t n) {
  const auto colon = spec.find(':');
  const auto head = detail::spec_head<WorkloadHead>(spec.substr(0, colon), spec, kWorkloadSyntax);
  const bool numbered = head != WorkloadHead::prefix && head != WorkloadHead::average;
  require(numbered == (colon != std::string::npos),
          fmt::format("{}, got '{}'", kWorkloadSyntax, spec));
  switch (head) {
    case WorkloadHead::prefix: return prefix(n);
    case WorkloadHead::average: return average(n);
    case WorkloadHead::decay: return decay(n, spec_number(spec, colon, "decay"));
    case WorkloadHead::adam:
    case WorkloadHead::adam_plain:
      return adam(n, spec_number(spec, colon, "adam"), head == WorkloadHead::adam);
    case WorkloadHead::window: break;
  }
  const double k = spec_number(spec, colon, "window");
  require(k >= 1 && k == std::floor(k) && k <= 1e9,
          fmt::format("window size must be an integer >= 1, got '{}'", spec));
  return window(n, static_cast<std::size_t>(k));
}

std::string Workload::name() const {
  switch (kind_) {
    case WorkloadKind::prefix: return "prefix";
    case WorkloadKind::average: return "average";
    case WorkloadKind::decay: return fmt::format("decay:{}", beta_);
    case WorkloadKind::window: return fmt::format("window:{}", window_);
    case WorkloadKind::adam:
      return fmt::format("{}:{}", bias_correction_ ? "adam" : "adam-plain", beta_);
  }
  return "?";
}

double Workload::coefficient(std::size_t k) const {
  if (k >= n_) return 0;
  switch (kind_) {
    case WorkloadKind::prefix:
    case WorkloadKind::average: return 1;
    case WorkloadKind::decay: return std::pow(beta_, static_cast<double>(k));
    case WorkloadKind::window: return k < window_ ? 1.0 / static_cast<double>(window_) : 0.0;
    case WorkloadKind::adam: return (1 - beta_) * std::pow(beta_, static_cast<double>(k));
  }
  return 0;
}

std::vector<double> Workload::coefficients(std::size_t m) const {
  std::vector<double> a(m);
  for (std::size_t k = 0; k < m; ++k) a[k] = coefficient(k);
  return a;
}

double Workload::row_scale(std::size_t t) const {
  if (kind_ == WorkloadKind::average) return 1.0 / static_cast<double>(t + 1);
  if (kind_ == WorkloadKind::adam && bias_correction_)
    return 1.0 / -std::expm1(static_cast<double>(t + 1) * std::log(beta_));  // 1/(1 - beta^t)
  return 1;
}

bool Workload::has_row_scale() const {
  return kind_ == WorkloadKind::average || (kind_ == WorkloadKind::adam && bias_correction_);
}

double Workload::at(std::size_t t, std::size_t i) const {
  if (i > t || t >= n_) return 0;
  return row_scale(t) * coefficient(t - i);
}

RowMatrix Workload::materialize() const {
  RowMatrix A = RowMatrix::Zero(n_, n_);
  const auto a = coefficients(n_);
  for (std::size_t t = 0; t < n_; ++t)
    for (std::size_t i = 0; i <= t; ++i) A(t, i) = row_scale(t) * a[t - i];
  return A;
}

bool Workload::operator==(const Workload& o) const {
  return kind_ == o.kind_ && n_ == o.n_ && window_ == o.window_ && beta_ == o.beta_ &&
         bias_correction_ == o.bias_correction_;
}

WorkloadState::WorkloadState(const Workload& A, std::size_t dim)
    : A_(A), dim_(dim), state_(Vector::Zero(static_cast<Eigen::Index>(dim))) {
  if (A.kind() == WorkloadKind::window)
    ring_ = RowMatrix::Zero(static_cast<Eigen::Index>(A.window_size()),
                            static_cast<Eigen::Index>(dim));
}

void WorkloadState::push(const double* v, double* out) {
  push(v, out, 0, dim_);
  advance();
}

void WorkloadState::push(const double* v, double* out, std::size_t begin, std::size_t end) {
  require(t_ < A_.steps(), "workload stream is past its horizon");
  const auto b = static_cast<Eigen::Index>(begin), len = static_cast<Eigen::Index>(end - begin);
  Eigen::Map<const Vector> vin(v + begin, len);
  Eigen::Map<Vector> o(out + begin, len);
  auto state = state_.segment(b, len);
  const double scale = A_.row_scale(t_);
  switch (A_.kind()) {
    case WorkloadKind::prefix:
    case WorkloadKind::average:
      state += vin;
      o = scale * state;
      break;
    case WorkloadKind::decay:
      state = A_.beta() * state + vin;
      o = state;
      break;
    case WorkloadKind::adam:
      state = A_.beta() * state + vin;
      o = (scale * (1 - A_.beta())) * state;
      break;
    case WorkloadKind::window: {
      // The window sum is recomputed from the ring (k rows), so no rounding drift accumulates.
      const auto k = static_cast<Eigen::Index>(A_.window_size());
      auto ring = ring_.middleCols(b, len);
      ring.row(static_cast<Eigen::Index>(t_ % A_.window_size())) = vin.transpose();
      o = ring.colwise().sum().transpose() / static_cast<double>(k);
      break;
    }
  }
}

}  // namespace dpstats::moments
