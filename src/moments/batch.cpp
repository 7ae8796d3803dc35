// The batch API of the continual moments (docs/proofs/moments.md §4): every row is known before
// the stream starts, so one private step may precede it on the same account:
//  * no clip: the clip is clip_margin x a private clip_quantile-quantile of the row norms, from
//    `scale_share` of the budget; the fixed-clip stream runs at the rest;
//  * a clip: a private count of the rows it clips, from `clip_check_share` of the budget, stated
//    in the diagnostics with a warning when the clip bites.
// Both are charged (with the stream's planned maximum checked to fit) before any noise is drawn.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <cmath>
#include <vector>

#include "detail.hpp"
#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/comm/replay.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/moments/estimator.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/moments/workload.hpp"
#include "dpstats/scale/grid_quantile.hpp"
#include "dpstats/scale/location.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/scale/share.hpp"

namespace dpstats::moments {
namespace {

using Eigen::Index;

// A warning is raised when the noisy count of clipped rows exceeds this fraction of the rows by
// more than two noise deviations (a false warning has probability <= 2.3%).
constexpr double kClipBitesFraction = 0.01;
// An estimated clip (3 x a private median of the norms) that clips more than this fraction of the
// rows (the count's one-sided 95% lower bound) describes an atom of the norms (most rows zero or
// equal: 0/1 flags, sparse counts) or a tail it was not sized for, not their scale: the release
// abstains (docs/proofs/moments.md §4.5). Issue 30: 1000 rows of two 0/1 flags released running
// sums of 1.6e-118 (truth about 500) at a clip of 3.9e-121 that clipped 72% of the rows.
constexpr double kClipUnusableFraction = 0.25;

// Every row's norm, checking the table (and `reject`) before any noise is drawn.
std::vector<double> checked_table_norms(const ConstMatrixRef& X, const MomentsConfig& config) {
  require(X.rows() >= 1 && X.cols() >= 1, "X must have at least one row and one column");
  require(static_cast<std::size_t>(X.rows()) <= config.steps,
          fmt::format("X has more rows than the {} steps", config.steps));
  require(static_cast<std::size_t>(X.cols()) == config.dim,
          fmt::format("X has {} columns, the estimator dim {}", X.cols(), config.dim));
  check_data(X);  // every row is checked before any noise is drawn
  std::vector<double> norms(static_cast<std::size_t>(X.rows()));
  Vector row;
  for (Index t = 0; t < X.rows(); ++t) {
    row = X.row(t).transpose();
    const auto i = static_cast<std::size_t>(t);
    norms[i] = detail::row_norm({row.data(), static_cast<std::size_t>(row.size())}, i + 1);
    // Which row is not said (issue 28): the refusal is the one bit reject mode reveals.
    if (config.on_norm == NormPolicy::reject && config.clip && norms[i] > *config.clip)
      throw InvalidArgument(fmt::format("a row has l2 norm above the clip norm {} (on_norm = "
                                        "reject; the row is not named); no noise was drawn",
                                        format_number(*config.clip)));
  }
  return norms;
}

NormQuantileOptions clip_quantile_options(const MomentsConfig& c, double rho) {
  NormQuantileOptions o;
  o.loss = PrivacyLoss::zcdp(rho);
  o.q = c.clip_quantile;
  o.neighbouring = c.neighbouring;
  return o;
}

// The private clip; returns the abstention reason when the quantile cannot be trusted.
std::optional<std::string> private_clip(std::span<const double> norms, MomentsConfig& c,
                                        PreStream& pre, double rho, Rng& rng,
                                        MomentsTrace* trace) {
  const NormQuantile q = private_value_quantile(norms, clip_quantile_options(c, rho), pre.account,
                                                rng);
  nlohmann::json j = q.diagnostics();
  j["margin"] = c.clip_margin;
  j["share"] = c.scale_share;
  j["rho"] = rho;
  pre.diagnostics["clip_estimate"] = j;
  const Reliability r = reliability(q, "--clip");
  if (!r.usable) return r.reason();
  const double clip = std::clamp(q.value * c.clip_margin, 0x1p-400, 0x1p400);
  c.clip = clip;
  pre.diagnostics["clip_source"] = fmt::format(
      "estimated privately: {} x the private {}-quantile of the row norms ({} of the budget)",
      format_number(c.clip_margin), format_number(c.clip_quantile), format_number(c.scale_share));
  if (trace) trace->private_clip = clip;
  return std::nullopt;
}

// The reason the clip's rank error alone, from public values (under replace-one n is public),
// already calls it unusable, or nothing: the release would abstain on the same facts after
// charging, so it abstains before (docs/proofs/moments.md §4.1).
std::optional<std::string> planned_clip_abstention(const MomentsConfig& c, double rho,
                                                   std::size_t n) {
  if (c.neighbouring != Neighbouring::replace_one) return std::nullopt;
  const NormQuantileOptions o = clip_quantile_options(c, rho);
  const Reliability r =
      assess(planned_norm_quantile_facts(o, static_cast<double>(n)),
             fmt::format("the {} quantile of the norms", format_number(o.q)), "--clip");
  if (r.usable) return std::nullopt;
  return r.reason();
}

// An abstention's seal facts.
SealFacts abstention(const MomentsConfig& c, const MomentsTrace* trace, std::string reason) {
  SealFacts f(true);  // docs/proofs/moments.md
  f.neighbouring = c.neighbouring;
  f.noise = c.run.noise;
  f.noiseless = trace && trace->noiseless;
  f.abstained = std::move(reason);
  return f;
}

// The confidence of the stated clipping term (one-sided bound on the clipped-row count).
constexpr double kClipBeta = 0.001;

// The private count of the rows the clip (supplied or estimated) clips (sensitivity 1 under both
// neighbourings), and the clipping term of the stated error it bounds (docs/proofs/moments.md
// §4.4): a clipped row's contribution moves by at most `clip` between clipping at clip and at
// 2 clip, so the last step's first moment is within (clipped rows) x clip x (the workload's
// largest weight: 1/T for average, at most 1 otherwise) of the moments of the rows shrunk to
// norm 2 clip -- the moments of the rows themselves when none is that long.
// Returns why an estimated clip is unusable (kClipUnusableFraction), if it is.
std::optional<std::string> clip_check(std::span<const double> norms, const MomentsConfig& c,
                                      PreStream& pre, double rho, bool estimated, Rng& rng) {
  const GaussianMechanism m = GaussianMechanism::from_rho(1.0, rho, 1, c.run.noise);
  const char* which = estimated ? "the estimated clip" : "the supplied clip";
  pre.account.claim(m.ledger_entry(fmt::format("count of rows above {}", which)));
  const auto clipped = static_cast<double>(
      std::count_if(norms.begin(), norms.end(), [&](double v) { return v > *c.clip; }));
  const double noisy = m.apply(clipped, rng), n = static_cast<double>(norms.size());
  const double upper = std::clamp(noisy + standard_normal_quantile(1 - kClipBeta) * m.sigma(), 0.0, n);
  nlohmann::json j = {{"noisy_count", noisy}, {"noise_std", m.sigma()}, {"rows", norms.size()},
                      {"noisy_fraction", noisy / n}, {"share", c.clip_check_share},
                      {"rho", rho}, {"of", which}};
  if (!estimated) pre.diagnostics["clip_source"] = "supplied";
  pre.diagnostics["clip_check"] = j;
  const double weight = c.A1.kind() == WorkloadKind::average ? 1 / static_cast<double>(c.steps) : 1.0;
  pre.diagnostics["stated_error"] = {
      {"clipping", std::vector<double>(c.dim, upper * *c.clip * weight)},
      {"clipped_rows_upper", upper},
      {"confidence", 1 - kClipBeta},
      {"noise", "first_noise_std_final: the last step's noise deviation per coordinate"},
      {"meaning", "per coordinate, the last step's first moment lies within 4 x "
                  "first_noise_std_final + clipping of the same moment of the rows shrunk to norm "
                  "2 x clip (about the centre when centred; the rows themselves when none is that "
                  "long)"}};
  if (noisy - 4 * m.sigma() > kClipBitesFraction * n)  // noise alone: below 4e-5
    pre.diagnostics["warning"] = fmt::format(
        "{} {} bites: about {} of {} rows (noise std {}) have a larger norm and were clipped, "
        "which biases both moments towards 0 (the stated error counts them); {}",
        which, format_number(*c.clip), format_number(std::round(noisy)), norms.size(),
        format_number(m.sigma()),
        estimated ? "give a larger --clip (Python: clip=) if the long rows matter"
                  : "raise the clip or omit it to have it estimated privately");
  const double lower = noisy - standard_normal_quantile(0.95) * m.sigma();  // one-sided 95%
  if (!estimated || lower <= kClipUnusableFraction * n) return std::nullopt;
  return fmt::format(
      "the estimated clip {} (3 x a private median of the row norms) clips more than {} of the "
      "rows (the private count's 95% lower bound: {:.2f} of them): the median sits in an atom of "
      "the norms (most rows zero or equal, e.g. 0/1 flags or sparse counts) or below a heavy "
      "tail, and the moments would be those of the clipped rows. Give --clip, a public bound on "
      "the row norms (e.g. sqrt(d) for 0/1 columns)",
      format_number(*c.clip), kClipUnusableFraction, lower / n);
}

LocationOptions centre_options(const MomentsConfig& c, double rho) {
  LocationOptions o;
  o.loss = PrivacyLoss::zcdp(rho);
  o.neighbouring = c.neighbouring;
  o.threads = c.run.threads;
  return o;
}

// plan: centre when no clip is given, the workloads agree (the raw second moment is then
// reconstructed from the released first), and the location's rank error t over its 5d selections
// leaves it inside the central ranks at this n: t / n + alpha <= 0.3, the scale layer's own
// insufficient-data rule (public values only).
bool plan_centre(const MomentsConfig& c, std::size_t n, double rho) {
  if (c.clip || !c.centre || !(c.A1 == c.A2)) return false;
  const LocationOptions o = centre_options(c, rho);
  const std::size_t calls = 5 * c.dim;
  static const std::size_t cells = std::max<std::size_t>(
      log_grid(LocationOptions{}.per_octave, false).size(), LocationOptions{}.refine_points);
  const double t = grid_quantile_rank_error(per_call_epsilon(o.loss, calls), cells,
                                            o.beta / static_cast<double>(calls));
  return t / static_cast<double>(n) + o.alpha <= 0.3;
}

// The private centre (private_location, charged on the account); a column whose location the
// scale layer calls insufficient is not centred (0). Stated in the diagnostics.
Vector private_centre(const ConstMatrixRef& X, const MomentsConfig& c, PreStream& pre,
                      double rho, Rng& rng) {
  const LocationEstimate loc = private_location(X, centre_options(c, rho), pre.account, rng);
  Vector mu = loc.location();
  for (std::size_t j = 0; j < loc.columns.size(); ++j)
    if (loc.columns[j].status == ScaleStatus::insufficient_data) mu[static_cast<Index>(j)] = 0;
  nlohmann::json j = loc.diagnostics();
  j["rho"] = rho;
  j["share"] = c.scale_share / 2;
  pre.diagnostics["centre"] = std::vector<double>(mu.data(), mu.data() + mu.size());
  pre.diagnostics["centre_estimate"] = j;
  pre.diagnostics["centre_source"] =
      "private per-column location (scale layer, half of scale_share); the moments of x - centre "
      "are released (centred_first, centred_second) and the raw ones reconstructed from them";
  return mu;
}

// Raw moments from the centred ones (post-processing; A1 = A2 = A, a_t = (A 1)_t):
// first = c1 + a_t mu, second = c2 + c1 mu^T + mu c1^T + a_t mu mu^T (diagonal: c2 + 2 mu c1 +
// a_t mu^2).
void reconstruct(MomentSeries& s, const Vector& mu, const Workload& A, bool full) {
  s.centred_first = s.first;
  s.centred_second = s.second;
  WorkloadState ones(A, 1);
  const Index d = mu.size();
  const double one = 1;
  for (Index t = 0; t < s.first.rows(); ++t) {
    double a = 0;
    ones.push(&one, &a);
    const Vector c1 = s.centred_first.row(t).transpose();
    s.first.row(t) = (c1 + a * mu).transpose();
    if (full) {
      RowMatrix m = c1 * mu.transpose() + mu * c1.transpose() + a * mu * mu.transpose();
      s.second.row(t) += Eigen::Map<const Vector>(m.data(), d * d).transpose();
    } else {
      s.second.row(t) += (2 * mu.cwiseProduct(c1) + a * mu.cwiseAbs2()).transpose();
    }
  }
}

// run: the rows through the stream; with a centre, the raw moments reconstructed before seal.
Release<MomentSeries> run_stream(const ConstMatrixRef& X, MomentEstimator& est,
                                 const Vector* centre = nullptr) {
  MomentSeries series;
  const auto n = X.rows();
  series.first.resize(n, X.cols());
  series.second.resize(n, static_cast<Index>(est.second().size()));
  Vector row;
  for (Index t = 0; t < n; ++t) {
    row = X.row(t).transpose();
    est.push({row.data(), static_cast<std::size_t>(row.size())});
    series.first.row(t) = Eigen::Map<const Vector>(est.first().data(), X.cols()).transpose();
    series.second.row(t) =
        Eigen::Map<const Vector>(est.second().data(), series.second.cols()).transpose();
  }
  if (centre)
    reconstruct(series, *centre, est.config().A1,
                est.config().form == SecondMomentForm::full);
  return est.release(std::move(series));  // seal
}

// Every rank's rows, in rank order (the global row order): the whole stream on every rank.
RowMatrix gather_rows(Communicator& comm, const ConstMatrixRef& X) {
  const RowMatrix mine = X;
  const auto all = comm.allgather(
      to_bytes(std::vector<double>(mine.data(), mine.data() + mine.size())));
  std::vector<double> rows;
  for (const Bytes& b : all) {
    const auto part = from_bytes<std::vector<double>>(b);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  const auto d = X.cols();
  RowMatrix out(static_cast<Index>(rows.size()) / std::max<Index>(d, 1), d);
  std::copy(rows.begin(), rows.end(), out.data());
  return out;
}

// A digest of everything a rank returns: the bits of every released matrix and the release's
// fields (FNV-1a, 64 bits).
std::string release_digest(const Release<MomentSeries>& r) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](const void* p, std::size_t bytes) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ c[i]) * 0x100000001b3ULL;
  };
  const MomentSeries& m = r.estimate;
  for (const RowMatrix* x : {&m.first, &m.second, &m.centred_first, &m.centred_second}) {
    const std::int64_t shape[2] = {x->rows(), x->cols()};
    mix(shape, sizeof shape);
    mix(x->data(), static_cast<std::size_t>(x->size()) * sizeof(double));
  }
  const std::string fields = release_fields_json(r).dump();
  mix(fields.data(), fields.size());
  return fmt::format("{:016x}", h);
}

