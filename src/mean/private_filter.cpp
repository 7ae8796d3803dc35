// Private iterative filtering (docs/proofs/mean.md, Alg 7 + 8); see include/dpstats/mean/private_filter.hpp.
#include "dpstats/mean/private_filter.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <numeric>

#include "dpstats/comm/fingerprint.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/exponential.hpp"
#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/composition.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/seam.hpp"
#include "dpstats/privacy/composite.hpp"
#include "robust_mean_core.hpp"
#include "prime_kernels.hpp"
#include "ranks_internal.hpp"

namespace dpstats {
namespace {

using namespace mean_detail;

// The front end's shares are shared with PRIME (plan_practical_front, robust_mean_core.hpp).
// Shares of the filter's ρ: the covariance dominates (its noise must stay below the signal
// along v), the rest is small (per round: λ_t, μ_t; once: the final mean).
constexpr double kShareSigma = 0.8, kShareLambda = 0.08, kShareCentre = 0.07, kShareFinal = 0.05;
constexpr double kKappaPractical = 0.75;  // shrink-to-centre mean max(|S|, κn)

void validate(const PrivateFilterOptions& o, std::int64_t n, std::int64_t d) {
  validate_robust(o);
  require(o.T >= 0 && o.T <= 1000, fmt::format("T must be in [0, 1000] (0 = default), got {}", o.T));
  require(n >= 16, fmt::format("the private filter needs n >= 16 rows, got {}", n));
  require(n < (std::int64_t{1} << 32), "the private filter needs n < 2^32 rows");
  require(d >= 1, fmt::format("the private filter needs d >= 1 columns, got {}", d));
  check_units_options(o.scale, o.scale_share, o.clip_check_share, d);
}

struct FilterPlan : ClipPlan {
  bool practical = true;
  std::int64_t n = 0, d = 0;
  int T = 0;
  std::int64_t k = 0;
  double kappa = 0;
  double stop_threshold = 0;
  bool n_check_failed = false;   // paper: n < (4/ε₁) ln(1/(2δ₁)) (public)
  double eps1 = 0, delta1 = 0;   // paper per-release budget
  Mech count, centre, lambda, sigma, final_mean;
  ExponentialMechanismOptions med;   // practical: the coordinate medians
  std::vector<LedgerEntry> entries;  // the filter's releases
  AuxPlan aux;                       // private units or the clipped-row count

