// geomedian-real-data: the private geometric median on realistic tables (issue #15), before
// (a guessed domain radius: the unit guess R = 1 or a loose R = 1e7) and after (the default: R
// estimated privately). Tables are generated here, seeded (docs/results/real-data.md says how).
#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <random>

#include "../repro.hpp"
#include "common.hpp"
#include "dpstats/data/synthetic.hpp"
#include "dpstats/error.hpp"
#include "dpstats/median/geometric_median.hpp"
#include "dpstats/median/weiszfeld.hpp"

namespace dpstats::repro::geomedian {
namespace {

// age ~ N(41, 12²) years, salary = 52000·exp(0.5 z) dollars (a log-normal right tail), and a
// fraction `corrupt` of the rows at (999, 9.9e6).
RowMatrix age_salary(std::int64_t n, double corrupt, Rng& rng) {
  RowMatrix X(n, 2);
  for (std::int64_t i = 0; i < n; ++i) {
    X(i, 0) = 41 + 12 * standard_normal(rng);
    X(i, 1) = 52000 * std::exp(0.5 * standard_normal(rng));
  }
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(corrupt * static_cast<double>(n)); ++i)
    X.row(i) << 999, 9.9e6;
  return X;
}

// Flight delays in minutes: departure delay = −5 + Exp(mean 15) with a 5% Pareto(α = 1.5) tail of
// scale 60; arrival delay = departure delay + N(0, 10²); distance in miles ~ 800·exp(0.6 z).
RowMatrix flights(std::int64_t n, Rng& rng) {
  RowMatrix X(n, 3);
  for (std::int64_t i = 0; i < n; ++i) {
    const double u = std::max(rng.uniform01(), 1e-300);
    double dep = -5 - 15 * std::log(u);
    if (rng.uniform01() < 0.05) dep += 60 * (std::pow(std::max(rng.uniform01(), 1e-300), -1 / 1.5) - 1);
    X(i, 0) = dep;
    X(i, 1) = dep + 10 * standard_normal(rng);
    X(i, 2) = 800 * std::exp(0.6 * standard_normal(rng));
  }
  return X;
}

struct Setting {
  std::string name;
  std::optional<double> domain_radius;
};

void table_rows(const std::string& table, const RowMatrix& X, const ReproOptions& o,
                std::ofstream& md, CsvTable& csv, int table_id, Rng& rng) {
  WeiszfeldOptions wo;
  wo.rel_tol = 1e-12;
  const auto w = weiszfeld(X, wo);
  const std::vector<Setting> settings{{"before: domain_radius 1 (unit guess)", 1.0},
                                      {"before: domain_radius 1e7 (loose guess)", 1e7},
                                      {"after: default (estimated)", std::nullopt}};
  const int seeds = o.quick ? 3 : 10;
  for (std::size_t s = 0; s < settings.size(); ++s) {
    std::vector<double> dist, excess;
    int abstained = 0, warned = 0;
    for (int k = 0; k < seeds; ++k) {
      GeometricMedianOptions go;
      go.privacy = {1, 1e-6};
      go.domain_radius = settings[s].domain_radius;
      Release<Vector> r;
      try {
        r = geometric_median(X, go, rng);
      } catch (const InvalidArgument& e) {  // a build without the scale layer: no default R
        md << fmt::format("| {} | {} | {} | | | |\n", table, settings[s].name, e.what());
        return;
      }
      if (r.status == Status::abstained) {
        ++abstained;
        continue;
      }
      warned += r.diagnostics.contains("domain_radius_warning") || r.diagnostics.contains("warning");
      dist.push_back((r.estimate - w.x).norm() / w.f);
      excess.push_back((objective(X, r.estimate) - w.f) / w.f);
    }
    const Stats d = stats(dist), e = stats(excess);
    csv.add_row({static_cast<double>(table_id), static_cast<double>(s), d.mean, e.mean,
                 static_cast<double>(abstained), static_cast<double>(warned)});
    md << fmt::format("| {} | {} | {:.3g} | {:.3g} | {}/{} | {}/{} |\n", table, settings[s].name,
                      d.mean, e.mean, abstained, seeds, warned, seeds);
  }
}

void run(const ReproOptions& o) {
  SeededRng rng(o.seed.value_or(20261125));
  std::ofstream md(o.out / "summary.md");
  CsvTable csv({"table", "setting", "dist_over_fstar", "rel_excess", "abstained", "warned"});
  md << "# geomedian-real-data: (epsilon, delta) = (1, 1e-6), practical profile\n\n"
        "‖estimate − x*‖ / f* (f* = the mean distance of the rows from the non-private median x*: "
        "the data's own scale) and (f − f*)/f*, means over seeds; abstained and warned counts.\n\n"
        "| table | setting | ‖x̂ − x*‖/f* | (f − f*)/f* | abstained | warned |\n|---|---|---|---|---|---|\n";
  const std::int64_t n = o.quick ? 5000 : 20000;
  const RowMatrix A = age_salary(n, 0.05, rng);
  table_rows(fmt::format("age/salary, 5% at (999, 9.9e6), n={}", n), A, o, md, csv, 0, rng);
  table_rows(fmt::format("age/salary ×1e-3, n={}", n), A * 1e-3, o, md, csv, 1, rng);
  table_rows(fmt::format("age/salary ×1e3, n={}", n), A * 1e3, o, md, csv, 2, rng);
  const double scale = weiszfeld(A).f;
  const RowMatrix S = A.array() + 1e4 * scale;
  table_rows(fmt::format("age/salary + 1e4·f*, n={}", n), S, o, md, csv, 3, rng);
  table_rows(fmt::format("flight delays (min) + distance (mi), n={}", n), flights(n, rng), o, md,
             csv, 4, rng);
  csv.write(o.out, "real_data.csv");
}

}  // namespace

DPSTATS_EXPERIMENT("geomedian-real-data",
                   "Private geometric median on realistic tables: guessed vs privately estimated "
                   "domain radius (issue 15)",
                   run);

}  // namespace dpstats::repro::geomedian
