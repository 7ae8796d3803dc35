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

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/random/bernoulli.hpp"
#include "dpstats/scale/column_scale.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/share.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/mechanisms/exact_sum.hpp"
#include "keyed_sample.hpp"

namespace dpstats::optimize {
namespace {

constexpr double kFeatureQuantile = 0.9;  // s: the 0.9-quantile of ||x_i|| (training.md §3)
// Per-column standardisation is planned when the private medians' and MADs' rank error t (public:
// n, d, the share) leaves them inside the central ranks, t / n + alpha <= kCentralRanks (the scale
// layer's own insufficient-data rule, column_scale.hpp); otherwise one global norm quantile.
constexpr double kCentralRanks = 0.3;

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
  } else {
    require(o.scale_share > 0 && o.scale_share <= 0.5,
            fmt::format("scale_share: the fraction of epsilon spent on estimating "
                        "feature_scale must be in (0, 0.5], got {}", o.scale_share));
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
  check_positive(o.learning_rate, "learning_rate");
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
  return fmt::format(
      "{}|{:a}|{:a}|{:a}|{}|{}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|{:a}|{}|{}|"
      "{}|{}|{}|{}|{:x}|d={}|n={}",
      to_string(o.optimizer), o.privacy.epsilon, o.privacy.delta, o.noise_multiplier.value_or(-1),
      o.epochs, o.batch_size, o.learning_rate, o.clip, o.feature_scale.value_or(-1), o.scale_share,
      o.beta1, o.beta2, o.adam_epsilon.value_or(-1), o.lambda, o.tau,
      o.second_moment_floor.value_or(-1), o.loss_bound, o.loss_noise_multiplier,
      static_cast<int>(o.run.noise), to_string(m.kind()), m.features(), m.hidden(), m.classes(),
      m.num_parameters(), sum, d, o.n_public.value_or(-1));
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

NormQuantileOptions feature_scale_options(const ClassifyOptions& o) {
  NormQuantileOptions q;
  q.loss = PrivacyLoss::pure(o.scale_share * o.privacy.epsilon);
  q.q = kFeatureQuantile;
  q.neighbouring = Neighbouring::add_remove;
  q.threads = o.run.threads;
  q.comm = o.run.comm;  // every rank's row norms (the scale layer's distributed selection)
  return q;
}

// The per-column private location and scale (docs/proofs/training.md §3): 3d pure-DP selections
// sharing rho_s = scale_share x the zCDP rho of the (epsilon, delta) target, add/remove.
ScaleOptions column_scale_options(const ClassifyOptions& o) {
  ScaleOptions s;
  s.loss = PrivacyLoss::zcdp(o.scale_share *
                             epsilon_delta_to_zcdp(o.privacy.epsilon, o.privacy.delta));
  s.neighbouring = Neighbouring::add_remove;
  s.threads = o.run.threads;
  s.comm = o.run.comm;  // every rank's rows (the scale layer's distributed passes)
  return s;
}

// Whether the plan standardises each column (public values only: n, d, the options).
bool plan_columns(const ClassifyOptions& o, Eigen::Index n, Eigen::Index d) {
  if (o.feature_scale || !is_private(o.optimizer) || d < 1 || n < 1) return false;
  const ScaleOptions s = column_scale_options(o);
  const auto calls = static_cast<std::size_t>(3 * d);
  static const std::size_t cells = log_grid(ScaleOptions{}.per_octave, false).size();
  const double t = grid_quantile_rank_error(per_call_epsilon(s.loss, calls), cells,
                                            s.beta / static_cast<double>(calls));
  return t / static_cast<double>(n) + s.alpha <= kCentralRanks;
}

// The per-epoch loss releases: the entry of the mechanism `m` that draws them, `epochs` times,
// stated as mu-GDP with mu = 1 / (coupled noise multiplier): exact for the continuous Gaussian
// (fast_float), and the coupled form of the lattice Gaussian (secure, docs/proofs/accounting.md
// §9), which both the pld and the rdp accountants count.
LedgerEntry loss_entry(const ClassifyOptions& o, const GaussianMechanism& m) {
  LedgerEntry e = m.ledger_entry("clipped training-loss sum on its lattice (one per epoch)");
  const double mu = 1 / m.coupled_noise_multiplier();
  e.loss = m.mode() == NoiseMode::secure ? PrivacyLoss::discrete_gdp(mu) : PrivacyLoss::gdp(mu);
  e.count = o.epochs;
  return e;
}

// Every entry of a run on n (public) rows of d features (d = 0: the global feature scale) with
// `steps` and the loss releases `loss`.
Ledger run_entries(const ClassifyOptions& o, Eigen::Index n, const LedgerEntry& steps,
                   const LedgerEntry& loss, Eigen::Index d) {
  Ledger l;
  if (plan_columns(o, n, d)) {
    for (const LedgerEntry& e : private_scale_entries(column_scale_options(o),
                                                      static_cast<std::size_t>(d)))
      l.push_back(e);
  } else if (!o.feature_scale) {
    l.push_back(private_norm_quantile_entry(feature_scale_options(o)));
  }
  l.push_back(steps);
  l.push_back(loss);
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
  bool columns = false;  // per-column private location and scale (else one global scale)
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

// The map the model is trained on, u = (x - centre) / divisor per column (training.md §3).
struct FeatureMap {
  Vector centre, divisor;
};

// A Classifier's first layer, rewritten so that logits(u(x); W) = logits(x; W'): the feature rows
// of the (in+1) x out block divided by the divisors, the bias row minus sum_j centre_j W'_j.
void fold_feature_map(Classifier& model, const FeatureMap& f) {
  const Eigen::Index in = model.layer_in(0), out = model.layer_out(0);
  Eigen::Map<RowMatrix> W(model.parameters().data() + model.layer_offset(0), in + 1, out);
  for (Eigen::Index j = 0; j < in; ++j) W.row(j) /= f.divisor(j);
  W.row(in) -= f.centre.transpose() * W.topRows(in);
}

// kappa_d: the 0.9-quantile of the norm of d independent standard normals (Wilson-Hilferty's
// chi-square quantile, within 1% for d >= 2, 4% at d = 1): standardised rows divided by it have
// about the norms the global scale gives (90% within 1). Public, data-free.
double chi_quantile_90(Eigen::Index d) {
  const double k = static_cast<double>(d), z = 1.2815515655446004;
  const double c = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
  return std::sqrt(k * c * c * c);
}

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
  plan.columns = plan_columns(o, n, d);
  plan.per_epoch = steps_per_epoch(o.batch_size, n);
  plan.steps = static_cast<std::size_t>(total_steps(o, n));
  plan.sampling_rate = static_cast<double>(o.batch_size) / static_cast<double>(n);
  const bool pp = o.optimizer == ClassifyOptimizer::adam || o.optimizer == ClassifyOptimizer::dp_adam;
  plan.adam_epsilon = o.adam_epsilon.value_or(pp ? 1e-8 : 1e-6);
  plan.floor = o.second_moment_floor.value_or(pp ? 0.0 : plan.adam_epsilon);
  GradientReleaseConfig rc = release_config(o, n, p);
  if (!is_private(o.optimizer)) {
    plan.release.emplace(rc);
    return plan;
  }
  rc.noise_multiplier =
      o.noise_multiplier ? *o.noise_multiplier : classify_noise_multiplier(o, n, d);
  plan.release.emplace(rc);
  plan.loss.emplace(loss_mechanism(o, n));
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

// The feature scale s: public, or the private 0.9-quantile of ||x_i|| on a scratch budget (the
// plan's entry was charged on the real one). Writes what it cost to `d`.
std::optional<FeatureMap> global_scale(const ClassifyOptions& o, const ConstMatrixRef& X,
                                       Rng& rng, nlohmann::json& d, std::string& reason) {
  const auto cols = X.cols();
  if (o.feature_scale || !is_private(o.optimizer)) {
    d["feature_scale"] = o.feature_scale.value_or(1.0);
    d["feature_scale_source"] = o.feature_scale ? "given" : "none (non-private)";
    return FeatureMap{Vector::Zero(cols), Vector::Constant(cols, o.feature_scale.value_or(1.0))};
  }
  const NormQuantileOptions qo = feature_scale_options(o);
  ReleaseBudget scratch(qo.loss, Accountant::basic);
  const NormQuantile q = private_norm_quantile(X, qo, scratch, rng);
  d["feature_scale"] = q.value;
  d["feature_scale_source"] = "private 0.9-quantile of the row norms";
  d["feature_scale_estimate"] = q.diagnostics();
  d["feature_scale_epsilon"] = qo.loss.epsilon;
  if (q.status != ScaleStatus::ok) {
    reason = "feature_scale could not be estimated: " + q.reason;
    return std::nullopt;
  }
  return FeatureMap{Vector::Zero(cols), Vector::Constant(cols, q.value)};
}

// Per column: the private median and robust sd (scale layer, on a scratch budget: the plan's
// entries were charged on the real one); divisor_j = scale_j kappa_d. A degenerate column (MAD at
// its resolution, e.g. a binary column with a majority value) takes the geometric mean of the
// other columns' scales: post-processing of released values. No usable column: abstain.
std::optional<FeatureMap> column_map(const ClassifyOptions& o, const ConstMatrixRef& X, Rng& rng,
                                     nlohmann::json& d, std::string& reason) {
  const ScaleOptions so = column_scale_options(o);
  ReleaseBudget scratch(so.loss, Accountant::zcdp);
  const ScaleEstimate est = private_scale(X, so, scratch, rng);
  FeatureMap f{est.location(), est.scale()};
  double log_sum = 0, ok = 0;
  for (const ColumnScale& c : est.columns)
    if (c.status == ScaleStatus::ok) log_sum += std::log(c.scale), ok += 1;
  d["feature_scale_source"] = "private per-column median and robust sd (scale layer), "
                              "features standardised and divided by kappa_d";
  d["feature_scale_estimate"] = est.diagnostics();
  d["feature_scale_rho"] = so.loss.rho;
  if (ok == 0) {
    reason = "no column has a usable private scale (all degenerate)";
    return std::nullopt;
  }
  const double fallback = std::exp(log_sum / ok), kappa = chi_quantile_90(X.cols());
  for (Eigen::Index j = 0; j < X.cols(); ++j)
    f.divisor(j) = (est.columns[static_cast<std::size_t>(j)].status == ScaleStatus::ok
                        ? f.divisor(j) : fallback) * kappa;
  d["feature_centre"] = std::vector<double>(f.centre.data(), f.centre.data() + f.centre.size());
  d["feature_divisor"] = std::vector<double>(f.divisor.data(), f.divisor.data() + f.divisor.size());
  d["feature_kappa"] = kappa;
  return f;
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
    sampler_ = std::make_unique<KeyedPoissonSample>(key[0], key[1], o.batch_size, plan.n);
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
    model_.parameters() -= o_.learning_rate * first_;
    return;
  }
  if (has_second_release(o_.optimizer)) u_ = second_;
  else u_ = first_.cwiseAbs2();
  m1_ = o_.beta1 * m1_ + (1 - o_.beta1) * first_;
  v_ = o_.beta2 * v_ + (1 - o_.beta2) * u_;
  const double c1 = 1 - std::pow(o_.beta1, static_cast<double>(t_));
  const double c2 = 1 - std::pow(o_.beta2, static_cast<double>(t_));
  model_.parameters().array() -=
      o_.learning_rate * (m1_.array() / c1) /
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
  d["n_public"] = plan.n;
  d["n_source"] = o.n_public ? "given (n_public: the sampling rate, the steps and the train "
                               "loss's divisor follow from it)"
                             : "the row count (non-private adam)";
  d["steps"] = plan.steps;
  d["expected_batch_size"] = o.batch_size;
  d["sampling_rate"] = plan.sampling_rate;
  d["learning_rate"] = o.learning_rate;
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

}  // namespace

Release<Classifier> train_classifier(Classifier model, const ConstMatrixRef& X,
                                     const std::vector<int>& y, const ClassifyOptions& o, Rng& rng,
                                     Budget* budget, EvalSet test,
                                     const std::function<void(const EpochReport&)>& on_epoch) {
  Communicator& comm = comm_or_single(o.run.comm);                              // validate
  validate_options(o, comm.size());
  check_agreement(comm, fingerprint(o, model, X.cols()),
                  "the classifier's options, model and columns");
  all_or_none(comm, [&] { validate_data(X, y, model); });
  const ShardRows rows = shard_rows(comm, X.rows());
  // The public row count (adam, non-private, may use the rows). Under add/remove the table's
  // size is private: it is only checked against public limits, before any noise is drawn.
  const Eigen::Index n = o.n_public.value_or(rows.total);
  require(o.batch_size >= 1 && o.batch_size <= n,
          fmt::format("batch_size must be in [1, the number of rows], got {}", o.batch_size));
  require(rows.total <= lattice_rows(n),
          fmt::format("the table holds more rows than n_public = {} allows (at most {}: the "
                      "lattice of the gradient sums is set by n_public); give a larger n_public",
                      n, lattice_rows(n)));
  const ClassifyPlan plan = plan_classify(n, X.cols(), model.num_parameters(), o);  // plan
  const bool priv = plan.loss.has_value();
  ReleaseBudget account = priv ? ReleaseBudget(o.privacy.loss(), plan.account.accountant, budget)
                               : ReleaseBudget::non_private();
  if (priv) all_or_none(comm, [&] { account.charge(plan.account.ledger); });  // charge
  nlohmann::json d = plan_diagnostics(o, plan, model);
  SealFacts facts;
  facts.neighbouring = Neighbouring::add_remove;
  facts.noise = o.run.noise;
  facts.certified = priv && o.run.noise == NoiseMode::secure;
  std::string reason;
  const std::optional<FeatureMap> f = plan.columns ? column_map(o, X, rng, d, reason)  // run
                                                   : global_scale(o, X, rng, d, reason);
  if (!f) {
    facts.abstained = reason;
    return seal(std::move(model), account, facts, rng, std::move(d));
  }
  const bool identity = f->centre.isZero(0) && (f->divisor.array() == 1).all();
  RowMatrix scaled;  // the features the model is trained on (no copy for the identity)
  if (!identity)
    scaled = (X.rowwise() - f->centre.transpose()).array().rowwise() /
             f->divisor.transpose().array();
  Trainer trainer(model, identity ? X : ConstMatrixRef(scaled), y, o, plan, rng, rows);
  std::vector<double> train_loss, test_acc;
  for (int e = 1; e <= o.epochs; ++e) {
    EpochReport r = trainer.epoch(e, {});
    if (test.X && test.y) {
      Classifier raw = model;  // the classifier of the raw features
      fold_feature_map(raw, *f);
      r.test_accuracy = accuracy_chunked(raw, *test.X, *test.y);
      test_acc.push_back(*r.test_accuracy);
    }
    train_loss.push_back(r.train_loss);
    if (on_epoch) on_epoch(r);
  }
  fold_feature_map(model, *f);
  d["train_loss"] = train_loss;
  if (!test_acc.empty()) {
    d["test_accuracy"] = test_acc;
    d["test_rows"] = test.X->rows();
    // Whether the set is the training data is decided from public facts (the caller's word, or
    // the same memory), never by comparing rows (which would itself reveal membership).
    const auto* first = test.X->data();
    if (test.training_rows || (first >= X.data() && first < X.data() + X.size()))
      d["test_accuracy_warning"] =
          "the test set is the training data: test_accuracy is an exact statistic of the "
          "private rows, NOT covered by the privacy guarantee; evaluate on held-out public data";
  }
  return seal(std::move(model), account, facts, rng, std::move(d));                // seal
}

}  // namespace dpstats::optimize
