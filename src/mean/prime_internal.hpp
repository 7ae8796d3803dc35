// Internal pieces shared by the robust-mean drivers (PRIME, PRIME-ht, the private filter;
// not installed): numeric helpers, the release wrapper Mech, the filter state (processed data,
// current set, exact Gram matrix), and the front end (private range -> private medians ->
// clipping and quantisation) of docs/proofs/mean.md and the practical addendum.
#pragma once
#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <tuple>
#include <sys/mman.h>
#include <vector>

#include "dpstats/error.hpp"
#include "dpstats/mean/prime.hpp"
#include "dpstats/mean/units.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/mechanisms/range_ht.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/ledger.hpp"

namespace dpstats::prime_detail {

constexpr double kUnit = 0x1p-53;  // unit roundoff
constexpr int kMedianHalfSteps = 40;   // private median grid x̄ ± 4σ in steps of 0.1σ
constexpr double kMedianStep = 0.1;

// The relative floating-point margin on the sensitivities of λ, ψ, M and the means: the
// computed statistics differ from the exact ones by at most 64(d+1)²·u·D² (exact Gram matrix,
// O(d u) rounding in forming M, the backward error of the symmetric eigensolver), so each
// sensitivity grows by twice that. See docs/results/prime.md.
inline double fp_margin(std::int64_t n, std::int64_t d) {
  const double dd = static_cast<double>(d + 1);
  return 1 + 128 * dd * dd * kUnit * static_cast<double>(n);
}

// floor for |x| < 2^62 without a libm call (baseline x86-64 has no SSE4.1 rounding).
inline double fast_floor(double x) {
  const double t = static_cast<double>(static_cast<std::int64_t>(x));
  return t > x ? t - 1 : t;
}
// Round to nearest (ties to even) for |x| < 2^51.
inline double fast_round(double x) {
  constexpr double kShift = 0x1.8p52;
  return (x + kShift) - kShift;
}

// A large uninitialised array backed by transparent huge pages where the kernel allows it
// (madvise mode): first-touch page faults on the n x d working copies cost ~0.5 s at
// n = 10^6, d = 50 with 4 KiB pages.
template <class T>
class HugeArray {
 public:
  explicit HugeArray(std::size_t count) {
    constexpr std::size_t kHuge = std::size_t{1} << 21;
    // Small arrays (audits and tests run thousands of tiny releases): plain pages, no 2 MiB
    // allocation to fault in.
    if (count * sizeof(T) < 2 * kHuge) {
      void* p = std::aligned_alloc(64, std::max<std::size_t>(64, (count * sizeof(T) + 63) / 64 * 64));
      if (!p) throw std::bad_alloc();
      data_.reset(static_cast<T*>(p));
      return;
    }
    const std::size_t bytes = (count * sizeof(T) + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, bytes);
    if (!p) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);  // advisory: failure only means 4 KiB pages
    data_.reset(static_cast<T*>(p));
  }
  T* get() const { return data_.get(); }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
};

// The data passes' grain: ranges of at least 8192 rows (the library's parallel_ranges).
constexpr std::int64_t kRowGrain = 8192;
// How many parts parallel_ranges cuts `count` rows into on `threads` threads.
inline int used_parts(std::int64_t count, int threads) {
  return static_cast<int>(std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, count / kRowGrain)));
}

inline std::vector<double> to_std(const Vector& v) { return {v.data(), v.data() + v.size()}; }

