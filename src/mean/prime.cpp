// PRIME driver (docs/proofs/mean.md and the practical profile of docs/results/prime.md). See
// include/dpstats/mean/prime.hpp for the two profiles; the privacy argument is in
// docs/results/prime.md ("Privacy argument") and summarised next to each release below.
#include "dpstats/mean/prime.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mean/robust.hpp"
#include "dpstats/mean/units.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/composite.hpp"
#include "robust_mean_core.hpp"
#include "prime_kernels.hpp"
#include "ranks_internal.hpp"

namespace dpstats {
namespace {

using namespace prime_detail;


// ---- public constants (docs/proofs/mean.md, addendum) ----
// Practical shares of the filter's ρ (addendum "Share of μ²": Σ_t 87%, λ 5%, ψ 4.4%, mean 1.5%).
constexpr double kShareSigma = 0.85, kShareLambda = 0.05, kSharePsi = 0.045,
                 kShareCentre = 0.015, kShareHist = 0.02, kShareCount = 0.005,
                 kShareFinal = 0.015;
constexpr double kKappaPractical = 0.75;  // shrink-to-centre mean max(|S|, κn)
// PRIME-ht (docs/proofs/mean.md §2): Alg 15's B = 50σ/√α and bin scale 40σ; the practical ball keeps
// all but a fraction α/2 of the clean rows in expectation by Markov (practical_ball).
constexpr double kHtBConst = 50, kHtBinSigma = 40;


struct Defaults {
  int T1, T2;
};
Defaults default_rounds(const PrimeOptions& o, std::int64_t n, std::int64_t d) {
  if (o.profile == Profile::practical) return {o.T1 > 0 ? o.T1 : 3, o.T2 > 0 ? o.T2 : 3};
  // Card §3: T1 = max(2, ⌊ln(B√d)⌋), T2 = max(2, ⌊ln d⌋); PRIME-ht: B = 50/√α (Alg 15).
  const double B = o.heavy_tailed
                       ? kHtBConst / std::sqrt(o.alpha)
                       : 8 * std::sqrt(std::log(static_cast<double>(d) * n / o.failure_probability));
  const int t1 = std::max(2, static_cast<int>(std::floor(std::log(B * std::sqrt(double(d))))));
  const int t2 = std::max(2, static_cast<int>(std::floor(std::log(static_cast<double>(d)))));
  return {o.T1 > 0 ? o.T1 : t1, o.T2 > 0 ? o.T2 : t2};
}

// Every option, from public values only (the data's shape included), before anything is read.
void validate(const PrimeOptions& o, std::int64_t n, std::int64_t d) {
  validate_robust(o);
  require(o.T1 >= 0 && o.T1 <= 20, fmt::format("T1 must be in [0, 20] (0 = default), got {}", o.T1));
  require(o.T2 >= 0 && o.T2 <= 20, fmt::format("T2 must be in [0, 20] (0 = default), got {}", o.T2));
  require(n >= 2 && d >= 1, fmt::format("need n >= 2 and d >= 1, got n = {}, d = {}", n, d));
  check_units_options(o.scale, o.scale_share, o.clip_check_share, d);
}

// ---------------------------------------------------------------------------------------------
// The plan: every mechanism and its public noise scale, fixed from (n, d, options) before any
// data are read. The whole plan is charged to the budget up front (the planned maximum).
// Everything is in scale units (mean/units.hpp).
// ---------------------------------------------------------------------------------------------
struct Plan : ClipPlan {
  Profile profile = Profile::practical;
  bool ht = false;         // PRIME-ht (Alg 3/16/17)
  std::int64_t n = 0, d = 0;
  int T1 = 0, T2 = 0;
  std::int64_t k = 0;      // top-k size
  double kappa = 0;        // shrink-mean floor
  // range step (ClipPlan): practical ball radius r, paper box half-side B/2 or ht ball √d·B/2
  double e_med = 0;        // public bound on the median's error (scale units)
  double box_side = 0;     // paper: B
  int L = 0;               // DPthreshold bins
  double stop_threshold = 0;
  // mechanisms (scale units)
  Mech lambda_outer, lambda_inner, count_outer, count_inner, sigma, psi, psi_tilde, centre, hist,
      final_mean, count_psi;
  ExponentialMechanismOptions med;          // practical: the coordinate medians
  std::vector<LedgerEntry> filter_entries;  // charged after the range entries
  double eps1 = 0, eps2 = 0, delta1 = 0, delta2 = 0;  // paper budgets (golden values)
  double rho_filter = 0;
  AuxPlan aux;             // private units or the clipped-row count

