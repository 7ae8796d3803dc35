// Continual release of weighted first and second moments (docs/proofs/moments.md):
// JME (Alg. 1), lambda-JME (Alg. 3), alpha-IME (Alg. 4), tau-CS (Alg. 5), PP and debiased PP
// (Alg. 6 with three corrections, docs/proofs/moments.md §5), through the matrix-factorization
// mechanism.
//
// How the noise is drawn (secure by construction). The release is one Gaussian mechanism on the
// whole n-step stream W = [C1 X, sqrt(lambda) C2 (X•X)] (IME: two mechanisms, CS: one C on the
// concatenation): at step t the library computes row t of C·X exactly from the inputs, releases it
// through the lattice-secure GaussianMechanism (rounding to a power-of-two lattice + exact discrete
// Gaussian noise, dimension n·(d + D2) so that rounding is covered in its rho), and outputs
// B·W = A·C^{-1}·W by post-processing: v_t = (C^{-1} W)_t by forward substitution, then the
// workload recursion on v. In distribution this is A(X + C^{-1}Z); the extra cost over drawing Z
// alone is keeping the input history C needs (b rows for banded:b).
//
// The seam: validate (every option, before anything is drawn) -> plan (the mechanisms from public
// values: steps, dim, clip, the factorizations) -> charge (the whole stream's planned maximum,
// once, in the constructor, against the release's target and the caller's optional Budget) ->
// run (push) -> seal (estimate_moments / release_fields). Every push's noise is part of the one
// mechanism charged at construction, so a push spends nothing more.
//
// Clip: rows with ||x|| > clip are clipped to clip (both moments use the clipped row) or
// rejected; NaN/Inf rows always throw. The live stream (MomentEstimator) needs a public clip. The
// batch API (estimate_moments, all rows known up front) estimates an absent clip privately: one
// private quantile of the row norms from `scale_share` of the budget (times a public margin),
// then the fixed-clip stream at the rest (docs/proofs/moments.md §4). With a supplied clip the batch API
// releases a private count of the clipped rows from `clip_check_share` of the budget, so that the
// release says when the clip bites. The exact count is never released; the test trace has it.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/names.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/target.hpp"
#include "dpstats/profile.hpp"
#include "dpstats/registry.hpp"
#include "dpstats/run_control.hpp"
#include "dpstats/test_hooks.hpp"
#include "dpstats/moments/factorization.hpp"
#include "dpstats/moments/sensitivity.hpp"
#include "dpstats/moments/workload.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"
#include "dpstats/seam.hpp"

namespace dpstats::moments {

enum class NormPolicy { clip, reject };
}  // namespace dpstats::moments

template <>
struct dpstats::EnumNames<dpstats::moments::NormPolicy> {
  using P = dpstats::moments::NormPolicy;
  static constexpr std::string_view parameter = "on_norm";
  static constexpr std::array<std::pair<P, std::string_view>, 2> names = {
      {{P::clip, "clip"}, {P::reject, "reject"}}};
};

