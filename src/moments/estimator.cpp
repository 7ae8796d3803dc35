// MomentEstimator: the streaming release, row by row (its channels in streams.hpp).
#include "dpstats/moments/estimator.hpp"
#include "blt.hpp"
#include "detail.hpp"
#include "dpstats/moments/theory.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/neighbouring_names.hpp"
#include "dpstats/seam.hpp"

#include "streams.hpp"

namespace dpstats::moments {

namespace {

using Index = Eigen::Index;

// The l2 norm of x, after checking that every value is finite (a NaN or infinity makes the sum
// of squares non-finite). Summed in kChunk pieces in order, so the value never depends on
// `threads`; clip_factor's margin covers any summation order.
double checked_norm(std::span<const double> x, std::size_t step, int threads) {
  constexpr std::size_t kChunk = GaussianMechanism::kChunk;
  const std::size_t n = x.size(), chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks);
  parallel_tasks(chunks, threads, [&](std::size_t k) {
    double sum = 0;
    for (std::size_t i = k * kChunk; i < std::min(n, (k + 1) * kChunk); ++i) sum += x[i] * x[i];
    partial[k] = sum;
  });
  double sum = 0;
  for (double p : partial) sum += p;
  if (std::isfinite(sum)) return std::sqrt(sum);
  for (double v : x) require(std::isfinite(v), "x at step {} holds a NaN or infinite value", step);
  return Eigen::Map<const Vector>(x.data(), static_cast<Index>(n)).stableNorm();  // overflowed
}

// The factor that brings x to l2 norm <= zeta provably (docs/proofs/moments.md §3); 1 when it already is. For
// any summation order the computed norm is within (1 ± (d/2 + 2)u) of ||x|| (u = 2^-53; Higham
// 2002 §3.1 for d non-negative products, then the square root; no underflow matters for
// zeta >= 2^-400), and the scaling adds three roundings. margin = (d + 16)u covers both, with
// room for the second moment's two roundings (x_i x_j, then times scale2): the clipped row and
// its square stay within the sensitivity the noise is calibrated to. A fixed margin of 2^-50
// does not: it is below (d/2)u from d = 16 on. Rows less than the margin below zeta are scaled
// by at least 1 - 2 margin.
double clip_factor(double norm, double zeta, std::size_t d) {
  const double margin = (static_cast<double>(d) + 16) * 0x1p-53;
  return norm > zeta * (1 - margin) ? zeta / norm * (1 - margin) : 1.0;
}

// The step's output is the released row itself when B = A C^{-1} = I (output factorization of
// the same workload).
bool direct(const Factorization& C, const Workload& A) {
  return C.kind() == FactorizationKind::output && *C.workload() == A;
}

}  // namespace

struct MomentEstimator::Impl {
  MomentsConfig cfg;
  Rng& rng;
  MomentsPlan plan;
  ReleaseBudget account;
  std::optional<detail::Channel> ch1, ch2;
  std::optional<WorkloadState> A1s, A2s, debias_state;
  std::optional<detail::QDiagStream> qdiag;
  bool direct1 = false, direct2 = false;
  Vector x, sec, cy1, cy2, w1, w2, v1, v2, first, second;
  std::size_t t = 0;
  MomentsTrace* trace = nullptr;
  nlohmann::json pre_diagnostics = nlohmann::json::object();
  // The live adaptive clip (no clip given): rows enter as y = x / c_t clipped to norm 1, and the
  // released rows are multiplied back by `unit` = c_t (docs/proofs/moments.md §4.2).
  std::optional<detail::LiveClip> live;
  double unit = 1, norm = 0, max_unit = 0;  // max_unit: the largest clip a row has run at
  // The first warm-up block's rows, held and entered together with the first clipped row (the
  // "carrier": its first-moment input is the sum of the clipped rows, its second-moment input the
  // sum of their squares); rows of later warm-up blocks enter as 0 and are not counted.
  RowMatrix held;
  std::size_t held_count = 0, dropped = 0;
  bool carrier = false, flushed = false;
  Vector carry1, carry2;