  // Everything the release charges, in order: auxiliary step, range, medians, filter.
  Ledger ledger() const {
    return front_ledger(*this, profile == Profile::practical, filter_entries);
  }
};

void plan_practical(Plan& p, const PrimeOptions& o) {
  const std::int64_t n = p.n, d = p.d;
  const double nd = static_cast<double>(n), dd = static_cast<double>(d);
  const double margin = fp_margin(n, d);
  p.kappa = kKappaPractical;
  p.rho_filter = plan_practical_front(p, o);
  p.e_med = practical_ball(p, n, d, o.alpha, o.failure_probability, o.heavy_tailed);
  const double D2 = p.D * p.D;
  p.L = 2 + static_cast<int>(std::ceil(std::log2(D2)));
  const int TT = p.T1 * p.T2;
  const double rf = p.rho_filter;
  const NoiseMode mode = o.run.noise;
  // Releases (sensitivities under replace-one, scale units; docs/proofs/mean.md §2):
  //   λ_max(M − I), ψ = ⟨M − I, U⟩: D²/n; M in the Frobenius-isometric basis: √2 D²/n;
  //   shrink-to-centre mean: D/(κn); score histogram (counts): √2; |S|: 1.
  p.lambda_outer = gaussian_rho(D2 / nd * margin, rf * kShareLambda / TT, 1, mode);
  p.lambda_inner = p.lambda_outer;
  p.sigma = gaussian_rho(std::sqrt(2.0) * D2 / nd * margin, rf * kShareSigma / TT,
                         static_cast<std::size_t>(d * (d + 1) / 2), mode);
  p.psi = gaussian_rho(D2 / nd * margin, rf * kSharePsi / TT, 1, mode);
  const auto ud = static_cast<std::size_t>(d);
  p.centre = gaussian_rho(p.D / (p.kappa * nd) * margin, rf * kShareCentre / TT, ud, mode);
  p.hist = gaussian_rho(std::sqrt(2.0), rf * kShareHist / TT, static_cast<std::size_t>(p.L), mode);
  p.count_psi = gaussian_rho(1.0, rf * kShareCount / TT, 1, mode);
  p.final_mean = gaussian_rho(p.D / (p.kappa * nd) * margin, rf * kShareFinal, ud, mode);
  // The λ releases: T1 at epoch starts, T1(T2 − 1) inside (λ_1 = λ^(s) is reused).
  const char* mi = o.heavy_tailed ? "M" : "M - I";
  p.filter_entries = {
      p.lambda_outer.entry(fmt::format("lambda_max({}) (epoch and inner)", mi), TT),
      p.sigma.entry("M(S_t) with GOE-shaped symmetric noise", TT),
      p.psi.entry(fmt::format("psi_t = <{}, U_t>", mi), TT),
      p.centre.entry("centre mu_t (shrink-to-centre mean)", TT),
      p.hist.entry("DPthreshold score histogram", TT)};
  // PRIME-ht's ψ̃ = (1/n)Σ τ is ψ itself (post-processing): no |S_t| release.
  if (!o.heavy_tailed)
    p.filter_entries.push_back(p.count_psi.entry("|S_t| for DPthreshold's psi", TT));
  p.filter_entries.push_back(p.final_mean.entry("final mean (shrink-to-centre)", 1));
  // Stop when λ <= max(Cα ln(1/α), MP edge + 2σ_λ) (docs/proofs/mean.md, addendum correction 8);
  // PRIME-ht: λ_max(M) <= max(C, 1 + MP edge + 2σ_λ) (Alg 16 stops at the constant C).
  const double edge = 2 * std::sqrt(dd / nd) + dd / nd;
  p.stop_threshold = o.heavy_tailed ? std::max(o.C, 1 + edge + 2 * p.lambda_outer.scale())
                                    : std::max(o.C * o.alpha * std::log(1 / o.alpha),
                                               edge + 2 * p.lambda_outer.scale());
}

// Paper: the clipping region. PRIME-ht (Alg 3): q_range-ht (Alg 15: m parts at (ε/m, δ/m), bins
// 40σ, median), B = 50/√α, projection onto Ball(x̂, √d·B/2), no T_2α restriction (Alg 16).
// PRIME: the box x̄ + [−B/2, B/2]^d with B = 8√ln(dn/ζ).
void plan_paper_region(Plan& p, const PrimeOptions& o) {
  const double nd = static_cast<double>(p.n), dd = static_cast<double>(p.d);
  if (o.heavy_tailed) {
    RangeHtOptions h;
    h.epsilon = p.range.epsilon;
    h.delta = p.range.delta;
    h.alpha = o.alpha;
    h.zeta = o.failure_probability;
    h.bin_sigma = kHtBinSigma;
    h.B_const = kHtBConst;
    h.sigma = 1;
    p.range_ht = h;
    p.shape = ClipShape::ball;
    p.box_side = kHtBConst / std::sqrt(o.alpha);
    p.radius = std::sqrt(dd) * p.box_side / 2;
    p.q = quantum_for(p.radius, p.n);
    p.region = ball_region(p.radius, p.q, dd);
    p.D = 2 * p.region;
    p.k = p.n;
  } else {
    p.shape = ClipShape::box;
    p.box_side = 8 * std::sqrt(std::log(dd * nd / o.failure_probability));  // B (scale units)
    p.radius = p.box_side / 2;
    p.q = quantum_for(p.radius, p.n);
    p.region = p.radius + p.q / 2;
    p.D = 2 * p.region * std::sqrt(dd);
  }
}

void plan_paper(Plan& p, const PrimeOptions& o) {
  const double nd = static_cast<double>(p.n), dd = static_cast<double>(p.d);
  const double margin = fp_margin(p.n, p.d);
  const NoiseMode mode = o.run.noise;
  // Alg 9: q_range with 0.01(ε, δ) and Lemma G.13's 0.9 cap; the filter gets the rest.
  const auto [eps_f, delta_f] = plan_paper_front(p, o);
  plan_paper_region(p, o);
  const double B2d = p.D * p.D;  // (B√d)², with B including the quantisation slack
  p.L = 2 + static_cast<int>(std::ceil(std::log2(B2d)));
  // Outer: 2T1 Laplace releases at ε1 and the final Gaussian mean at (ε1, δ_out) (D1, D2).
  const double eps_out = eps_f / 2, delta_out = delta_f / 2;
  p.eps1 = eps_out / (2 * p.T1 + 1);
  p.delta1 = delta_out;
  const double eps_in = remainder_after(eps_f, eps_out);
  const double delta_in = remainder_after(delta_f, delta_out);
  // Inner: k = 6 T1 T2 mechanisms (μ, λ, Σ, ψ, DPthreshold, and the D7 size check), each
  // (ε2, δ2) by Lemma G.13 (the paper's Alg 10 line 1 with k = 6T1T2).
  const long kin = 6L * p.T1 * p.T2;
  p.eps2 = std::min(0.9, eps_in) / (2 * std::sqrt(2.0 * kin * std::log(2 / delta_in)));
  p.delta2 = delta_in / (2.0 * kin);
  // P9's noise scales: Lap(2B²d/(nε)) for λ, ψ; Lap(1/ε) for |S|; Gaussian 2B√d/n for means,
  // 4B²d/n for Σ (D5: iid upper triangle, l2 <= Frobenius); ψ̃ at ε2/2 with sensitivity B²d/n
  // and the histogram (√2 in counts) at (ε2/2, δ2): DPthreshold is (ε2, δ2) in total.
  const auto ud = static_cast<std::size_t>(p.d);
  p.lambda_outer = laplace(2 * B2d / nd * margin, p.eps1, mode);
  p.count_outer = laplace(1, p.eps1, mode);
  p.final_mean = gaussian_ed(2 * p.D / nd * margin, p.eps1, p.delta1, ud, mode);
  p.lambda_inner = laplace(2 * B2d / nd * margin, p.eps2, mode);
  p.count_inner = laplace(1, p.eps2, mode);
  p.sigma = gaussian_ed(4 * B2d / nd * margin, p.eps2, p.delta2,
                        static_cast<std::size_t>(p.d * (p.d + 1) / 2), mode);
  p.psi = laplace(2 * B2d / nd * margin, p.eps2, mode);
  p.centre = gaussian_ed(2 * p.D / nd * margin, p.eps2, p.delta2, ud, mode);
  p.psi_tilde = laplace(B2d / nd * margin, p.eps2 / 2, mode);
  // PRIME-ht (Alg 17): histogram noise with an extra √d (D16, kept: it over-noises).
  p.hist = gaussian_ed(std::sqrt(2.0) * (o.heavy_tailed ? std::sqrt(dd) : 1.0), p.eps2 / 2,
                       p.delta2, static_cast<std::size_t>(p.L), mode);
  const int TT = static_cast<int>(p.T1 * p.T2);
  LedgerEntry folded = optimal_composition_entry(
      fmt::format("inner filter: {} mechanisms (lambda_t, n_t, Sigma_t, psi_t, mu_t, "
                  "DPthreshold) each (eps2={}, delta2={}), composed",
                  kin, p.eps2, p.delta2),
      p.eps2, p.delta2, kin, delta_in / 2,
      {p.lambda_inner.entry("lambda_t", TT), p.count_inner.entry("n_t", TT),
       p.sigma.entry("Sigma_t", TT), p.psi.entry("psi_t", TT), p.centre.entry("mu_t", TT),
       p.psi_tilde.entry("DPthreshold: psi~", TT), p.hist.entry("DPthreshold: histogram", TT)});
  p.filter_entries = {
      p.lambda_outer.entry(o.heavy_tailed ? "||M|| (epoch)" : "||M - I|| (epoch)", p.T1),
      p.count_outer.entry("|S| (epoch)", p.T1), p.final_mean.entry("final mean", 1), folded};
  p.stop_threshold = o.heavy_tailed ? o.C : o.C * o.alpha * std::log(1 / o.alpha);
}

Plan build_plan(std::int64_t n, std::int64_t d, const PrimeOptions& o) {
  Plan p;
  p.profile = o.profile;
  p.ht = o.heavy_tailed;
  p.bounded_covariance = o.heavy_tailed;
  p.n = n;
  p.d = d;
  const auto [T1, T2] = default_rounds(o, n, d);
  p.T1 = T1;
  p.T2 = T2;
  p.k = static_cast<std::int64_t>(std::ceil(o.topk_multiplier * o.alpha * static_cast<double>(n)));
  p.range.sigma = 1;  // scale units
  p.range.zeta = o.failure_probability;
  if (o.profile == Profile::practical) {
    plan_practical(p, o);
  } else {
    plan_paper(p, o);
  }
  p.range_per = q_range_coordinate_budget(p.range, static_cast<std::size_t>(d));
  p.range_entry = p.range_ht ? q_range_ht_entry(*p.range_ht, static_cast<std::size_t>(d))
                             : q_range_entry(p.range, static_cast<std::size_t>(d),
                                             "q_range (coarse range)");
  return p;
}

// Every public value the plan reads (the scale's values do not enter it, only whether one is
// supplied).
Plan make_plan(std::int64_t n, std::int64_t d, const PrimeOptions& o) {
  const auto key = std::make_tuple(
      n, d, o.privacy.epsilon, o.privacy.delta, o.profile, o.run.noise, o.alpha,
      o.scale.has_value(), o.scale_share, o.clip_check_share, o.failure_probability,
      o.topk_multiplier, o.T1, o.T2, o.C, o.heavy_tailed);
  return cached_plan<Plan>(key, [&] { return build_plan(n, d, o); });
}

// λ: λ_max(M − I) (practical), ‖M − I‖₂ (paper); PRIME-ht drops the −I (Alg 16).
double lambda_stat(const Matrix& M, Profile profile, bool ht) {
  const auto d = M.rows();
  Eigen::SelfAdjointEigenSolver<Matrix> es(M, Eigen::EigenvaluesOnly);
  const Vector ev = es.eigenvalues().array() - (ht ? 0.0 : 1.0);
  if (profile == Profile::practical) return ev[d - 1];  // one-sided (docs/proofs/mean.md)
  return std::max(std::abs(ev[0]), std::abs(ev[d - 1]));      // paper: ‖M − I‖₂
}

// The verdict on PRIME's units at a share (public values only), for resolve_share.
auto units_verdict(std::int64_t n, std::int64_t d) {
  return [n, d](const PrimeOptions& at) {
    return robust_units_plan(n, d, at, at.profile == Profile::practical);
  };
}

}  // namespace

Matrix symmetric_noise_release(const Matrix& M, const GaussianMechanism& g, bool goe, Rng& rng,
                               bool noiseless) {
  const auto d = M.rows();
  require(M.cols() == d, "symmetric_noise_release: M must be square");
  require(g.dimension() == static_cast<std::size_t>(d * (d + 1) / 2),
          fmt::format("symmetric_noise_release: mechanism dimension {} != d(d+1)/2 = {}",
                      g.dimension(), d * (d + 1) / 2));
  const double w = goe ? std::sqrt(2.0) : 1.0;
  Vector packed(d * (d + 1) / 2);
  Eigen::Index c = 0;
  for (Eigen::Index a = 0; a < d; ++a)
    for (Eigen::Index b = a; b < d; ++b) packed[c++] = (a == b ? 1 : w) * M(a, b);
  const Vector noisy = noiseless ? packed : g.apply(packed, rng);
  Matrix out(d, d);
  c = 0;
  for (Eigen::Index a = 0; a < d; ++a)
    for (Eigen::Index b = a; b < d; ++b) {
      const double v = noisy[c++] / (a == b ? 1 : w);
      out(a, b) = v;
      out(b, a) = v;
    }
  return out;
}

// ---------------------------------------------------------------------------------------------
PrimeFeasibility prime_feasibility(std::int64_t n, std::int64_t d, const PrimeOptions& given) {
  validate(given, n, d);
  PrimeOptions o = given;
  if (!o.scale) resolve_share(o, units_verdict(n, d));  // (a planned share's verdict aside)
  const Plan p = make_plan(n, d, o);
  PrimeFeasibility f;
  f.radius = p.shape == ClipShape::ball ? p.radius : p.radius * std::sqrt(double(d));
  f.diameter_sq = p.D * p.D;
  // Spectral norm of one Σ_t noise matrix: GOE-shaped (diagonal s², off-diagonal s²/2) ≈ √2·s·2√d/√2
  // = 2 s √d·(1/√2)·√2; iid upper triangle (paper) ≈ 2 s √d.
  const double s = p.sigma.scale();
  f.sigma_noise_norm = (p.profile == Profile::practical ? std::sqrt(2.0) : 2.0) * s *
                       std::sqrt(static_cast<double>(d));
  f.lambda_noise = p.lambda_outer.scale();
  f.stop_threshold = p.stop_threshold;
  // The smallest signal worth filtering: twice the stopping floor Cα ln(1/α); PRIME-ht: the
  // excess of the stopping threshold over the clean level λ_max(M) ≈ 1.
  f.reference_signal = o.heavy_tailed ? std::max(f.stop_threshold - 1, 0.0)
                                      : 2 * o.C * o.alpha * std::log(1 / o.alpha);
  // Range step: the winning bin holds >= ~0.3 n clean points (μ on a bin edge, width 2σ); for
  // q_range-ht, each part's winning bin (width 80σ) holds nearly all of its n/m rows.
  EpsilonDelta per = p.range_per;  // (σ does not enter the per-coordinate budget)
  double holders = 0.3 * (1 - o.alpha) * static_cast<double>(n);
  if (p.range_ht) {
    const int m = q_range_ht_partitions(*p.range_ht);
    RangeOptions part;
    part.epsilon = p.range_ht->epsilon / m;
    part.delta = p.range_ht->delta / m;
    part.paper_cap = true;
    per = q_range_coordinate_budget(part, static_cast<std::size_t>(d));
    holders = 0.9 * (1 - o.alpha) * static_cast<double>(n) / m;
  }
  const double hist_threshold = 1 + 2 * std::log(2 / per.delta) / per.epsilon;
  f.range_margin = holders / hist_threshold;
  // Noise-dominated (addendum rule of thumb, made public-only): the Σ_t noise exceeds twice the
  // stopping threshold (the filter would act on noise), the stopping threshold itself exceeds
  // twice the reference signal (the filter would stop on noise before doing anything, leaving a
  // mean with a smaller budget than DP Mean's), or the range histogram cannot pass its threshold.
  std::vector<std::string> why;
  const double stop_excess = o.heavy_tailed ? f.reference_signal : f.stop_threshold;
  if (f.sigma_noise_norm > 2 * stop_excess)
    why.push_back(fmt::format("Sigma_t noise norm {:.3g} > 2 x stop threshold {:.3g}",
                              f.sigma_noise_norm, stop_excess));
  if (!o.heavy_tailed && f.stop_threshold > 2 * f.reference_signal)
    why.push_back(fmt::format("stop threshold {:.3g} > 2 x reference signal {:.3g}",
                              f.stop_threshold, f.reference_signal));
  if (f.range_margin < 1.5)
    why.push_back(fmt::format("range histogram threshold too high for n (margin {:.3g} < 1.5)",
                              f.range_margin));
  f.feasible = why.empty();
  for (std::size_t i = 0; i < why.size(); ++i) f.reason += (i ? "; " : "") + why[i];
  return f;
}


namespace {

// ---------------------------------------------------------------------------------------------
// The run: the filter (Alg 10 with the profile's releases) on the processed data, in scale
// units. One PrimeRun per release; every noise draw goes through the plan's mechanisms.
// ---------------------------------------------------------------------------------------------
struct PrimeRun {
  const Plan& p;
  const PrimeOptions& o;
  FilterState& st;
  Rng& rng;
  bool off;
  PrimeTrace* trace;
  // The ranks holding the rows (single_process(): this process alone). G, s and |S| are the exact
  // merged ones (FilterState), every noisy value is drawn on rank 0 (on_root) and given to every
  // rank, the scores and the drops are each rank's own rows.
  Communicator& comm;
  std::int64_t offset = 0;  // global id of this rank's row 0
  std::vector<double> Zs{};  // the shared Z of every planned round (practical: 1)
  std::string stop = "T1 epochs done";
  int filter_rounds = 0, iterations = 0, epochs = 0;
  bool abstain = false;
  std::vector<double> tau{};
  nlohmann::json epochs_json = nlohmann::json::array();

