// Private geometric median (KLTY "Private geometric median in nearly-linear time", with the HSU24
// baselines): the full pipelines and the private quantile radius. Every privacy argument the code
// relies on is in docs/proofs/median.md.
//
// Every method runs validate -> plan -> charge -> run -> seal (dpstats/seam.hpp):
//
// domain_radius (R): the radius of the ball around the origin in which the median is sought. When
// absent it is estimated privately in the plan step from `scale_share` of the budget
// (docs/proofs/median.md §1): a private per-coordinate median c0 and a private 0.8-quantile r of
// the row distances ‖x_i − c0‖ (dpstats/scale/); the pipeline then runs on the rows x_i − c0 with
// R = 6r (the geometric median lies within 6r of c0 whenever r covers 60% of the rows) and adds
// c0 back. Both values and their cost are stated in diagnostics["domain_radius_estimate"].
// When R is given, a private count of the rows with ‖x_i‖ > R (share `bound_check_share`) is
// stated in diagnostics["domain_radius_check"], with a warning when it exceeds 5% of n.
//
// method fast, profile practical (default; every step has a written privacy proof, certified):
//   1. FastRadius, permutation design on a data-independent subsample (radius.hpp): pure ε_r-DP,
//      ε_r = sqrt(2·radius_share·ρ) so that it costs radius_share·ρ in zCDP;
//   2. geometric-step noisy subgradient localization on a subsample (boosting.hpp), ρ_loc;
//   3. DPGD on all rows from the localization output, domain B(c, r̂), η = r̂/sqrt(T), ρ_b.
//   ρ is the zCDP equivalent of (ε, δ) (tight CKS20 conversion); zcdp accountant.
// method fast, profile paper (KLTY Thm 4, with FastCenter replaced by the HSU24 localization by
//   default): FastRadius (Alg. 2) at (ε/4, δ/4), HSU24 localization (zCDP inside, converted) or
//   FastCenter at (ε/4, δ/4), then FixedOrderDPSGD at (ε/2, δ/2) (or StableDPSGD with
//   ρ = ε²/(32 ln(4/δ)) and Lemma 12) on B(c, r̂) (FastCenter: rad_1 of proofs §6) with
//   η = 0.3·rad/sqrt(T) (0.1 for Stable) and `passes` passes. Basic composition.
// method hsu24 (HSU24 public code): RadiusFinder (ρ/4), HSU24 localization (ρ/4), DPGD
//   fine-tuning (ρ/2) on B(c, 25r̂) with η = 50 r̂ sqrt(d/(6ρn²)), T = ⌊n²ρ/(256d)⌋ ≥ 1.
// method weiszfeld: the non-private solver (weiszfeld.hpp); the tool and Python only.
//
// Neighbouring datasets differ in one replaced row (n is public). Privacy never uses ‖x_i‖ ≤ R:
// R sets the radius grid, the localization domain and the fallback.
//
// Ranks (issue 18; options.run.comm): each rank passes its own rows; method fast with profile
// practical (R given or estimated) and method hsu24 give the one-process seeded release on every
// rank. The paper profile refuses several ranks before any collective (docs/architecture.md).
#pragma once
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/names.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/registry.hpp"
#include "dpstats/release.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/test_hooks.hpp"