  Impl(MomentsConfig c, Rng& r, MomentsPlan p, ReleaseBudget a, MomentsTrace* tr)
      : cfg(std::move(c)), rng(r), plan(std::move(p)), account(std::move(a)), trace(tr) {}
  void build_streams();
  double check_row(std::span<const double> x);
  double check_live_row(std::span<const double> x);
  void fold_held(std::span<const double> x, double factor);
  void first_block(const double* xs, double factor, Index b, Index e, RandomBits& bits);
  void second_block(const double* xs, double factor, Index b, Index e, RandomBits& bits);
  void release(std::span<const double> in, std::span<double> out, const GaussianMechanism& mech,
               RandomBits& bits) const;
  void run_chunks(const double* xs, double factor);
  void finish_step();
  SealFacts facts() const;
  ReleaseBudget sealed_account() const;
};

// The run's state: the channels C·Y and C^{-1}·W, the workload recursions and the buffers.
void MomentEstimator::Impl::build_streams() {
  const MomentsConfig& c = cfg;
  const bool cs = c.method == Method::cs, pp = detail::is_pp(c.method);
  const Factorization& C2 = cs ? c.C1 : c.C2;
  direct1 = !live && direct(c.C1, c.A1);  // the adaptive clip rescales before A
  direct2 = !live && !pp && direct(C2, c.A2);
  ch1.emplace(c.C1, plan.d, pp || !direct1);
  if (!pp) ch2.emplace(C2, plan.D2, !direct2);
  if (!direct1) A1s.emplace(c.A1, plan.d);
  if (pp || !direct2) A2s.emplace(c.A2, plan.D2);
  if (c.method == Method::pp_debiased) {
    debias_state.emplace(c.A2, 1);
    qdiag.emplace(c.C1);
  }
  const auto di = static_cast<Index>(plan.d), Di = static_cast<Index>(plan.D2);
  x = cy1 = w1 = v1 = first = Vector::Zero(di);
  sec = cy2 = w2 = v2 = second = Vector::Zero(Di);
}

MomentEstimator::MomentEstimator(MomentsConfig config, Rng& rng, Budget* budget,
                                 MomentsTrace* trace) {
  detail::validate_config(config, false);  // validate
  if (!config.clip) {  // the adaptive clip: the stream on rows of norm <= 1 at the rest
    MomentsConfig unit = config;
    unit.clip = 1.0;
    const double scale_rho = detail::pre_stream_rho(  // plan: the clip's blocks, the stream
        config, plan_moments(unit, config.scale_share), config.scale_share);
    detail::LiveClipPlan clip_plan = detail::plan_live_clip(config, scale_rho);
    MomentsPlan plan = plan_moments(unit, config.scale_share, clip_plan.block);
    ReleaseBudget account = detail::release_account(config, plan, budget, scale_rho);
    Ledger whole = plan.ledger;
    whole.insert(whole.end(), clip_plan.ledger.begin(), clip_plan.ledger.end());
    account.charge(whole);  // charge: the stream and its clip, before any noise is drawn
    const double margin = config.clip_margin;
    impl_ = std::make_unique<Impl>(std::move(config), rng, std::move(plan), std::move(account),
                                   trace);
    impl_->live.emplace(std::move(clip_plan), margin);
    impl_->unit = 0;
    impl_->build_streams();
    return;
  }
  MomentsPlan plan = plan_moments(config);  // plan
  ReleaseBudget account = detail::release_account(config, plan, budget, 0);
  account.charge(plan.ledger);  // charge: the whole stream, before any noise is drawn
  impl_ = std::make_unique<Impl>(std::move(config), rng, std::move(plan), std::move(account),
                                 trace);
  impl_->build_streams();
}

// The batch API's stream: planned at the rest of the budget with the clip now released; its
// entries claim those estimate_moments charged with the whole plan (the same losses: they do not
// depend on the clip's value).
MomentEstimator::MomentEstimator(MomentsConfig config, Rng& rng, PreStream pre,
                                 MomentsTrace* trace) {
  detail::validate_config(config, false);  // the clip is set by now
  MomentsPlan plan = plan_moments(config, pre.share);
  pre.account.claim(plan.ledger);
  impl_ = std::make_unique<Impl>(std::move(config), rng, std::move(plan), std::move(pre.account),
                                 trace);
  impl_->pre_diagnostics = std::move(pre.diagnostics);
  impl_->build_streams();
}

