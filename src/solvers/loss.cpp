#include "dpstats/solvers/loss.hpp"

#include <fmt/format.h>

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/solvers/domain.hpp"

namespace dpstats::optimize {

namespace {
double dot(const Vector& x, const double* a) {
  double s = 0;
  for (Eigen::Index j = 0; j < x.size(); ++j) s += x[j] * a[j];
  return s;
}
}  // namespace

double Loss::value(const Vector& x, const double* a, double y) const { return phi(dot(x, a), y); }

void Loss::add_gradient(const Vector& x, const double* a, double y, double scale, Vector& out,
                        GradientCounter& counter) const {
  const double g = scale * derivative(dot(x, a), y);
  ++counter.evaluations;
  if (g == 0) return;
  for (Eigen::Index j = 0; j < x.size(); ++j) out[j] += g * a[j];
}

// Logistic: φ = ln(1 + e^{−yu}), φ' = −y·σ(−yu), computed without overflow.
double LogisticLoss::phi(double u, double y) const {
  const double t = -y * u;
  return t > 0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t));
}
double LogisticLoss::derivative(double u, double y) const {
  const double t = -y * u;
  const double s = t > 0 ? 1 / (1 + std::exp(-t)) : std::exp(t) / (1 + std::exp(t));
  return -y * s;
}
double LogisticLoss::lipschitz(double A, double, const Domain&, double) const { return A; }

double HingeLoss::phi(double u, double y) const { return std::max(0.0, 1 - y * u); }
double HingeLoss::derivative(double u, double y) const { return y * u < 1 ? -y : 0.0; }
double HingeLoss::lipschitz(double A, double, const Domain&, double) const { return A; }

double SquaredLoss::phi(double u, double y) const { return 0.5 * (u - y) * (u - y); }
double SquaredLoss::derivative(double u, double y) const { return u - y; }
double SquaredLoss::lipschitz(double A, double B, const Domain& X, double enlarge) const {
  return A * (A * (X.max_norm() + enlarge) + B);
}

HuberLoss::HuberLoss(double kappa) : kappa_(kappa) { check_positive(kappa, "huber kappa"); }
double HuberLoss::phi(double u, double y) const {
  const double e = std::abs(u - y);
  return e <= kappa_ ? 0.5 * e * e : kappa_ * e - 0.5 * kappa_ * kappa_;
}
double HuberLoss::derivative(double u, double y) const {
  return std::clamp(u - y, -kappa_, kappa_);
}
double HuberLoss::lipschitz(double A, double, const Domain&, double) const { return kappa_ * A; }

double AbsoluteLoss::phi(double u, double y) const { return std::abs(u - y); }
double AbsoluteLoss::derivative(double u, double y) const {
  return u > y ? 1.0 : (u < y ? -1.0 : 0.0);
}
double AbsoluteLoss::lipschitz(double A, double, const Domain&, double) const { return A; }

std::unique_ptr<Loss> make_loss(GlmKind kind, double huber_kappa) {
  switch (kind) {
    case GlmKind::logistic: return std::make_unique<LogisticLoss>();
    case GlmKind::hinge: return std::make_unique<HingeLoss>();
    case GlmKind::squared: return std::make_unique<SquaredLoss>();
    case GlmKind::huber: return std::make_unique<HuberLoss>(huber_kappa);
    case GlmKind::absolute: return std::make_unique<AbsoluteLoss>();
  }
  throw InvalidArgument("loss: unknown kind");
}

std::unique_ptr<Loss> make_loss(const std::string& name) {
  return make_loss(parse_enum<GlmKind>(name));
}

bool binary_labels(GlmKind kind) { return kind == GlmKind::logistic || kind == GlmKind::hinge; }

Vector checked_labels(const Eigen::Ref<const Vector>& y, GlmKind kind, bool* mapped) {
  if (mapped) *mapped = false;
  require(y.allFinite(), "labels must be finite (got a NaN or infinite label)");
  if (!binary_labels(kind)) return y;
  bool pm = true, zero_one = true, has_zero = false;
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    pm = pm && (y[i] == 1 || y[i] == -1);
    zero_one = zero_one && (y[i] == 0 || y[i] == 1);
    has_zero = has_zero || y[i] == 0;
  }
  if (pm) return y;
  require(zero_one && has_zero,
          fmt::format("labels must be -1 or +1 for the {} loss (labels in {{0, 1}} are mapped "
                      "0 -> -1, 1 -> +1); got a label outside both sets",
                      name_of(kind)));
  if (mapped) *mapped = true;
  return (2 * y.array() - 1).matrix();
}

}  // namespace dpstats::optimize