  bool practical() const { return p.profile == Profile::practical; }

  // A noisy |S| (rank 0 draws).
  double noisy_size(const Mech& m) {
    return on_root(comm, [&] { return m.apply(st.set_size(), rng, off); });
  }

  double release_lambda(const Mech& m) {
    const auto r = on_root(comm, [&] {
      Vector v(2);
      v[0] = lambda_stat(st.M(p.n), p.profile, p.ht);
      v[1] = m.apply(v[0], rng, off);
      return v;
    });
    if (trace) trace->true_lambda.push_back(r[0]);
    return r[1];
  }

  // Σ_S τ over every rank, exactly (paper ψ̃): each score clipped to [0, D²] (where it lies up to
  // rounding: ‖z − μ‖ <= D and tr U = 1), put on the lattice exact::box_value with the public
  // Q = box_quantum(n), the integers added exactly over rows and ranks, scaled back once.
  double score_sum() const {
    const double D2 = p.D * p.D, Q = exact::box_quantum(p.n), scale = Q / D2;
    const double* t = tau.data();
    Vector sum = exact::row_sums(std::ssize(tau), 1, Q, o.run.threads,
                                 [&](int, std::int64_t b, std::int64_t e, std::uint64_t* words) {
                                   for (std::int64_t i = b; i < e; ++i)
                                     exact::add(words[0], exact::box_value(t[i], 0, D2, scale));
                                 });
    allreduce_exact(comm, sum);
    return sum[0] * (D2 / Q);
  }