MomentEstimator::~MomentEstimator() = default;
MomentEstimator::MomentEstimator(MomentEstimator&&) noexcept = default;

// Checks x_t and returns the factor that brings it within the clip (1 when it already is).
double MomentEstimator::Impl::check_row(std::span<const double> x) {
  require(t < cfg.steps, "push after the last step: the estimator was built for {} steps",
          cfg.steps);
  require(x.size() == plan.d, "x must have {} values (dim), got {}", plan.d, x.size());
  // NaN first: comparisons with NaN are false and would bypass the clip.
  norm = checked_norm(x, t + 1, cfg.run.threads);
  if (live) return check_live_row(x);
  const double factor = clip_factor(norm, plan.mech_clip, plan.d);
  if (norm > plan.mech_clip) {
    require(cfg.on_norm == NormPolicy::clip,
            fmt::format("x at step {} has l2 norm above the clip norm {}", t + 1,
                        format_number(plan.mech_clip)));
    if (trace) ++trace->clipped_rows;
  }
  return factor;
}

// The live stream's row: y = x f / c, with f bringing x within c (clip_factor): ||y|| <= 1 -
// margin before the one extra rounding of f / c, which the margin covers (docs/proofs/moments.md
// §3, §4.2). In the warm-up (no clip yet) the row enters as 0, held when it is in the first
// block; the first clipped row carries the held ones (returns 1: the carrier is already scaled).
double MomentEstimator::Impl::check_live_row(std::span<const double> x) {
  unit = live->clip();
  carrier = false;
  if (unit == 0) {
    if (t < live->block() && !detail::is_pp(cfg.method)) {  // PP squares x̂: a sum cannot carry rows
      if (held.rows() == 0) held.resize(static_cast<Index>(live->block()), static_cast<Index>(plan.d));
      held.row(static_cast<Index>(held_count++)) =
          Eigen::Map<const Vector>(x.data(), static_cast<Index>(plan.d)).transpose();
    } else {
      ++dropped;
    }
    return 0.0;
  }
  if (trace && norm > unit) ++trace->clipped_rows;
  max_unit = std::max(max_unit, unit);
  const double factor = clip_factor(norm, unit, plan.d) / unit;
  if (held_count == 0 || flushed) return factor;
  fold_held(x, factor);
  return 1.0;
}

// The carrier: carry1 = sum of the clipped, scaled rows (held and this one), carry2 = the sum of
// their outer products (full) or squares (diagonal), summed in row order.
void MomentEstimator::Impl::fold_held(std::span<const double> x, double factor) {
  const bool full = cfg.form == SecondMomentForm::full;
  const auto di = static_cast<Index>(plan.d);
  carry1 = Vector::Zero(di);
  carry2 = Vector::Zero(static_cast<Index>(plan.D2));
  auto add = [&](const Vector& y) {
    carry1 += y;
    if (full) {
      for (Index p = 0; p < di; ++p) carry2.segment(p * di, di) += y[p] * y;
    } else {
      carry2 += y.cwiseAbs2();
    }
  };
  Vector y;
  for (std::size_t i = 0; i < held_count; ++i) {
    const Vector xi = held.row(static_cast<Index>(i)).transpose();
    const double ni = checked_norm({xi.data(), plan.d}, i + 1, 1);
    if (trace && ni > unit) ++trace->clipped_rows;
    y = xi * (clip_factor(ni, unit, plan.d) / unit);
    add(y);
  }
  y = Eigen::Map<const Vector>(x.data(), di) * factor;
  add(y);
  held.resize(0, 0);
  flushed = carrier = true;
}

