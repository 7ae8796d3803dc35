// fit_heavy_tailed: validate -> plan -> charge -> run -> seal (the steps in the files beside it).
#include "dpstats/heavy_tailed/heavy_tailed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/l2_laplace.hpp"
#include "dpstats/solvers/adaptive_subgradient.hpp"
#include "dpstats/heavy_tailed/certificate.hpp"
#include "dpstats/solvers/exact_sum.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_clip.hpp"
#include "dpstats/heavy_tailed/heavy_tailed_lens.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/geometry/ball.hpp"
#include "dpstats/scale/norm_quantile.hpp"
#include "dpstats/scale/reliability.hpp"
#include "dpstats/solvers/holdout.hpp"
#include "dpstats/solvers/standardize.hpp"

#include "heavy_tailed_internal.hpp"

namespace dpstats::optimize {

using namespace heavy_tailed_detail;

// ---------------------------------------------------------------------------------------------
// fit_heavy_tailed: validate -> plan (the centring, an absent G_k, the method) -> charge -> run
// (the centring, the estimate, the method) -> seal (docs/proofs/heavy-tailed.md).

namespace {

MethodRun non_private(const Problem& q) {
  const RowMatrix A = q.X;
  GlmErmProblem p;
  p.A = &A;
  p.y = &q.y;
  p.begin = 0;
  p.end = A.rows();
  p.env = q.env;
  p.C = std::numeric_limits<double>::infinity();
  p.lambda = 1e-9 * q.scale.mb.G_k / q.o.domain_radius;
  p.w0 = Vector::Zero(A.cols());
  p.center = Vector::Zero(A.cols());
  p.radius = q.o.domain_radius;
  p.threads = q.o.run.threads;
  // Non-private reference (Huber-smoothed to width 10^-6), not a private release.
  return {solve_glm_erm_reference(p), std::nullopt, {{"private", false}}};
}

// The release's plan: every charge, from public values (options, n, d), before any noise. The
// method's mechanisms are built once the moment bound (and the centring) are released: their
// entries are reserved here with the same losses.
Ledger heavy_tailed_plan(std::int64_t n, Eigen::Index d, const HeavyTailedOptions& o,
                         const CentrePlan& cp) {
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  const Eigen::Index cols = d + (binary_labels(o.loss) ? 0 : 1);  // a regression label too
  Ledger l;
  if (cp.share > 0 && cp.check)  // the features and the label (class labels are checked too)
    l.push_back(offset_check_entry(d + 1, share_loss(centring_spend(cp, gaussian), gaussian),
                                   o.run.noise));
  else if (cp.share > 0)
    l = private_location_entries(centring_options(share_loss(cp.share, gaussian)),
                                 static_cast<std::size_t>(cols));
  const MethodShares m = method_shares(o, centring_spend(cp, gaussian));
  if (m.estimate > 0) {
    const Ledger q = private_norm_quantile_entries(moment_quantile_options(o, m.estimate));
    l.insert(l.end(), q.begin(), q.end());
  }
  const bool standardized = cp.share > 0 && !cp.check;
  switch (o.method) {
    case HeavyTailedMethod::non_private: break;
    case HeavyTailedMethod::clipped_gd:
    case HeavyTailedMethod::dp_sgd: {
      const int T = gd_steps(n, d + (standardized ? 1 : 0), o, m.epsilon, standardized);
      l.push_back(gd_reserved_entry(T, m.epsilon, m.rho, gaussian, kGdPurpose));
      break;
    }
    default: l.push_back(localize_composite(o, m.epsilon).planned());
  }
  if (const auto h = holdout_mechanism(o)) l.push_back(h->ledger_entry());
  return l;
}

// Pop-Localize's certificates decide from the data whether a phase aborts, and that bit is not
// covered by the epsilon-DP statement (docs/threat-model.md; the audit measured epsilon >= 5.5):
// those releases are not certified. clipped-gd and dp-sgd never abort on the data.
SealFacts seal_facts(const HeavyTailedOptions& o, bool priv, bool noiseless, const MethodRun& run,
                     nlohmann::json& diag) {
  const bool abort_bit = o.method == HeavyTailedMethod::lipschitz_extension ||
                         o.method == HeavyTailedMethod::output_perturbation;
  if (priv && abort_bit) {
    diag["certified"] = "false: whether a phase's certificate aborts depends on the data and is "
                        "not covered by the epsilon-DP statement (docs/proofs/heavy-tailed.md "
                        "\"Abort bit\"); the default clipped-gd has no such bit";
  }
  SealFacts facts(priv && !abort_bit);
  facts.noise = o.run.noise;
  facts.noiseless = noiseless;
  facts.abstained = run.abstained;
  return facts;
}

}  // namespace

Release<Vector> fit_heavy_tailed(const ConstMatrixRef& X_in, const Eigen::Ref<const Vector>& y_in,
                                 const HeavyTailedOptions& o, Rng& rng, Budget* budget,
                                 HeavyTailedTrace* trace) {
  validate_options(o);
  Communicator& comm = comm_or_single(o.run.comm);
  check_distributed(o, comm.size());
  check_agreement(comm, fingerprint(o, X_in.cols()), "the heavy-tailed fit's options and columns");
  const ShardRows all = shard_rows(comm, X_in.rows());
  validate_data(X_in, y_in, all.total);
  bool mapped = false;
  const Vector y_all = global_labels(comm, y_in, o.loss, &mapped);
  const HeldRows split = hold_out_rows(X_in, y_all, o, rng);  // rows the fit skips
  const ConstMatrixRef X = split.active ? ConstMatrixRef(split.train_X) : X_in;
  const Vector& y = split.active ? split.train_y : y_all;
  const ShardRows rows = split.active ? shard_rows(comm, X.rows()) : all;
  require(rows.total >= 1, "holdout: no row is left to fit on");
  const bool priv = o.method != HeavyTailedMethod::non_private;
  const bool gaussian = o.method == HeavyTailedMethod::dp_sgd;
  ReleaseBudget account = priv ? ReleaseBudget(o.privacy.loss(),
                                               gaussian ? Accountant::zcdp : Accountant::basic, budget)
                               : ReleaseBudget::non_private();
  GlmEnvelope env;
  env.kind = o.loss;
  env.huber_kappa = o.huber_kappa;
  // plan and charge: the centring (decided from public values), the moment bound's estimate and
  // the method, all at once before any noise (the budget lives on rank 0).
  if (priv) {
    MethodRun early;
    nlohmann::json scale;
    if ((early.abstained = planned_scale_abstention(o, rows.total, scale))) {  // nothing charged
      nlohmann::json diag = {{"method", name_of(o.method)}, {"scale", scale}};
      return seal(Vector(), account, seal_facts(o, priv, false, early, diag), rng, std::move(diag));
    }
    const Ledger plan = heavy_tailed_plan(rows.total, X.cols(), o, plan_centring(X, rows.total, o));
    all_or_none(comm, [&] { account.charge(plan); });
  }
  // run, part 0: private centring (or the offset check).
  nlohmann::json centring;
  std::optional<Standardization> st;
  RowMatrix Z;
  const double spent = centre_features(X, y, rows.total, o, account, rng, centring, st, Z);
  const ConstMatrixRef Xw = st ? ConstMatrixRef(Z) : X;
  const Vector yz = st ? st->apply_labels(y) : Vector();
  const Vector& yw = st ? yz : y;
  const bool centring_failed = centring.contains("abstained");
  Problem q{Xw, yw, o, env, centring_failed ? Scale{} : resolve_scale(Xw, yw, o, spent, account, rng),
            trace && trace->noiseless, st.has_value(), Shard{comm, rows.offset}, rows.total};
  MethodRun run;
  std::optional<HoldoutLoss> holdout;
  if (centring_failed) {
    run.abstained = centring["abstained"].get<std::string>();  // only the centring was charged
  } else if (q.scale.abstained) {
    run.abstained = q.scale.abstained;  // nothing but the estimates was charged or run
  } else {
    holdout = holdout_mechanism(o);  // its entry is in the plan, final
    switch (o.method) {
      case HeavyTailedMethod::clipped_gd:
      case HeavyTailedMethod::dp_sgd: run = noisy_gd(q, account, rng); break;
      case HeavyTailedMethod::non_private: run = non_private(q); break;
      default: run = pop_localize(q, account, rng, trace);
    }
  }
  nlohmann::json diag = {{"method", name_of(o.method)}, {"profile", name_of(o.profile)},
                         {"loss", name_of(o.loss)}, {"scale", q.scale.diagnostics}};
  if (priv) diag["centring"] = std::move(centring);
  if (st) {
    diag["intercept"] = true;
    run.w = st->to_user_units(run.w);  // post-processing
  }
  if (mapped) diag["labels"] = "mapped {0, 1} -> {-1, +1}";
  if (split.active && !run.abstained)
    diag["holdout"] = held_out_loss(split, run.w, o, env, holdout, rng);
  diag.update(run.diagnostics);
  diag["stated_error"] = fit_stated_error();
  return seal(std::move(run.w), account, seal_facts(o, priv, q.noiseless, run, diag), rng,
              std::move(diag));
}

}  // namespace dpstats::optimize