  // DPthreshold (Alg 11) on the scores τ of the current set: the threshold ρ_t.
  double dp_threshold(double psi) {
    const double nd = static_cast<double>(p.n);
    std::vector<std::int64_t> counts(static_cast<std::size_t>(p.L), 0);
    for (double t2 : tau) {
      const int j = dp_threshold_bin(t2, p.L);
      if (j > 0) ++counts[static_cast<std::size_t>(j - 1)];
    }
    comm.allreduce_sum(counts);
    // Paper: Σ (τ − 1) = Σ τ − |S| (Alg 17: no −1).
    const double acc = !practical() ? score_sum() - (p.ht ? 0.0 : st.set_size()) : 0.0;
    return on_root(comm, [&] {
      double psi_tilde = 0;
      if (practical() && p.ht) {
        psi_tilde = psi;  // ψ̃ = (1/n)Σ τ ≈ ⟨M, U⟩ = ψ: post-processing
      } else if (practical()) {
        const double m_noisy = p.count_psi.apply(st.set_size(), rng, off);
        psi_tilde = psi + 1 - m_noisy / nd;  // post-processing (addendum correction 6)
      } else {
        psi_tilde = p.psi_tilde.apply(acc / nd, rng, off);
      }
      Vector h(p.L);
      for (int j = 0; j < p.L; ++j) h[j] = static_cast<double>(counts[static_cast<std::size_t>(j)]);
      const Vector hn = p.hist.apply(h, rng, off) / nd;
      return dp_threshold_rule(std::span<const double>(hn.data(), hn.size()), psi_tilde);
    });
  }