inline double normal_quantile(double p) {  // inverse of normal_cdf, by bisection (public constants only)
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

struct Mech {  // a scalar or vector release: Gaussian (both profiles) or Laplace (paper)
  std::optional<GaussianMechanism> g;
  std::optional<LaplaceMechanism> l;
  double scale() const { return g ? g->sigma() : l->scale(); }
  double apply(double v, Rng& rng, bool off) const {
    if (off) return v;
    return g ? g->apply(v, rng) : l->apply(v, rng);
  }
  Vector apply(const Vector& v, Rng& rng, bool off) const {
    if (off) return v;
    return g ? g->apply(v, rng) : l->apply(v, rng);
  }
  LedgerEntry entry(std::string purpose, int count) const {
    LedgerEntry e = g ? g->ledger_entry(std::move(purpose)) : l->ledger_entry(std::move(purpose));
    e.count = count;
    return e;
  }
};


// The one entry for k mechanisms composed by best_composition (the paper profiles' Lemma G.13).
inline LedgerEntry composition_entry(std::string purpose, const EpsilonDelta& total) {
  LedgerEntry e;
  e.mechanism = "composition";
  e.purpose = std::move(purpose);
  e.loss = PrivacyLoss::approximate(total.epsilon, total.delta);
  return e;
}

inline Mech gaussian_rho(double sens, double rho, std::size_t dim, NoiseMode mode) {
  Mech m;
  m.g.emplace(GaussianMechanism::from_rho(sens, rho, dim, mode));
  return m;
}
inline Mech gaussian_ed(double sens, double eps, double delta, std::size_t dim, NoiseMode mode) {
  Mech m;
  m.g.emplace(GaussianMechanism::from_epsilon_delta(sens, eps, delta, dim, mode));
  return m;
}
inline Mech laplace(double sens, double eps, NoiseMode mode) {
  Mech m;
  m.l.emplace(sens, eps, 1, mode);
  return m;
}

// Quantisation step: the power of two q with |coordinate| / q <= 2^bits, where n·4^bits <= 2^53
// keeps the Gram matrix exact (prime_kernels.hpp).
inline double quantum_for(double bound, std::int64_t n) {
  const int nb = static_cast<int>(std::ceil(std::log2(static_cast<double>(n) + 1)));
  const int bits = std::min(15, (53 - nb) / 2);
  require(bits >= 8, fmt::format("n = {} is too large for PRIME's exact Gram matrix", n));
  int e = 0;
  std::frexp(bound, &e);  // bound < 2^e
  return std::ldexp(1.0, e - bits);
}

// State of the filter: the processed data Z (σ units, centred on the clipping centre, on the
// grid qZ), the current set S, its exact Gram matrix and sum.
// ---------------------------------------------------------------------------------------------
struct FilterState {
  FilterState(std::int64_t n, std::int64_t d)
      : storage(static_cast<std::size_t>(n * d)), Z(storage.get(), n, d) {}
  HugeArray<double> storage;
  Eigen::Map<RowMatrix> Z;
  std::vector<std::uint32_t> S;
  std::vector<double> G;  // row-major d x d, upper triangle
  Vector s;
  int threads = 1;

  // M(S) = (1/n) Σ_S (z − μ(S))(z − μ(S))ᵀ as a full symmetric matrix.
  Matrix M(std::int64_t n) const {
    const auto d = Z.cols();
    const double m = static_cast<double>(S.size());
    Matrix out(d, d);
    for (Eigen::Index a = 0; a < d; ++a)
      for (Eigen::Index c = a; c < d; ++c) {
        const double v = (G[a * d + c] - s[a] * s[c] / m) / static_cast<double>(n);
        out(a, c) = v;
        out(c, a) = v;
      }
    return out;
  }
  Vector shrink_mean(double floor_count) const {
    return s / std::max(static_cast<double>(S.size()), floor_count);
  }
};

// ---------------------------------------------------------------------------------------------
// The front end: private coarse range, then (optionally) private coordinate medians on a grid
// of 0.1σ over x̄ ± 4σ, then the projection of every row onto a ball (radius r) or box
// (half-side r) around that centre, in σ units, quantised onto the grid qZ (exact Gram).
// ---------------------------------------------------------------------------------------------
enum class ClipShape { ball, box };
struct ClipPlan {
  ClipShape shape = ClipShape::ball;
  RangeOptions range;          // coarse q_range (range.sigma is in data units, set by the caller)
  EpsilonDelta range_per;      // its per-coordinate budget
  LedgerEntry range_entry;
  std::optional<RangeHtOptions> range_ht;  // set: q_range-ht (docs/proofs/mean.md) instead of q_range
  double median_eps = 0;       // > 0: private coordinate medians (per coordinate ε)
  double radius = 0;           // ball radius or box half-side (σ units)
  double q = 0;                // quantisation step (σ units, a power of two)
  double region = 0;           // after quantisation: ball radius r' or box half-side r + q/2
  double D = 0;                // diameter of the clipping region (σ units)
  bool bounded_covariance = false;  // the clean model: Σ ⪯ I (PRIME-ht), else sub-Gaussian
};

// Runs range (and medians), fills st.Z with the clipped, quantised rows, S = [n], G and s;
// returns the clipping centre in data units, or std::nullopt when the range step abstained
// (`abstained` says why when the range was released but lies beyond what the bins resolve).
// X is in scale units (mean/units.hpp): the range bins and the median grid are in those units.
std::optional<Vector> front_end(const ConstMatrixRef& X, const ClipPlan& c, Rng& rng, int threads,
                                FilterState& st, std::int64_t& clipped,
                                std::optional<std::string>& abstained);

// The practical ball: shape, radius, q, region and D from public parameters (c.median_eps set);
// returns the public bound on the private medians' error (σ units). ht: PRIME-ht's radius.
double practical_ball(ClipPlan& c, std::int64_t n, std::int64_t d, double alpha, double zeta,
                      bool ht);

// The quantised ball's radius r': a row clipped to radius r by the computed norm (off by up to
// (d/2 + 2)·2^-53 relative for any summation order, plus the scaling's roundings; the
// (d + 16)·2^-53 term covers both) then moves by at most q√d/2 when rounded to the grid. The
// 10^-12 is the margin this had before the d-dependent term.
inline double ball_region(double radius, double q, double d) {
  return radius * (1 + 1e-12 + (d + 16) * 0x1p-53) + q * std::sqrt(d) / 2;
}

// Clamps a centre into the clipping region (docs/errata.md D10).
inline Vector clamp_region(Vector v, const ClipPlan& c) {
  if (c.shape == ClipShape::ball) {
    const double norm = v.norm();
    if (norm > c.region) v *= c.region / norm;
  } else {
    v = v.cwiseMax(-c.region).cwiseMin(c.region);
  }
  return v;
}

// The plans of PRIME and the filter depend on public parameters only and cost ~1 ms
// (calibrations, a χ² quantile); audits and experiments repeat them with the same (n, d, options),
// so the last one is kept per thread. `key` holds every public value the plan reads.
template <class Plan, class Key, class Build>
Plan cached_plan(const Key& key, Build build) {
  thread_local std::optional<Key> last;
  thread_local std::optional<Plan> plan;
  if (!plan || !(*last == key)) {
    plan = build();
    last = key;
  }
  return *plan;
}

// The budget the plan gives its auxiliary step: the private units (scale absent) or the
// private clipped-row count (scale supplied, clip_check_share > 0). A fraction `share` of the
// total is set apart; the algorithm's own releases get (1 − share) of theirs.
struct AuxShare {
  bool estimate_units = false;
  double share = 0;  // 0: no auxiliary step
};
inline AuxShare aux_share(bool scale_supplied, double scale_share, double clip_check_share) {
  return scale_supplied ? AuxShare{false, clip_check_share} : AuxShare{true, scale_share};
}

// The auxiliary step's mechanism and entries: the scale layer's (units) or one count.
struct AuxPlan {
  AuxShare share;
  PrivacyLoss loss;        // its loss (zcdp rho or pure epsilon)
  double remaining = 0;    // what the method proper gets (rho or epsilon)
  Ledger entries;          // charged with the plan
  std::optional<Mech> clip_count;  // scale supplied: noisy count of the rows the front end clips
};
// practical (zcdp): rho share; paper (basic): epsilon share.
AuxPlan plan_aux(const AuxShare& a, bool zcdp, double total, std::int64_t d, double alpha,
                 NoiseMode mode);

// The front end with units: the data's units (supplied, or estimated by the scale layer with the
// plan's auxiliary share), the data in those units, range, medians and clipping; with a supplied
// scale, the private count of clipped rows. `abstained` is set when the units or the range step
// abstain; then nothing else is set.
struct FrontResult {
  ColumnUnits units;
  Vector centre;  // clipping centre (scale units)
  std::unique_ptr<FilterState> state;
  std::int64_t clipped = 0;
  std::optional<std::string> abstained;
};
// `tolerated`: the clipped fraction above which the release warns (the supplied scale is
// likely too small).
FrontResult run_front(const ConstMatrixRef& X, const ClipPlan& c, const AuxPlan& aux,
                      const std::optional<std::vector<double>>& scale, double alpha,
                      double tolerated, int threads, bool off, Rng& rng, nlohmann::json& diag);

// The clean rows' model a robust method assumes, for its stated error and its tail check.
enum class CleanModel { sub_gaussian, bounded_covariance, none };
// The model's share of the error, in scale units, at corrupted fraction alpha: sub-Gaussian
// 3·α·sqrt(2 ln(1/α)); bounded covariance 3·sqrt(α); none 0 (docs/proofs/mean.md §7).
double model_error_units(CleanModel m, double alpha);
// The fraction of rows beyond kTailRadius scales the model allows (corruption included, with a
// slack for the count's noise): α + P_model(|x − μ| > R σ) + 0.01 + 3·noise.
double tail_allowance(CleanModel m, double alpha, double tail_noise);
// Abstention reason when an estimated column's tail is heavier than the model allows (the
// filters would treat its clean tail as corruption); nothing for supplied units or model none.
std::optional<std::string> tail_check(const ColumnUnits& u, CleanModel m, double alpha);
// diag["stated_error"]: per column, scale_j·(model + z·noise_units + z/√n) with z the normal
// quantile at 1 − β/(2d), the radius within which the release lands with probability >= 1 − β
// when the clean rows follow the model (the tail check abstains when they visibly do not).
void state_error(nlohmann::json& diag, const ColumnUnits& u, double model_units,
                 double noise_sd_units, std::int64_t n, double beta, const char* model,
                 bool laplace = false);  // laplace: noise_sd_units is a Laplace scale b

// The units step alone (shared with DP Mean, the bounded mean and exp-time): supplied or
// estimated with `aux.loss`; on abstention the reason, with diag["units"] stating what ran.
std::optional<ColumnUnits> units_step(const ConstMatrixRef& X, const AuxPlan& aux,
                                      const std::optional<std::vector<double>>& scale,
                                      double alpha, double widen, int threads, Rng& rng,
                                      nlohmann::json& diag, std::optional<std::string>& abstained);

// diag["clipped"]: the noisy count of clipped rows, its fraction and, above `tolerated`, a
// warning that the supplied bound bites.
void report_clipped(const Mech& count, std::int64_t clipped, std::int64_t n, double tolerated,
                    const char* what, bool off, Rng& rng, nlohmann::json& diag);

// Checks the units options shared by the robust means.
void check_units_options(const std::optional<std::vector<double>>& scale, double scale_share,
                         double clip_check_share, Eigen::Index d);

}  // namespace dpstats::prime_detail
