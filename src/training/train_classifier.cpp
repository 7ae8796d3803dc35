// Private training of DP-SGD / DP-Adam variants on the seam; see
// include/dpstats/training/train_classifier.hpp and docs/proofs/training.md.
#include "dpstats/training/train_classifier.hpp"

#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <numeric>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/random/bernoulli.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/exact/exact_sum.hpp"
#include "feature_map.hpp"
#include "keyed_sample.hpp"

namespace dpstats::optimize {
namespace {

void validate_privacy(const ClassifyOptions& o) {
  if (!is_private(o.optimizer)) return;
  validate(o.privacy, DeltaRule::positive);
  if (o.noise_multiplier) check_positive(*o.noise_multiplier, "noise_multiplier");
  check_positive(o.loss_noise_multiplier, "loss_noise_multiplier");
  require(std::isfinite(o.clip) && o.clip > 0,
          fmt::format("clip: the per-example gradient clip of the model on the scaled features "
                      "x / feature_scale must be a finite number > 0, got {} (1 clips the "
                      "logistic gradient of a row with ||x|| <= feature_scale by at most 2x)",
                      o.clip));
  if (o.feature_scale) {
    require(std::isfinite(*o.feature_scale) && *o.feature_scale > 0,
            fmt::format("feature_scale: the public scale the features are divided by must be a "
                        "finite number > 0 (e.g. the largest plausible row norm), got {}",
                        *o.feature_scale));
  } else if (o.scale_share) {
    require(*o.scale_share > 0 && *o.scale_share <= 0.5,
            fmt::format("scale_share: the fraction of epsilon spent on estimating "
                        "feature_scale must be in (0, 0.5], got {}", *o.scale_share));
  }
}

void validate_options(const ClassifyOptions& o, int ranks) {
  validate(o.run);
  // Several ranks (issue 18): the private optimizers' sums are exact lattice sums; non-private
  // Adam's unclipped gradient sum has no lattice (no norm bound), so it stays on one process.
  require(ranks == 1 || is_private(o.optimizer),
          fmt::format("optimizer adam (non-private) does not run on {} ranks: its unclipped "
                      "gradient sum has no exact lattice form; run it on one rank or choose a "
                      "private optimizer", ranks));
  require(o.epochs >= 1, fmt::format("epochs must be >= 1, got {}", o.epochs));
  if (o.learning_rate) check_positive(*o.learning_rate, "learning_rate");
  require(o.beta1 >= 0 && o.beta1 < 1, fmt::format("beta1 must be in [0, 1), got {}", o.beta1));
  require(o.beta2 >= 0 && o.beta2 < 1, fmt::format("beta2 must be in [0, 1), got {}", o.beta2));
  if (o.adam_epsilon) check_positive(*o.adam_epsilon, "adam_epsilon");
  if (o.second_moment_floor)
    require(*o.second_moment_floor >= 0 && std::isfinite(*o.second_moment_floor),
            fmt::format("second_moment_floor must be a finite number >= 0, got {}",
                        *o.second_moment_floor));
  check_positive(o.loss_bound, "loss_bound");
  if (o.n_public)
    require(*o.n_public >= 1 && *o.n_public < (std::int64_t{1} << 39),
            fmt::format("n_public: the public number of training rows must be in [1, 2^39), got "
                        "{}", *o.n_public));
  require(!is_private(o.optimizer) || o.n_public.has_value(),
          "n_public is required for a private optimizer: under add/remove neighbouring the "
          "number of rows is private, so the sampling rate batch_size / n_public, the number of "
          "steps and the train loss's divisor come from a public row count (the dataset's "
          "published size, or a round number near it; the table may hold up to 2 x n_public rows)");
  if (o.n_public)
    require(o.batch_size >= 1 && o.batch_size <= *o.n_public,
            fmt::format("batch_size must be in [1, n_public = {}], got {}", *o.n_public,
                        o.batch_size));
  if (o.holdout) {
    check_holdout(*o.holdout, o.loss_bound);
    require(o.holdout_share > 0 && o.holdout_share <= 0.5,
            fmt::format("holdout_share: the share of rho for the held-out loss must be in "
                        "(0, 0.5], got {}", format_number(o.holdout_share)));
  }
  validate_privacy(o);
}

// This rank's rows (a local failure goes through all_or_none).
void validate_data(const ConstMatrixRef& X, const std::vector<int>& y, const Classifier& model) {
  check_data(X, "X");
  require(static_cast<Eigen::Index>(y.size()) == X.rows(),
          "labels: need one per row of X (the counts are not shown)");
  for (std::size_t i = 0; i < y.size(); ++i)  // the label and its row are data: not shown
    require(y[i] >= 0 && y[i] < model.classes(),
            fmt::format("labels: a label is outside 0..{} (classes = {}; the row and value are "
                        "not shown)", model.classes() - 1, model.classes()));
  require(X.cols() == model.features(),
          fmt::format("X has {} columns, the model expects {}", X.cols(), model.features()));
}

// What every rank must agree on before the first collective: the options (exact hex floats),
// the model's shape and start point (a checksum of its parameters' bits) and the columns.
std::string fingerprint(const ClassifyOptions& o, const Classifier& m, Eigen::Index d) {
  std::uint64_t sum = 0;
  for (Eigen::Index j = 0; j < m.num_parameters(); ++j)
    sum = sum * 0x100000001b3ULL + std::bit_cast<std::uint64_t>(m.parameters()(j));
  Fingerprint f("classify");
  visit_fields(o, f);
  f("model", m.kind());
  f("features", m.features());
  f("hidden", m.hidden());
  f("classes", m.classes());
  f("parameters", m.num_parameters());
  f("start_checksum", sum);
  f("d", d);
  return f.text();
}

// The default learning rate: T steps of Adam move each parameter by about T lr (its update is
// normalised per coordinate), so short runs (small tables) get a larger rate; a public rule.
constexpr const char* kLearningRateRule =
    "max(1e-3, 0.5 / steps): Adam moves each parameter about steps x lr, in unit-scale features";
double default_learning_rate(std::size_t steps) {
  return std::max(1e-3, 0.5 / static_cast<double>(std::max<std::size_t>(1, steps)));
}

// The public count the plan trains on: n_public, less the expected held-out share when a
// holdout is asked for (the split is a keyed hash, so the kept count is private); adam without
// n_public: the training rows.
Eigen::Index public_training_rows(const ClassifyOptions& o, Eigen::Index rows) {
  if (!o.n_public) return rows;
  const double kept = static_cast<double>(*o.n_public) * (1 - o.holdout.value_or(0));
  return std::max<Eigen::Index>(1, static_cast<Eigen::Index>(std::llround(kept)));
}

std::size_t steps_per_epoch(int batch_size, Eigen::Index n) {
  return static_cast<std::size_t>(
      std::max<double>(1, std::round(static_cast<double>(n) / batch_size)));
}

int total_steps(const ClassifyOptions& o, Eigen::Index n) {
  const std::size_t steps = steps_per_epoch(o.batch_size, n) * static_cast<std::size_t>(o.epochs);
  require(steps <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
          fmt::format("steps: at most 2^31 - 1 training steps, got {}", steps));
  return static_cast<int>(steps);
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

// The per-epoch loss release on the box lattice of lattice_rows(n) rows: each example's clipped
// loss min(loss_i, L) is an integer in [0, Q] (Q = exact::box_quantum(lattice_rows(n)), public),
// so the integer sum has sensitivity Q under add/remove; multiplier loss_noise_multiplier.
GaussianMechanism loss_mechanism(const ClassifyOptions& o, Eigen::Index n) {
  return GaussianMechanism::from_rho(exact::box_quantum(lattice_rows(n)),
                                     1 / (2 * o.loss_noise_multiplier * o.loss_noise_multiplier),
                                     1, o.run.noise);
}

// A release of Gaussian mechanism `m` (its own entry `e`), `count` times, stated as mu-GDP with
// mu = 1 / (coupled noise multiplier): exact for the continuous Gaussian (fast_float), and the
// coupled form of the lattice Gaussian (secure, docs/proofs/accounting.md §9), which both the
// pld and the rdp accountants count.
LedgerEntry gdp_entry(const GaussianMechanism& m, const std::string& purpose, int count) {
  LedgerEntry e = m.gdp_ledger_entry(purpose);
  e.count = count;
  return e;
}

// The per-epoch loss releases: the entry of the mechanism `m` that draws them, `epochs` times
// (one lattice step, 1 of its sensitivity Q, is L / Q of the loss sum).
LedgerEntry loss_entry(const ClassifyOptions& o, const GaussianMechanism& m) {
  return in_output_units(
      gdp_entry(m, "clipped training-loss sum on its lattice (one per epoch)", o.epochs),
      o.loss_bound / m.sensitivity());
}

// The held-out rows' loss release (solvers/holdout.hpp): the Gaussian on the clipped-loss sum
// (sensitivity loss_bound) at holdout_share x the target's rho, stated as mu-GDP like the epochs'.
std::optional<HoldoutLoss> holdout_loss(const ClassifyOptions& o) {
  if (!o.holdout || !is_private(o.optimizer)) return std::nullopt;
  const double rho = o.holdout_share * epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta);
  return HoldoutLoss::gaussian(o.loss_bound, rho, o.run.noise);
}

// Every entry of a run on n (public) rows of d features (d = 0: the global feature scale, with
// one_unit) with `steps` and the loss releases `loss`: the feature plan the release would take
// (none when it abstains: the release charges nothing).
Ledger run_entries(const ClassifyOptions& o, Eigen::Index n, const LedgerEntry& steps,
                   const LedgerEntry& loss, Eigen::Index d) {
  Ledger l = feature_entries(o, plan_features(o, n, d), d);
  l.push_back(steps);
  l.push_back(loss);
  if (const auto h = holdout_loss(o))
    l.push_back(gdp_entry(*h->gaussian_mechanism(), h->ledger_entry().purpose, 1));
  return l;
}

LedgerEntry search_step_entry(const ClassifyOptions& o, Eigen::Index n, double z, bool discrete) {
  const double q = static_cast<double>(o.batch_size) / static_cast<double>(n);
  return {"gaussian", "Poisson-subsampled clipped gradient step", o.clip, z * o.clip,
          discrete ? PrivacyLoss::subsampled_discrete_gaussian(q, z)
                   : PrivacyLoss::subsampled_gaussian(q, z),
          total_steps(o, n)};
}

double epsilon_of(const Ledger& l, Accountant a, double delta) {
  Budget b(PrivacyLoss::approximate(1e12, delta), a);
  for (const auto& e : l) b.spend(e);
  return b.spent_epsilon_delta().epsilon;
}

// The account of `ledger` (steps already built): the tighter of pld and rdp. Both count the
// lattice steps of secure mode: rdp on the integer orders (docs/proofs/accounting.md §8), pld as
// the continuous Gaussian they couple to, plus the coupling slack (§9).
ClassifyAccount account_of(const ClassifyOptions& o, Eigen::Index n, const Ledger& ledger) {
  ClassifyAccount a;
  a.sampling_rate = static_cast<double>(o.batch_size) / static_cast<double>(n);
  a.steps = static_cast<std::size_t>(total_steps(o, n));
  a.ledger = ledger;
  a.rdp_epsilon = epsilon_of(ledger, Accountant::rdp, o.privacy.delta);
  a.pld_epsilon = epsilon_of(ledger, Accountant::pld, o.privacy.delta);
  a.accountant = a.pld_epsilon <= a.rdp_epsilon ? Accountant::pld : Accountant::rdp;
  a.epsilon = std::min(a.pld_epsilon, a.rdp_epsilon);
  return a;
}

// plan: every mechanism and the ledger from public values (N, P, options) only.
struct ClassifyPlan {
  Eigen::Index n = 0;        // the public row count (n_public; adam without it: the rows)
  Eigen::Index lattice = 0;  // lattice_rows(n): the most rows the sums' lattices allow
  std::size_t per_epoch = 0, steps = 0;
  double sampling_rate = 0;
  std::optional<GradientRelease> release;  // (adam: the unclipped, noiseless mean gradient)
  std::optional<GaussianMechanism> loss;   // empty for adam
  ClassifyAccount account;                 // private optimizers
  double adam_epsilon = 0, floor = 0, bias = 0;
  double learning_rate = 0;
  FeaturePlan features;  // the map u(x) the model trains on (feature_map.hpp)
  std::optional<HoldoutLoss> holdout;  // the held-out rows' loss release (private optimizers)
};

GradientReleaseConfig release_config(const ClassifyOptions& o, Eigen::Index n, Eigen::Index p) {
  GradientReleaseConfig rc;
  rc.optimizer = o.optimizer;
  rc.parameters = p;
  rc.clip = o.clip;
  rc.expected_batch = o.batch_size;
  rc.max_batch = lattice_rows(n);  // Poisson sampling: any subset of a table of at most this
  rc.lambda = o.lambda;
  rc.tau = o.tau;
  rc.noise = o.run.noise;
  return rc;
}

ClassifyPlan plan_classify(Eigen::Index n, Eigen::Index d, Eigen::Index p,
                           const ClassifyOptions& o);

}  // namespace

std::int64_t lattice_rows(std::int64_t n_public) {
  return std::min<std::int64_t>(std::max<std::int64_t>(2 * n_public, (1 << 22) - 1),
                                (std::int64_t{1} << 40) - 1);
}

ClassifyAccount classify_account(const ClassifyOptions& o, Eigen::Index n, double z,
                                 Eigen::Index d) {
  const bool discrete = o.run.noise == NoiseMode::secure;
  return account_of(o, n, run_entries(o, n, search_step_entry(o, n, z, discrete),
                                      loss_entry(o, loss_mechanism(o, n)), d));
}

double classify_noise_multiplier(const ClassifyOptions& o, Eigen::Index n, Eigen::Index d) {
  const double target = o.privacy.epsilon;
  const bool discrete = o.run.noise == NoiseMode::secure;
  // The rdp account of the run (cheap) brackets from above; the tighter account (pld included)
  // then meets the target at a smaller z.
  const LedgerEntry loss = loss_entry(o, loss_mechanism(o, n));
  auto rdp_at = [&](double z) {
    return epsilon_of(run_entries(o, n, search_step_entry(o, n, z, discrete), loss, d),
                      Accountant::rdp, o.privacy.delta);
  };
  double hi = 1;
  while (rdp_at(hi) > target) {
    hi *= 2;
    require(hi <= 1e4, fmt::format("epsilon: no noise multiplier <= 1e4 reaches epsilon = {} at "
                                   "delta = {}", target, o.privacy.delta));
  }
  double lo = hi / 2;
  while (lo > 1e-2 && rdp_at(lo) <= target) lo /= 2, hi = lo * 2;
  while (hi - lo > 1e-4 * hi) (rdp_at(0.5 * (lo + hi)) <= target ? hi : lo) = 0.5 * (lo + hi);
  auto eps_at = [&](double z) { return classify_account(o, n, z, d).epsilon; };
  lo = 0.7 * hi;  // the PLD saves well under 30% of the noise
  while (lo > 1e-2 && eps_at(lo) <= target) hi = lo, lo *= 0.7;
  while (hi - lo > 1e-4 * hi) {  // eps_at(lo) > target >= eps_at(hi)
    const double mid = 0.5 * (lo + hi);
    (eps_at(mid) <= target ? hi : lo) = mid;
  }
  return hi;
}

namespace {

ClassifyPlan plan_classify(Eigen::Index n, Eigen::Index d, Eigen::Index p,
                           const ClassifyOptions& o) {
  ClassifyPlan plan;
  plan.n = n;
  plan.lattice = lattice_rows(n);
  plan.features = plan_features(o, n, d);
  plan.per_epoch = steps_per_epoch(o.batch_size, n);
  plan.steps = static_cast<std::size_t>(total_steps(o, n));
  plan.learning_rate = o.learning_rate.value_or(default_learning_rate(plan.steps));
  plan.sampling_rate = static_cast<double>(o.batch_size) / static_cast<double>(n);
  const bool pp = o.optimizer == ClassifyOptimizer::adam || o.optimizer == ClassifyOptimizer::dp_adam;
  plan.adam_epsilon = o.adam_epsilon.value_or(pp ? 1e-8 : 1e-6);
  plan.floor = o.second_moment_floor.value_or(pp ? 0.0 : plan.adam_epsilon);
  GradientReleaseConfig rc = release_config(o, n, p);
  if (!is_private(o.optimizer)) {
    plan.release.emplace(rc);
    return plan;
  }
  if (plan.features.source == FeatureSource::unusable) return plan;  // abstains, charging nothing
  rc.noise_multiplier =
      o.noise_multiplier ? *o.noise_multiplier : classify_noise_multiplier(o, n, d);
  plan.release.emplace(rc);
  plan.loss.emplace(loss_mechanism(o, n));
  plan.holdout = holdout_loss(o);
  const GradientRelease& rel = *plan.release;
  if (o.optimizer == ClassifyOptimizer::dp_adam_debiased)
    plan.bias = rel.first_noise_std() * rel.first_noise_std();
  const LedgerEntry steps = rel.ledger_entry(
      fmt::format("{}: Poisson(q = {}) clipped gradient sum{}", to_string(o.optimizer),
                  plan.sampling_rate,
                  has_second_release(o.optimizer) ? " and second-moment sum" : ""),
      plan.sampling_rate, static_cast<int>(plan.steps));
  plan.account = account_of(o, n, run_entries(o, n, steps, loss_entry(o, *plan.loss), d));
  return plan;
}

// The run: Poisson batches, the gradient release, the optimizer's update, the epoch loss. On
// several ranks (comm) each rank holds rows [offset, offset + local) of the N global rows: the
// batch of step t is the keyed sample of the global ids (keyed_sample.hpp, key drawn on rank 0),
// each rank adds its rows' clipped gradients on the lattice, the integer sums (and the batch
// size) are added exactly over ranks, rank 0 adds the noise and broadcasts the noisy sum, and
// every rank makes the same update: one trajectory, the single process's.
class Trainer {
 public:
  Trainer(Classifier& model, const ConstMatrixRef& X, const std::vector<int>& y,
          const ClassifyOptions& o, const ClassifyPlan& plan, Rng& rng, const ShardRows& rows)
      : model_(model), X_(X), y_(y), o_(o), plan_(plan), rng_(rng),
        comm_(comm_or_single(o.run.comm)), shard_(rows) {
    const Eigen::Index P = model.num_parameters();
    m1_ = Vector::Zero(P);
    v_ = Vector::Zero(P);
    rows_.reserve(static_cast<std::size_t>(o.batch_size) * 2);
    const auto key = on_root(comm_, [&] {
      return std::vector<std::uint64_t>{rng.next_u64(), rng.next_u64()};
    });
    // The rate is m / n with n the public row count (issue 28), whatever the table holds.
    sampler_ = std::make_unique<KeyedPoissonSample>(key[0], key[1], plan.sampling_rate);
    if (is_private(o.optimizer) && o.noise_thread && comm_.rank() == 0) {
      if (rng.seeded()) noise_rng_ = std::make_unique<SeededRng>(rng.next_u64());
      else noise_rng_ = std::make_unique<SecureRng>();
      launch();
    }
  }
  EpochReport epoch(int e, EvalSet test);
  std::size_t steps() const { return t_; }

