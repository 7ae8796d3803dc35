// JME Fig. 3 (docs/proofs/moments.md): covariance error of JME vs PP with the average workload V, C = I,
// n = 1000, d = 1 and d = 100: Thm 4.1 (JME, worst case) against Thm 4.2's bounds (PP), plus
// Monte Carlo at d = 1 on the stream x_i = (-1)^i e_1 against the per-X formulas.
// JME Fig. 5 (docs/proofs/moments.md): private Gaussian density estimation, d = 5, KL(p_hat_t || p) per step.
#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <sstream>

#include "dpstats/moments/density.hpp"
#include "common.hpp"

namespace dpstats::jme_repro {
namespace {

double harmonic(std::size_t n, double m) {
  double s = 0;
  for (std::size_t k = 1; k <= n; ++k) s += std::pow(static_cast<double>(k), -m);
  return s;
}

void run_fig3(const repro::ReproOptions& o) {
  const std::size_t n = 1000;
  const double H1 = harmonic(n, 1), H2 = harmonic(n, 2), H3 = harmonic(n, 3);
  const int reps = o.quick ? 40 : 1000;
  std::ostringstream md;
  md << "# JME Fig. 3: covariance error, V, C = I, n = 1000\n\n"
     << "Closed forms summed over steps against sigma_bar: JME debiased worst case (Thm 4.1), PP "
        "debiased lower/upper bounds on its worst case (Thm 4.2). Monte Carlo (d = 1, "
     << reps << " runs, stream x_i = (-1)^i e_1 of Thm 4.2) against the per-X formulas of card "
        "§2.7; z = (MC - formula)/s.e.\n";
  for (std::size_t d : {1u, 100u}) {
    const double dd = static_cast<double>(d), c = cd(d);
    repro::CsvTable t({"sigma_bar", "jme_sup", "pp_lower", "pp_upper", "jme_mc", "jme_mc_se",
                       "pp_mc", "pp_mc_se"});
    md << "\n## d = " << d << "\n\n| sigma_bar | JME (Thm 4.1) | PP lower | PP upper | winner |"
       << (d == 1 ? " JME MC (z) | PP MC (z) |" : "") << "\n|---|---|---|---|---|"
       << (d == 1 ? "---|---|" : "") << "\n";
    for (double sb : kSigmaBarGrid) {
      const double s2 = sb * sb, s4 = s2 * s2;
      const double jme = (c * dd * dd + 2 * dd + 2) * s2 * H1 + dd * (dd + 1) * s4 * H2;
      const double pp_lo = dd * (dd + 1) * s4 * (H1 - H2) + 2 * (dd + 1) * s2 * (H1 - H3);
      const double pp_hi = dd * (dd + 1) * s4 * (H1 - H2) + 2 * (dd + 1) * s2 * H1;
      std::vector<double> row = {sb, jme, pp_lo, pp_hi};
      std::string mc_text;
      const bool do_mc = d == 1 && (sb == 0.5 || sb == 1 || sb == 2);
      if (do_mc) {
        RowMatrix X = RowMatrix::Zero(n, 1);
        for (std::size_t i = 0; i < n; ++i) X(i, 0) = (i % 2 == 0) ? -1.0 : 1.0;
        for (Method m : {Method::jme, Method::pp_debiased}) {
          double f1 = 0, f2 = 0, formula = 0;
          double g = 0;
          for (int k = 0; k < reps; ++k) {
            MomentsConfig cfg;
            cfg.steps = n;
            cfg.dim = 1;
            cfg.method = m;
            cfg.A1 = cfg.A2 = Workload::average(n);
            cfg.C1 = cfg.C2 = Factorization::input(n);
            cfg.noise_multiplier = sb / 2;
            cfg.clip = 1;
            cfg.clip_check_share = 0;  // rows of norm <= 1 by construction: the clip never bites
            cfg.privacy.delta = 1e-6;
            auto rng = run_rng(o, (m == Method::jme ? 1u : 2u) * 1000000 + k +
                                      static_cast<std::uint64_t>(sb * 1000) * 10000);
            GaussianDensityEstimator est(cfg, *rng);
            g = est.estimator().scales().g1;
            double e = 0, mu = 0, m2 = 0;
            for (std::size_t i = 0; i < n; ++i) {
              est.push({&X(i, 0), 1});
              mu += (X(i, 0) - mu) / static_cast<double>(i + 1);
              m2 += (X(i, 0) * X(i, 0) - m2) / static_cast<double>(i + 1);
              const double truth = m2 - mu * mu;
              const double v = est.covariance(true, 0)(0, 0) - truth;
              e += v * v;
            }
            f1 += e, f2 += e * e;
          }
          // Per-X formulas (docs/proofs/moments.md).
          double mu = 0, m2 = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const double t = static_cast<double>(i + 1);
            mu += (X(i, 0) - mu) / t;
            m2 += (X(i, 0) * X(i, 0) - m2) / t;
            const double g2 = g * g;
            if (m == Method::jme) {
              formula += dd * dd * g2 * c / t + 2 * (dd + 1) * g2 * mu * mu / t +
                         dd * (dd + 1) * g2 * g2 / (t * t);
            } else {
              const double spread = t * (m2 - mu * mu);  // sum_k (x_k - mu_t)^2
              formula += 2 * (dd + 1) * g2 * spread / (t * t) +
                         dd * (dd + 1) * g2 * g2 * (1 / t - 1 / (t * t));
            }
          }
          const double mean = f1 / reps, se = std::sqrt(std::max(0.0, f2 / reps - mean * mean) / reps);
          row.push_back(mean);
          row.push_back(se);
          mc_text += fmt::format(" {:.4g} vs {:.4g} ({}) |", mean, formula, z_text(mean, se, formula));
        }
      } else {
        row.insert(row.end(), 4, std::nan(""));
      }
      t.add_row(row);
      if (do_mc || kTableRow(sb))
        md << fmt::format("| {:.3g} | {:.4g} | {:.4g} | {:.4g} | {} |{}\n", sb, jme, pp_lo, pp_hi,
                          jme < pp_lo ? "JME" : (jme > pp_hi ? "PP" : "open"), mc_text);
    }
    const std::string tag = d == 1 ? "fig3a" : "fig3b";
    const auto csv = t.write(o.out, tag + ".csv");
    repro::plot({.csv = csv, .png = o.out / (tag + ".png"),
                 .title = fmt::format("Fig 3: covariance error, d = {}, V, C = I", d),
                 .x = "sigma_bar", .xlabel = "sigma_bar", .ylabel = "sum_t E||Sigma_hat - Sigma||^2",
                 .y = {"jme_sup", "pp_lower", "pp_upper"}, .logx = true, .logy = true});
  }
  write_summary(o.out, md.str());
}

// Fig. 5: KL of the private Gaussian estimate per step.
void run_fig5(const repro::ReproOptions& o) {
  const std::size_t d = 5, n = 200;
  const int reps = o.quick ? 40 : 1000;
  const double sigma_bar = 2;
  const double floor = 1e-3;  // eigenvalue floor (rescaled units; docs/proofs/moments.md flag)
  auto data_rng = o.seed ? std::unique_ptr<Rng>(new SeededRng(*o.seed))
                         : std::unique_ptr<Rng>(new SecureRng());
  auto normal = [&](Rng& r) {
    for (;;) {
      const double u = 2 * r.uniform01() - 1, v = 2 * r.uniform01() - 1, s = u * u + v * v;
      if (s > 0 && s < 1) return u * std::sqrt(-2 * std::log(s) / s);
    }
  };
  auto draw_problem = [&](Rng& r, Vector& mu, RowMatrix& Sigma) {
    mu.resize(d);
    for (std::size_t j = 0; j < d; ++j) mu[j] = normal(r) * std::sqrt(0.5);
    Sigma = RowMatrix::Zero(d, d);  // Wishart_d(1/2 I, 2d)
    for (std::size_t k = 0; k < 2 * d; ++k) {
      Vector g(d);
      for (std::size_t j = 0; j < d; ++j) g[j] = normal(r) * std::sqrt(0.5);
      Sigma += g * g.transpose();
    }
  };
  auto draw_x = [&](Rng& r, const Vector& mu, const Eigen::MatrixXd& L) {
    Vector z(d);
    for (std::size_t j = 0; j < d; ++j) z[j] = normal(r);
    return Vector(mu + L * z);
  };
  // The fixed rescaling: the 99th percentile of ||x|| over the prior (data-independent).
  std::vector<double> norms;
  for (int k = 0; k < 20000; ++k) {
    Vector mu;
    RowMatrix Sigma;
    draw_problem(*data_rng, mu, Sigma);
    const Eigen::MatrixXd L = Eigen::LLT<Eigen::MatrixXd>(Sigma).matrixL();
    norms.push_back(draw_x(*data_rng, mu, L).norm());
  }
  std::nth_element(norms.begin(), norms.begin() + 19800, norms.end());
  const double scale = norms[19800];
  const Method methods[] = {Method::jme, Method::pp, Method::pp_debiased};
  std::vector<std::vector<double>> kl_sum(3, std::vector<double>(n, 0.0)),
      kl_sq(3, std::vector<double>(n, 0.0));
  repro::Progress progress("jme-fig5", static_cast<std::size_t>(reps));
  std::size_t clipped = 0;
  for (int r = 0; r < reps; ++r) {
    Vector mu;
    RowMatrix Sigma;
    draw_problem(*data_rng, mu, Sigma);
    const Eigen::MatrixXd L = Eigen::LLT<Eigen::MatrixXd>(Sigma).matrixL();
    RowMatrix X(n, d);
    for (std::size_t i = 0; i < n; ++i) X.row(i) = draw_x(*data_rng, mu, L).transpose() / scale;
    for (std::size_t i = 0; i < n; ++i) clipped += X.row(i).norm() > 1;
    // The target is the rescaled distribution (KL is invariant under the common rescaling).
    const Vector mus = mu / scale;
    const RowMatrix Sigmas = Sigma / (scale * scale);
    for (int mi = 0; mi < 3; ++mi) {
      MomentsConfig cfg;
      cfg.steps = n;
      cfg.dim = d;
      cfg.method = methods[mi];
      cfg.A1 = cfg.A2 = Workload::average(n);
      cfg.C1 = cfg.C2 = Factorization::input(n);
      cfg.noise_multiplier = sigma_bar / 2;
      cfg.clip = 1;
      cfg.clip_check_share = 0;  // rows of norm <= 1 by construction: the clip never bites
      cfg.privacy.delta = 1e-6;
      auto rng = run_rng(o, 7000000 + static_cast<std::uint64_t>(r) * 3 + mi);
      GaussianDensityEstimator est(cfg, *rng);
      for (std::size_t i = 0; i < n; ++i) {
        est.push({X.row(i).data(), d});
        const bool debias = methods[mi] != Method::pp;
        const double kl = gaussian_kl(est.mean(), est.covariance(debias, floor), mus, Sigmas);
        kl_sum[mi][i] += kl;
        kl_sq[mi][i] += kl * kl;
      }
    }
    progress.step();
  }
  repro::CsvTable t({"step", "jme", "jme_sd", "pp", "pp_sd", "pp_debiased", "pp_debiased_sd"});
  std::ostringstream md;
  md << "# JME Fig. 5: private Gaussian density estimation (d = 5, n = " << n << ", sigma_bar = "
     << sigma_bar << ")\n\n"
     << reps << " runs; mu ~ N(0, I/2), Sigma ~ Wishart_5(I/2, 10), x ~ N(mu, Sigma). Rows are "
     << "divided by the fixed constant " << fmt::format("{:.4g}", scale)
     << " (the 99th percentile of ||x|| over the prior) and clipped to norm 1 ("
     << fmt::format("{:.2f}", 100.0 * static_cast<double>(clipped) / (reps * n))
     << "% of rows clipped); covariances (JME and PP debiased: debiased) are symmetrised and "
        "projected onto eigenvalues >= "
     << floor << ". Values: mean (sd) of KL(p_hat_t || p).\n\n| step | JME | PP | PP debiased |\n"
     << "|---|---|---|---|\n";
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> row = {static_cast<double>(i + 1)};
    std::string line = fmt::format("| {} |", i + 1);
    for (int mi = 0; mi < 3; ++mi) {
      const double m = kl_sum[mi][i] / reps;
      const double sd = std::sqrt(std::max(0.0, kl_sq[mi][i] / reps - m * m));
      row.push_back(m);
      row.push_back(sd);
      line += fmt::format(" {:.3g} ({:.2g}) |", m, sd);
    }
    t.add_row(row);
    if (i + 1 == 1 || i + 1 == 5 || (i + 1) % 20 == 0 || i + 1 == 10) md << line << "\n";
  }
  const auto csv = t.write(o.out, "fig5.csv");
  repro::plot({.csv = csv, .png = o.out / "fig5.png", .title = "Fig 5: KL(p_hat_t || p), d = 5",
               .x = "step", .xlabel = "step t", .ylabel = "mean KL", .y = {"jme", "pp", "pp_debiased"},
               .logy = true});
  write_summary(o.out, md.str());
}

}  // namespace
}  // namespace dpstats::jme_repro

DPSTATS_EXPERIMENT("jme-fig3", "JME Fig. 3: covariance error of JME vs PP (V, C = I)",
                   dpstats::jme_repro::run_fig3);
DPSTATS_EXPERIMENT("jme-fig5", "JME Fig. 5: private Gaussian density estimation, KL per step",
                   dpstats::jme_repro::run_fig5);
