// Privacy-loss values (design.md §3): pure epsilon, approximate (epsilon, delta), rho-zCDP
// (optionally delta-approximate, Bun & Steinke 2016 §8) and mu-GDP (Dong, Roth & Su 2019).
#pragma once
#include <string>

namespace dpstats {

enum class LossKind { pure, approximate, zcdp, gdp };

// Neighbouring relation and privacy unit are explicit wherever they matter.
enum class Neighbouring { replace_one, add_remove };
enum class PrivacyUnit { record, user };

struct PrivacyLoss {
  LossKind kind = LossKind::pure;
  double epsilon = 0;  // pure, approximate
  double delta = 0;    // approximate; for zcdp: the delta of delta-approximate zCDP
  double rho = 0;      // zcdp
  double mu = 0;       // gdp

  static PrivacyLoss pure(double epsilon);
  static PrivacyLoss approximate(double epsilon, double delta);
  static PrivacyLoss zcdp(double rho, double delta = 0);
  static PrivacyLoss gdp(double mu);

  // "epsilon=1", "(epsilon=1, delta=1e-06)", "rho=0.5", "mu=1.2".
  std::string describe() const;
};

const char* to_string(LossKind kind);
const char* to_string(Neighbouring n);
const char* to_string(PrivacyUnit u);

}  // namespace dpstats