 private:
  void launch() {
    const GradientRelease* rel = &*plan_.release;
    Rng* r = noise_rng_.get();
    next_noise_ = std::async(std::launch::async, [rel, r] { return rel->draw_noise(*r); });
  }
  Vector next_noise();  // rank 0 only
  void step();
  double loss_sum();

  Classifier& model_;
  ConstMatrixRef X_;
  const std::vector<int>& y_;
  const ClassifyOptions& o_;
  const ClassifyPlan& plan_;
  Rng& rng_;
  Communicator& comm_;
  ShardRows shard_;
  std::unique_ptr<KeyedPoissonSample> sampler_;
  std::unique_ptr<Rng> noise_rng_;
  std::future<Vector> next_noise_;
  Vector m1_, v_, first_, second_, u_;
  std::vector<Eigen::Index> rows_;
  std::size_t t_ = 0, batch_rows_ = 0;
};

Vector Trainer::next_noise() {
  if (!noise_rng_) return plan_.release->draw_noise(rng_);
  Vector noise = next_noise_.get();
  if (t_ < plan_.steps) launch();
  return noise;
}

void Trainer::step() {
  ++t_;
  sampler_->sample(t_, shard_.offset, X_.rows(), rows_);
  const BatchGradients batch(model_, X_, y_, rows_, o_.run.threads);
  if (!is_private(o_.optimizer)) {  // one process (validate_options)
    plan_.release->release(batch, Vector(), first_, second_);
    batch_rows_ = rows_.size();
  } else {
    const GradientRelease& rel = *plan_.release;
    Vector lattice = rel.lattice_sum(batch);
    const Eigen::Index D = lattice.size();
    lattice.conservativeResize(D + 1);
    lattice(D) = static_cast<double>(rows_.size());
    allreduce_exact(comm_, lattice);  // integers: any split of the batch, the same total
    batch_rows_ = static_cast<std::size_t>(lattice(D));
    const Vector noisy =
        on_root(comm_, [&] { return rel.noisy_sum(lattice.head(D), next_noise()); });
    rel.normalise(noisy, first_, second_);
  }
  if (o_.optimizer == ClassifyOptimizer::dp_sgd) {
    model_.parameters() -= plan_.learning_rate * first_;
    return;
  }
  if (has_second_release(o_.optimizer)) u_ = second_;
  else u_ = first_.cwiseAbs2();
  m1_ = o_.beta1 * m1_ + (1 - o_.beta1) * first_;
  v_ = o_.beta2 * v_ + (1 - o_.beta2) * u_;
  const double c1 = 1 - std::pow(o_.beta1, static_cast<double>(t_));
  const double c2 = 1 - std::pow(o_.beta2, static_cast<double>(t_));
  model_.parameters().array() -=
      plan_.learning_rate * (m1_.array() / c1) /
      ((v_.array() / c2 - plan_.bias).max(plan_.floor).sqrt() + plan_.adam_epsilon);
}

// Σ_i min(loss_i, L) over every rank's rows, exactly: each clipped loss on the box lattice of
// at most plan.lattice rows (Q = exact::box_quantum(plan.lattice), a term in [0, Q]; a
// non-finite loss counts as L), added as integers over ranks. Returns the integer sum (lattice
// units: times L / Q for nats).
double Trainer::loss_sum() {
  const double L = o_.loss_bound, Q = exact::box_quantum(plan_.lattice), scale = Q / L;
  const Eigen::Index chunk = 4096, local = X_.rows();
  std::uint64_t word = 0;
  std::vector<Eigen::Index> rows;
  for (Eigen::Index b = 0; b < local; b += chunk) {
    const Eigen::Index n = std::min(chunk, local - b);
    rows.resize(static_cast<std::size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)] = b + i;
    const BatchGradients batch(model_, X_, y_, rows, o_.run.threads);  // per-example losses
    for (Eigen::Index i = 0; i < n; ++i) {
      const double loss = batch.losses()(i);
      exact::add(word, exact::box_value(std::isnan(loss) ? L : loss, 0.0, L, scale));
    }
  }
  Vector total(1);
  total(0) = static_cast<double>(exact::total(word, local));
  allreduce_exact(comm_, total);
  return total(0);
}

EpochReport Trainer::epoch(int e, EvalSet test) {
  const auto start = std::chrono::steady_clock::now();
  const std::size_t before = t_;
  std::size_t examples = 0;
  while (t_ < before + plan_.per_epoch) {
    step();
    examples += batch_rows_;
  }
  EpochReport r;
  r.epoch = e;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.examples = examples;
  const double K = loss_sum(), L = o_.loss_bound, Q = exact::box_quantum(plan_.lattice);
  // The plan's loss mechanism (sensitivity Q on the lattice) draws the noise and wrote the
  // ledger entry; the mean divides by the public n.
  const double noisy = plan_.loss ? on_root(comm_, [&] { return plan_.loss->apply(K, rng_); }) : K;
  r.train_loss = noisy * (L / Q) / static_cast<double>(plan_.n);
  if (test.X && test.y) r.test_accuracy = accuracy_chunked(model_, *test.X, *test.y);
  return r;
}

nlohmann::json plan_diagnostics(const ClassifyOptions& o, const ClassifyPlan& plan,
                                const Classifier& model) {
  nlohmann::json d;
  d["optimizer"] = to_string(o.optimizer);
  d["model"] = to_string(model.kind());
  d["parameters"] = model.num_parameters();
  d["epochs"] = o.epochs;
  d["n_public"] = o.n_public.value_or(plan.n);
  if (o.n_public && o.holdout) d["n_train_public"] = plan.n;  // n_public x (1 - holdout)
  d["n_source"] = o.n_public ? "given (n_public: the sampling rate, the steps and the train "
                               "loss's divisor follow from it)"
                             : "the row count (non-private adam)";
  d["steps"] = plan.steps;
  d["expected_batch_size"] = o.batch_size;
  d["sampling_rate"] = plan.sampling_rate;
  d["learning_rate"] = plan.learning_rate;
  if (!o.learning_rate) d["learning_rate_rule"] = kLearningRateRule;
  d["adam_epsilon"] = plan.adam_epsilon;
  if (o.optimizer != ClassifyOptimizer::dp_sgd) d["second_moment_floor"] = plan.floor;
  d["train_loss_clip"] = o.loss_bound;
  if (!plan.loss) return d;
  const GradientRelease& rel = *plan.release;
  d["clip"] = o.clip;
  d["noise_multiplier"] = rel.noise_multiplier();
  d["sensitivity"] = rel.sensitivity();
  d["first_noise_std"] = rel.first_noise_std();
  if (has_second_release(o.optimizer)) d["second_noise_std"] = rel.second_noise_std();
  if (o.optimizer == ClassifyOptimizer::dp_adam_jme) d["lambda"] = o.lambda;
  if (o.optimizer == ClassifyOptimizer::dp_adam_joint_clip) d["tau"] = o.tau;
  if (o.optimizer == ClassifyOptimizer::dp_adam_debiased) d["debias"] = plan.bias;
  const ClassifyAccount& a = plan.account;
  d["accountant"] = to_string(a.accountant);
  d["epsilon_rdp"] = a.rdp_epsilon;
  d["epsilon_pld"] = a.pld_epsilon;
  d["accounting"] = o.run.noise == NoiseMode::secure
                        ? "tighter of the PLD (pessimistic, with the lattice-to-continuous "
                          "coupling slack) and the integer-order RDP accounts of the same ledger "
                          "(docs/proofs/accounting.md §8-§9)"
                        : "tighter of the PLD (pessimistic) and RDP accounts of the same ledger "
                          "(continuous Gaussian, fast_float: research only)";
  return d;
}

// The epochs: each one's private training loss (and test accuracy of the raw-feature model
// when a public test set is given), then the run's diagnostics. No timing and no batch total:
// their product is the exact number of examples the Poisson batches held (issue 28).
void run_epochs(Trainer& trainer, const Classifier& model, const FeatureMap& f,
                const ClassifyOptions& o, EvalSet test,
                const std::function<void(const EpochReport&)>& on_epoch, nlohmann::json& d) {
  std::vector<double> train_loss, test_acc;
  for (int e = 1; e <= o.epochs; ++e) {
    EpochReport r = trainer.epoch(e, {});
    if (test.X && test.y) {
      Classifier raw = model;  // the classifier of the raw features
      fold_feature_map(raw, f);
      r.test_accuracy = accuracy_chunked(raw, *test.X, *test.y);
      test_acc.push_back(*r.test_accuracy);
    }
    train_loss.push_back(r.train_loss);
    if (on_epoch) on_epoch(r);  // the only reader of the epoch's timing and batch total
  }
  d["train_loss"] = train_loss;
  if (!test_acc.empty()) {
    d["test_accuracy"] = test_acc;
    d["test_rows"] = test.X->rows();
  }
}

// This rank's rows split into the training rows and the held-out rows (solvers/holdout.hpp: a
// row by its values and label, under a key drawn on rank 0). Without a holdout nothing is drawn
// or copied.
struct Labelled {
  RowMatrix X;
  std::vector<int> y;
};
struct HeldOut {
  bool active = false;
  Labelled train, held;
};

HeldOut hold_out(const ConstMatrixRef& X, const std::vector<int>& y, const ClassifyOptions& o,
                 Rng& rng) {
  HeldOut h;
  if (!o.holdout) return h;
  h.active = true;
  const HoldoutSplit::Rows split = HoldoutSplit(*o.holdout, rng, o.run.comm).rows(
      X, [&y](Eigen::Index i) { return y[static_cast<std::size_t>(i)]; });
  auto take = [&](const std::vector<Eigen::Index>& rows, Labelled& l) {
    l.X.resize(static_cast<Eigen::Index>(rows.size()), X.cols());
    for (std::size_t k = 0; k < rows.size(); ++k) {
      l.X.row(static_cast<Eigen::Index>(k)) = X.row(rows[k]);
      l.y.push_back(y[static_cast<std::size_t>(rows[k])]);
    }
  };
  take(split.keep, h.train);
  take(split.held, h.held);
  return h;
}

// The released model's private mean clipped loss on the held-out rows (every rank's), by the
// plan's mechanism; adam (non-private): the exact mean.
nlohmann::json held_out_loss(const Classifier& model, const HeldOut& split,
                             const ClassifyPlan& plan, const ClassifyOptions& o, Rng& rng) {
  std::vector<Eigen::Index> rows(static_cast<std::size_t>(split.held.X.rows()));
  std::iota(rows.begin(), rows.end(), Eigen::Index{0});
  const BatchGradients batch(model, split.held.X, split.held.y, rows, o.run.threads);
  const std::vector<double> losses(batch.losses().data(),
                                   batch.losses().data() + batch.losses().size());
  nlohmann::json j;
  if (plan.holdout) {  // the held-out count is private: a public expected count and lattice
    j = plan.holdout->release(losses, rng, o.run.comm,
                              {*o.n_public, *o.holdout, plan.lattice});
  } else {
    double sum = 0;
    for (double v : losses) sum += std::min(v, o.loss_bound);
    j = {{"units", losses.size()}, {"loss_bound", o.loss_bound},
         {"loss", losses.empty() ? nlohmann::json(nullptr) : nlohmann::json(sum / losses.size())},
         {"private", false}};
  }
  j["fraction"] = *o.holdout;
  j["unit"] = "row";
  j["loss_name"] = "softmax cross-entropy of the released model (nats), clipped to loss_bound";
  return j;
}

}  // namespace