// Several ranks: a step is one row, so there is no per-step sum to merge. Every rank gathers the
// rows (global order) and runs the single-process stream; rank 0 draws and holds the budget, the
// others replay its draws (comm/replay.hpp), so every rank returns the single-process release.
Release<MomentSeries> estimate_on_ranks(const ConstMatrixRef& X, MomentsConfig config, Rng& rng,
                                        Budget* budget, MomentsTrace* trace) {
  Communicator& comm = *config.run.comm;
  check_agreement(comm, fingerprint_of("moments", config, X.cols()),
                  "the moments stream's options and column count");
  const RowMatrix rows = gather_rows(comm, X);
  config.run.comm = nullptr;
  Budget* mine = comm.rank() == 0 ? budget : nullptr;  // the ledger lives on rank 0
  Release<MomentSeries> r = replay_on_ranks(comm, rng, [&](Rng& rr) {
    return estimate_moments(rows, config, rr, mine, comm.rank() == 0 ? trace : nullptr);
  });
  // Each rank computed its release from rank 0's noise: a libm or CPU difference between machines
  // would make two different releases on the same noise. Every rank must hold rank 0's bytes.
  check_agreement(comm, release_digest(r),
                  "the moments release replayed on every rank (a rank's floating point differs "
                  "from rank 0's; nothing is released)");
  return r;
}

}  // namespace