  Ledger ledger() const { return front_ledger(*this, practical, entries); }
};

void plan_practical(FilterPlan& p, const PrivateFilterOptions& o) {
  const double nd = static_cast<double>(p.n), dd = static_cast<double>(p.d);
  const double margin = fp_margin(p.n, p.d);
  const NoiseMode mode = o.run.noise;
  p.kappa = kKappaPractical;
  const double rf = plan_practical_front(p, o);
  practical_ball(p, p.n, p.d, o.alpha, o.failure_probability, false);
  const double D2 = p.D * p.D;
  const auto ud = static_cast<std::size_t>(p.d);
  // Sensitivities (replace-one, scale units): M_t = (1/n)Σ_S (x − μ_t)(x − μ_t)ᵀ around the
  // released μ_t changes by (aaᵀ − bbᵀ)/n with ‖a‖, ‖b‖ <= D: λ_max by D²/n, Frobenius by √2·D²/n.
  p.centre = gaussian_rho(p.D / (p.kappa * nd) * margin, rf * kShareCentre / p.T, ud, mode);
  p.lambda = gaussian_rho(D2 / nd * margin, rf * kShareLambda / p.T, 1, mode);
  p.sigma = gaussian_rho(std::sqrt(2.0) * D2 / nd * margin, rf * kShareSigma / p.T,
                         static_cast<std::size_t>(p.d * (p.d + 1) / 2), mode);
  p.final_mean = gaussian_rho(p.D / (p.kappa * nd) * margin, rf * kShareFinal, ud, mode);
  p.entries = {p.centre.entry("centre mu_t (shrink-to-centre mean)", p.T),
               p.lambda.entry("lambda_max(M_t - I)", p.T),
               p.sigma.entry("M_t with GOE-shaped symmetric noise (PCA direction)", p.T),
               p.final_mean.entry("final mean (shrink-to-centre)", 1)};
  const double edge = 2 * std::sqrt(dd / nd) + dd / nd;
  p.stop_threshold = std::max(o.C * o.alpha * std::log(1 / o.alpha), edge + 2 * p.lambda.noise_scale());
}

void plan_paper(FilterPlan& p, const PrivateFilterOptions& o) {
  const double nd = static_cast<double>(p.n), dd = static_cast<double>(p.d);
  const double margin = fp_margin(p.n, p.d);
  const NoiseMode mode = o.run.noise;
  // Alg 7: q_range with 0.01(ε, δ) (Lemma G.13, 0.9 cap); DPfilter gets the rest.
  const auto [eps_f, delta_f] = plan_paper_front(p, o);
  p.shape = ClipShape::box;
  p.radius = 4 * std::sqrt(std::log(dd * nd / o.failure_probability));  // B/2 (scale units)
  p.q = quantum_for(p.radius, p.n);
  p.region = p.radius + p.q / 2;
  p.D = 2 * p.region * std::sqrt(dd);
  const double B2d = p.D * p.D;
  // Alg 8 line 1: ε₁ = min(ε, 0.9)/(4√(2T ln(2/δ))), δ₁ = δ/(8T): Lemma G.13 over 4T releases.
  p.eps1 = std::min(0.9, eps_f) / (4 * std::sqrt(2.0 * p.T * std::log(2 / delta_f)));
  p.delta1 = delta_f / (8.0 * p.T);
  p.n_check_failed = nd < (4 / p.eps1) * std::log(1 / (2 * p.delta1));
  const auto ud = static_cast<std::size_t>(p.d);
  p.count = laplace(1, p.eps1, mode);
  p.centre = gaussian_ed(2 * p.D / nd * margin, p.eps1, p.delta1, ud, mode);  // D6
  p.lambda = laplace(2 * B2d / nd * margin, p.eps1, mode);
  p.sigma = gaussian_ed(2 * B2d / nd * margin, p.eps1, p.delta1,
                        static_cast<std::size_t>(p.d * (p.d + 1) / 2), mode);  // D5
  const long k = 4L * p.T;
  // Lemma G.13 over the 4T releases (optimal composition, privacy/composite.hpp).
  p.entries = {optimal_composition_entry(
      fmt::format("DPfilter: {} releases (n_t Laplace, mu_t Gaussian, lambda_t Laplace, Sigma_t "
                  "Gaussian) each (eps1={}, delta1={}), composed",
                  k, p.eps1, p.delta1),
      p.eps1, p.delta1, k, delta_f / 2,
      {p.count.entry("n_t", p.T), p.centre.entry("mu_t", p.T), p.lambda.entry("lambda_t", p.T),
       p.sigma.entry("Sigma_t", p.T)})};
  p.stop_threshold = (o.C - 0.01) * o.alpha * std::log(1 / o.alpha);
}

FilterPlan build_plan(std::int64_t n, std::int64_t d, const PrivateFilterOptions& o) {
  FilterPlan p;
  p.practical = o.profile == Profile::practical;
  p.n = n;
  p.d = d;
  p.T = o.T > 0 ? o.T : static_cast<int>(std::min<std::int64_t>(200, 2 * d + 20));
  p.k = static_cast<std::int64_t>(std::ceil(o.topk_multiplier * o.alpha * static_cast<double>(n)));
  p.range.sigma = 1;  // scale units
  p.range.zeta = o.failure_probability;
  if (p.practical) {
    plan_practical(p, o);
  } else {
    plan_paper(p, o);
  }
  p.range_per = q_range_coordinate_budget(p.range, static_cast<std::size_t>(d));
  p.range_entry = q_range_entry(p.range, static_cast<std::size_t>(d), "q_range (coarse range)");
  return p;
}

FilterPlan make_plan(std::int64_t n, std::int64_t d, const PrivateFilterOptions& o) {
  return cached_plan<FilterPlan>(n, d, o, [&] { return build_plan(n, d, o); });
}

}  // namespace

namespace mean_detail {

// The filter's removal set over ranks: exactly the rows filter_drops removes from the union of
// the ranks' sets. At most k rows with τ >= cut over all ranks: all of them. Otherwise the k best
// by the value-based order (larger τ, the lexicographically larger row, the smaller global row
// id): they lie among each rank's own k best, whose scores are gathered to find the k-th largest
// score t_k; rows above t_k go, and of the candidates at t_k (rows and ids gathered) the best
// k − #{τ > t_k}. Every decision is a function of gathered values and the row's own data.
std::vector<char> drops_over_ranks(Communicator& comm, std::span<const double> tau, double cut,
                                   const FilterState& st, std::int64_t k, std::int64_t offset) {
  std::vector<char> drop = filter_drops(tau, cut, st.Z, st.S, k);  // this rank's candidates
  std::int64_t above = 0;
  for (double t : tau) above += t >= cut;
  if (allreduce_count(comm, above) <= k) return drop;  // then drop = {τ >= cut} here too
  std::vector<double> mine;
  for (std::size_t p = 0; p < drop.size(); ++p)
    if (drop[p]) mine.push_back(tau[p]);
  std::vector<double> all;
  for (const Bytes& b : comm.allgather(to_bytes(mine))) {
    const auto v = from_bytes<std::vector<double>>(b);
    all.insert(all.end(), v.begin(), v.end());
  }
  std::nth_element(all.begin(), all.begin() + (k - 1), all.end(), std::greater<double>());
  const double tk = all[static_cast<std::size_t>(k - 1)];
  const auto greater = std::count_if(all.begin(), all.end(), [&](double t) { return t > tk; });
  const auto d = st.Z.cols();
  std::vector<double> tied;  // per candidate at t_k: its row, then its global id
  for (std::size_t p = 0; p < drop.size(); ++p)
    if (drop[p] && tau[p] == tk) {
      const auto row = st.Z.row(st.S[p]);
      tied.insert(tied.end(), row.data(), row.data() + d);
      tied.push_back(static_cast<double>(offset + st.S[p]));
    }
  std::vector<std::vector<double>> rows;
  for (const Bytes& b : comm.allgather(to_bytes(tied))) {
    const auto v = from_bytes<std::vector<double>>(b);
    for (std::size_t at = 0; at < v.size(); at += static_cast<std::size_t>(d + 1))
      rows.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(at),
                        v.begin() + static_cast<std::ptrdiff_t>(at + d + 1));
  }
  std::sort(rows.begin(), rows.end(), [d](const auto& a, const auto& b) {
    for (Eigen::Index j = 0; j < d; ++j)
      if (a[j] != b[j]) return a[j] > b[j];
    return a[d] < b[d];
  });
  std::vector<double> chosen;  // global ids of the tied rows that go
  for (std::int64_t i = 0; i < k - greater; ++i) chosen.push_back(rows[static_cast<std::size_t>(i)][d]);
  std::sort(chosen.begin(), chosen.end());
  for (std::size_t p = 0; p < drop.size(); ++p)
    drop[p] = tau[p] > tk || (tau[p] == tk && std::binary_search(
                                                 chosen.begin(), chosen.end(),
                                                 static_cast<double>(offset + st.S[p])));
  return drop;
}

}  // namespace mean_detail

