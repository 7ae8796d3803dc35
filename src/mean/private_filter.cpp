// Private iterative filtering (card §2.5, Alg 7 + 8); see include/dpstats/mean/private_filter.hpp.
#include "dpstats/mean/private_filter.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <numeric>

#include "dpstats/error.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "prime_internal.hpp"
#include "prime_kernels.hpp"

namespace dpstats {
namespace {

using namespace prime_detail;

// Practical shares (the same front end as PRIME's practical profile, src/mean/prime.cpp).
constexpr double kRangeRhoShare = 0.02, kMedianRhoShare = 0.01, kRangeDeltaShare = 0.1;
// Shares of the filter's ρ: the covariance dominates (its noise must stay below the signal
// along v), the rest is small (per round: λ_t, μ_t; once: the final mean).
constexpr double kShareSigma = 0.8, kShareLambda = 0.08, kShareCentre = 0.07, kShareFinal = 0.05;
constexpr double kKappaPractical = 0.75;  // shrink-to-centre mean max(|S|, κn)
constexpr double kKappaPaper = 0.5;       // |S| >= n/2 (Alg 8's sensitivity)

void validate(const PrivateFilterOptions& o) {
  check_epsilon(o.epsilon);
  check_delta_positive(o.delta);
  check_positive(o.sigma, "sigma");
  check_finite(o.sigma, "sigma");
  require(o.alpha > 0 && o.alpha <= 0.25,
          fmt::format("alpha must be in (0, 0.25], got {}", o.alpha));
  require(o.zeta > 0 && o.zeta < 1, fmt::format("zeta must be in (0, 1), got {}", o.zeta));
  require(o.T >= 0 && o.T <= 1000, fmt::format("T must be in [0, 1000] (0 = default), got {}", o.T));
  require(o.C > 0 && std::isfinite(o.C), fmt::format("C must be > 0, got {}", o.C));
  require(o.topk_multiplier >= 1 && o.topk_multiplier <= 4,
          fmt::format("topk_multiplier must be in [1, 4], got {}", o.topk_multiplier));
  require(o.threads >= 1 && o.threads <= 256,
          fmt::format("threads must be in [1, 256], got {}", o.threads));
}

struct FilterPlan : ClipPlan {
  bool practical = true;
  int T = 0;
  std::int64_t k = 0;
  double kappa = 0;
  double stop_threshold = 0;
  bool n_check_failed = false;   // paper: n < (4/ε₁) ln(1/(2δ₁)) (public)
  double eps1 = 0, delta1 = 0;   // paper per-release budget
  Mech count, centre, lambda, sigma, final_mean;
  std::vector<LedgerEntry> entries;  // everything but the range entry
};

FilterPlan build_plan(std::int64_t n, std::int64_t d, const PrivateFilterOptions& o) {
  FilterPlan p;
  p.practical = o.profile == PrimeProfile::practical;
  const double nd = static_cast<double>(n), dd = static_cast<double>(d);
  p.T = o.T > 0 ? o.T : static_cast<int>(std::min<std::int64_t>(200, 2 * d + 20));
  p.k = static_cast<std::int64_t>(std::ceil(o.topk_multiplier * o.alpha * nd));
  const double margin = fp_margin(n, d);
  const auto dim_sym = static_cast<std::size_t>(d * (d + 1) / 2);
  const auto ud = static_cast<std::size_t>(d);
  p.range.zeta = o.zeta;
  if (p.practical) {
    p.kappa = kKappaPractical;
    const double delta_range = o.delta * kRangeDeltaShare;
    const double rho_total =
        epsilon_delta_to_zcdp(o.epsilon, remainder_after(o.delta, delta_range));
    p.range.epsilon = std::sqrt(2 * kRangeRhoShare * rho_total);
    p.range.delta = delta_range;
    p.median_eps = std::sqrt(2 * kMedianRhoShare * rho_total / dd);
    const double rf = (1 - kRangeRhoShare - kMedianRhoShare) * rho_total * (1 - 1e-9);
    practical_ball(p, n, d, o.alpha, o.zeta, false);
    const double D2 = p.D * p.D;
    // Sensitivities (replace-one, σ units): M_t = (1/n)Σ_S (x − μ_t)(x − μ_t)ᵀ around the released
    // μ_t changes by (aaᵀ − bbᵀ)/n with ‖a‖, ‖b‖ <= D: λ_max by D²/n, Frobenius by √2·D²/n.
    p.centre = gaussian_rho(p.D / (p.kappa * nd) * margin, rf * kShareCentre / p.T, ud, o.noise);
    p.lambda = gaussian_rho(D2 / nd * margin, rf * kShareLambda / p.T, 1, o.noise);
    p.sigma = gaussian_rho(std::sqrt(2.0) * D2 / nd * margin, rf * kShareSigma / p.T, dim_sym,
                           o.noise);
    p.final_mean = gaussian_rho(p.D / (p.kappa * nd) * margin, rf * kShareFinal, ud, o.noise);
    p.entries = {p.centre.entry("centre mu_t (shrink-to-centre mean)", p.T),
                 p.lambda.entry("lambda_max(M_t - I)", p.T),
                 p.sigma.entry("M_t with GOE-shaped symmetric noise (PCA direction)", p.T),
                 p.final_mean.entry("final mean (shrink-to-centre)", 1)};
    const double edge = 2 * std::sqrt(dd / nd) + dd / nd;
    p.stop_threshold = std::max(o.C * o.alpha * std::log(1 / o.alpha), edge + 2 * p.lambda.scale());
  } else {
    p.kappa = kKappaPaper;
    // Alg 7: q_range with 0.01(ε, δ) (Lemma G.13, 0.9 cap); DPfilter gets the rest.
    p.range.epsilon = 0.01 * o.epsilon;
    p.range.delta = 0.01 * o.delta;
    p.range.paper_cap = true;
    const double eps_f = remainder_after(o.epsilon, p.range.epsilon);
    const double delta_f = remainder_after(o.delta, p.range.delta);
    p.shape = ClipShape::box;
    p.radius = 4 * std::sqrt(std::log(dd * nd / o.zeta));  // B/2, B = 8√ln(dn/ζ) (σ units)
    p.q = quantum_for(p.radius, n);
    p.region = p.radius + p.q / 2;
    p.D = 2 * p.region * std::sqrt(dd);
    const double B2d = p.D * p.D;
    // Alg 8 line 1: ε₁ = min(ε, 0.9)/(4√(2T ln(2/δ))), δ₁ = δ/(8T): Lemma G.13 over 4T releases.
    p.eps1 = std::min(0.9, eps_f) / (4 * std::sqrt(2.0 * p.T * std::log(2 / delta_f)));
    p.delta1 = delta_f / (8.0 * p.T);
    p.n_check_failed = nd < (4 / p.eps1) * std::log(1 / (2 * p.delta1));
    p.count = laplace(1, p.eps1, o.noise);
    p.centre = gaussian_ed(2 * p.D / nd * margin, p.eps1, p.delta1, ud, o.noise);       // D6
    p.lambda = laplace(2 * B2d / nd * margin, p.eps1, o.noise);
    p.sigma = gaussian_ed(2 * B2d / nd * margin, p.eps1, p.delta1, dim_sym, o.noise);   // D5
    const long k = 4L * p.T;
    const EpsilonDelta total = best_composition(p.eps1, p.delta1, k, delta_f / 2);
    LedgerEntry folded;
    folded.mechanism = "composition";
    folded.purpose = fmt::format(
        "DPfilter: {} releases (n_t Laplace, mu_t Gaussian, lambda_t Laplace, Sigma_t Gaussian) "
        "each (eps1={}, delta1={}), composed",
        k, p.eps1, p.delta1);
    folded.loss = PrivacyLoss::approximate(total.epsilon, total.delta);
    p.entries = {folded};
    p.stop_threshold = (o.C - 0.01) * o.alpha * std::log(1 / o.alpha);
  }
  p.range_per = q_range_coordinate_budget(p.range, ud);
  p.range_entry = q_range_entry(p.range, ud, "q_range (coarse range)");
  return p;
}

FilterPlan make_plan(std::int64_t n, std::int64_t d, const PrivateFilterOptions& o) {
  return cached_plan<FilterPlan>(n, d, o, build_plan);
}

// M_t = (1/n) Σ_S (x − μ)(x − μ)ᵀ from the exact Gram matrix G and sum s of S.
Matrix centred_second_moment(const FilterState& st, const Vector& mu, std::int64_t n) {
  const auto d = st.Z.cols();
  const double m = static_cast<double>(st.S.size());
  Matrix out(d, d);
  for (Eigen::Index a = 0; a < d; ++a)
    for (Eigen::Index c = a; c < d; ++c) {
      const double v = (st.G[a * d + c] - st.s[a] * mu[c] - mu[a] * st.s[c] + m * mu[a] * mu[c]) /
                       static_cast<double>(n);
      out(a, c) = v;
      out(c, a) = v;
    }
  return out;
}

}  // namespace

Release<Vector> private_filter(const ConstMatrixRef& X, const PrivateFilterOptions& o, Rng& rng,
                               PrimeTrace* trace) {
  validate(o);
  check_data(X);
  const std::int64_t n = X.rows(), d = X.cols();
  require(n >= 16, fmt::format("the private filter needs n >= 16 rows, got {}", n));
  require(n < (std::int64_t{1} << 32), "the private filter needs n < 2^32 rows");
  const bool off = trace && trace->noiseless;
  FilterPlan p = make_plan(n, d, o);
  p.range.sigma = o.sigma;
  const double nd = static_cast<double>(n);

  Release<Vector> r;
  r.seeded = rng.seeded();
  r.noise = o.noise;
  r.privacy.certified = o.noise == NoiseMode::secure && !off;
  r.diagnostics["profile"] = to_string(o.profile);
  r.diagnostics["T"] = p.T;
  r.diagnostics["k"] = p.k;
  r.diagnostics["stop_threshold"] = p.stop_threshold;
  r.diagnostics["diameter"] = p.D * o.sigma;
  if (off) r.diagnostics["noiseless"] = true;

  Budget budget(PrivacyLoss::approximate(o.epsilon, o.delta),
                p.practical ? Accountant::zcdp : Accountant::basic);
  budget.spend(p.range_entry);
  ExponentialMechanismOptions med;
  med.epsilon = p.median_eps;
  med.sensitivity = 1;
  med.monotone = false;
  if (p.practical) {
    LedgerEntry e = exponential_mechanism_entry(med, "coordinate-wise private median");
    e.count = static_cast<int>(d);
    budget.spend(e);
  }
  for (const auto& e : p.entries) budget.spend(e);
  auto finish = [&](Release<Vector>& out) {
    const PrivacyLoss spent = budget.spent_epsilon_delta();
    out.privacy.epsilon = spent.epsilon;
    out.privacy.delta = spent.delta;
    if (p.practical) out.privacy.rho = budget.spent().rho;
    out.ledger = budget.ledger();
    out.diagnostics["noise"] = {{"sigma_entry", p.sigma.scale()},
                                {"lambda", p.lambda.scale()},
                                {"centre", p.centre.scale()}};
    if (!p.practical) {
      out.diagnostics["eps1"] = p.eps1;
      out.diagnostics["delta1"] = p.delta1;
    }
  };
  auto abstain = [&](const std::string& why) {
    r.status = Status::abstained;
    r.diagnostics["reason"] = why;
    if (trace) trace->stop_reason = why;
    finish(r);
    return r;
  };
  // Alg 8 line 2 (public): too few rows for the per-round budget.
  if (p.n_check_failed)
    return abstain(fmt::format("n = {} < (4/eps1) ln(1/(2 delta1)) = {:.4g} (Alg 8 line 2)", n,
                               (4 / p.eps1) * std::log(1 / (2 * p.delta1))));

  FilterState st(n, d);
  st.threads = o.threads;
  std::int64_t clipped = 0;
  const auto front = front_end(X, p, o.sigma, rng, o.threads, st, clipped);
  if (!front) return abstain("q_range found no populated bin in some coordinate");
  const Vector centre = *front;
  if (trace) {
    trace->clip_centre = centre;
    trace->clip_radius = p.radius;
    trace->clipped_rows = clipped;
  }

  // Shared uniforms of every planned round, drawn first (public, data-independent).
  std::vector<double> Zs(static_cast<std::size_t>(p.T));
  for (auto& z : Zs) z = rng.uniform01();
  const double floor_count = p.kappa * nd;
  const double cut_scale = p.D * p.D;  // Alg 8 line 5: the threshold d·B²·Z_t (= D² Z_t)
  std::string stop = "T rounds done";
  Vector mu = Vector::Zero(d);
  std::vector<double> tau;
  std::vector<double> P(static_cast<std::size_t>(d * d), 0.0);
  int rounds = 0, filter_rounds = 0;
  for (int t = 1; t <= p.T; ++t) {
    ++rounds;
    if (!p.practical) {
      const double nt = p.count.apply(static_cast<double>(st.S.size()), rng, off);
      if (nt < 0.75 * nd) return abstain("size check failed (noisy |S| < 3n/4)");
    }
    mu = clamp_region(p.centre.apply(st.shrink_mean(floor_count), rng, off), p);
    const Matrix M = centred_second_moment(st, mu, n);
    Eigen::SelfAdjointEigenSolver<Matrix> ev(M, Eigen::EigenvaluesOnly);
    const Vector e = ev.eigenvalues().array() - 1;
    const double lam_true = p.practical ? e[d - 1] : std::max(std::abs(e[0]), std::abs(e[d - 1]));
    if (trace) trace->true_lambda.push_back(lam_true);
    const double lam = p.lambda.apply(lam_true, rng, off);
    if (lam <= p.stop_threshold) {
      stop = fmt::format("lambda <= threshold at round {}", t);
      break;
    }
    // The PCA direction of the noisy symmetric covariance (D5).
    const Matrix Sig = symmetric_noise_release(M, *p.sigma.g, p.practical, rng, off);
    Eigen::SelfAdjointEigenSolver<Matrix> es(Sig);
    const Vector v = es.eigenvectors().col(d - 1);
    for (Eigen::Index a = 0; a < d; ++a) P[static_cast<std::size_t>(a * d)] = v[a];
    tau.resize(st.S.size());
    prime_detail::scores(st.Z, st.S, P.data(), mu.data(), tau.data(), o.threads, 1);
    const double Z = Zs[static_cast<std::size_t>(t - 1)];
    const std::vector<char> drop = filter_drops(tau, cut_scale * Z, st.Z, st.S, p.k);
    std::vector<std::uint32_t> kept, removed;
    kept.reserve(st.S.size());
    for (std::size_t q = 0; q < st.S.size(); ++q) (drop[q] ? removed : kept).push_back(st.S[q]);
    gram_update(st.Z, removed, false, -1.0, st.G.data(), st.s.data(), o.threads);
    st.S = std::move(kept);
    ++filter_rounds;
    if (trace) {
      FilterRound fr;
      fr.centre = mu;
      fr.U = v * v.transpose();
      fr.factor = P;
      fr.rho = cut_scale;
      fr.Z = Z;
      fr.k = p.k;
      trace->rounds.push_back(std::move(fr));
      trace->set_sizes.push_back(static_cast<std::int64_t>(st.S.size()));
    }
  }
  if (trace) {
    trace->final_set = st.S;
    trace->processed = st.Z;
    trace->iterations = rounds;
    trace->stop_reason = stop;
  }
  r.diagnostics["stop"] = stop;
  r.diagnostics["rounds"] = rounds;
  r.diagnostics["filter_rounds"] = filter_rounds;
  // Paper: the last released centre μ_t (Alg 8); practical: one final shrink-to-centre mean.
  const Vector out =
      p.practical ? Vector(p.final_mean.apply(st.shrink_mean(floor_count), rng, off)) : mu;
  r.estimate = centre + o.sigma * out;
  finish(r);
  return r;
}

}  // namespace dpstats