namespace dpstats::moments {

struct MomentsConfig {
  std::size_t steps = 0;  // n, the horizon (public)
  std::size_t dim = 0;    // d
  Method method = Method::jme;
  SecondMomentForm form = SecondMomentForm::full;
  Workload A1, A2;        // first- and second-moment workloads
  Factorization C1, C2;   // strategies (CS uses C1 for both; PP ignores C2)
  // The l2 clip norm of one row (JME's zeta), in the data's units. Absent: estimated privately
  // from `scale_share` of the budget (docs/proofs/moments.md §4): by estimate_moments from the
  // whole table; by the live MomentEstimator per public block of clip_block rows (adaptive clip,
  // §4.2: the first block enters as 0, later blocks are clipped at a clip learnt from earlier
  // blocks only).
  std::optional<double> clip;
  NormPolicy on_norm = NormPolicy::clip;
  // Budget: exactly one of privacy.epsilon (> 0), rho, noise_multiplier; privacy.delta in (0, 1)
  // is always needed (Gaussian noise) to state an epsilon.
  PrivacyTarget privacy;
  std::optional<double> rho;
  std::optional<double> noise_multiplier;  // sigma of a sensitivity-1 query
  std::optional<double> lambda;            // lambda-JME
  double alpha = 0.5;                      // IME
  double tau = 1;                          // CS
  // Share of the budget spent on the private clip when `clip` is absent, in (0, 1).
  double scale_share = 0.1;
  // The private clip is clip_margin x the private clip_quantile-quantile of the row norms: a
  // middle quantile (rank error well inside the data at small shares, untouched by a few
  // corrupted rows) times a public margin (docs/proofs/moments.md §4). Both data-free.
  double clip_quantile = 0.5;   // in (0, 1)
  double clip_margin = 3;       // in [1, 1e6]
  // Share of the budget spent on the private count of clipped rows when `clip` is given (batch
  // API only), in [0, 0.5]; 0: no check.
  double clip_check_share = 0.01;
  // The live stream's adaptive clip: rows per block (public), 0 = the smallest block whose
  // private quantile the scale layer trusts at this budget (docs/proofs/moments.md §4.2).
  std::size_t clip_block = 0;
  // Batch API without a clip: centre the rows on a private per-column location (half of
  // scale_share) when the table is long enough for it (a public check on n, d and the share) and
  // the two workloads agree; the centred moments are released and the raw ones reconstructed
  // (docs/proofs/moments.md §4.3). false: raw rows.
  bool centre = true;
  Neighbouring neighbouring = Neighbouring::replace_one;
  Profile profile = Profile::practical;
  RunControl run;  // threads: per step, output independent of it; noise: secure or fast_float
};

// The fields that shape the release, for the ranks' agreement check (comm/fingerprint.hpp); a
// workload and a factorization enter as their spec ("decay:0.9", "blt:3").
template <class V>
void visit_fields(const MomentsConfig& o, V& v) {
  v("steps", o.steps);
  v("dim", o.dim);
  v("method", o.method);
  v("diagonal", o.form);
  v("workload", o.A1.name());
  v("workload_second", o.A2.name());
  v("factorization", o.C1.name());
  v("factorization_second", o.C2.name());
  v("clip", o.clip);
  v("on_norm", o.on_norm);
  v("epsilon", o.privacy.epsilon);
  v("delta", o.privacy.delta);
  v("rho", o.rho);
  v("noise_multiplier", o.noise_multiplier);
  v("lambda", o.lambda);
  v("alpha", o.alpha);
  v("tau", o.tau);
  v("scale_share", o.scale_share);
  v("clip_quantile", o.clip_quantile);
  v("clip_margin", o.clip_margin);
  v("clip_check_share", o.clip_check_share);
  v("clip_block", o.clip_block);
  v("centre", o.centre);
  v("neighbouring", o.neighbouring);
  v("profile", o.profile);
  v("noise", o.run.noise);
}

// Builds a config from the tool's/Python's strings: workload "prefix|decay:B|window:K|average|
// adam:B", factorization "input|output|sqrt|banded:B|blt:M" (applied to each workload).
MomentsConfig make_config(std::size_t steps, std::size_t dim, const std::string& method,
                          const std::string& workload, const std::string& factorization,
                          bool diagonal);

// The same config for a method named by its enum.
MomentsConfig make_config(std::size_t steps, std::size_t dim, Method method,
                          const std::string& workload, const std::string& factorization,
                          bool diagonal);

// The options of `dpstats moments` and `dpstats.moments` (their declared ones are the fields of
// MomentsRequest, moments/moments_request.hpp), translated once here so that the tool and the
// Python module build identical configs.
struct MomentsOptions {
  std::size_t steps = 0, dim = 0;
  Method method = Method::jme;
  std::string workload = "prefix", factorization = "auto";  // specs: Workload/Factorization::parse
  std::optional<double> clip;
  PrivacyTarget privacy;
  // lambda (jme, lambda-jme), alpha (ime), tau (cs): absent, MomentsConfig's default; given to
  // a method that does not read it, the registry's InvalidArgument (make_config).
  std::optional<double> rho, noise_multiplier, lambda, alpha, tau;
  double scale_share = 0.1, clip_quantile = 0.5, clip_margin = 3, clip_check_share = 0.01;
  std::size_t clip_block = 0;
  bool centre = true;
  bool diagonal = false;
  NormPolicy on_norm = NormPolicy::clip;
  Neighbouring neighbouring = Neighbouring::replace_one;
  Profile profile = Profile::practical;
  RunControl run;
};
// Parses the workload and factorization specs; an option the method does not read is the
// registry's InvalidArgument naming it.
MomentsConfig make_config(const MomentsOptions& o);

// The moments methods, read by the tool and the Python module.
std::span<const MethodInfo> moments_methods();

// plan_moments: every mechanism and noise scale from public values (steps, dim, the clip the
// mechanism sees, the factorizations, the budget), and the ledger they are charged.
struct MomentsPlan {
  std::size_t d = 0, D2 = 0;
  double mech_clip = 1;  // the clip the mechanism is calibrated to
  double rho_share = 1;  // the stream's share of the budget (1 - the share spent before it)
  NoiseParameters np;
  NoiseScales sc;
  double sigma = 0;   // effective noise multiplier
  double scale2 = 1;  // the second moment's input scale in the joint mechanism
  std::optional<GaussianMechanism> mech1, mech2;
  Ledger ledger;      // the mechanisms' own entries, at the planned maximum (the whole stream)
};
// `pre_share`: the share of the budget spent before the stream (the batch API's private clip or
// clipped-row count), in [0, 1); the stream's mechanisms get the rest. `held_rows`: the live
// adaptive clip enters up to this many held rows together with one later row (§4.2), so that
// row's entries may reach held_rows + 1 and its sums round: the floating-point margins cover it.
MomentsPlan plan_moments(const MomentsConfig& config, double pre_share = 0,
                         std::size_t held_rows = 0);

// What the batch API spent before the stream, on the same account.
struct PreStream {
  ReleaseBudget account;
  double share = 0;  // of the budget
  nlohmann::json diagnostics = nlohmann::json::object();
};

// Non-public facts, for tests only.
struct MomentsTrace : TestHooks {
  std::size_t clipped_rows = 0;
  std::optional<double> private_clip;  // the batch API's private clip, when it estimated one
};

struct MomentSeries {
  RowMatrix first;   // n x d
  RowMatrix second;  // n x d^2 (row-major d x d per step) or n x d
  // When the batch API centred the rows on a private centre mu (diagnostics["centre"]): the
  // moments of x_t - mu as released; first and second are then reconstructed from them (A·1 mu
  // and the cross terms: post-processing). Empty otherwise.
  RowMatrix centred_first, centred_second;
};

class MomentEstimator {
 public:
  // Validates everything, plans the noise from public values and charges the whole stream's
  // planned maximum up front: against this release's target and, when given, `budget` (not owned;
  // must outlive the estimator). Throws BudgetExceeded with nothing charged when it does not fit.
  MomentEstimator(MomentsConfig config, Rng& rng, Budget* budget = nullptr,
                  MomentsTrace* trace = nullptr);
  // The batch API's constructor: the stream at the rest of `pre`'s budget, on `pre`'s account.
  MomentEstimator(MomentsConfig config, Rng& rng, PreStream pre, MomentsTrace* trace);
  ~MomentEstimator();
  MomentEstimator(MomentEstimator&&) noexcept;