// One chunk of the first moment: clipped input, C·Y row, noise, C^{-1} and the workload on [b, e).
void MomentEstimator::Impl::first_block(const double* xs, double factor, Index b, Index e,
                                        RandomBits& bits) {
  const bool full = cfg.form == SecondMomentForm::full, pp = detail::is_pp(cfg.method);
  if (!full) x.segment(b, e - b) = Eigen::Map<const Vector>(xs + b, e - b) * factor;
  ch1->transform(x.data(), cy1.data(), b, e);
  const auto n = static_cast<std::size_t>(e - b);
  release({cy1.data() + b, n}, {w1.data() + b, n}, *plan.mech1, bits);
  if (direct1) {
    first.segment(b, e - b) = w1.segment(b, e - b);
    if (pp) ch1->invert(w1.data(), v1.data(), b, e);
  } else {
    ch1->invert(w1.data(), v1.data(), b, e);
    if (live) v1.segment(b, e - b) *= unit;  // back to data units (the channel kept its copy)
    A1s->push(v1.data(), first.data(), static_cast<std::size_t>(b), static_cast<std::size_t>(e));
  }
}

// One chunk of the second moment (the same products as (factor x)(factor x)^T, times scale2).
void MomentEstimator::Impl::second_block(const double* xs, double factor, Index b, Index e,
                                         RandomBits& bits) {
  const double scale2 = plan.scale2;
  if (carrier) {
    sec.segment(b, e - b) = carry2.segment(b, e - b) * scale2;
  } else if (cfg.form == SecondMomentForm::full) {
    const auto D = static_cast<Index>(plan.d);
    for (Index i = b; i < e;) {  // row p of x x^T, from column i - pD on
      const Index p = i / D, stop = std::min(e, (p + 1) * D);
      for (; i < stop; ++i) sec[i] = x[p] * x[i - p * D] * scale2;
    }
  } else {
    for (Index i = b; i < e; ++i) {
      const double xi = xs[i] * factor;
      sec[i] = xi * xi * scale2;
    }
  }
  ch2->transform(sec.data(), cy2.data(), b, e);
  const auto n = static_cast<std::size_t>(e - b);
  release({cy2.data() + b, n}, {w2.data() + b, n}, plan.mech2 ? *plan.mech2 : *plan.mech1, bits);
  if (direct2) {
    second.segment(b, e - b) = w2.segment(b, e - b) / scale2;
  } else {
    ch2->invert(w2.data(), v2.data(), b, e);
    v2.segment(b, e - b) /= scale2;
    if (live) v2.segment(b, e - b) *= unit * unit;
    A2s->push(v2.data(), second.data(), static_cast<std::size_t>(b), static_cast<std::size_t>(e));
  }
}

// The mechanism on one chunk; the test hook `noiseless` copies the input instead.
void MomentEstimator::Impl::release(std::span<const double> in, std::span<double> out,
                                    const GaussianMechanism& mech, RandomBits& bits) const {
  if (trace && trace->noiseless) {
    std::copy(in.begin(), in.end(), out.begin());
    return;
  }
  mech.apply_each(in, out, bits);
}

// The release, cut into blocks of coordinates: the first moment (d values) and, unless PP, the
// second (d^2 or d). Each coordinate's input, C·Y row, noise and post-processing depend on that
// coordinate alone (and on the whole clipped x for a full second moment), so a block's chunks run
// in parallel. The noise is apply_each's: a block of kChunk or more values gets one generator per
// chunk from rng.split() in order, a shorter one the stream itself, so a seeded run gives the
// same release for any `threads`.
void MomentEstimator::Impl::run_chunks(const double* xs, double factor) {
  auto run = [&](bool second_moment, Index b, Index e, RandomBits& bits) {
    second_moment ? second_block(xs, factor, b, e, bits) : first_block(xs, factor, b, e, bits);
  };
  struct Chunk {
    bool second;
    Index begin, end;
    std::unique_ptr<Rng> rng;
  };
  std::vector<Chunk> chunks;
  constexpr auto kChunk = static_cast<Index>(GaussianMechanism::kChunk);
  for (const bool second_moment : {false, true}) {
    if (second_moment && detail::is_pp(cfg.method)) break;
    const auto n = static_cast<Index>(second_moment ? plan.D2 : plan.d);
    auto generators = GaussianMechanism::chunk_generators(static_cast<std::size_t>(n), rng);
    if (generators.empty()) {
      RandomBits bits(rng);  // in order, on this thread
      for (Index b = 0; b < n; b += kChunk) run(second_moment, b, std::min(n, b + kChunk), bits);
    }
    for (std::size_t k = 0; k < generators.size(); ++k) {
      const auto b = static_cast<Index>(k) * kChunk;
      chunks.push_back({second_moment, b, std::min(n, b + kChunk), std::move(generators[k])});
    }
  }
  parallel_tasks(chunks.size(), cfg.run.threads, [&](std::size_t k) {
    RandomBits bits(*chunks[k].rng);
    run(chunks[k].second, chunks[k].begin, chunks[k].end, bits);
  });
}