  // Scores every row of S along U = Q diag(w) Qᵀ around a released centre, thresholds them and
  // removes {i in Top_k(τ; S) : τ_i >= ρ Z} (value-based ties; one shared Z; over ranks the exact
  // cross-rank top-k). Returns whether any row was removed (on any rank).
  bool filter(const Matrix& Q, const Vector& w, double psi, double Z, nlohmann::json& it) {
    const auto d = p.d;
    // μ_t: shrink-to-centre mean + noise, clamped into the region (D10).
    const Vector mu = on_root(comm, [&] {
      return Vector(clamp_region(p.centre.apply(st.shrink_mean(p.kappa * p.n), rng, off), p));
    });
    std::vector<double> P(static_cast<std::size_t>(d * d));
    for (Eigen::Index k = 0; k < d; ++k)
      for (Eigen::Index j = 0; j < d; ++j) P[k * d + j] = Q(k, j) * std::sqrt(w[j]);
    tau.resize(st.S.size());
    prime_detail::scores(st.Z, st.S, P.data(), mu.data(), tau.data(), o.run.threads);
    const double rho_t = dp_threshold(psi);
    const std::vector<char> drop =
        comm.size() > 1 ? mean_ranks::drops_over_ranks(comm, tau, rho_t * Z, st, p.k, offset)
                        : prime_detail::filter_drops(tau, rho_t * Z, st.Z, st.S, p.k);
    const double before = st.set_size();
    drop_rows(st, drop, o.run.threads);
    ++filter_rounds;
    it["filtered"] = true;
    it["rho"] = rho_t;
    it["Z"] = Z;
    if (trace) {
      trace->rounds.push_back(FilterRound{mu, Q * w.asDiagonal() * Q.transpose(), rho_t, Z, p.k, P});
      trace->set_sizes.push_back(static_cast<std::int64_t>(st.set_size()));
    }
    return st.set_size() < before;
  }

