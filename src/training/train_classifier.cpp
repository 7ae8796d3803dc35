// Private training loop of DP-SGD / DP-Adam variants; see
// include/dpstats/training/train_classifier.hpp.
#include "dpstats/training/train_classifier.hpp"

#include <fmt/format.h>

#include <chrono>
#include <future>
#include <memory>
#include <cmath>
#include <limits>

#include "dpstats/error.hpp"
#include "dpstats/privacy/rdp.hpp"
#include "dpstats/random/bernoulli.hpp"

namespace dpstats::optimize {
namespace {

void validate(const ClassifyOptions& o, const ConstMatrixRef& X, const std::vector<int>& y,
              const Classifier& model) {
  check_data(X, "X");
  require(static_cast<Eigen::Index>(y.size()) == X.rows(),
          fmt::format("labels: need one per row of X ({}), got {}", X.rows(), y.size()));
  for (std::size_t i = 0; i < y.size(); ++i)
    require(y[i] >= 0 && y[i] < model.classes(), "label {} at row {} is outside 0..{}", y[i], i,
            model.classes() - 1);
  require(X.cols() == model.features(),
          fmt::format("X has {} columns, the model expects {}", X.cols(), model.features()));
  require(o.epochs >= 1, fmt::format("epochs must be >= 1, got {}", o.epochs));
  require(o.batch_size >= 1 && o.batch_size <= X.rows(),
          fmt::format("batch size must be in [1, {}] (the number of rows), got {}", X.rows(),
                      o.batch_size));
  check_positive(o.learning_rate, "learning rate");
  require(o.beta1 >= 0 && o.beta1 < 1, fmt::format("beta1 must be in [0, 1), got {}", o.beta1));
  require(o.beta2 >= 0 && o.beta2 < 1, fmt::format("beta2 must be in [0, 1), got {}", o.beta2));
  if (o.adam_epsilon) check_positive(*o.adam_epsilon, "adam epsilon");
  if (o.second_moment_floor)
    require(*o.second_moment_floor >= 0 && std::isfinite(*o.second_moment_floor),
            "second-moment floor must be >= 0");
  check_positive(o.loss_bound, "loss bound");
  require(o.threads >= 1, fmt::format("threads must be >= 1, got {}", o.threads));
  if (!is_private(o.optimizer)) return;
  require(o.epsilon.has_value() != o.noise_multiplier.has_value(),
          "give exactly one of epsilon (target) and noise_multiplier for a private optimizer");
  if (o.epsilon) check_epsilon(*o.epsilon, "epsilon");
  if (o.noise_multiplier) check_positive(*o.noise_multiplier, "noise_multiplier");
  check_delta_positive(o.delta, "delta");
  check_positive(o.loss_noise_multiplier, "loss noise multiplier");
}

std::size_t steps_per_epoch(int batch_size, Eigen::Index n) {
  return static_cast<std::size_t>(
      std::max<double>(1, std::round(static_cast<double>(n) / batch_size)));
}

// Σ_i min(loss_i, bound) over all rows, in chunks (evaluation memory stays O(chunk · width)).
double clipped_loss_sum(const Classifier& model, const ConstMatrixRef& X, const std::vector<int>& y,
                        double bound) {
  double total = 0;
  const Eigen::Index chunk = 8192;
  for (Eigen::Index b = 0; b < X.rows(); b += chunk) {
    const Eigen::Index n = std::min(chunk, X.rows() - b);
    const RowMatrix Z = model.logits(X.middleRows(b, n));
    for (Eigen::Index i = 0; i < n; ++i) {
      const double m = Z.row(i).maxCoeff();
      const double loss = m + std::log((Z.row(i).array() - m).exp().sum()) -
                          Z(i, y[static_cast<std::size_t>(b + i)]);
      total += std::min(loss, bound);
    }
  }
  return total;
}

double accuracy_chunked(const Classifier& model, const RowMatrix& X, const std::vector<int>& y) {
  double right = 0;
  const Eigen::Index chunk = 8192;
  for (Eigen::Index b = 0; b < X.rows(); b += chunk) {
    const Eigen::Index n = std::min(chunk, X.rows() - b);
    const std::vector<int> yb(y.begin() + b, y.begin() + b + n);
    right += model.accuracy(X.middleRows(b, n), yb) * static_cast<double>(n);
  }
  return right / static_cast<double>(X.rows());
}

GaussianMechanism loss_mechanism(const ClassifyOptions& o) {
  return GaussianMechanism::from_rho(o.loss_bound,
                                     1 / (2 * o.loss_noise_multiplier * o.loss_noise_multiplier), 1,
                                     o.noise);
}

}  // namespace

ClassifyAccount classify_account(const ClassifyOptions& o, Eigen::Index n, double noise_multiplier) {
  ClassifyAccount a;
  a.sampling_rate = static_cast<double>(o.batch_size) / static_cast<double>(n);
  a.steps = steps_per_epoch(o.batch_size, n) * static_cast<std::size_t>(o.epochs);
  RdpAccountant acc;
  acc.compose_subsampled_gaussian(a.sampling_rate, noise_multiplier, a.steps);
  acc.compose_gaussian(1 / std::sqrt(2 * loss_mechanism(o).rho()),
                       static_cast<std::size_t>(o.epochs));
  const auto e = acc.epsilon(o.delta);
  a.epsilon = e.epsilon;
  a.order = e.order;
  return a;
}

double classify_noise_multiplier(const ClassifyOptions& o, Eigen::Index n) {
  require(o.epsilon.has_value(), "classify_noise_multiplier needs a target epsilon");
  RdpAccountant loss_releases;
  loss_releases.compose_gaussian(1 / std::sqrt(2 * loss_mechanism(o).rho()),
                                 static_cast<std::size_t>(o.epochs));
  const double q = static_cast<double>(o.batch_size) / static_cast<double>(n);
  return calibrate_noise_multiplier(q, steps_per_epoch(o.batch_size, n) * o.epochs, *o.epsilon,
                                    o.delta, loss_releases);
}

Release<Classifier> train_classifier(Classifier model, const ConstMatrixRef& X,
                                     const std::vector<int>& y, const ClassifyOptions& o, Rng& rng,
                                     EvalSet test,
                                     const std::function<void(const EpochReport&)>& on_epoch) {
  validate(o, X, y, model);
  const bool priv = is_private(o.optimizer);
  const Eigen::Index N = X.rows(), P = model.num_parameters();
  const std::size_t per_epoch = steps_per_epoch(o.batch_size, N);
  GradientReleaseConfig rc;
  rc.optimizer = o.optimizer;
  rc.parameters = P;
  rc.clip = o.clip;
  rc.expected_batch = o.batch_size;
  rc.max_batch = N;  // Poisson sampling: any subset
  rc.lambda = o.lambda;
  rc.tau = o.tau;
  rc.noise = o.noise;
  if (priv) rc.noise_multiplier = o.epsilon ? classify_noise_multiplier(o, N) : *o.noise_multiplier;
  const GradientRelease rel(rc);
  const GaussianMechanism loss_mech = loss_mechanism(o);
  const bool adam = o.optimizer != ClassifyOptimizer::dp_sgd;
  const bool debias = o.optimizer == ClassifyOptimizer::dp_adam_debiased;
  const double adam_eps = o.adam_epsilon.value_or(
      (o.optimizer == ClassifyOptimizer::adam || o.optimizer == ClassifyOptimizer::dp_adam) ? 1e-8
                                                                                           : 1e-6);
  const double bias = debias ? rel.first_noise_std() * rel.first_noise_std() : 0.0;
  const bool pp = o.optimizer == ClassifyOptimizer::adam || o.optimizer == ClassifyOptimizer::dp_adam;
  const double floor = o.second_moment_floor.value_or(pp ? 0.0 : adam_eps);

  // Noise pipeline: the next step's noise is drawn on another thread (data-independent).
  const bool pipeline = priv && o.noise_thread;
  std::unique_ptr<Rng> noise_rng;
  if (pipeline) {
    if (rng.seeded()) noise_rng = std::make_unique<SeededRng>(rng.next_u64());
    else noise_rng = std::make_unique<SecureRng>();
  }
  std::future<Vector> next_noise;
  auto launch = [&] {
    Rng* r = noise_rng.get();
    next_noise = std::async(std::launch::async, [&rel, r] { return rel.draw_noise(*r); });
  };
  const std::size_t total_steps = per_epoch * static_cast<std::size_t>(o.epochs);
  if (pipeline) launch();

  Vector m1 = Vector::Zero(P), v = Vector::Zero(P), first, second, u;
  std::vector<Eigen::Index> rows;
  rows.reserve(static_cast<std::size_t>(o.batch_size) * 2);
  std::vector<double> train_loss, test_acc;
  std::size_t t = 0, total_examples = 0;
  double total_seconds = 0;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    std::size_t examples = 0;
    for (std::size_t s = 0; s < per_epoch; ++s) {
      ++t;
      rows.clear();
      {
        RandomBits bits(rng);
        for (Eigen::Index i = 0; i < N; ++i)
          if (bernoulli_rational(bits, static_cast<u128>(o.batch_size), static_cast<u128>(N)))
            rows.push_back(i);
      }
      examples += rows.size();
      Vector noise;
      if (pipeline) {
        noise = next_noise.get();
        if (t < total_steps) launch();
      } else {
        noise = rel.draw_noise(rng);
      }
      const BatchGradients batch(model, X, y, rows, o.threads);
      rel.release(batch, noise, first, second);
      if (!adam) {
        model.parameters() -= o.learning_rate * first;
        continue;
      }
      if (has_second_release(o.optimizer)) u = second;
      else u = first.cwiseAbs2();
      m1 = o.beta1 * m1 + (1 - o.beta1) * first;
      v = o.beta2 * v + (1 - o.beta2) * u;
      const double c1 = 1 - std::pow(o.beta1, static_cast<double>(t));
      const double c2 = 1 - std::pow(o.beta2, static_cast<double>(t));
      model.parameters().array() -=
          o.learning_rate * (m1.array() / c1) /
          ((v.array() / c2 - bias).max(floor).sqrt() + adam_eps);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total_seconds += seconds;
    total_examples += examples;
    EpochReport r;
    r.epoch = epoch;
    r.seconds = seconds;
    r.examples = examples;
    const double loss_sum = clipped_loss_sum(model, X, y, o.loss_bound);
    r.train_loss = (priv ? loss_mech.apply(loss_sum, rng) : loss_sum) / static_cast<double>(N);
    train_loss.push_back(r.train_loss);
    if (test.X && test.y) {
      r.test_accuracy = accuracy_chunked(model, *test.X, *test.y);
      test_acc.push_back(*r.test_accuracy);
    }
    if (on_epoch) on_epoch(r);
  }

  Release<Classifier> out;
  out.seeded = rng.seeded();
  out.noise = o.noise;
  out.privacy.neighbouring = Neighbouring::add_remove;
  out.privacy.unit = PrivacyUnit::record;
  auto& d = out.diagnostics;
  d["optimizer"] = to_string(o.optimizer);
  d["model"] = to_string(model.kind());
  d["parameters"] = P;
  d["epochs"] = o.epochs;
  d["steps"] = t;
  d["expected_batch_size"] = o.batch_size;
  d["sampling_rate"] = static_cast<double>(o.batch_size) / static_cast<double>(N);
  d["learning_rate"] = o.learning_rate;
  d["adam_epsilon"] = adam_eps;
  if (adam) d["second_moment_floor"] = floor;
  d["train_loss"] = train_loss;
  d["train_loss_clip"] = o.loss_bound;
  if (!test_acc.empty()) {
    d["test_accuracy"] = test_acc;
    d["test_rows"] = test.X->rows();
  }
  d["examples_per_second"] = total_seconds > 0 ? total_examples / total_seconds : 0.0;
  d["train_seconds"] = total_seconds;
  if (priv) {
    const double z_eff = rel.noise_multiplier();
    const auto acct = classify_account(o, N, z_eff);
    out.privacy.epsilon = acct.epsilon;
    out.privacy.delta = o.delta;
    out.privacy.certified = o.noise == NoiseMode::secure;
    d["clip"] = o.clip;
    d["noise_multiplier"] = z_eff;
    d["sensitivity"] = rel.sensitivity();
    d["first_noise_std"] = rel.first_noise_std();
    if (has_second_release(o.optimizer)) d["second_noise_std"] = rel.second_noise_std();
    if (o.optimizer == ClassifyOptimizer::dp_adam_jme) d["lambda"] = o.lambda;
    if (o.optimizer == ClassifyOptimizer::dp_adam_joint_clip) d["tau"] = o.tau;
    if (debias) d["debias"] = bias;
    d["rdp_order"] = acct.order;
    d["accountant"] = "Poisson-subsampled Gaussian RDP (MTZ19, integer orders 2..256), improved "
                      "conversion; add/remove neighbours";
    auto e = rel.mechanism().ledger_entry(
        fmt::format("{}: Poisson(q = {}) clipped gradient sum{} (loss per call before "
                    "subsampling; the run is accounted by subsampled RDP, see privacy)",
                    to_string(o.optimizer), static_cast<double>(o.batch_size) / static_cast<double>(N),
                    has_second_release(o.optimizer) ? " and second-moment sum" : ""));
    e.count = static_cast<int>(t);
    out.ledger.push_back(e);
    auto l = loss_mech.ledger_entry("clipped training-loss sum (one per epoch)");
    l.count = o.epochs;
    out.ledger.push_back(l);
  } else {
    out.privacy.epsilon = std::numeric_limits<double>::infinity();
    out.privacy.delta = 0;
    out.privacy.certified = false;
  }
  out.estimate = std::move(model);
  return out;
}

}  // namespace dpstats::optimize