namespace {

using mean_detail::drops_over_ranks;

// M_t = (1/n) Σ_S (x − μ)(x − μ)ᵀ from the exact Gram matrix G and sum s of S.
Matrix centred_second_moment(const FilterState& st, const Vector& mu, std::int64_t n) {
  const auto d = st.Z.cols();
  const double m = st.set_size();
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

// The rounds (Alg 8 with the profile's releases), in scale units.
struct FilterRun {
  const FilterPlan& p;
  const PrivateFilterOptions& o;
  FilterState& st;
  Rng& rng;
  bool off;
  PrimeTrace* trace;
  Communicator& comm;
  std::int64_t offset = 0;  // global id of this rank's row 0
  std::string stop = "T rounds done";
  std::optional<std::string> abstained;
  Vector mu;
  int rounds = 0, filter_rounds = 0;
  std::vector<double> tau;

  // Removes {i in Top_k(τ; S) : τ_i >= D² Z} along the direction v (Alg 8 line 5).
  void filter(const Vector& v, double Z) {
    const auto d = p.d;
    std::vector<double> P(static_cast<std::size_t>(d * d), 0.0);
    for (Eigen::Index a = 0; a < d; ++a) P[static_cast<std::size_t>(a * d)] = v[a];
    tau.resize(st.S.size());
    mean_detail::scores(st.Z, st.S, P.data(), mu.data(), tau.data(), o.run.threads, 1);
    const double cut_scale = p.D * p.D;  // the threshold d·B²·Z_t (= D² Z_t)
    const std::vector<char> drop =
        comm.size() > 1 ? drops_over_ranks(comm, tau, cut_scale * Z, st, p.k, offset)
                        : filter_drops(tau, cut_scale * Z, st.Z, st.S, p.k);
    drop_rows(st, drop, o.run.threads);
    ++filter_rounds;
    if (trace) {
      trace->rounds.push_back(FilterRound{mu, v * v.transpose(), cut_scale, Z, p.k, P});
      trace->set_sizes.push_back(static_cast<std::int64_t>(st.set_size()));
    }
  }

  // A round's noisy steps (rank 0 only; G, s and |S| are the merged ones), packed as
  // [outcome (0 filter, 1 stop, 2 abstain), true λ, μ_t (d), v (d)].
  Vector noisy_round() const {
    const double nd = static_cast<double>(p.n);
    const auto d = p.d;
    Vector out = Vector::Zero(2 + 2 * d);
    if (!p.practical && p.count.apply(st.set_size(), rng, off) < 0.75 * nd) {
      out[0] = 2;
      return out;
    }
    const Vector m = clamp_region(p.centre.apply(st.shrink_mean(p.kappa * nd), rng, off), p);
    out.segment(2, d) = m;
    const Matrix M = centred_second_moment(st, m, p.n);
    Eigen::SelfAdjointEigenSolver<Matrix> ev(M, Eigen::EigenvaluesOnly);
    const Vector e = ev.eigenvalues().array() - 1;
    out[1] = p.practical ? e[d - 1] : std::max(std::abs(e[0]), std::abs(e[d - 1]));
    if (p.lambda.apply(out[1], rng, off) <= p.stop_threshold) {
      out[0] = 1;
      return out;
    }
    // The PCA direction of the noisy symmetric covariance (D5).
    const Matrix Sig = symmetric_noise_release(M, *p.sigma.g, p.practical, rng, off);
    Eigen::SelfAdjointEigenSolver<Matrix> es(Sig);
    out.tail(d) = es.eigenvectors().col(d - 1);
    return out;
  }

  // Round t; false ends the run (stopped or abstained).
  bool round(int t, double Z) {
    ++rounds;
    const auto d = p.d;
    const Vector r = on_root(comm, [&] { return noisy_round(); });
    if (r[0] == 2) {
      abstained = "size check failed (noisy |S| < 3n/4)";
      return false;
    }
    mu = r.segment(2, d);
    if (trace) trace->true_lambda.push_back(r[1]);
    if (r[0] == 1) {
      stop = fmt::format("lambda <= threshold at round {}", t);
      return false;
    }
    filter(r.tail(d), Z);
    return true;
  }

  void run() {
    // Shared uniforms of every planned round, drawn first (public, data-independent).
    const auto Zs = on_root(comm, [&] {
      std::vector<double> z(static_cast<std::size_t>(p.T));
      for (auto& x : z) x = rng.uniform01();
      return z;
    });
    mu = Vector::Zero(p.d);
    for (int t = 1; t <= p.T && round(t, Zs[static_cast<std::size_t>(t - 1)]); ++t) {
    }
    if (abstained) stop = *abstained;
    if (trace) {
      trace->final_set = st.S;
      trace->processed = st.Z.materialise();
      trace->iterations = rounds;
      trace->stop_reason = stop;
    }
  }
};

nlohmann::json plan_diagnostics(const FilterPlan& p) {
  nlohmann::json j = {{"profile", p.practical ? "practical" : "paper"}, {"T", p.T}, {"k", p.k},
                      {"stop_threshold", p.stop_threshold}, {"diameter_scale_units", p.D}};
  j["noise"] = {{"sigma_entry", p.sigma.noise_scale()},
                {"lambda", p.lambda.noise_scale()},
                {"centre", p.centre.noise_scale()}};
  if (!p.practical) {
    j["eps1"] = p.eps1;
    j["delta1"] = p.delta1;
  }
  return j;
}

}  // namespace

// validate -> plan -> charge -> (units) -> front end -> rounds -> final mean -> seal.
Release<Vector> private_filter(const ConstMatrixRef& X, const PrivateFilterOptions& given,
                               Rng& rng, Budget* budget, PrimeTrace* trace) {
  PrivateFilterOptions o = given;
  Communicator& comm = comm_or_single(o.run.comm);
  const std::int64_t d = X.cols();
  std::int64_t n = X.rows();
  if (comm.size() > 1) {
    validate_robust(o);
    n = mean_detail::guarded_rows(X, comm, fingerprint_of("filter", o, d),
                                 "the private filter's options and column count", o.run.threads);
  }
  validate(o, n, d);
  if (comm.size() == 1) check_data(X);
  const bool off = trace && trace->noiseless;
  std::optional<ShareChoice> share;  // the units' share: given, or planned from n, d, the target
  if (!o.scale)
    share = resolve_share(o, [&](const PrivateFilterOptions& at) {
      return robust_units_plan(n, d, at, at.profile == Profile::practical);
    });
  if (share && share->abstain)
    return abstain_before_charging(
        o.privacy, o.profile == Profile::practical ? Accountant::zcdp : Accountant::basic,
        o.run.noise, budget, rng, *share->abstain, {{"scale_share", share->stated}});
  const FilterPlan p = make_plan(n, d, o);
  nlohmann::json diag = plan_diagnostics(p);
  if (share) diag["scale_share"] = share->stated;
  ReleaseBudget account(o.privacy.loss(), p.practical ? Accountant::zcdp : Accountant::basic,
                        budget);
  // The planned maximum, before any noise is drawn; the budget lives on rank 0.
  all_or_none(comm, [&] { account.charge(p.ledger()); });
  SealFacts facts = robust_facts(o.run.noise, off, diag);
  auto abstain = [&](std::string why) {
    if (trace) trace->stop_reason = why;
    facts.abstained = std::move(why);
    return seal(Vector{}, account, facts, rng, diag);
  };
  // Alg 8 line 2 (public): too few rows for the per-round budget.
  if (p.n_check_failed)
    return abstain(fmt::format("n = {} < (4/eps1) ln(1/(2 delta1)) = {:.4g} (Alg 8 line 2)", n,
                               (4 / p.eps1) * std::log(1 / (2 * p.delta1))));
  const FrontResult fr = run_front(X, p, p.aux, o.scale, o.alpha, o.alpha + 0.01, o.run.threads,
                                   off, account, rng, diag, &comm);
  if (fr.abstained) return abstain(*fr.abstained);
  trace_front(trace, fr, p.radius);
  FilterRun run{p, o, *fr.state, rng, off, trace, comm};
  if (comm.size() > 1) run.offset = shard_rows(comm, X.rows()).offset;
  run.run();
  diag["stop"] = run.stop;
  diag["rounds"] = run.rounds;
  diag["filter_rounds"] = run.filter_rounds;
  if (run.abstained) return abstain(*run.abstained);
  // Paper: the last released centre μ_t (Alg 8); practical: one final shrink-to-centre mean.
  const Vector out = p.practical ? on_root(comm, [&] {
    return Vector(p.final_mean.apply(fr.state->shrink_mean(p.kappa * static_cast<double>(n)), rng,
                                     off));
  })
                                 : run.mu;
  // Paper: μ_t's noise is that of the last centre release.
  state_error(diag, fr.units, model_error_units(CleanModel::sub_gaussian, o.alpha),
              p.practical ? p.final_mean.noise_scale() : p.centre.noise_scale(), n, o.failure_probability,
              "sub-Gaussian (covariance scale^2 I) plus an alpha fraction of arbitrary rows",
              (p.practical ? p.final_mean : p.centre).l.has_value());
  return seal(from_units(fr.centre + out, fr.units), account, facts, rng, diag);
}

}  // namespace dpstats