Release<Classifier> train_classifier(Classifier model, const ConstMatrixRef& X_in,
                                     const std::vector<int>& y_in, const ClassifyOptions& o,
                                     Rng& rng, Budget* budget, EvalSet test,
                                     const std::function<void(const EpochReport&)>& on_epoch) {
  Communicator& comm = comm_or_single(o.run.comm);                              // validate
  validate_options(o, comm.size());
  check_agreement(comm, fingerprint(o, model, X_in.cols()),
                  "the classifier's options, model and columns");
  all_or_none(comm, [&] { validate_data(X_in, y_in, model); });
  const HeldOut split = hold_out(X_in, y_in, o, rng);  // the rows the model does not see
  const ConstMatrixRef X = split.active ? ConstMatrixRef(split.train.X) : X_in;
  const std::vector<int>& y = split.active ? split.train.y : y_in;
  const ShardRows rows = shard_rows(comm, X.rows());
  // The public count of training rows (adam, non-private, may use the rows). Under add/remove
  // the table's size is private: it is only checked against public limits, before any noise.
  const Eigen::Index n = public_training_rows(o, rows.total);
  require(o.batch_size >= 1 && o.batch_size <= n,
          fmt::format("batch_size must be in [1, the number of training rows], got {}",
                      o.batch_size));
  const std::int64_t held = split.active ? allreduce_count(comm, split.held.X.rows()) : 0;
  require(std::max<std::int64_t>(rows.total, held) <= lattice_rows(n),
          fmt::format("the table holds more training (or held-out) rows than n_public allows "
                      "(at most {}: the lattices of the gradient and loss sums are set by "
                      "n_public); give a larger n_public", lattice_rows(n)));
  const ClassifyPlan plan = plan_classify(n, X.cols(), model.num_parameters(), o);  // plan
  const bool priv = is_private(o.optimizer);
  ReleaseBudget account = priv ? ReleaseBudget(o.privacy.loss(), plan.account.accountant, budget)
                               : ReleaseBudget::non_private();
  nlohmann::json d = plan_diagnostics(o, plan, model);
  SealFacts facts(priv && o.run.noise == NoiseMode::secure);
  facts.neighbouring = Neighbouring::add_remove;
  facts.noise = o.run.noise;
  if (plan.features.source == FeatureSource::unusable) {  // nothing charged, nothing drawn
    d["feature_plan"] = plan.features.diagnostics;
    d["scale_share"] = plan.features.scale_share;
    facts.abstained = plan.features.reliability.reason() + " (decided from n, d and the budget "
                      "before anything was spent)";
    return seal(std::move(model), account, facts, rng, std::move(d));
  }
  if (priv) all_or_none(comm, [&] { account.charge(plan.account.ledger); });  // charge
  std::string reason;
  const std::optional<FeatureMap> f = estimate_feature_map(o, plan.features, X, account, rng, d, reason);
  if (!f) {
    facts.abstained = reason;
    return seal(std::move(model), account, facts, rng, std::move(d));
  }
  const bool identity = f->centre.isZero(0) && (f->divisor.array() == 1).all();
  RowMatrix scaled;  // the features the model is trained on (no copy for the identity)
  if (!identity)
    scaled = (X.rowwise() - f->centre.transpose()).array().rowwise() /
             f->divisor.transpose().array();
  Trainer trainer(model, identity ? X : ConstMatrixRef(scaled), y, o, plan, rng, rows);   // run
  run_epochs(trainer, model, *f, o, test, on_epoch, d);
  fold_feature_map(model, *f);
  // Whether the test set is the training data is decided from public facts (the caller's word,
  // or the same memory), never by comparing rows (which would itself reveal membership).
  const double* first = test.X ? test.X->data() : nullptr;
  if (first && (test.training_rows || (first >= X_in.data() && first < X_in.data() + X_in.size())))
    d["test_accuracy_warning"] =
        "the test set is the training data: test_accuracy is an exact statistic of the private "
        "rows, NOT covered by the privacy guarantee; evaluate on held-out public data";
  if (split.active) d["holdout"] = held_out_loss(model, split, plan, o, rng);
  return seal(std::move(model), account, facts, rng, std::move(d));                // seal
}

}  // namespace dpstats::optimize