  // Rank 0: Σ_t = M + symmetric noise added to A, the MMW weights of A − I and the noisy
  // ψ = Σ_k w_k q_kᵀ (M − I) q_k, packed as [Q (d², column-major), w (d), ψ].
  Vector mmw_release(const Matrix& M, double eta, Matrix& A) const {
    const auto d = p.d;
    // GOE-shaped (practical) or iid upper triangle (paper, D5).
    A += symmetric_noise_release(M, *p.sigma.g, practical(), rng, off);
    A -= Matrix::Identity(d, d);
    Matrix Q;
    Vector w;
    mmw_weights(A, eta, Q, w);
    const double psi_true = (Q.transpose() * M * Q).diagonal().dot(w) - (p.ht ? 0.0 : w.sum());
    Vector out(d * d + d + 1);
    out.head(d * d) = Eigen::Map<const Vector>(Q.data(), d * d);
    out.segment(d * d, d) = w;
    out[d * d + d] = p.psi.apply(psi_true, rng, off);
    return out;
  }

  // One inner iteration t of epoch s; false ends the epoch.
  bool inner_step(int s, int t, double lam_s, double eta, Matrix& A, double& lam_t, bool& changed,
                  nlohmann::json& inner) {
    ++iterations;
    nlohmann::json it;
    if (!practical() || (t > 1 && changed)) lam_t = release_lambda(p.lambda_inner);
    it["lambda"] = lam_t;
    if ((t > 1 || !practical()) && lam_t <= (p.ht ? 2.0 / 3.0 : 0.5) * lam_s) {
      it["break"] = true;  // Alg 10 line 13; Alg 16: 2/3
      inner.push_back(it);
      return false;
    }
    if (!practical()) {  // D7: inner size check before the mean release
      if (noisy_size(p.count_inner) <= 0.75 * static_cast<double>(p.n)) {
        abstain = true;
        stop = "inner size check failed (noisy |S| <= 3n/4)";
        inner.push_back(it);
        return false;
      }
    }
    const auto d = p.d;
    const Vector r = on_root(comm, [&] { return mmw_release(st.M(p.n), eta, A); });
    const Matrix Q = Eigen::Map<const Matrix>(r.data(), d, d);
    const Vector w = r.segment(d * d, d);
    const double psi = r[d * d + d];
    it["psi"] = psi;
    if (psi <= lam_t / 5.5) {
      changed = false;
      it["filtered"] = false;
    } else {
      changed = filter(Q, w, psi, Zs[static_cast<std::size_t>((s - 1) * p.T2 + (t - 1))], it);
    }
    inner.push_back(it);
    return true;
  }

  // Epoch s; false ends the run (stopped or abstained).
  bool epoch(int s) {
    ++epochs;
    const double lam_s = release_lambda(p.lambda_outer);
    nlohmann::json ej = {{"lambda", lam_s}};
    if (!practical()) {
      const double ns = noisy_size(p.count_outer);
      ej["n_noisy"] = ns;
      if (ns <= 0.75 * static_cast<double>(p.n)) {
        abstain = true;
        stop = "epoch size check failed (noisy |S| <= 3n/4)";
        epochs_json.push_back(ej);
        return false;
      }
    }
    if (lam_s <= p.stop_threshold) {
      stop = fmt::format("lambda <= threshold at epoch {}", s);
      epochs_json.push_back(ej);
      return false;
    }
    // η: (ln d + 1)/λ (addendum 3); paper 1/(100(0.1/C + 1.01)λ), PRIME-ht 1.05 (Alg 16).
    const double eta = practical() ? (std::log(static_cast<double>(p.d)) + 1) / lam_s
                       : p.ht      ? 1 / (100 * (0.1 / o.C + 1.05) * lam_s)
                                   : 1 / (100 * (0.1 / o.C + 1.01) * lam_s);
    Matrix A = Matrix::Zero(p.d, p.d);  // the noisy Σ's sum (rank 0's; others keep zero)
    double lam_t = lam_s;
    bool changed = false;
    nlohmann::json inner = nlohmann::json::array();
    for (int t = 1; t <= p.T2 && inner_step(s, t, lam_s, eta, A, lam_t, changed, inner); ++t) {
    }
    ej["inner"] = inner;
    epochs_json.push_back(ej);
    return !abstain;
  }