Release<MomentSeries> estimate_moments(const ConstMatrixRef& X, MomentsConfig config, Rng& rng,
                                       Budget* budget, MomentsTrace* trace) {
  if (config.run.comm && config.run.comm->size() > 1)
    return estimate_on_ranks(X, std::move(config), rng, budget, trace);
  if (config.steps == 0) config.steps = static_cast<std::size_t>(X.rows());
  if (config.dim == 0) config.dim = static_cast<std::size_t>(X.cols());
  detail::validate_config(config, true);  // validate
  const std::vector<double> norms = checked_table_norms(X, config);
  const bool estimate = !config.clip;
  // An estimated clip is checked too: the count's share comes on top of the estimate's.
  const double share = estimate ? config.scale_share + config.clip_check_share : config.clip_check_share;
  if (share == 0) {
    MomentEstimator est(std::move(config), rng, budget, trace);
    return run_stream(X, est);
  }
  // plan: the stream at the rest of the budget (its ledger does not depend on the clip's value),
  // and whether to centre first (then half of the share each for the centre and the clip)
  MomentsConfig probe = config;
  if (!probe.clip) probe.clip = 1.0;
  const MomentsPlan stream = plan_moments(probe, share);
  const double rho_all = detail::pre_stream_rho(config, stream, share);
  const double rho_count = estimate ? rho_all * config.clip_check_share / share : rho_all;
  const double rho = estimate ? (rho_all - rho_count) * (1 - 1e-12) : rho_all;  // the estimate's
  const bool centre = estimate && plan_centre(config, norms.size(), rho / 2);
  const double rho_clip = centre ? rho / 2 : rho;
  PreStream pre{detail::release_account(config, stream, budget, rho_all), share, {}};
  Ledger whole = stream.ledger;  // charge: the whole plan, before anything is drawn
  if (centre) {
    const Ledger loc = private_location_entries(centre_options(config, rho / 2), config.dim);
    whole.insert(whole.end(), loc.begin(), loc.end());
  }
  if (estimate) {
    const Ledger clip = private_norm_quantile_entries(clip_quantile_options(config, rho_clip));
    whole.insert(whole.end(), clip.begin(), clip.end());
  }
  if (config.clip_check_share > 0)
    whole.push_back(GaussianMechanism::from_rho(1.0, rho_count, 1, config.run.noise)
                        .ledger_entry(fmt::format("count of rows above the {} clip",
                                                  estimate ? "estimated" : "supplied")));
  if (const auto why = estimate ? planned_clip_abstention(config, rho_clip, norms.size())
                                : std::nullopt)
    return seal(MomentSeries{}, pre.account, abstention(config, trace, *why), rng, pre.diagnostics);
  pre.account.charge(whole);  // all or nothing: BudgetExceeded leaves every budget as it was
  RowMatrix centred;
  Vector mu;
  std::vector<double> centred_norms;
  if (centre) {  // the rows about a private centre, and their norms
    mu = private_centre(X, config, pre, rho / 2, rng);
    centred = X.rowwise() - mu.transpose();
    centred_norms = checked_table_norms(centred, config);
  }
  const std::vector<double>& used_norms = centre ? centred_norms : norms;
  std::optional<std::string> reason;
  if (estimate) reason = private_clip(used_norms, config, pre, rho_clip, rng, trace);
  if (!reason && config.clip_check_share > 0)
    reason = clip_check(used_norms, config, pre, rho_count, estimate, rng);
  if (reason) return seal(MomentSeries{}, pre.account, abstention(config, trace, *reason), rng,
                          pre.diagnostics);
  MomentEstimator est(std::move(config), rng, std::move(pre), trace);  // run, seal
  return centre ? run_stream(centred, est, &mu) : run_stream(X, est);
}

namespace detail {

double pre_stream_rho(const MomentsConfig& c, const MomentsPlan& stream, double share) {
  if (c.rho) return *c.rho * share;
  if (c.noise_multiplier) {
    double s = 0;
    for (const auto& e : stream.ledger) s += e.loss.rho * e.count;
    return s * share / (1 - share);
  }
  return epsilon_delta_to_zcdp(c.privacy.epsilon, c.privacy.delta) * share;
}

}  // namespace detail
}  // namespace dpstats::moments
