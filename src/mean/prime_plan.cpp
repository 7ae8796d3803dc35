// PRIME's plan (docs/proofs/mean.md and the practical profile of docs/results/prime.md): the
// options' validation, every mechanism and its public noise scale from (n, d, options), and the
// public feasibility prediction. Nothing here reads data.
#include "prime_plan.hpp"

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
namespace mean_detail {
namespace {
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
  p.stop_threshold = o.heavy_tailed ? std::max(o.C, 1 + edge + 2 * p.lambda_outer.noise_scale())
                                    : std::max(o.C * o.alpha * std::log(1 / o.alpha),
                                               edge + 2 * p.lambda_outer.noise_scale());
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

}  // namespace

// Every option, from public values only (the data's shape included), before anything is read.
void validate(const PrimeOptions& o, std::int64_t n, std::int64_t d) {
  validate_robust(o);
  require(o.T1 >= 0 && o.T1 <= 20, fmt::format("T1 must be in [0, 20] (0 = default), got {}", o.T1));
  require(o.T2 >= 0 && o.T2 <= 20, fmt::format("T2 must be in [0, 20] (0 = default), got {}", o.T2));
  require(n >= 2 && d >= 1, fmt::format("need n >= 2 and d >= 1, got n = {}, d = {}", n, d));
  check_units_options(o.scale, o.scale_share, o.clip_check_share, d);
}

Plan make_plan(std::int64_t n, std::int64_t d, const PrimeOptions& o) {
  return cached_plan<Plan>(n, d, o, [&] { return build_plan(n, d, o); });
}

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
  j["noise"] = {{"sigma_entry", p.sigma.noise_scale()},
                {"lambda", p.lambda_outer.noise_scale()},
                {"psi", p.psi.noise_scale()},
                {"centre", p.centre.noise_scale()},
                {"final_mean", p.final_mean.noise_scale()}};
  if (p.profile == Profile::paper) {
    j["eps1"] = p.eps1;
    j["delta1"] = p.delta1;
    j["eps2"] = p.eps2;
    j["delta2"] = p.delta2;
  }
  return j;
}

}  // namespace mean_detail

using namespace mean_detail;

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
  const double s = p.sigma.noise_scale();
  f.sigma_noise_norm = (p.profile == Profile::practical ? std::sqrt(2.0) : 2.0) * s *
                       std::sqrt(static_cast<double>(d));
  f.lambda_noise = p.lambda_outer.noise_scale();
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

}  // namespace dpstats