namespace dpstats {

enum class MedianMethod { fast, hsu24 };
enum class PaperBoosting { fixed_order, stable };
enum class PaperCenter { hsu24_localization, fast_center };
enum class RadiusMethod { fast_radius, fast_radius_permuted, radius_finder };

template <>
struct EnumNames<MedianMethod> {
  static constexpr std::string_view parameter = "method";
  static constexpr std::array<std::pair<MedianMethod, std::string_view>, 2> names = {
      {{MedianMethod::fast, "fast"}, {MedianMethod::hsu24, "hsu24"}}};
};
template <>
struct EnumNames<PaperBoosting> {
  static constexpr std::string_view parameter = "boosting";
  static constexpr std::array<std::pair<PaperBoosting, std::string_view>, 2> names = {
      {{PaperBoosting::fixed_order, "fixed-order"}, {PaperBoosting::stable, "stable"}}};
};
template <>
struct EnumNames<PaperCenter> {
  static constexpr std::string_view parameter = "center";
  static constexpr std::array<std::pair<PaperCenter, std::string_view>, 2> names = {
      {{PaperCenter::hsu24_localization, "hsu24-localization"},
       {PaperCenter::fast_center, "fast-center"}}};
};
template <>
struct EnumNames<RadiusMethod> {
  static constexpr std::string_view parameter = "method";
  static constexpr std::array<std::pair<RadiusMethod, std::string_view>, 3> names = {
      {{RadiusMethod::fast_radius, "fast-radius"},
       {RadiusMethod::fast_radius_permuted, "fast-radius-permuted"},
       {RadiusMethod::radius_finder, "radius-finder"}}};
};

// The median command's methods (fast, hsu24, weiszfeld) and the options each reads: read by the
// library's validation, the tool and the Python module.
std::span<const MethodInfo> median_methods();
// The quantile-radius command's methods.
std::span<const MethodInfo> quantile_radius_methods();

struct GeometricMedianOptions {
  MedianMethod method = MedianMethod::fast;
  PrivacyTarget privacy;  // epsilon > 0 and delta in (0, 1), both required
  Profile profile = Profile::practical;
  RunControl run;         // threads: every data pass (same release for any value); noise: the noise mode
  // R: the public radius of the ball around the origin holding the median (and most rows).
  // Absent: estimated privately from scale_share of the budget (see above).
  std::optional<double> domain_radius;
  // The budget share of the estimated domain_radius: absent, planned from n, d and the target
  // (docs/proofs/scale.md §9); given, in (0, 0.5].
  std::optional<double> scale_share;
  double bound_check_share = 0.01;   // [0, 0.5): share of the count beyond a given R (0: off)
  std::optional<double> min_radius;  // r: start of the radius grid; default R·2^-20
  // practical profile
  double radius_share = 0.05;        // share of ρ for the radius search
  double localization_share = 0.10;  // share of ρ for the localization
  int dpgd_steps = 3;                // boosting passes
  bool weiszfeld_step = true;        // boosting steps of size 1/Ĥ (private curvature; boosting.hpp)
  std::int64_t subsample = 10000;    // rows used by the radius search and the localization
  // paper profile
  PaperBoosting boosting = PaperBoosting::fixed_order;
  // The centre step: HSU24 localization (default) or FastCenter (Alg. 3, Thm 3's warm start, fed
  // c_mult·r̂ with c_mult = 4 by default; certified, docs/proofs/median.md §6.1). Paper profile only.
  PaperCenter center = PaperCenter::hsu24_localization;
  double center_radius_multiplier = 4;
  double passes = 1;
  std::optional<double> eta_multiplier;  // default 0.3 (fixed order) / 0.1 (Stable)
  int localization_steps = 1000;         // HSU24 inner T (paper profile and hsu24 method)
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp),
// under the declared options' names (MedianRequest's copy, median_command.hpp, walks it too).
template <class O, class V>
  requires std::same_as<std::remove_cvref_t<O>, GeometricMedianOptions>
void visit_fields(O&& o, V&& v) {
  v("method", o.method);
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("profile", o.profile);
  v("noise", o.run.noise);
  v("domain_radius", o.domain_radius);
  v("scale_share", o.scale_share);
  v("bound_check_share", o.bound_check_share);
  v("min_radius", o.min_radius);
  v("radius_share", o.radius_share);
  v("localization_share", o.localization_share);
  v("dpgd_steps", o.dpgd_steps);
  v("weiszfeld_step", o.weiszfeld_step);
  v("subsample", o.subsample);
  v("boosting", o.boosting);
  v("center", o.center);
  v("center_radius_multiplier", o.center_radius_multiplier);
  v("passes", o.passes);
  v("eta_multiplier", o.eta_multiplier);
  v("localization_steps", o.localization_steps);
}

struct GeometricMedianTrace : TestHooks {
  double domain_radius = 0;  // the R the pipeline ran with (given or estimated)
  Vector offset;             // c0 subtracted before the pipeline (zero when R was given)
};

// Release: estimate in R^d; diagnostics: method, profile, r_hat, radius_step, radius_fell_back,
// the budget split, steps and passes, the domain radius and where it came from (all public: DP
// outputs or functions of public parameters). Abstains (docs: seam.hpp) when the private scale
// estimate of an absent domain_radius finds too few rows to be trusted.
Release<Vector> geometric_median(const ConstMatrixRef& X, const GeometricMedianOptions& options,
                                 Rng& rng, Budget* budget = nullptr,
                                 GeometricMedianTrace* trace = nullptr);

struct QuantileRadiusOptions {
  RadiusMethod method = RadiusMethod::fast_radius;
  PrivacyTarget privacy;      // epsilon required; delta > 0 for fast_radius, 0 for the others
  double min_radius = 0;      // the grid r·2^t up to domain_radius, both required
  double domain_radius = 0;
  double beta = 0.05;         // radius_finder failure probability (HSU24 code default)
};
// Private estimate of the 0.75-quantile radius around the geometric median (a grid radius).
Release<double> quantile_radius_release(const ConstMatrixRef& X, const QuantileRadiusOptions& o,
                                        Rng& rng, Budget* budget = nullptr);

}  // namespace dpstats
