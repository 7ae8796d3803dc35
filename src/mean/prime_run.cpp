// PRIME's run (docs/proofs/mean.md, docs/results/prime.md "Privacy argument"): the filter (Alg 10
// with the profile's releases) on the processed data and the final mean, every noise draw through
// the plan's mechanisms (prime_plan.hpp).
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

namespace dpstats::mean_detail {
namespace {

// λ: λ_max(M − I) (practical), ‖M − I‖₂ (paper); PRIME-ht drops the −I (Alg 16).
double lambda_stat(const Matrix& M, Profile profile, bool ht) {
  const auto d = M.rows();
  Eigen::SelfAdjointEigenSolver<Matrix> es(M, Eigen::EigenvaluesOnly);
  const Vector ev = es.eigenvalues().array() - (ht ? 0.0 : 1.0);
  if (profile == Profile::practical) return ev[d - 1];  // one-sided (docs/proofs/mean.md)
  return std::max(std::abs(ev[0]), std::abs(ev[d - 1]));      // paper: ‖M − I‖₂
}

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
    mean_detail::scores(st.Z, st.S, P.data(), mu.data(), tau.data(), o.run.threads);
    const double rho_t = dp_threshold(psi);
    const std::vector<char> drop =
        comm.size() > 1 ? mean_detail::drops_over_ranks(comm, tau, rho_t * Z, st, p.k, offset)
                        : mean_detail::filter_drops(tau, rho_t * Z, st.Z, st.S, p.k);
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

}  // namespace

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
  diag["final_noise_scale_units"] = p.final_mean.noise_scale();
  const bool ht = p.ht;
  state_error(diag, fr.units,
              model_error_units(ht ? CleanModel::bounded_covariance : CleanModel::sub_gaussian,
                                o.alpha),
              p.final_mean.noise_scale(), n, o.failure_probability,
              ht ? "bounded covariance (Sigma <= scale^2 I) plus an alpha fraction of arbitrary rows"
                 : "sub-Gaussian (covariance scale^2 I) plus an alpha fraction of arbitrary rows",
              p.final_mean.l.has_value());
  return seal(from_units(fr.centre + mean, fr.units), account, facts, rng, diag);
}

}  // namespace dpstats::mean_detail
