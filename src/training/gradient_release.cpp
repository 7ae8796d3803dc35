// Per-step private gradient releases of DP-SGD / DP-Adam variants; see
// include/dpstats/training/gradient_release.hpp.
#include "dpstats/training/gradient_release.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/options.hpp"
#include "dpstats/moments/sensitivity.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "../mechanisms/lattice.hpp"

namespace dpstats::optimize {

const char* to_string(ClassifyOptimizer o) { return name_of(o).data(); }  // names are literals

namespace {
// A registry line: the optimizer, its summary; its own options are their declarations' `methods`
// (src/options.cpp, command "fit"), after the shared ones it reads (Adam's constants are not
// options a user gives).
MethodInfo line(ClassifyOptimizer o, std::string_view summary, bool adam) {
  std::vector<std::string_view> shared;
  if (is_private(o)) shared = {"epsilon", "clip"};
  if (adam && is_private(o)) shared.insert(shared.end(), {"beta1", "beta2", "adam_epsilon"});
  return declared_method("fit", name_of(o), summary, std::move(shared));
}
}  // namespace

std::span<const MethodInfo> classify_optimizers() {
  using O = ClassifyOptimizer;
  static const std::array<MethodInfo, 6> lines = {{
      line(O::adam, "non-private Adam (reference; no guarantee)", false),
      line(O::dp_sgd, "DP-SGD: Poisson-sampled clipped gradient sums with Gaussian noise", false),
      line(O::dp_adam, "DP-Adam: Adam on the noisy gradient (second moment by squaring)", true),
      line(O::dp_adam_debiased, "DP-Adam with the noise variance subtracted from v", true),
      line(O::dp_adam_jme, "DP-Adam whose second moment is released jointly (JME, lambda)", true),
      line(O::dp_adam_joint_clip, "DP-Adam with a joint clip of gradient and its square (tau)",
           true),
  }};
  return lines;
}

bool is_private(ClassifyOptimizer o) { return o != ClassifyOptimizer::adam; }
bool has_second_release(ClassifyOptimizer o) {
  return o == ClassifyOptimizer::dp_adam_jme || o == ClassifyOptimizer::dp_adam_joint_clip;
}

GradientRelease::GradientRelease(const GradientReleaseConfig& c) : c_(c) {
  require(c.parameters >= 1, "GradientRelease: the model needs at least one parameter");
  check_positive(c.clip, "clip");
  check_positive(c.expected_batch, "expected batch size");
  check_positive(c.lambda, "lambda (JME scaling)");
  check_positive(c.tau, "tau (joint-clip scaling)");
  if (!is_private(c.optimizer)) return;
  check_positive(c.noise_multiplier, "noise_multiplier");
  std::size_t dim = static_cast<std::size_t>(c.parameters);
  sensitivity_ = c.clip;
  if (c.optimizer == ClassifyOptimizer::dp_adam_jme) {
    moments::NoiseParameters p;
    p.method = moments::Method::lambda_jme;
    p.d = dim;
    p.form = moments::SecondMomentForm::diagonal;
    p.clip = c.clip;
    p.lambda = c.lambda;
    p.neighbouring = Neighbouring::add_remove;
    const auto s = moments::noise_scales(p, 1.0);  // zeta sqrt(1 + lambda zeta^2), docs/proofs/training.md
    sensitivity_ = s.s1;
    second_scale_ = moments::second_input_scale(p, s);
    dim *= 2;
  } else if (c.optimizer == ClassifyOptimizer::dp_adam_joint_clip) {
    second_scale_ = std::sqrt(c.tau);
    dim *= 2;
  }
  // The lattice of the header comment: one example's integer vector has l2 norm at most
  // 2^b (1 + e)^2 + sqrt(D)/2 (e covers the floating-point ghost norm and products, the square
  // JME's second part; sqrt(D)/2 the rounding), and the integer total times unit() is off by at
  // most max_batch ball 2^-50 (docs/proofs/training.md §4).
  require(c.max_batch >= 1 && c.max_batch < (Eigen::Index{1} << 40),
          fmt::format("max_batch must be in [1, 2^40), got {}", c.max_batch));
  ball_ = sensitivity_;
  bits_ = exact::ball_bits(c.max_batch);
  const double D = static_cast<double>(dim), e = (D + 32) * 0x1p-52;
  const double lattice = std::ldexp(1.0, bits_) * (1 + e) * (1 + e) + std::sqrt(D) / 2;
  sensitivity_ = lattice * unit() + static_cast<double>(c.max_batch) * ball_ * 0x1p-50;
  // Secure: 2^-20 more variance, so that the coupled multiplier of the lattice noise
  // (docs/proofs/accounting.md §9) is still >= noise_multiplier: (K z)^2 2^-20 >= tau^2 = 16
  // whenever K z >= 2^12, and K >= 2^20 on the lattice.
  const double inflate = c.noise == NoiseMode::secure ? 1 - 0x1p-20 : 1;
  const double rho = inflate / (2 * c.noise_multiplier * c.noise_multiplier);
  mech_ = GaussianMechanism::from_rho(sensitivity_, rho, dim, c.noise);
}

const GaussianMechanism& GradientRelease::mechanism() const {
  require(mech_.has_value(), "non-private adam has no mechanism");
  return *mech_;
}

double GradientRelease::noise_multiplier() const {
  return mech_ ? 1 / std::sqrt(2 * mech_->rho()) : 0.0;
}
LedgerEntry GradientRelease::ledger_entry(std::string purpose, double sampling_rate,
                                          int steps) const {
  // The mechanism's own entry (its sum's sensitivity and sigma; one unit is 1/B of the released
  // mean gradient), with the loss of `steps` Poisson-subsampled calls: the lattice noise is
  // stated at the continuous multiplier it couples to (proofs §9), which the variance margin
  // above keeps at the configured one.
  LedgerEntry e = in_output_units(mechanism().ledger_entry(std::move(purpose)),
                                  1 / c_.expected_batch);
  e.count = steps;
  // The mechanism's curve is that of one unsubsampled call: the accountants would count it in
  // place of the subsampled loss below (budget.cpp: a curve wins over an (epsilon, delta)-kind
  // loss), i.e. as if every step saw every row. The subsampled loss is the entry's loss.
  e.curve = {};
  if (mechanism().mode() == NoiseMode::fast_float) {
    e.loss = PrivacyLoss::subsampled_gaussian(sampling_rate, noise_multiplier());
    return e;
  }
  const double z = std::min(c_.noise_multiplier, mechanism().coupled_noise_multiplier());
  require(z > 0, fmt::format("noise_multiplier = {} is too small for the secure lattice",
                             c_.noise_multiplier));
  e.loss = PrivacyLoss::subsampled_discrete_gaussian(sampling_rate, z);
  return e;
}

double GradientRelease::first_noise_std() const {
  return mech_ ? mech_->sigma() / c_.expected_batch : 0.0;
}
double GradientRelease::second_noise_std() const {
  if (!mech_ || !has_second_release(c_.optimizer)) return 0;
  return mech_->sigma() / (second_scale_ * c_.expected_batch * c_.expected_batch);
}

namespace {
// min(1, z / v), and 0 for a non-finite norm (a diverged example contributes nothing: the weight
// is still a function of that example alone).
auto clip_weight(double z) {
  return [z](double v) { return !std::isfinite(v) ? 0.0 : v > z ? z / v : 1.0; };
}
}  // namespace

void GradientRelease::clip_weights(const BatchGradients& batch, Vector& w1, Vector& w2) const {
  const Eigen::Index n = batch.size();
  w2.resize(0);
  if (!is_private(c_.optimizer)) {
    w1 = Vector::Ones(n);
    return;
  }
  const double z = c_.clip;
  if (c_.optimizer == ClassifyOptimizer::dp_adam_joint_clip) {
    // ||(g, √τ g∘g)||² = ||g||² + τ Σ g^4 (docs/proofs/training.md).
    const Vector joint = (batch.norms2() + c_.tau * batch.norms4()).cwiseSqrt();
    w1 = joint.unaryExpr(clip_weight(z));
    w2 = w1;
    return;
  }
  const Vector norms = batch.norms2().cwiseSqrt();
  w1 = norms.unaryExpr(clip_weight(z));
  if (c_.optimizer == ClassifyOptimizer::dp_adam_jme) w2 = w1.cwiseAbs2();  // (c g)∘(c g)
}

Vector GradientRelease::draw_noise(Rng& rng) const {
  if (!mech_) return Vector();
  const Eigen::Index dim = static_cast<Eigen::Index>(mech_->dimension());
  Vector noise(dim);
  RandomBits bits(rng);
  const double g = mech_->granularity();
  for (Eigen::Index i = 0; i < dim; ++i) {
    const double y = mech_->apply(0.0, bits);  // g · Y exactly (secure), or sigma · N(0, 1)
    noise(i) = g > 0 ? std::round(y / g) : y;
  }
  return noise;
}

namespace {
// mechanism().apply(value) with the given noise (lattice units in secure mode).
void add_noise(const GaussianMechanism& mech, const Vector& value, const Vector& noise, Vector& out) {
  mechanisms_detail::check_vector(value, mech.dimension());
  require(noise.size() == value.size(), "GradientRelease: noise of the wrong dimension");
  out.resize(value.size());
  const double g = mech.granularity();
  for (Eigen::Index i = 0; i < value.size(); ++i)
    out(i) = g > 0 ? mechanisms_detail::release(value(i), g, static_cast<std::int64_t>(noise(i)))
                   : value(i) + noise(i);
}
}  // namespace

void GradientRelease::release(const BatchGradients& batch, Rng& rng, Vector& first,
                              Vector& second) const {
  release(batch, draw_noise(rng), first, second);
}

void GradientRelease::release(const BatchGradients& batch, const Vector& noise, Vector& first,
                              Vector& second) const {
  if (!is_private(c_.optimizer)) {
    Vector w1, w2;
    clip_weights(batch, w1, w2);
    batch.weighted_sum(w1, first);
    first /= static_cast<double>(std::max<Eigen::Index>(1, batch.size()));
    return;
  }
  normalise(noisy_sum(lattice_sum(batch), noise), first, second);
}

Vector GradientRelease::lattice_sum(const BatchGradients& batch) const {
  require(is_private(c_.optimizer), "non-private adam has no clipped lattice sum");
  require(batch.size() <= c_.max_batch,
          fmt::format("GradientRelease: a batch of {} rows, above max_batch = {} (the lattice "
                      "holds at most max_batch examples)", batch.size(), c_.max_batch));
  Vector w1, w2;
  clip_weights(batch, w1, w2);
  const double grid = std::ldexp(1.0, bits_) / ball_;
  const Vector f1 = w1 * grid;
  if (!has_second_release(c_.optimizer)) return batch.lattice_sum(f1);
  const Vector f2 = w2 * (second_scale_ * grid);
  return batch.lattice_sum(f1, &f2);
}

Vector GradientRelease::noisy_sum(const Vector& lattice, const Vector& noise) const {
  Vector out;
  add_noise(mechanism(), lattice * unit(), noise, out);
  return out;
}

void GradientRelease::normalise(const Vector& noisy, Vector& first, Vector& second) const {
  const Eigen::Index P = c_.parameters;
  const double m = c_.expected_batch;
  require(noisy.size() == (has_second_release(c_.optimizer) ? 2 * P : P),
          "GradientRelease: a noisy sum of the wrong dimension");
  first = noisy.head(P) / m;
  if (has_second_release(c_.optimizer)) second = noisy.tail(P) / (second_scale_ * m * m);
}

}  // namespace dpstats::optimize
