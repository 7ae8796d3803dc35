// PRIME driver (card §2.6-2.7 and the practical profile of prime-practical-profile.md). See
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
#include <thread>

#include "dpstats/error.hpp"
#include "dpstats/mean/dp_mean.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/mechanisms/histogram.hpp"
#include "dpstats/mechanisms/laplace.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "prime_kernels.hpp"

namespace dpstats {
namespace {

constexpr double kUnit = 0x1p-53;  // unit roundoff

// ---- public constants (card §3, addendum) ----
constexpr int kMedianHalfSteps = 40;   // private median grid x̄ ± 4σ in steps of 0.1σ
constexpr double kMedianStep = 0.1;
constexpr double kRangeRhoShare = 0.02;   // practical: share of ρ for q_range
constexpr double kMedianRhoShare = 0.01;  // practical: share of ρ for the d medians
constexpr double kRangeDeltaShare = 0.1;  // practical: share of δ for q_range
// Practical shares of the filter's ρ (addendum "Share of μ²": Σ_t 87%, λ 5%, ψ 4.4%, mean 1.5%).
constexpr double kShareSigma = 0.85, kShareLambda = 0.05, kSharePsi = 0.045,
                 kShareCentre = 0.015, kShareHist = 0.02, kShareCount = 0.005,
                 kShareFinal = 0.015;
constexpr double kKappaPractical = 0.75;  // shrink-to-centre mean max(|S|, κn)
constexpr double kKappaPaper = 0.5;       // |S| >= n/2 in the paper's P9

// The relative floating-point margin on the sensitivities of λ, ψ, M and the means: the
// computed statistics differ from the exact ones by at most 64(d+1)²·u·D² (exact Gram matrix,
// O(d u) rounding in forming M, the backward error of the symmetric eigensolver), so each
// sensitivity grows by twice that. See docs/results/prime.md.
double fp_margin(std::int64_t n, std::int64_t d) {
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
    const std::size_t bytes = std::max<std::size_t>(kHuge, (count * sizeof(T) + kHuge - 1) / kHuge * kHuge);
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

// Runs f(thread, begin, end) over [0, count) split into `threads` contiguous ranges.
template <class F>
void parallel_for(std::int64_t count, int threads, F&& f) {
  threads = static_cast<int>(std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(1, count / 8192)));
  if (threads == 1) return f(0, std::int64_t{0}, count);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { f(t, count * t / threads, count * (t + 1) / threads); });
  for (auto& th : pool) th.join();
}

double normal_quantile(double p) {  // inverse of normal_cdf, by bisection (public constants only)
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

struct Defaults {
  int T1, T2;
};
Defaults default_rounds(const PrimeOptions& o, std::int64_t n, std::int64_t d) {
  if (o.profile == PrimeProfile::practical) return {o.T1 > 0 ? o.T1 : 3, o.T2 > 0 ? o.T2 : 3};
  // Card §3: T1 = max(2, ⌊ln(B√d)⌋), T2 = max(2, ⌊ln d⌋).
  const double B = 8 * std::sqrt(std::log(static_cast<double>(d) * n / o.zeta));
  const int t1 = std::max(2, static_cast<int>(std::floor(std::log(B * std::sqrt(double(d))))));
  const int t2 = std::max(2, static_cast<int>(std::floor(std::log(static_cast<double>(d)))));
  return {o.T1 > 0 ? o.T1 : t1, o.T2 > 0 ? o.T2 : t2};
}

void validate(const PrimeOptions& o) {
  check_epsilon(o.epsilon);
  check_delta_positive(o.delta);
  check_positive(o.sigma, "sigma");
  check_finite(o.sigma, "sigma");
  require(o.alpha > 0 && o.alpha <= 0.25,
          fmt::format("alpha must be in (0, 0.25], got {}", o.alpha));
  require(o.zeta > 0 && o.zeta < 1, fmt::format("zeta must be in (0, 1), got {}", o.zeta));
  require(o.topk_multiplier >= 1 && o.topk_multiplier <= 4,
          fmt::format("topk_multiplier must be in [1, 4], got {}", o.topk_multiplier));
  require(o.T1 >= 0 && o.T1 <= 20, fmt::format("T1 must be in [0, 20] (0 = default), got {}", o.T1));
  require(o.T2 >= 0 && o.T2 <= 20, fmt::format("T2 must be in [0, 20] (0 = default), got {}", o.T2));
  require(o.C > 0 && std::isfinite(o.C), fmt::format("C must be > 0, got {}", o.C));
  require(o.threads >= 1 && o.threads <= 256,
          fmt::format("threads must be in [1, 256], got {}", o.threads));
}

// ---------------------------------------------------------------------------------------------
// The plan: every mechanism and its public noise scale, fixed from (n, d, options) before any
// data are read. The whole plan is charged to the budget up front (the planned maximum).
// ---------------------------------------------------------------------------------------------
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

struct Plan {
  PrimeProfile profile;
  std::int64_t n, d;
  int T1, T2;
  std::int64_t k;          // top-k size
  double kappa;            // shrink-mean floor
  // range step
  RangeOptions range;
  EpsilonDelta range_per;   // per-coordinate histogram budget (cached: optimal composition is slow)
  LedgerEntry range_entry;
  double median_eps = 0;   // practical: per-coordinate exponential mechanism
  double e_med = 0;        // public bound on the median's error (σ units)
  double radius = 0;       // practical: ball radius r (σ units); paper: B/2 (box half-side)
  double box_side = 0;     // paper: B
  double q = 0;            // quantisation step (σ units, a power of two)
  double region = 0;       // after quantisation: ball radius r' or box half-side B/2 + q/2
  double D = 0;            // diameter of the clipping region (σ units)
  int L = 0;               // DPthreshold bins
  double stop_threshold = 0;
  // mechanisms (σ units)
  Mech lambda_outer, lambda_inner, count_outer, count_inner, sigma, psi, psi_tilde, centre, hist,
      final_mean, count_psi;
  std::vector<LedgerEntry> filter_entries;  // charged after the range entries
  std::optional<LedgerEntry> inner_folded;  // paper: the inner k mechanisms as one entry
  double eps1 = 0, eps2 = 0, delta1 = 0, delta2 = 0;  // paper budgets (golden values)
  double rho_filter = 0;
};

Mech gaussian_rho(double sens, double rho, std::size_t dim, NoiseMode mode) {
  Mech m;
  m.g.emplace(GaussianMechanism::from_rho(sens, rho, dim, mode));
  return m;
}
Mech gaussian_ed(double sens, double eps, double delta, std::size_t dim, NoiseMode mode) {
  Mech m;
  m.g.emplace(GaussianMechanism::from_epsilon_delta(sens, eps, delta, dim, mode));
  return m;
}
Mech laplace(double sens, double eps, NoiseMode mode) {
  Mech m;
  m.l.emplace(sens, eps, 1, mode);
  return m;
}

// Quantisation step: the power of two q with |coordinate| / q <= 2^bits, where n·4^bits <= 2^53
// keeps the Gram matrix exact (prime_kernels.hpp).
double quantum_for(double bound, std::int64_t n) {
  const int nb = static_cast<int>(std::ceil(std::log2(static_cast<double>(n) + 1)));
  const int bits = std::min(15, (53 - nb) / 2);
  require(bits >= 8, fmt::format("n = {} is too large for PRIME's exact Gram matrix", n));
  int e = 0;
  std::frexp(bound, &e);  // bound < 2^e
  return std::ldexp(1.0, e - bits);
}

Plan build_plan(std::int64_t n, std::int64_t d, const PrimeOptions& o) {
  Plan p;
  p.profile = o.profile;
  p.n = n;
  p.d = d;
  const auto [T1, T2] = default_rounds(o, n, d);
  p.T1 = T1;
  p.T2 = T2;
  const double nd = static_cast<double>(n), dd = static_cast<double>(d);
  p.k = static_cast<std::int64_t>(std::ceil(o.topk_multiplier * o.alpha * nd));
  const double margin = fp_margin(n, d);
  const auto dim_sym = static_cast<std::size_t>(d * (d + 1) / 2);
  const auto ud = static_cast<std::size_t>(d);
  p.range.sigma = 1;  // q_range runs on data divided by σ? No: it takes σ itself (set by caller)
  p.range.zeta = o.zeta;

  if (o.profile == PrimeProfile::practical) {
    p.kappa = kKappaPractical;
    const double delta_range = o.delta * kRangeDeltaShare;
    const double rho_total = epsilon_delta_to_zcdp(o.epsilon, remainder_after(o.delta, delta_range));
    // Range, medians and filter get fixed shares of ρ; the filter's share is shrunk by 1e-9 so
    // that rounding in the shares can never push the sum over the total.
    const double rho_range = kRangeRhoShare * rho_total;
    p.range.epsilon = std::sqrt(2 * rho_range);
    p.range.delta = delta_range;
    p.median_eps = std::sqrt(2 * kMedianRhoShare * rho_total / dd);
    p.rho_filter = (1 - kRangeRhoShare - kMedianRhoShare) * rho_total * (1 - 1e-9);

    // Public bound on the median's error (σ units): half a grid step, the shift α can cause,
    // the sampling error and the exponential mechanism's error, each at level ζ/(4d).
    const double shift = normal_quantile(0.5 / (1 - o.alpha));
    const double z = normal_quantile(1 - o.zeta / (8 * dd));
    const double sampling = z * 1.2533 / std::sqrt(nd * (1 - o.alpha));
    const double em_counts =
        (2 / p.median_eps) * std::log((2 * kMedianHalfSteps + 1) * 4 * dd / o.zeta);
    const double em = em_counts / (nd * (1 - o.alpha) * 0.24);
    p.e_med = std::min(4.0, kMedianStep / 2 + shift + sampling + em);
    // Ball radius (addendum): r = sqrt(χ²_d upper ζ/(2n) quantile) + √d·e_med.
    p.radius = std::sqrt(chi_square_upper_quantile(dd, o.zeta / (2 * nd))) + std::sqrt(dd) * p.e_med;
    p.q = quantum_for(p.radius, n);
    p.region = p.radius * (1 + 1e-12) + p.q * std::sqrt(dd) / 2;
    p.D = 2 * p.region;
    const double D2 = p.D * p.D;
    p.L = 2 + static_cast<int>(std::ceil(std::log2(D2)));
    const int TT = T1 * T2;
    const double rf = p.rho_filter;
    // Releases (sensitivities under replace-one, σ units; addendum "Sensitivities"):
    //   λ_max(M − I), ψ = ⟨M − I, U⟩: D²/n; M in the Frobenius-isometric basis: √2 D²/n;
    //   shrink-to-centre mean: D/(κn); score histogram (counts): √2; |S|: 1.
    p.lambda_outer = gaussian_rho(D2 / nd * margin, rf * kShareLambda / TT, 1, o.noise);
    p.lambda_inner = p.lambda_outer;
    p.sigma = gaussian_rho(std::sqrt(2.0) * D2 / nd * margin, rf * kShareSigma / TT, dim_sym,
                           o.noise);
    p.psi = gaussian_rho(D2 / nd * margin, rf * kSharePsi / TT, 1, o.noise);
    p.centre = gaussian_rho(p.D / (p.kappa * nd) * margin, rf * kShareCentre / TT, ud, o.noise);
    p.hist = gaussian_rho(std::sqrt(2.0), rf * kShareHist / TT, static_cast<std::size_t>(p.L),
                          o.noise);
    p.count_psi = gaussian_rho(1.0, rf * kShareCount / TT, 1, o.noise);
    p.final_mean = gaussian_rho(p.D / (p.kappa * nd) * margin, rf * kShareFinal, ud, o.noise);
    // The λ releases: T1 at epoch starts, T1(T2 − 1) inside (λ_1 = λ^(s) is reused).
    p.filter_entries = {
        p.lambda_outer.entry("lambda_max(M - I) (epoch and inner)", TT),
        p.sigma.entry("M(S_t) with GOE-shaped symmetric noise", TT),
        p.psi.entry("psi_t = <M - I, U_t>", TT),
        p.centre.entry("centre mu_t (shrink-to-centre mean)", TT),
        p.hist.entry("DPthreshold score histogram", TT),
        p.count_psi.entry("|S_t| for DPthreshold's psi", TT),
        p.final_mean.entry("final mean (shrink-to-centre)", 1)};
    // Stop when λ <= max(Cα ln(1/α), MP edge + 2σ_λ) (card §4.6, addendum correction 8).
    const double edge = 2 * std::sqrt(dd / nd) + dd / nd;
    p.stop_threshold = std::max(o.C * o.alpha * std::log(1 / o.alpha),
                                edge + 2 * p.lambda_outer.scale());
  } else {
    p.kappa = kKappaPaper;
    // Alg 9: q_range with 0.01(ε, δ) and Lemma G.13's 0.9 cap; the filter gets the rest.
    p.range.epsilon = 0.01 * o.epsilon;
    p.range.delta = 0.01 * o.delta;
    p.range.paper_cap = true;
    const double eps_f = remainder_after(o.epsilon, p.range.epsilon);
    const double delta_f = remainder_after(o.delta, p.range.delta);
    p.box_side = 8 * std::sqrt(std::log(dd * nd / o.zeta));  // B (σ units)
    p.radius = p.box_side / 2;
    p.q = quantum_for(p.radius, n);
    p.region = p.radius + p.q / 2;
    p.D = 2 * p.region * std::sqrt(dd);
    const double B2d = p.D * p.D;  // (B√d)², with B including the quantisation slack
    p.L = 2 + static_cast<int>(std::ceil(std::log2(B2d)));
    // Outer: 2T1 Laplace releases at ε1 and the final Gaussian mean at (ε1, δ_out) (D1, D2).
    const double eps_out = eps_f / 2, delta_out = delta_f / 2;
    p.eps1 = eps_out / (2 * T1 + 1);
    p.delta1 = delta_out;
    const double eps_in = remainder_after(eps_f, eps_out);
    const double delta_in = remainder_after(delta_f, delta_out);
    // Inner: k = 6 T1 T2 mechanisms (μ, λ, Σ, ψ, DPthreshold, and the D7 size check), each
    // (ε2, δ2) by Lemma G.13 (card Alg 10 line 1 with k = 6T1T2).
    const long kin = 6L * T1 * T2;
    p.eps2 = std::min(0.9, eps_in) / (2 * std::sqrt(2.0 * kin * std::log(2 / delta_in)));
    p.delta2 = delta_in / (2.0 * kin);
    // P9's noise scales: Lap(2B²d/(nε)) for λ, ψ; Lap(1/ε) for |S|; Gaussian 2B√d/n for means,
    // 4B²d/n for Σ (D5: iid upper triangle, l2 <= Frobenius); ψ̃ at ε2/2 with sensitivity B²d/n
    // and the histogram (√2 in counts) at (ε2/2, δ2): DPthreshold is (ε2, δ2) in total.
    p.lambda_outer = laplace(2 * B2d / nd * margin, p.eps1, o.noise);
    p.count_outer = laplace(1, p.eps1, o.noise);
    p.final_mean = gaussian_ed(2 * p.D / nd * margin, p.eps1, p.delta1, ud, o.noise);
    p.lambda_inner = laplace(2 * B2d / nd * margin, p.eps2, o.noise);
    p.count_inner = laplace(1, p.eps2, o.noise);
    p.sigma = gaussian_ed(4 * B2d / nd * margin, p.eps2, p.delta2, dim_sym, o.noise);
    p.psi = laplace(2 * B2d / nd * margin, p.eps2, o.noise);
    p.centre = gaussian_ed(2 * p.D / nd * margin, p.eps2, p.delta2, ud, o.noise);
    p.psi_tilde = laplace(B2d / nd * margin, p.eps2 / 2, o.noise);
    p.hist = gaussian_ed(std::sqrt(2.0), p.eps2 / 2, p.delta2, static_cast<std::size_t>(p.L),
                         o.noise);
    const EpsilonDelta inner = best_composition(p.eps2, p.delta2, kin, delta_in / 2);
    LedgerEntry folded;
    folded.mechanism = "composition";
    folded.purpose = fmt::format(
        "inner filter: {} mechanisms (lambda_t, n_t, Sigma_t, psi_t, mu_t, DPthreshold) each "
        "(eps2={}, delta2={}), composed",
        kin, p.eps2, p.delta2);
    folded.loss = PrivacyLoss::approximate(inner.epsilon, inner.delta);
    p.inner_folded = folded;
    p.filter_entries = {p.lambda_outer.entry("||M - I|| (epoch)", T1),
                        p.count_outer.entry("|S| (epoch)", T1),
                        p.final_mean.entry("final mean", 1), folded};
    p.stop_threshold = o.C * o.alpha * std::log(1 / o.alpha);
  }
  p.range_per = q_range_coordinate_budget(p.range, static_cast<std::size_t>(d));
  p.range_entry = q_range_entry(p.range, static_cast<std::size_t>(d), "q_range (coarse range)");
  return p;
}

// The plan depends on public parameters only and costs ~1 ms (calibrations, a χ² quantile);
// repeated calls with the same (n, d, options) — audits, experiments — reuse it per thread.
Plan make_plan(std::int64_t n, std::int64_t d, const PrimeOptions& o) {
  struct Key {
    std::int64_t n = -1, d = -1;
    PrimeOptions o;
    bool operator==(const Key& k) const {
      return n == k.n && d == k.d && o.epsilon == k.o.epsilon && o.delta == k.o.delta &&
             o.alpha == k.o.alpha && o.zeta == k.o.zeta && o.profile == k.o.profile &&
             o.topk_multiplier == k.o.topk_multiplier && o.T1 == k.o.T1 && o.T2 == k.o.T2 &&
             o.C == k.o.C && o.noise == k.o.noise;
    }
  };
  thread_local Key key;
  thread_local std::optional<Plan> plan;
  const Key now{n, d, o};
  if (!plan || !(key == now)) {
    plan = build_plan(n, d, o);
    key = now;
  }
  return *plan;
}

// ---------------------------------------------------------------------------------------------
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

double lambda_stat(const Matrix& M, PrimeProfile profile) {
  const auto d = M.rows();
  Eigen::SelfAdjointEigenSolver<Matrix> es(M, Eigen::EigenvaluesOnly);
  const Vector ev = es.eigenvalues().array() - 1;
  if (profile == PrimeProfile::practical) return ev[d - 1];  // one-sided (card §4.6)
  return std::max(std::abs(ev[0]), std::abs(ev[d - 1]));      // paper: ‖M − I‖₂
}

Vector clamp_region(Vector v, const Plan& p) {
  if (p.profile == PrimeProfile::practical) {
    const double norm = v.norm();
    if (norm > p.region) v *= p.region / norm;
  } else {
    v = v.cwiseMax(-p.region).cwiseMin(p.region);
  }
  return v;
}

// q_range (card §2.2) with the same bins, budget, noise and output as mechanisms/range.hpp, but
// reading the row-major data in one pass per block of 64 coordinates instead of one
// strided pass per coordinate (the strided reads cost 2 s at n = 10^6, d = 50).
std::optional<RangeResult> q_range_rows(const ConstMatrixRef& X, const RangeOptions& o,
                                        const EpsilonDelta& per, const LedgerEntry& entry,
                                        Rng& rng, int threads) {
  const Eigen::Index n = X.rows(), d = X.cols();
  RangeResult result;
  result.centre.resize(d);
  constexpr Eigen::Index kBlock = 64;
  const Eigen::Index block_cols = std::min(kBlock, d);
  // Uninitialised: every cell is written before it is read (no page-zeroing pass).
  HugeArray<std::int64_t> bins(static_cast<std::size_t>(n * block_cols));
  for (Eigen::Index j0 = 0; j0 < d; j0 += kBlock) {
    const Eigen::Index width = std::min(kBlock, d - j0);
    // Bins of 1024 rows at a time into a small tile, then one contiguous copy per coordinate
    // (32 interleaved 8-byte write streams over n rows are several times slower).
    parallel_for(n, threads, [&](int, std::int64_t b, std::int64_t e) {
      constexpr std::int64_t kTile = 1024;
      std::vector<std::int64_t> tile(static_cast<std::size_t>(kBlock * kTile));
      for (std::int64_t i0 = b; i0 < e; i0 += kTile) {
        const std::int64_t rows = std::min(kTile, e - i0);
        for (std::int64_t r = 0; r < rows; ++r) {
          const double* row = X.row(i0 + r).data() + j0;
          for (Eigen::Index jj = 0; jj < width; ++jj) {
            // bin (2σl, 2σ(l+1)]: l = ⌈x/2σ⌉ − 1 = −⌊−x/2σ⌋ − 1
            const double u = std::clamp(-row[jj] / (2 * o.sigma), -0x1p61, 0x1p61);
            tile[static_cast<std::size_t>(jj * kTile + r)] =
                static_cast<std::int64_t>(-fast_floor(u) - 1);
          }
        }
        for (Eigen::Index jj = 0; jj < width; ++jj)
          std::copy_n(tile.data() + jj * kTile, rows, bins.get() + jj * n + i0);
      }
    });
    for (Eigen::Index jj = 0; jj < width; ++jj) {
      const std::span<const std::int64_t> col(bins.get() + jj * n, static_cast<std::size_t>(n));
      const StabilityHistogram h =
          stability_histogram(col, per.epsilon, per.delta, Neighbouring::replace_one, rng);
      if (h.noisy_counts.empty()) return std::nullopt;
      auto best = h.noisy_counts.begin();
      for (auto it = h.noisy_counts.begin(); it != h.noisy_counts.end(); ++it)
        if (it->second > best->second) best = it;
      result.centre[j0 + jj] = 2 * o.sigma * (static_cast<double>(best->first) + 0.5);
    }
  }
  result.side = 8 * o.sigma *
                std::sqrt(std::log(static_cast<double>(d) * static_cast<double>(n) / o.zeta));
  result.entry = entry;
  return result;
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
PrimeFeasibility prime_feasibility(std::int64_t n, std::int64_t d, const PrimeOptions& o) {
  validate(o);
  require(n >= 2 && d >= 1, fmt::format("need n >= 2 and d >= 1, got n = {}, d = {}", n, d));
  const Plan p = make_plan(n, d, o);
  PrimeFeasibility f;
  f.radius = p.profile == PrimeProfile::practical ? p.radius : p.radius * std::sqrt(double(d));
  f.diameter_sq = p.D * p.D;
  // Spectral norm of one Σ_t noise matrix: GOE-shaped (diagonal s², off-diagonal s²/2) ≈ √2·s·2√d/√2
  // = 2 s √d·(1/√2)·√2; iid upper triangle (paper) ≈ 2 s √d.
  const double s = p.sigma.scale();
  f.sigma_noise_norm = (p.profile == PrimeProfile::practical ? std::sqrt(2.0) : 2.0) * s *
                       std::sqrt(static_cast<double>(d));
  f.lambda_noise = p.lambda_outer.scale();
  f.stop_threshold = p.stop_threshold;
  // The smallest signal worth filtering: twice the stopping floor Cα ln(1/α).
  f.reference_signal = 2 * o.C * o.alpha * std::log(1 / o.alpha);
  // Range step: the winning bin holds >= ~0.3 n clean points (μ on a bin edge, width 2σ).
  const EpsilonDelta per = p.range_per;  // (σ does not enter the per-coordinate budget)
  const double hist_threshold = 1 + 2 * std::log(2 / per.delta) / per.epsilon;
  f.range_margin = 0.3 * (1 - o.alpha) * static_cast<double>(n) / hist_threshold;
  // Noise-dominated (addendum rule of thumb, made public-only): the Σ_t noise exceeds twice the
  // stopping threshold (the filter would act on noise), the stopping threshold itself exceeds
  // twice the reference signal (the filter would stop on noise before doing anything, leaving a
  // mean with a smaller budget than DP Mean's), or the range histogram cannot pass its threshold.
  std::vector<std::string> why;
  if (f.sigma_noise_norm > 2 * f.stop_threshold)
    why.push_back(fmt::format("Sigma_t noise norm {:.3g} > 2 x stop threshold {:.3g}",
                              f.sigma_noise_norm, f.stop_threshold));
  if (f.stop_threshold > 2 * f.reference_signal)
    why.push_back(fmt::format("stop threshold {:.3g} > 2 x reference signal {:.3g}",
                              f.stop_threshold, f.reference_signal));
  if (f.range_margin < 1.5)
    why.push_back(fmt::format("range histogram threshold too high for n (margin {:.3g} < 1.5)",
                              f.range_margin));
  f.feasible = why.empty();
  for (std::size_t i = 0; i < why.size(); ++i) f.reason += (i ? "; " : "") + why[i];
  return f;
}

// ---------------------------------------------------------------------------------------------
Release<Vector> prime(const ConstMatrixRef& X, const PrimeOptions& o, Rng& rng, PrimeTrace* trace) {
  validate(o);
  check_data(X);
  const std::int64_t n = X.rows(), d = X.cols();
  require(n >= 16, fmt::format("PRIME needs n >= 16 rows, got {}", n));
  require(n < (std::int64_t{1} << 32), "PRIME needs n < 2^32 rows");
  const bool off = trace && trace->noiseless;

  Release<Vector> r;
  r.seeded = rng.seeded();
  r.noise = o.noise;
  r.privacy.certified = o.noise == NoiseMode::secure && !off;
  r.diagnostics["profile"] = to_string(o.profile);
  if (off) r.diagnostics["noiseless"] = true;

  // Feasibility from public parameters only (card §4.2); practical falls back to DP Mean.
  const PrimeFeasibility feas = prime_feasibility(n, d, o);
  r.diagnostics["feasibility"] = {{"feasible", feas.feasible},
                                  {"sigma_noise_norm", feas.sigma_noise_norm},
                                  {"lambda_noise", feas.lambda_noise},
                                  {"stop_threshold", feas.stop_threshold},
                                  {"reference_signal", feas.reference_signal},
                                  {"range_margin", feas.range_margin}};
  if (!feas.feasible) r.diagnostics["feasibility"]["reason"] = feas.reason;
  if (o.profile == PrimeProfile::practical && o.fallback && !feas.feasible) {
    DpMeanOptions dm;
    dm.epsilon = o.epsilon;
    dm.delta = o.delta;
    dm.sigma = o.sigma;
    dm.zeta = o.zeta;
    dm.noise = o.noise;
    dm.threads = o.threads;
    Release<Vector> fb = dp_mean(X, dm, rng);
    fb.diagnostics["profile"] = to_string(o.profile);
    fb.diagnostics["fallback"] = "dp-mean";
    fb.diagnostics["feasibility"] = r.diagnostics["feasibility"];
    if (trace) trace->stop_reason = "fallback to DP Mean";
    return fb;
  }

  Plan p = make_plan(n, d, o);
  p.range.sigma = o.sigma;
  const double nd = static_cast<double>(n), dd = static_cast<double>(d);

  // Charge the planned maximum before any noise is drawn.
  Budget budget(PrivacyLoss::approximate(o.epsilon, o.delta),
                p.profile == PrimeProfile::practical ? Accountant::zcdp : Accountant::basic);
  budget.spend(p.range_entry);
  ExponentialMechanismOptions med;
  med.epsilon = p.median_eps;
  med.sensitivity = 1;
  med.monotone = false;
  if (p.profile == PrimeProfile::practical) {
    LedgerEntry e = exponential_mechanism_entry(med, "coordinate-wise private median");
    e.count = static_cast<int>(d);
    budget.spend(e);
  }
  for (const auto& e : p.filter_entries) budget.spend(e);

  auto finish = [&](Release<Vector>& out) {
    const PrivacyLoss spent = budget.spent_epsilon_delta();
    out.privacy.epsilon = spent.epsilon;
    out.privacy.delta = spent.delta;
    if (p.profile == PrimeProfile::practical) out.privacy.rho = budget.spent().rho;
    out.ledger = budget.ledger();
    out.diagnostics["T1"] = p.T1;
    out.diagnostics["T2"] = p.T2;
    out.diagnostics["k"] = p.k;
    out.diagnostics["stop_threshold"] = p.stop_threshold;
    out.diagnostics["diameter"] = p.D * o.sigma;
    out.diagnostics["noise"] = {{"sigma_entry", p.sigma.scale()},
                                {"lambda", p.lambda_outer.scale()},
                                {"psi", p.psi.scale()},
                                {"centre", p.centre.scale()},
                                {"final_mean", p.final_mean.scale()}};
    if (p.profile == PrimeProfile::paper) {
      out.diagnostics["eps1"] = p.eps1;
      out.diagnostics["delta1"] = p.delta1;
      out.diagnostics["eps2"] = p.eps2;
      out.diagnostics["delta2"] = p.delta2;
    }
  };

  // ---- range: q_range, then (practical) private medians and the ball ----
  const auto range = q_range_rows(X, p.range, p.range_per, p.range_entry, rng, o.threads);
  if (!range) {
    r.status = Status::abstained;
    r.diagnostics["reason"] = "q_range found no populated bin in some coordinate";
    finish(r);
    return r;
  }
  Vector centre = range->centre;  // data units
  if (p.profile == PrimeProfile::practical) {
    // Candidates c_k = x̄_j + σ(−4 + 0.1k), k = 0..K−1; quality −|#{x < c_k} − n/2| (sensitivity
    // 1). One row-major pass buckets every value: below[j][b] counts values whose smallest k
    // with x < c_k is b.
    const int K = 2 * kMedianHalfSteps + 1;
    const double h = kMedianStep * o.sigma;
    const Vector lo = range->centre.array() - kMedianHalfSteps * h;
    const std::size_t cells = static_cast<std::size_t>(d * (K + 1));
    std::vector<std::int64_t> parts(cells * static_cast<std::size_t>(o.threads), 0);
    parallel_for(n, o.threads, [&](int t, std::int64_t b, std::int64_t e) {
      std::int64_t* mine = parts.data() + cells * static_cast<std::size_t>(t);
      for (Eigen::Index i = b; i < e; ++i) {
        const double* row = X.row(i).data();
        for (Eigen::Index j = 0; j < d; ++j) {
          const double u = std::clamp((row[j] - lo[j]) / h, -1.0, double(K - 1));
          ++mine[j * (K + 1) + static_cast<std::int64_t>(fast_floor(u)) + 1];
        }
      }
    });
    std::vector<std::int64_t> below(cells, 0);
    for (int t = 0; t < o.threads; ++t)
      for (std::size_t c = 0; c < cells; ++c) below[c] += parts[cells * t + c];
    std::vector<double> quality(static_cast<std::size_t>(K));
    for (Eigen::Index j = 0; j < d; ++j) {
      std::int64_t cum = 0;
      for (int k = 0; k < K; ++k) {
        cum += below[static_cast<std::size_t>(j * (K + 1) + k)];
        quality[static_cast<std::size_t>(k)] = -std::abs(static_cast<double>(cum) - nd / 2);
      }
      const std::size_t pick = permute_and_flip(quality, med, rng);
      centre[j] = lo[j] + static_cast<double>(pick) * h;
    }
  }

  // ---- clip (ball or box, σ units around the centre) and quantise onto the grid qZ ----
  FilterState st(n, d);
  st.threads = o.threads;
  std::vector<std::int64_t> clipped_parts(static_cast<std::size_t>(o.threads), 0);
  parallel_for(n, o.threads, [&](int t, std::int64_t b, std::int64_t e) {
    for (Eigen::Index i = b; i < e; ++i) {
      auto z = st.Z.row(i);
      z = (X.row(i) - centre.transpose()) / o.sigma;
      if (p.profile == PrimeProfile::practical) {
        const double norm = z.norm();
        if (norm > p.radius) {
          z *= p.radius / norm;
          ++clipped_parts[static_cast<std::size_t>(t)];
        }
      } else {
        const double before = z.cwiseAbs().maxCoeff();
        z = z.cwiseMax(-p.radius).cwiseMin(p.radius);
        clipped_parts[static_cast<std::size_t>(t)] += before > p.radius;
      }
      for (Eigen::Index j = 0; j < d; ++j) z[j] = fast_round(z[j] / p.q) * p.q;
    }
  });
  std::int64_t clipped = 0;
  for (auto c : clipped_parts) clipped += c;
  if (trace) {
    trace->clip_centre = centre;
    trace->clip_radius = p.radius;
    trace->clipped_rows = clipped;
  }
  st.S.resize(static_cast<std::size_t>(n));
  std::iota(st.S.begin(), st.S.end(), 0u);
  st.G.assign(static_cast<std::size_t>(d * d), 0.0);
  st.s = Vector::Zero(d);
  prime_detail::gram_update(st.Z, {}, true, 1.0, st.G.data(), st.s.data(), o.threads);

  // ---- the filter (Alg 10 with the profile's releases) ----
  const bool practical = p.profile == PrimeProfile::practical;
  const double floor_count = p.kappa * nd;
  // The shared uniforms Z of every planned round, drawn first: public randomness, independent of
  // the data, and the same whether or not the (test-only) noiseless switch is on.
  std::vector<double> Zs(static_cast<std::size_t>(p.T1 * p.T2));
  for (auto& z : Zs) z = rng.uniform01();
  std::string stop = "T1 epochs done";
  int filter_rounds = 0, iterations = 0, epochs = 0;
  nlohmann::json epochs_json = nlohmann::json::array();
  bool abstain = false;
  std::vector<double> tau;
  auto release_lambda = [&](const Mech& m) {
    const double truth = lambda_stat(st.M(n), p.profile);
    if (trace) trace->true_lambda.push_back(truth);
    return m.apply(truth, rng, off);
  };
  for (int s = 1; s <= p.T1 && !abstain; ++s) {
    ++epochs;
    const double lam_s = release_lambda(p.lambda_outer);
    nlohmann::json ej = {{"lambda", lam_s}};
    if (!practical) {
      const double ns = p.count_outer.apply(static_cast<double>(st.S.size()), rng, off);
      ej["n_noisy"] = ns;
      if (ns <= 0.75 * nd) {
        abstain = true;
        stop = "epoch size check failed (noisy |S| <= 3n/4)";
        epochs_json.push_back(ej);
        break;
      }
    }
    if (lam_s <= p.stop_threshold) {
      stop = fmt::format("lambda <= threshold at epoch {}", s);
      epochs_json.push_back(ej);
      break;
    }
    const double eta = practical ? (std::log(dd) + 1) / lam_s
                                 : 1 / (100 * (0.1 / o.C + 1.01) * lam_s);
    Matrix A = Matrix::Zero(d, d);
    double lam_t = lam_s;
    bool changed = false;
    nlohmann::json inner = nlohmann::json::array();
    for (int t = 1; t <= p.T2; ++t) {
      ++iterations;
      nlohmann::json it;
      if (!practical) {
        lam_t = release_lambda(p.lambda_inner);
      } else if (t > 1 && changed) {
        lam_t = release_lambda(p.lambda_inner);
      }
      it["lambda"] = lam_t;
      if (t > 1 || !practical) {
        if (lam_t <= 0.5 * lam_s) {
          it["break"] = true;
          inner.push_back(it);
          break;
        }
      }
      if (!practical) {  // D7: inner size check before the mean release
        const double nt = p.count_inner.apply(static_cast<double>(st.S.size()), rng, off);
        if (nt <= 0.75 * nd) {
          abstain = true;
          stop = "inner size check failed (noisy |S| <= 3n/4)";
          inner.push_back(it);
          break;
        }
      }
      const Matrix M = st.M(n);
      // Σ_t = M + symmetric noise: GOE-shaped (practical) or iid upper triangle (paper, D5).
      A += symmetric_noise_release(M, *p.sigma.g, practical, rng, off);
      A -= Matrix::Identity(d, d);
      Matrix Q;
      Vector w;
      mmw_weights(A, eta, Q, w);
      // ψ = Σ_k w_k q_kᵀ (M − I) q_k.
      const double psi_true = (Q.transpose() * M * Q).diagonal().dot(w) - w.sum();
      const double psi = p.psi.apply(psi_true, rng, off);
      it["psi"] = psi;
      if (psi <= lam_t / 5.5) {
        changed = false;
        it["filtered"] = false;
        inner.push_back(it);
        continue;
      }
      // μ_t: shrink-to-centre mean + noise, clamped into the region (D10).
      const Vector mu = clamp_region(p.centre.apply(st.shrink_mean(floor_count), rng, off), p);
      std::vector<double> P(static_cast<std::size_t>(d * d));
      for (Eigen::Index k = 0; k < d; ++k)
        for (Eigen::Index j = 0; j < d; ++j) P[k * d + j] = Q(k, j) * std::sqrt(w[j]);
      tau.resize(st.S.size());
      prime_detail::scores(st.Z, st.S, P.data(), mu.data(), tau.data(), o.threads);
      // DPthreshold (Alg 11).
      double psi_tilde = 0;
      if (practical) {
        const double m_noisy = p.count_psi.apply(static_cast<double>(st.S.size()), rng, off);
        psi_tilde = psi + 1 - m_noisy / nd;  // post-processing (addendum correction 6)
      } else {
        double acc = 0;
        for (double t2 : tau) acc += t2 - 1;
        psi_tilde = p.psi_tilde.apply(acc / nd, rng, off);
      }
      Vector h = Vector::Zero(p.L);
      for (double t2 : tau) {
        const int j = dp_threshold_bin(t2, p.L);
        if (j > 0) h[j - 1] += 1;
      }
      const Vector hn = p.hist.apply(h, rng, off) / nd;
      const double rho_t = dp_threshold_rule(std::span<const double>(hn.data(), hn.size()),
                                             psi_tilde);
      const double Z = Zs[static_cast<std::size_t>((s - 1) * p.T2 + (t - 1))];
      // Filter: drop {i in Top_k(τ; S) : τ_i >= ρ Z} (value-based ties; one shared Z).
      const std::vector<char> drop = prime_detail::filter_drops(tau, rho_t * Z, st.Z, st.S, p.k);
      std::vector<std::uint32_t> kept, removed;
      kept.reserve(st.S.size());
      for (std::size_t q = 0; q < st.S.size(); ++q) (drop[q] ? removed : kept).push_back(st.S[q]);
      prime_detail::gram_update(st.Z, removed, false, -1.0, st.G.data(), st.s.data(), o.threads);
      changed = !removed.empty();
      st.S = std::move(kept);
      ++filter_rounds;
      it["filtered"] = true;
      it["rho"] = rho_t;
      it["Z"] = Z;
      inner.push_back(it);
      if (trace) {
        FilterRound fr;
        fr.centre = mu;
        fr.U = Q * w.asDiagonal() * Q.transpose();
        fr.factor = P;
        fr.rho = rho_t;
        fr.Z = Z;
        fr.k = p.k;
        trace->rounds.push_back(std::move(fr));
        trace->set_sizes.push_back(static_cast<std::int64_t>(st.S.size()));
      }
    }
    ej["inner"] = inner;
    epochs_json.push_back(ej);
  }

  if (trace) {
    trace->final_set = st.S;
    trace->processed = st.Z;
    trace->epochs = epochs;
    trace->iterations = iterations;
    trace->stop_reason = stop;
  }
  r.diagnostics["stop"] = stop;
  r.diagnostics["epochs"] = epochs_json;
  r.diagnostics["filter_rounds"] = filter_rounds;
  if (abstain) {
    r.status = Status::abstained;
    r.diagnostics["reason"] = stop;
    finish(r);
    return r;
  }
  // Final release (D2): one noisy shrink-to-centre mean of the final set.
  const Vector mean = p.final_mean.apply(st.shrink_mean(floor_count), rng, off);
  r.estimate = centre + o.sigma * mean;
  r.diagnostics["final_noise_scale"] = p.final_mean.scale() * o.sigma;
  finish(r);
  return r;
}

}  // namespace dpstats