// After the chunks: advance the streams; PP squares the first moment (and debiases it).
void MomentEstimator::Impl::finish_step() {
  const bool pp = detail::is_pp(cfg.method), full = cfg.form == SecondMomentForm::full;
  ch1->advance();
  if (!direct1) A1s->advance();
  if (!pp) {
    ch2->advance();
    if (!direct2) A2s->advance();
    return;
  }
  const auto di = static_cast<Index>(plan.d);  // x̂ = v1; PP squares it
  if (full) {
    Eigen::Map<RowMatrix>(v2.data(), di, di) = v1 * v1.transpose();
  } else {
    v2 = v1.array().square().matrix();
  }
  A2s->push(v2.data(), second.data());
  if (cfg.method != Method::pp_debiased) return;
  // b_t = g^2 sum_k (A2)_{t,k} Q_kk with Q = C1^{-1} C1^{-T} (docs/proofs/moments.md §5).
  const double q = qdiag->next() * unit * unit;  // row t's noise is unit x C1^{-1} Z
  double bt = 0;
  debias_state->push(&q, &bt);
  bt *= plan.sc.g1 * plan.sc.g1;
  if (full) {
    for (Index i = 0; i < di; ++i) second[i * di + i] -= bt;
  } else {
    second.array() -= bt;
  }
}

void MomentEstimator::push(std::span<const double> x) {
  Impl& m = *impl_;
  const double factor = m.check_row(x);
  const double* xs = m.carrier ? m.carry1.data() : x.data();
  if (m.cfg.form == SecondMomentForm::full)
    m.x = Eigen::Map<const Vector>(xs, static_cast<Index>(m.plan.d)) * factor;
  m.run_chunks(xs, factor);
  m.finish_step();
  ++m.t;
  if (m.live) m.live->record(m.norm, m.rng);  // the next block's clip: after this row's release
}

std::span<const double> MomentEstimator::first() const {
  return {impl_->first.data(), static_cast<std::size_t>(impl_->first.size())};
}
std::span<const double> MomentEstimator::second() const {
  return {impl_->second.data(), static_cast<std::size_t>(impl_->second.size())};
}
std::size_t MomentEstimator::step() const { return impl_->t; }
const MomentsConfig& MomentEstimator::config() const { return impl_->cfg; }
const NoiseScales& MomentEstimator::scales() const { return impl_->plan.sc; }
double MomentEstimator::noise_multiplier() const { return impl_->plan.sigma; }
double MomentEstimator::clip() const {
  return impl_->live ? impl_->live->clip() : impl_->plan.mech_clip;
}
bool MomentEstimator::adaptive_clip() const { return impl_->live.has_value(); }

SealFacts MomentEstimator::Impl::facts() const {
  SealFacts f(true);  // docs/proofs/moments.md
  f.neighbouring = cfg.neighbouring;
  f.noise = cfg.run.noise;
  f.noiseless = trace && trace->noiseless;
  return f;
}

// seal: the guarantee and ledger are the account's, charged once at construction; the live
// clip's composites take their planned places with the blocks that drew so far.
ReleaseBudget MomentEstimator::Impl::sealed_account() const {
  ReleaseBudget a = account;
  if (live) a.claim(live->ran());
  return a;
}

Release<int> MomentEstimator::release_fields() const {
  return seal(0, impl_->sealed_account(), impl_->facts(), impl_->rng, diagnostics());
}

