// JME Fig. 4 (docs/proofs/moments.md): Adam's second moment (diagonal), d = 10^6, n = 1000, JME vs PP,
// (a) C = I and (b) C = T_beta^{1/2} (C1 for beta1 = 0.9, C2 for beta2 = 0.999), bias-corrected
// EMA workloads. Closed forms (Lemma 4.4 and the per-X PP formula at the stream of copies of
// e_1), as the paper draws it, and one streamed run per method at three sigma_bar for (a) at the
// full d = 10^6 (d = 10^4 with --quick): a run's error sums over d coordinates with independent
// noise, so one run pins its mean to well under 1% at full size. Debiased PP in (b) is the
// separate jme-fig4b-pp (16 GB of history). The per-step cost at this size is measured by
// bench_moments.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "common.hpp"

namespace dpstats::jme_repro {
namespace {

// One streamed run's config: C = I or the roots, noise multiplier sigma_bar/2.
MomentsConfig panel(Method method, bool sqrt, double sigma_bar, std::size_t n, std::size_t d,
                    int threads) {
  MomentsConfig c;
  c.steps = n;
  c.dim = d;
  c.method = method;
  c.form = SecondMomentForm::diagonal;
  c.A1 = Workload::adam(n, 0.9, true);
  c.A2 = Workload::adam(n, 0.999, true);
  c.C1 = sqrt ? Factorization::square_root(c.A1) : Factorization::input(n);
  c.C2 = sqrt ? Factorization::square_root(c.A2) : Factorization::input(n);
  c.noise_multiplier = sigma_bar / 2;  // sigma_bar = 2 zeta sigma, zeta = 1
  c.clip = 1;
  c.clip_check_share = 0;  // rows of norm <= 1 by construction: the clip never bites
  c.privacy.delta = 1e-6;                      // only to state an epsilon
  c.run.threads = std::max(1, threads);
  return c;
}

void streamed_runs(const repro::ReproOptions& o, bool sqrt, const std::vector<Method>& methods,
                   const std::vector<double>& sigma_bars, std::uint64_t salt,
                   std::ostringstream& md);

void run_fig4(const repro::ReproOptions& o) {
  const std::size_t n = 1000, d = 1000000;
  const Workload A1 = Workload::adam(n, 0.9, true), A2 = Workload::adam(n, 0.999, true);
  std::ostringstream md;
  md << "# JME Fig. 4: Adam second moment (diagonal), d = 10^6, n = 1000\n\n"
     << "Closed forms, summed over steps, against sigma_bar = 2 zeta sigma. Bias-corrected EMA "
        "workloads (beta1 = 0.9 first, beta2 = 0.999 second). PP squares the noisy first-moment "
        "stream (C1) and is evaluated on the stream of copies of e_1 (exactly its worst case for "
        "C = I).\n";
  for (bool sqrt : {false, true}) {
    const Factorization C1 = sqrt ? Factorization::square_root(A1) : Factorization::input(n);
    const Factorization C2 = sqrt ? Factorization::square_root(A2) : Factorization::input(n);
    // PP: e(g) = lin g^2 + d (quart1 g^4) (+ d bias1 g^4): the d-dependence is explicit in the
    // diagonal formula, so a d = 1 stream gives every coefficient.
    const RowMatrix X1 = constant_stream(n, 1);
    const auto diag = SecondMomentForm::diagonal;
    const double e1 = moments::sum(moments::pp_sq_error(A2, C1, X1, 1, true, diag));
    const double e2 = moments::sum(moments::pp_sq_error(A2, C1, X1, 2, true, diag));
    const double b1 = moments::sum(moments::pp_sq_error(A2, C1, X1, 1, false, diag));
    const double quart1 = (e2 - 4 * e1) / 12, lin = e1 - quart1, bias1 = b1 - e1;
    const std::string tag = sqrt ? "fig4b" : "fig4a";
    repro::CsvTable t({"sigma_bar", "jme", "pp_debiased", "pp_biased"});
    md << "\n## " << (sqrt ? "(b) square-root factorization" : "(a) C = I")
       << "\n\n| sigma_bar | JME | PP debiased | PP biased | winner |\n|---|---|---|---|---|\n";
    for (double sb : kSigmaBarGrid) {
      NoiseParameters p{.method = Method::jme, .d = d, .form = diag};
      const double jme =
          moments::sum(moments::expected_errors(p, sb / 2, A1, A2, C1, C2).second);
      const double g = sb * C1.norm_1_to_2(), g2 = g * g;
      const double dd = static_cast<double>(d);
      const double ppd = lin * g2 + dd * quart1 * g2 * g2;
      const double ppb = ppd + dd * bias1 * g2 * g2;
      t.add_row({sb, jme, ppd, ppb});
      if (kTableRow(sb))
        md << fmt::format("| {:.3g} | {:.4g} | {:.4g} | {:.4g} | {} |\n", sb, jme, ppd, ppb,
                          jme < std::min(ppd, ppb) ? "JME" : "PP");
    }
    const auto csv = t.write(o.out, tag + ".csv");
    repro::plot({.csv = csv, .png = o.out / (tag + ".png"),
                 .title = std::string("Fig 4") + (sqrt ? "b: Adam, sqrt" : "a: Adam, C = I"),
                 .x = "sigma_bar", .xlabel = "sigma_bar", .ylabel = "second-moment error",
                 .y = {"jme", "pp_debiased", "pp_biased"}, .logx = true, .logy = true});
  }
  streamed_runs(o, false, {Method::jme, Method::pp_debiased}, {0.5, 1.0, 2.0}, 40, md);
  write_summary(o.out, md.str());
}

// Streamed runs of panel (a) or (b), beside the closed forms at the sigma that actually ran.
void streamed_runs(const repro::ReproOptions& o, bool sqrt, const std::vector<Method>& methods,
                   const std::vector<double>& sigma_bars, std::uint64_t salt,
                   std::ostringstream& md) {
  const std::size_t n = 1000, d_run = o.quick ? 10000 : 1000000;
  const Workload A1 = Workload::adam(n, 0.9, true), A2 = Workload::adam(n, 0.999, true);
  const Factorization C1 = sqrt ? Factorization::square_root(A1) : Factorization::input(n);
  const Factorization C2 = sqrt ? Factorization::square_root(A2) : Factorization::input(n);
  const std::string tag = sqrt ? "fig4b" : "fig4a";
  md << fmt::format(
      "\n## ({}) streamed: one run per cell at d = {}, C = {}, secure noise\n\n"
      "Squared second-moment error summed over the {} steps and all coordinates, next to the "
      "closed form at the noise multiplier that ran (the lattice rounds sigma up).\n\n"
      "| sigma_bar | method | run | closed form | run / closed form |\n|---|---|---|---|---|\n",
      sqrt ? "b" : "a", d_run, sqrt ? "the roots" : "I", n);
  repro::CsvTable runs({"sigma_bar", "method", "run", "closed_form"});
  const RowMatrix X1 = constant_stream(n, 1);
  const auto diag = SecondMomentForm::diagonal;
  const double e1 = moments::sum(moments::pp_sq_error(A2, C1, X1, 1, true, diag));
  const double e2 = moments::sum(moments::pp_sq_error(A2, C1, X1, 2, true, diag));
  const double quart1 = (e2 - 4 * e1) / 12, lin = e1 - quart1;
  for (const double sb : sigma_bars) {
    for (const Method m : methods) {
      double sigma = 0;
      const double run =
          streamed_second_error(panel(m, sqrt, sb, n, d_run, o.threads), o, ++salt, sigma);
      NoiseParameters p{.method = Method::jme, .d = d_run, .form = diag};
      const double g = 2 * sigma * C1.norm_1_to_2(), g2 = g * g;
      const double closed =
          m == Method::jme ? moments::sum(moments::expected_errors(p, sigma, A1, A2, C1, C2).second)
                           : lin * g2 + static_cast<double>(d_run) * quart1 * g2 * g2;
      runs.add_row({sb, static_cast<double>(static_cast<int>(m)), run, closed});
      md << fmt::format("| {:.3g} | {} | {:.4g} | {:.4g} | {:.4f} |\n", sb, to_string(m), run,
                        closed, run / closed);
    }
  }
  runs.write(o.out, tag + "_streamed.csv");
}

// Panel (b) for debiased PP, run apart because of its size: the first moment (10^6 columns)
// through the dense root keeps 999 past inputs and outputs, 16 GB (JME's two blocks: 32 GB).
void run_fig4b_pp(const repro::ReproOptions& o) {
  std::ostringstream md;
  md << "# JME Fig. 4 (b), debiased PP streamed through the roots (16 GB of history at d = 10^6)\n";
  streamed_runs(o, true, {Method::pp_debiased}, {1.0, 2.0}, 60, md);
  write_summary(o.out, md.str());
}

}  // namespace
}  // namespace dpstats::jme_repro

DPSTATS_EXPERIMENT("jme-fig4b-pp",
                   "JME Fig. 4 (b), debiased PP by streamed runs through the roots at d = 10^6 "
                   "(16 GB of memory)",
                   dpstats::jme_repro::run_fig4b_pp);
DPSTATS_EXPERIMENT("jme-fig4",
                   "JME Fig. 4: Adam diagonal second moment, d = 10^6 (closed forms, streamed (a))",
                   dpstats::jme_repro::run_fig4);