  void run() {
    // The shared Z of every planned round, fixed first: public, independent of the data, and the
    // same whether or not the (test-only) noiseless switch is on. Paper: uniform on [0, 1] (Alg 10),
    // drawn on rank 0. Practical: Z = 1, the cut is ρ_t itself (docs/proofs/mean.md §2 (3); a
    // small Z cut into the clean tail and removed all k candidates, ≈ αn clean rows on one side:
    // docs/results/prime.md).
    Zs = on_root(comm, [&] {
      std::vector<double> z(static_cast<std::size_t>(p.T1 * p.T2), 1.0);
      if (!practical())
        for (auto& x : z) x = rng.uniform01();
      return z;
    });
    for (int s = 1; s <= p.T1 && epoch(s); ++s) {
    }
    if (trace) {
      trace->final_set = st.S;
      trace->processed = st.Z.materialise();
      trace->epochs = epochs;
      trace->iterations = iterations;
      trace->stop_reason = stop;
    }
  }
};

nlohmann::json plan_diagnostics(const Plan& p, const PrimeFeasibility& feas) {
  nlohmann::json j = {{"profile", name_of(p.profile)}, {"T1", p.T1}, {"T2", p.T2}, {"k", p.k},
                      {"stop_threshold", p.stop_threshold}, {"diameter_scale_units", p.D}};
  j["feasibility"] = {{"feasible", feas.feasible},
                      {"sigma_noise_norm", feas.sigma_noise_norm},
                      {"lambda_noise", feas.lambda_noise},
                      {"stop_threshold", feas.stop_threshold},
                      {"reference_signal", feas.reference_signal},
                      {"range_margin", feas.range_margin}};
  if (!feas.feasible) j["feasibility"]["reason"] = feas.reason;
  j["noise"] = {{"sigma_entry", p.sigma.scale()},
                {"lambda", p.lambda_outer.scale()},
                {"psi", p.psi.scale()},
                {"centre", p.centre.scale()},
                {"final_mean", p.final_mean.scale()}};
  if (p.profile == Profile::paper) {
    j["eps1"] = p.eps1;
    j["delta1"] = p.delta1;
    j["eps2"] = p.eps2;
    j["delta2"] = p.delta2;
  }
  return j;
}

// Practical fallback (not an abstention): DP Mean at the same target, units and budget, its
// units checked against the declared corrupted fraction. Its share is the caller's (`given`), or
// planned by DP Mean itself: PRIME's planned share is not DP Mean's, and DP Mean's own plan
// abstains before charging when no share makes its units usable (issue 27 case 7). When DP Mean
// abstains too, nothing was released: the reason says both, and no "fallback" is claimed.
Release<Vector> fallback_dp_mean(const ConstMatrixRef& X, const PrimeOptions& o,
                                 std::optional<double> given, const nlohmann::json& diag, Rng& rng,
                                 Budget* budget, PrimeTrace* trace) {
  DpMeanOptions dm;
  dm.privacy = o.privacy;
  dm.run = o.run;
  dm.alpha = o.alpha;
  dm.scale = o.scale;
  dm.scale_share = given;
  dm.clip_check_share = o.clip_check_share;
  dm.failure_probability = o.failure_probability;
  Release<Vector> fb = dp_mean(X, dm, rng, budget);
  fb.diagnostics["profile"] = diag["profile"];
  fb.diagnostics["feasibility"] = diag["feasibility"];
  if (fb.status == Status::ok) {
    fb.diagnostics["fallback"] = "dp-mean";
  } else {
    fb.diagnostics["abstained"] = fmt::format(
        "PRIME's filter is predicted to be noise-dominated at this n, d and budget ({}), and its "
        "fallback DP Mean abstained: {}",
        diag["feasibility"].value("reason", ""), fb.diagnostics["abstained"].get<std::string>());
  }
  if (trace) trace->stop_reason = "fallback to DP Mean";
  return fb;
}

// The filter and the final mean on the charged account, from the front end onwards.
Release<Vector> filter_and_seal(const ConstMatrixRef& X, const PrimeOptions& o, const Plan& p,
                                const FrontResult& fr, ReleaseBudget& account, SealFacts facts,
                                nlohmann::json& diag, Rng& rng, PrimeTrace* trace,
                                Communicator& comm, bool off) {
  const std::int64_t n = p.n;
  PrimeRun run{p, o, *fr.state, rng, off, trace, comm};
  if (comm.size() > 1) run.offset = shard_rows(comm, X.rows()).offset;
  trace_front(trace, fr, p.radius);
  run.run();
  diag["stop"] = run.stop;
  diag["epochs"] = run.epochs_json;
  diag["filter_rounds"] = run.filter_rounds;
  if (run.abstain) {
    facts.abstained = run.stop;
    return seal(Vector{}, account, facts, rng, diag);
  }
  // Final release (D2): one noisy shrink-to-centre mean of the final set (rank 0 draws).
  const Vector mean = on_root(comm, [&] {
    return Vector(p.final_mean.apply(fr.state->shrink_mean(p.kappa * n), rng, off));
  });
  diag["final_noise_scale_units"] = p.final_mean.scale();
  const bool ht = p.ht;
  state_error(diag, fr.units,
              model_error_units(ht ? CleanModel::bounded_covariance : CleanModel::sub_gaussian,
                                o.alpha),
              p.final_mean.scale(), n, o.failure_probability,
              ht ? "bounded covariance (Sigma <= scale^2 I) plus an alpha fraction of arbitrary rows"
                 : "sub-Gaussian (covariance scale^2 I) plus an alpha fraction of arbitrary rows",
              p.final_mean.l.has_value());
  return seal(from_units(fr.centre + mean, fr.units), account, facts, rng, diag);
}

// The robust entry's choice (mean/robust.hpp): the units step's private count of the rows beyond
// kTailRadius scales against what each clean model allows. PRIME when the sub-Gaussian model's
// allowance holds for every column, PRIME-ht when only the bounded-covariance one does, neither
// (the abstention reason) otherwise. Stated in diag["robust"].
std::optional<bool> choose_heavy_tailed(const ColumnUnits& u, double alpha, nlohmann::json& diag,
                                        std::optional<std::string>& abstained) {
  const auto sub = tail_check(u, CleanModel::sub_gaussian, alpha);
  const auto ht = tail_check(u, CleanModel::bounded_covariance, alpha);
  diag["robust"] = {
      {"tail_fraction", to_std(u.tail_fraction)},
      {"tail_radius_scales", kTailRadius},
      {"allowed_sub_gaussian", tail_allowance(CleanModel::sub_gaussian, alpha, u.tail_noise)},
      {"allowed_bounded_covariance", tail_allowance(CleanModel::bounded_covariance, alpha, u.tail_noise)},
      {"rule", "prime when every column's private fraction of rows beyond 3 scales is within the "
               "sub-Gaussian allowance, prime-ht when only within the bounded-covariance one"}};
  if (!sub || !ht) diag["robust"]["chosen"] = sub ? "prime-ht" : "prime";
  if (!sub) return false;
  if (!ht) return true;
  abstained = *ht;
  return std::nullopt;
}

// The planned entries of `p` but its auxiliary step's (the units, which the tail test reads).
Ledger method_entries(const Plan& p) {
  const Ledger all = p.ledger();
  return Ledger(all.begin() + static_cast<std::ptrdiff_t>(p.aux.entries.size()), all.end());
}

constexpr const char* kChosenMethod = "the method the tail test chose (PRIME or PRIME-ht)";

// The most either method's entries spend (zCDP rho): the robust entry's method stage, planned
// before the tail test reads the data, so its cost does not depend on the choice.
PrivacyLoss method_maximum(const Plan& p, const Plan& p_ht, const PrivacyLoss& target) {
  PrivacyLoss most = PrivacyLoss::zcdp(0);  // rho, and the delta of approximate entries
  for (const Plan* q : {&p, &p_ht}) {
    Budget probe(target, Accountant::zcdp);
    for (const auto& e : method_entries(*q)) probe.spend(e);
    const PrivacyLoss spent = probe.spent();
    most.rho = std::max(most.rho, spent.rho);
    most.delta = std::max(most.delta, spent.delta);
  }
  return most;
}

// validate -> plan -> charge -> (units) -> front end -> filter -> final mean -> seal. With
// `by_tail` (the robust entry): the plan charges the units and the larger of the two methods'
// stages at once, before any noise; the units are estimated, the tail test picks PRIME or
// PRIME-ht, and that method's entries, spent into the planned stage, claim its place before its
// front end draws.
Release<Vector> prime_release(const ConstMatrixRef& X, PrimeOptions o, Rng& rng, Budget* budget,
                              PrimeTrace* trace, bool by_tail) {
  Communicator& comm = comm_or_single(o.run.comm);
  const std::int64_t d = X.cols();
  std::int64_t n = X.rows();
  if (comm.size() > 1) {
    validate_robust(o);
    n = mean_ranks::guarded_rows(X, comm, fingerprint_of("prime", o, d),
                                 "PRIME's options and column count", o.run.threads);
  }
  validate(o, n, d);
  require(n >= 16, fmt::format("PRIME needs n >= 16 rows, got {}", n));
  require(n < (std::int64_t{1} << 32), "PRIME needs n < 2^32 rows");
  require(!by_tail || (!o.scale && o.profile == Profile::practical),
          "the robust entry runs the practical profile on the estimated scale: scale and profile "
          "do not apply");
  if (comm.size() == 1) check_data(X);
  const bool off = trace && trace->noiseless;
  std::optional<ShareChoice> share;  // the units' share: given, or planned from n, d, the target
  const std::optional<double> given_share = o.scale_share;
  if (!o.scale) share = resolve_share(o, units_verdict(n, d));
  if (share && share->abstain)
    return abstain_before_charging(
        o.privacy, o.profile == Profile::practical ? Accountant::zcdp : Accountant::basic,
        o.run.noise, budget, rng, *share->abstain, {{"scale_share", share->stated}});
  // Feasibility from public parameters only (docs/proofs/mean.md); practical falls back to DP Mean.
  const PrimeFeasibility feas = prime_feasibility(n, d, o);
  Plan p = make_plan(n, d, o);
  nlohmann::json diag = plan_diagnostics(p, feas);
  if (share) diag["scale_share"] = share->stated;
  if (o.profile == Profile::practical && o.fallback && !feas.feasible)
    return fallback_dp_mean(X, o, given_share, diag, rng, budget, trace);

  ReleaseBudget account(o.privacy.loss(), p.profile == Profile::practical ? Accountant::zcdp
                                                                          : Accountant::basic,
                        budget);
  SealFacts facts = robust_facts(o.run.noise, off, diag);
  const ColumnUnits* units = nullptr;
  std::optional<ColumnUnits> chosen_units;
  if (!by_tail) {
    // The whole plan, before any noise is drawn; the budget lives on rank 0.
    all_or_none(comm, [&] { account.charge(p.ledger()); });
  } else {
    PrimeOptions ht = o;
    ht.heavy_tailed = true;
    const Plan p_ht = make_plan(n, d, ht);
    const PrivacyLoss stage = method_maximum(p, p_ht, o.privacy.loss());
    Ledger plan = p.aux.entries;
    plan.push_back(stage_entry(stage, kChosenMethod));
    all_or_none(comm, [&] { account.charge(plan); });
    chosen_units = units_step(X, p.aux, std::nullopt, o.alpha, 4, o.run.threads, account, rng,
                              diag, facts.abstained, comm.size() > 1 ? &comm : nullptr);
    std::optional<bool> heavy;
    if (chosen_units) heavy = choose_heavy_tailed(*chosen_units, o.alpha, diag, facts.abstained);
    if (!heavy) return seal(Vector{}, account, facts, rng, diag);
    if (*heavy) {
      o = ht;
      p = p_ht;
      diag.update(plan_diagnostics(p, prime_feasibility(n, d, o)));
    }
    Budget ran(stage, Accountant::zcdp);
    for (const auto& e : method_entries(p)) ran.spend(e);
    all_or_none(comm, [&] { account.claim(stage_entry(ran, kChosenMethod)); });
    units = &*chosen_units;
  }
  // Rows beyond the corrupted fraction clipped: the supplied scale bites (the ball keeps clean
  // rows but for a fraction ζ/(2n) each).
  const FrontResult fr = run_front(X, p, p.aux, o.scale, o.alpha, o.alpha + 0.01, o.run.threads,
                                   off, account, rng, diag, &comm, units);
  if (fr.abstained) {
    facts.abstained = *fr.abstained;
    return seal(Vector{}, account, facts, rng, diag);
  }
  return filter_and_seal(X, o, p, fr, account, facts, diag, rng, trace, comm, off);
}

}  // namespace

Release<Vector> prime(const ConstMatrixRef& X, const PrimeOptions& o, Rng& rng, Budget* budget,
                      PrimeTrace* trace) {
  return prime_release(X, o, rng, budget, trace, false);
}

Release<Vector> robust_mean(const ConstMatrixRef& X, const PrimeOptions& o, Rng& rng,
                            Budget* budget) {
  Release<Vector> r = prime_release(X, o, rng, budget, nullptr, true);
  r.diagnostics["method"] = "robust";
  return r;
}

}  // namespace dpstats