Release<MomentSeries> MomentEstimator::release(MomentSeries series) const {
  return seal(std::move(series), impl_->sealed_account(), impl_->facts(), impl_->rng,
              diagnostics());
}

nlohmann::json MomentEstimator::diagnostics() const {
  const Impl& m = *impl_;
  const MomentsConfig& c = m.cfg;
  const NoiseScales& sc = m.plan.sc;
  nlohmann::json j = {{"method", name_of(c.method)},
                      {"workload_first", c.A1.name()},
                      {"workload_second", c.A2.name()},
                      {"factorization_first", c.C1.name()},
                      {"factorization_second", (c.method == Method::cs ? c.C1 : c.C2).name()},
                      {"second_moment", name_of(c.form)},
                      {"steps", c.steps},
                      {"clip", m.live ? m.live->clip() : m.plan.mech_clip},
                      {"c1_norm", m.plan.np.c1_norm},
                      {"c2_norm", m.plan.np.c2_norm},
                      {"noise_multiplier", m.plan.sigma},
                      {"sensitivity", sc.s1},
                      {"first_noise_std", sc.g1},
                      {"second_noise_std", sc.g2},
                      {"clipped_rows", "not released (not private)"}};
  if (m.plan.mech1->loss().kind == LossKind::approximate)
    j["rho"] = m.plan.mech1->rho();  // the lattice release is also this rho-zCDP
  if (sc.two_mechanisms) j["second_sensitivity"] = sc.s2;
  if (c.method == Method::jme || c.method == Method::lambda_jme) j["lambda"] = sc.lambda;
  if (c.method == Method::ime) j["alpha"] = c.alpha;
  if (c.method == Method::cs) j["tau"] = c.tau;
  // The stated error of the last step's first moment: each coordinate's noise standard
  // deviation g1 ||row_n(A1 C1^{-1})|| (public; clipping bias not included: the clip and, on the
  // batch path, the clipped-row count state that). O(n buffers) for blt; skipped above 20000
  // steps for the others (O(n^2) for a Toeplitz C).
  const bool blt = c.C1.kind() == FactorizationKind::blt, cheap = blt || c.steps <= 20000u;
  const auto final_row_sq = [&] {
    return blt ? detail::blt_b_norms(c.A1, {c.C1.kappa(), c.C1.theta(), c.C1.omega()}).last_row_sq
               : moments::b_row_norms_sq(c.A1, c.C1).back();
  };
  if (cheap && !m.live) j["first_noise_std_final"] = sc.g1 * std::sqrt(final_row_sq());
  if (m.live) {  // the noise scales are per unit of clip: row t's noise is c_t times them
    j["clip_source"] = "adaptive: learnt privately per block of rows (docs/proofs/moments.md "
                       "§4.2); rows of the first block(s), before a clip exists, enter as 0";
    j["noise_units"] = "per unit of the clip: the noise of row t in data units is clip_t times "
                       "the *_noise_std values";
    j["adaptive_clip"] = m.live->diagnostics();
    j["adaptive_clip"]["held_rows"] = m.held_count;  // entered with the first clipped row
    j["adaptive_clip"]["rows_not_counted"] = m.dropped;  // later warm-up blocks
    if (cheap) {
      const double per_unit = sc.g1 * std::sqrt(final_row_sq());
      j["first_noise_std_final_per_unit_clip"] = per_unit;
      // An upper bound in data units: row k's noise is c_k times the per-unit noise, and
      // sum_k B_nk^2 c_k^2 <= max_k c_k^2 sum_k B_nk^2 (B = A1 C1^{-1}).
      j["first_noise_std_final"] = per_unit * m.max_unit;
      j["first_noise_std_final_is"] = "an upper bound: the per-unit deviation times the largest "
                                      "clip a row has run at so far";
    }
  }
  for (const auto& [k, v] : m.pre_diagnostics.items()) j[k] = v;
  return j;
}

namespace detail {

double row_norm(std::span<const double> x, std::size_t step) { return checked_norm(x, step, 1); }

}  // namespace detail

}  // namespace dpstats::moments
