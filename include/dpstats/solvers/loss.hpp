// Losses for private convex optimisation (docs/proofs/user-level.md §3), shared by the
// user-level (issue 7) and heavy-tailed (issues 6, 8) solvers.
//
// Every built-in is a generalised linear loss f(x; a, y) = φ(<a, x>, y). Its constants are public:
// they follow from a public bound A on the feature norm ‖a‖, a public bound B on |y| (squared loss)
// and the domain, never from the data. Callers clip features to A (UserDataset does) so that the
// stated constants hold.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/names.hpp"

namespace dpstats::optimize {

// The generalised linear losses φ(⟨a, w⟩, y) of both fit tasks (one name per loss everywhere).
enum class GlmKind { absolute, hinge, squared, huber, logistic };

// The label set each loss states (docs/guide.md "Labels"):
//  * logistic, hinge: y in {-1, +1}. Labels in {0, 1} go through the documented mapping
//    0 -> -1, 1 -> +1 (when every label is 0 or 1 and some label is 0); any other label is an
//    InvalidArgument naming the loss and its label set.
//  * absolute, squared, huber: any finite real label.
// Returns the labels the loss uses; `mapped` (optional) says whether the {0, 1} mapping ran.
Vector checked_labels(const Eigen::Ref<const Vector>& y, GlmKind kind, bool* mapped = nullptr);
bool binary_labels(GlmKind kind);  // logistic or hinge

class Domain;

// Counts per-item gradient evaluations (count exactly, only work actually done).
struct GradientCounter {
  std::int64_t evaluations = 0;
};

class Loss {
 public:
  virtual ~Loss() = default;
  virtual std::string name() const = 0;
  // φ'(u, y): the derivative (a subgradient where φ is not differentiable) in u = <a, x>.
  virtual double derivative(double u, double y) const = 0;
  virtual double phi(double u, double y) const = 0;
  // L: sup ‖∇f‖ over x in X + B(0, enlarge), ‖a‖ <= A, |y| <= B.
  virtual double lipschitz(double feature_bound, double label_bound, const Domain& domain,
                           double enlarge = 0) const = 0;
  // β (nullopt: non-smooth).
  virtual std::optional<double> smoothness(double feature_bound) const = 0;

  double value(const Vector& x, const double* a, double y) const;
  // out += scale · ∇f(x; a, y); counts one evaluation.
  void add_gradient(const Vector& x, const double* a, double y, double scale, Vector& out,
                    GradientCounter& counter) const;
};

// ln(1 + exp(−y u)), y in {−1, +1}: L = A, β = A²/4.
class LogisticLoss final : public Loss {
 public:
  std::string name() const override { return "logistic"; }
  double derivative(double u, double y) const override;
  double phi(double u, double y) const override;
  double lipschitz(double A, double B, const Domain& X, double enlarge) const override;
  std::optional<double> smoothness(double A) const override { return A * A / 4; }
};

// max(0, 1 − y u): L = A, non-smooth.
class HingeLoss final : public Loss {
 public:
  std::string name() const override { return "hinge"; }
  double derivative(double u, double y) const override;
  double phi(double u, double y) const override;
  double lipschitz(double A, double B, const Domain& X, double enlarge) const override;
  std::optional<double> smoothness(double) const override { return std::nullopt; }
};

// ½(u − y)²: L = A·(A·(sup‖x‖ over X + enlarge) + B), β = A².
class SquaredLoss final : public Loss {
 public:
  std::string name() const override { return "squared"; }
  double derivative(double u, double y) const override;
  double phi(double u, double y) const override;
  double lipschitz(double A, double B, const Domain& X, double enlarge) const override;
  std::optional<double> smoothness(double A) const override { return A * A; }
};

// Huber(κ): ½e² for |e| <= κ, κ|e| − ½κ² otherwise (e = u − y): L = κA, β = A².
class HuberLoss final : public Loss {
 public:
  explicit HuberLoss(double kappa = 1.0);
  std::string name() const override { return "huber"; }
  double derivative(double u, double y) const override;
  double phi(double u, double y) const override;
  double lipschitz(double A, double B, const Domain& X, double enlarge) const override;
  std::optional<double> smoothness(double A) const override { return A * A; }
  double kappa() const { return kappa_; }

 private:
  double kappa_;
};

// |u − y| (least absolute deviations; heavy-tailed issue 8): L = A, non-smooth.
class AbsoluteLoss final : public Loss {
 public:
  std::string name() const override { return "absolute"; }
  double derivative(double u, double y) const override;
  double phi(double u, double y) const override;
  double lipschitz(double A, double B, const Domain& X, double enlarge) const override;
  std::optional<double> smoothness(double) const override { return std::nullopt; }
};

// The loss object of `kind` (huber: κ = huber_kappa).
std::unique_ptr<Loss> make_loss(GlmKind kind, double huber_kappa = 1.0);
// The same by name (parse_enum<GlmKind>).
std::unique_ptr<Loss> make_loss(const std::string& name);

}  // namespace dpstats::optimize

template <>
struct dpstats::EnumNames<dpstats::optimize::GlmKind> {
  using E = dpstats::optimize::GlmKind;
  static constexpr std::string_view parameter = "loss";
  static constexpr std::array<std::pair<E, std::string_view>, 5> names = {{
      {E::absolute, "absolute"},
      {E::hinge, "hinge"},
      {E::huber, "huber"},
      {E::logistic, "logistic"},
      {E::squared, "squared"},
  }};
};
