// JME Fig. 4 (card §5.4): Adam's second moment (diagonal), d = 10^6, n = 1000, JME vs PP,
// (a) C = I and (b) C = T_beta^{1/2} (C1 for beta1 = 0.9, C2 for beta2 = 0.999), bias-corrected
// EMA workloads. Closed forms (Lemma 4.4 and the per-X PP formula at the stream of copies of
// e_1); the per-step cost at this size is measured by bench_moments.
#include <fmt/format.h>

#include <sstream>

#include "common.hpp"

namespace dpstats::jme_repro {
namespace {

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
    const double e1 = theory::sum(theory::pp_sq_error(A2, C1, X1, 1, true, diag));
    const double e2 = theory::sum(theory::pp_sq_error(A2, C1, X1, 2, true, diag));
    const double b1 = theory::sum(theory::pp_sq_error(A2, C1, X1, 1, false, diag));
    const double quart1 = (e2 - 4 * e1) / 12, lin = e1 - quart1, bias1 = b1 - e1;
    const std::string tag = sqrt ? "fig4b" : "fig4a";
    repro::CsvTable t({"sigma_bar", "jme", "pp_debiased", "pp_biased"});
    md << "\n## " << (sqrt ? "(b) square-root factorization" : "(a) C = I")
       << "\n\n| sigma_bar | JME | PP debiased | PP biased | winner |\n|---|---|---|---|---|\n";
    for (double sb : kSigmaBarGrid) {
      NoiseParameters p{.method = Method::jme, .d = d, .form = diag};
      const double jme =
          theory::sum(theory::expected_errors(p, sb / 2, A1, A2, C1, C2).second);
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
  write_summary(o.out, md.str());
}

}  // namespace
}  // namespace dpstats::jme_repro

DPSTATS_EXPERIMENT("jme-fig4", "JME Fig. 4: Adam diagonal second moment, d = 10^6 (closed forms)",
                   dpstats::jme_repro::run_fig4);