  // Feeds x_t (dim values); throws after `steps` pushes, on a wrong size, on NaN/Inf, and on
  // ||x|| > clip under NormPolicy::reject (before anything is drawn). Spends nothing beyond the
  // constructor's charge.
  void push(std::span<const double> x);
  std::span<const double> first() const;   // this step's first moment (d)
  std::span<const double> second() const;  // this step's second moment (d*d row-major, or d)
  std::size_t step() const;

  const MomentsConfig& config() const;
  const NoiseScales& scales() const;       // the noise as it ran (public)
  double noise_multiplier() const;         // effective sigma (sensitivity-1 scale)
  double clip() const;                     // the clip the next row runs at, in data units (a
                                           // private value when estimated; 0 in the warm-up)
  bool adaptive_clip() const;              // the live stream's adaptive clip (no clip given)
  nlohmann::json diagnostics() const;      // public values only
  // The stream's release fields (privacy, ledger, status, seeded, noise, diagnostics), sealed.
  Release<int> release_fields() const;
  // The same fields around a series the caller gathered from this estimator's pushes.
  Release<MomentSeries> release(MomentSeries series) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};


// Batch API: the streaming estimator run over the rows of X (n = X.rows() unless config.steps is
// set). With a clip and clip_check_share = 0 it is identical bit for bit to pushing the rows with
// the same Rng. Without a clip it estimates one privately (scale_share); with one it counts the
// clipped rows privately (clip_check_share). Abstains (with a reason) when the private clip
// cannot be trusted (too few rows for its rank error, or a degenerate table).
Release<MomentSeries> estimate_moments(const ConstMatrixRef& X, MomentsConfig config, Rng& rng,
                                       Budget* budget = nullptr, MomentsTrace* trace = nullptr);

}  // namespace dpstats::moments
