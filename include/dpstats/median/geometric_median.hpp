// Private geometric median (KLTY, card private-geometric-median.md; measured addendum
// geometric-median-practical.md): the full pipelines and the private quantile radius.
//
// method fast, profile practical (default; every step has a written privacy proof, certified):
//   1. FastRadius, permutation design on a data-independent subsample (radius.hpp): pure ε_r-DP,
//      ε_r = sqrt(2·radius_share·ρ) so that it costs radius_share·ρ in zCDP;
//   2. geometric-step noisy subgradient localization on a subsample (boosting.hpp), ρ_loc;
//   3. DPGD on all rows from the localization output, domain B(c, r̂), η = r̂/sqrt(T), ρ_b.
//   Budget: a zCDP accountant; (ε, δ) is converted with the tight CKS20 formula.
// method fast, profile paper (KLTY Thm 4 as the card reads it, with FastCenter replaced by the
//   HSU24 localization, card §4.1(a); FastCenter on request): FastRadius (Alg. 2) at (ε/4, δ/4),
//   HSU24 localization (zCDP inside, converted) or FastCenter at (ε/4, δ/4), then FixedOrderDPSGD at (ε/2, δ/2) (or StableDPSGD with
//   ρ = ε²/(32 ln(4/δ)) and Lemma 12) on B(c, r̂) (FastCenter: rad_1 of card §2.4) with
//   η = 0.3·rad/sqrt(T) (0.1 for Stable) and
//   `passes` passes. Basic composition.
// method hsu24 (HSU24 public code, card §2.9): RadiusFinder (ρ/4), HSU24 localization (ρ/4),
//   DPGD fine-tuning (ρ/2) on B(c, 25r̂) with η = 50 r̂ sqrt(d/(6ρn²)), T = ⌊n²ρ/(256d)⌋ ≥ 1.
//
// Neighbouring datasets differ in one replaced row (n is public). Privacy never uses ||x_i|| ≤ R:
// R sets the radius grid, the localization domain and the fallback.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"

namespace dpstats {

enum class MedianMethod { fast, hsu24 };
enum class MedianProfile { practical, paper };
enum class PaperBoosting { fixed_order, stable };
enum class PaperCenter { hsu24_localization, fast_center };

struct GeometricMedianOptions {
  MedianMethod method = MedianMethod::fast;
  MedianProfile profile = MedianProfile::practical;
  // Budget: (epsilon, delta) or rho (then delta, if given, is the δ at which ε is reported;
  // 1e-6 otherwise). The paper profile needs (epsilon, delta).
  std::optional<double> epsilon, delta, rho;
  double radius = 0;                 // R: public bound on the data's scale (‖x‖ ≤ R expected)
  std::optional<double> min_radius;  // r: start of the radius grid; default R·2^-20
  // practical profile
  double radius_share = 0.05;        // share of ρ for the radius search
  double localization_share = 0.10;  // share of ρ for the localization
  int dpgd_steps = 3;                // boosting passes
  bool weiszfeld_step = true;        // boosting steps of size 1/Ĥ (private curvature; boosting.hpp)
  std::int64_t subsample = 10000;    // rows used by the radius search and the localization
  // paper profile
  PaperBoosting boosting = PaperBoosting::fixed_order;
  // The centre step: HSU24 localization (default, card §4.1(a)) or FastCenter (Alg. 3, Thm 3's
  // warm start, fed c_mult·r̂ with c_mult = 4 by default, card §2.4; its releases are
  // certified = false, see fast_center.hpp).
  PaperCenter center = PaperCenter::hsu24_localization;
  double center_radius_multiplier = 4;
  double passes = 1;
  std::optional<double> eta_multiplier;  // default 0.3 (fixed order) / 0.1 (Stable), card §3
  int localization_steps = 1000;         // HSU24 inner T (paper profile and hsu24 method)
  NoiseMode noise = NoiseMode::secure;
};

// Release: estimate in R^d; diagnostics: method, profile, r_hat, radius_step, radius_fell_back,
// the budget split, steps and passes (all public: DP outputs or functions of public parameters).
Release<Vector> geometric_median(const ConstMatrixRef& X, const GeometricMedianOptions& options,
                                 Rng& rng);

enum class RadiusMethod { fast_radius, fast_radius_permuted, radius_finder };
struct QuantileRadiusOptions {
  RadiusMethod method = RadiusMethod::fast_radius;
  double epsilon = 1;
  double delta = 1e-6;   // fast_radius only (the others are pure ε-DP)
  double min_radius = 0;
  double radius = 0;
  double beta = 0.05;    // radius_finder failure probability (HSU24 code default)
};
// Private estimate of the 0.75-quantile radius around the geometric median (a grid radius).
Release<double> quantile_radius_release(const ConstMatrixRef& X, const QuantileRadiusOptions& o,
                                        Rng& rng);

const char* to_string(MedianMethod m);
const char* to_string(MedianProfile p);
const char* to_string(RadiusMethod m);

}  // namespace dpstats
