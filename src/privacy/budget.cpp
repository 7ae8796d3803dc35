// Budget: the odometer. See budget.hpp for the accountants and the totals they accept.
//
// Why a relative tolerance of 1e-12 when comparing against the total, and not exact bookkeeping:
// users split budgets in floating point, and the parts need not add up to the whole (10 * fl(0.1)
// exceeds 1 by 5.6e-17; eps * s + eps * (1 - s) may round above eps). Exact rational bookkeeping
// of the doubles would refuse such splits although every part is what the caller meant. The
// tolerance lets the composed quantity exceed the total by at most 1e-12 of the total (a factor
// of at most exp(1e-12 eps) on the privacy-loss bound: far below the slack of any calibration,
// whose own bisections stop at a relative 1e-12 to 1e-13), and it only decides whether to refuse:
// spent() and spent_epsilon_delta() report the composed values themselves, rounded up, so the
// guarantee stated for a release is never smaller than what was spent.
#include "dpstats/privacy/budget.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "dpstats/error.hpp"
#include "dpstats/privacy/conversions.hpp"
#include "dpstats/privacy/pld.hpp"
#include "dpstats/privacy/rdp.hpp"

namespace dpstats {
namespace {

constexpr double kTolerance = 1e-12;

bool at_most(double value, double cap) { return value <= cap * (1 + kTolerance); }

// a - b rounded down, for a >= b >= 0 (Fast2Sum gives the exact rounding error).
double subtract_down(double a, double b) {
  const double r = a - b;
  const double err = (a - r) - b;  // exact: a - b = r + err
  return err < 0 ? std::nextafter(r, 0.0) : r;
}

void check_loss(const PrivacyLoss& loss, const std::string& name) {
  auto nonneg = [&](double v, const char* field) {
    require(std::isfinite(v) && v >= 0,
            fmt::format("{}.{} must be a finite number >= 0, got {}", name, field, v));
  };
  auto prob = [&](double v) {
    require(std::isfinite(v) && v >= 0 && v <= 1,
            fmt::format("{}.delta must be in [0, 1], got {}", name, v));
  };
  switch (loss.kind) {
    case LossKind::pure: nonneg(loss.epsilon, "epsilon"); break;
    case LossKind::approximate:
      nonneg(loss.epsilon, "epsilon");
      prob(loss.delta);
      break;
    case LossKind::zcdp:
      nonneg(loss.rho, "rho");
      prob(loss.delta);
      break;
    case LossKind::gdp: nonneg(loss.mu, "mu"); break;
    case LossKind::subsampled_gaussian:
      require(std::isfinite(loss.sampling_rate) && loss.sampling_rate >= 0 &&
                  loss.sampling_rate <= 1,
              fmt::format("{}.sampling_rate must be in [0, 1], got {}", name, loss.sampling_rate));
      require(std::isfinite(loss.noise_multiplier) && loss.noise_multiplier > 0,
              fmt::format("{}.noise_multiplier must be a finite number > 0, got {}", name,
                          loss.noise_multiplier));
      break;
  }
}

bool takes_epsilon_target(Accountant a) { return a == Accountant::rdp || a == Accountant::pld; }

std::string describe_spend(const LedgerEntry& e) {
  const std::string what = e.purpose.empty() ? e.mechanism : e.mechanism + " (" + e.purpose + ")";
  return e.count == 1 ? fmt::format("{} for {}", e.loss.describe(), what)
                      : fmt::format("{} x {} for {}", e.count, e.loss.describe(), what);
}

}  // namespace

double remainder_after(double total, double part) {
  require(std::isfinite(total) && std::isfinite(part) && total >= part && part >= 0,
          fmt::format("remainder_after needs total >= part >= 0, got total = {}, part = {}", total,
                      part));
  return subtract_down(total, part);
}

const char* to_string(Accountant a) {
  switch (a) {
    case Accountant::basic: return "basic";
    case Accountant::zcdp: return "zcdp";
    case Accountant::gdp: return "gdp";
    case Accountant::rdp: return "rdp";
    case Accountant::pld: return "pld";
  }
  return "?";
}

Budget::Budget(PrivacyLoss total, Accountant accountant) : total_(total), accountant_(accountant) {
  check_loss(total, "total");
  const std::string acc = to_string(accountant);
  const auto kind = total.kind;
  auto refuse = [&] {
    throw InvalidArgument(fmt::format(
        "total: the {} accountant cannot use a {} total ({}); it accepts {}", acc, to_string(kind),
        total.describe(),
        accountant == Accountant::basic  ? "a pure or approximate (epsilon, delta) total"
        : accountant == Accountant::zcdp ? "a zcdp (rho) total or an approximate total with delta > 0"
        : accountant == Accountant::gdp  ? "a gdp (mu) total or an approximate total with delta > 0"
                                         : "an approximate (epsilon, delta) total with delta > 0"));
  };
  switch (accountant) {
    case Accountant::basic:
      if (kind != LossKind::pure && kind != LossKind::approximate) refuse();
      break;
    case Accountant::zcdp:
      if (kind != LossKind::zcdp && !(kind == LossKind::approximate && total.delta > 0)) refuse();
      break;
    case Accountant::gdp:
      if (kind != LossKind::gdp && !(kind == LossKind::approximate && total.delta > 0)) refuse();
      break;
    case Accountant::rdp:
    case Accountant::pld:
      if (!(kind == LossKind::approximate && total.delta > 0)) refuse();
      break;
  }
  switch (kind) {
    case LossKind::pure:
    case LossKind::approximate:
      check_epsilon(total.epsilon, "total.epsilon");
      if (kind == LossKind::approximate) check_delta(total.delta, "total.delta");
      break;
    case LossKind::zcdp:
      check_positive(total.rho, "total.rho");
      check_delta(total.delta, "total.delta");
      break;
    case LossKind::gdp: check_positive(total.mu, "total.mu"); break;
    case LossKind::subsampled_gaussian: refuse(); break;
  }
}

Budget::Sums Budget::add(const Sums& sums, const LedgerEntry& entry) const {
  require(entry.count >= 1, fmt::format("entry.count must be >= 1, got {}", entry.count));
  check_loss(entry.loss, "entry.loss");
  const auto& l = entry.loss;
  const double c = entry.count;  // exact
  Sums out = sums;
  auto refuse = [&](const char* accepts) {
    throw InvalidArgument(fmt::format("entry.loss: the {} accountant cannot count a {} loss ({}); it "
                                      "accepts {}",
                                      to_string(accountant_), to_string(l.kind), l.describe(), accepts));
  };
  // factor * x^2, exactly: x^2 = p + e (fma split); factor is count or count / 2 (exact).
  auto add_square = [&](ExactSum& sum, double x, double factor) {
    const double p = x * x;
    sum.add_product(p, factor);
    sum.add_product(std::fma(x, x, -p), factor);
  };
  switch (accountant_) {
    case Accountant::basic:
      if (l.kind != LossKind::pure && l.kind != LossKind::approximate)
        refuse("pure and approximate losses");
      out.epsilon.add_product(c, l.epsilon);
      if (l.kind == LossKind::approximate) out.delta.add_product(c, l.delta);
      break;
    case Accountant::zcdp:
      switch (l.kind) {
        case LossKind::pure: add_square(out.rho, l.epsilon, c / 2); break;  // BS16 Prop. 1.4
        case LossKind::approximate:  // delta-approximate (epsilon^2/2)-zCDP (BS16 §8)
          add_square(out.rho, l.epsilon, c / 2);
          out.delta.add_product(c, l.delta);
          break;
        case LossKind::zcdp:
          out.rho.add_product(c, l.rho);
          out.delta.add_product(c, l.delta);
          break;
        case LossKind::gdp:
        case LossKind::subsampled_gaussian: refuse("pure, approximate and zcdp losses");
      }
      break;
    case Accountant::gdp:
      if (l.kind != LossKind::gdp) refuse("gdp losses");
      add_square(out.mu_squared, l.mu, c);
      break;
    case Accountant::rdp:
    case Accountant::pld:
      add_analyses(out, entry);
      if (!out.basic_ok && !out.zcdp_ok && !out.rdp_ok && !out.pld_ok)
        refuse(accountant_ == Accountant::pld ? "pure, approximate, zcdp (rdp analysis), gdp, "
                                                "subsampled_gaussian and mechanism-curve losses"
                                              : "pure, approximate, zcdp, gdp and "
                                                "subsampled_gaussian losses");
      break;
  }
  return out;
}

namespace {

// Whether the zcdp and rdp analyses count an entry as its Gaussian curve, rho = 1/(2 z^2) (the
// lattice Gaussian's own rho K^2/(2 s^2) is below it, as z_c <= s/K), rather than as its loss:
// for an (epsilon, delta) loss (a zcdp loss states the mechanism's own rho already).
bool rho_from_curve(const LedgerEntry& e) {
  return e.curve.kind == NoiseKind::gaussian && e.loss.kind != LossKind::zcdp;
}

// The zCDP of one call: the curve's (above), else the loss' (BS16 Prop. 1.4 and §8; gdp
// mu^2/2). nullopt for a loss with no zCDP bound here (subsampled_gaussian).
std::optional<double> entry_rho(const LedgerEntry& e) {
  if (rho_from_curve(e)) {
    const double z = e.curve.noise / e.curve.sensitivity;
    return 1 / (2 * z * z) * (1 + 1e-15);
  }
  const auto& l = e.loss;
  switch (l.kind) {
    case LossKind::pure:
    case LossKind::approximate: return l.epsilon * l.epsilon / 2 * (1 + 1e-15);
    case LossKind::zcdp: return l.rho;
    case LossKind::gdp: return l.mu * l.mu / 2 * (1 + 1e-15);
    case LossKind::subsampled_gaussian: break;
  }
  return std::nullopt;
}

// Whether the zcdp and rdp analyses count the entry's delta (delta-approximate): not when they
// count its Gaussian curve, which has none.
bool counts_delta(const LedgerEntry& e) {
  return !rho_from_curve(e) &&
         (e.loss.kind == LossKind::approximate || e.loss.kind == LossKind::zcdp);
}

}  // namespace

// docs/proofs/accounting.md §10: every analysis of the rdp and pld accountants, each dropped
// (for good) at the first entry it cannot count.
void Budget::add_analyses(Sums& out, const LedgerEntry& entry) const {
  const auto& l = entry.loss;
  const double c = entry.count;
  if (out.basic_ok && (l.kind == LossKind::pure || l.kind == LossKind::approximate)) {
    out.epsilon.add_product(c, l.epsilon);
    out.delta.add_product(c, l.delta);
  } else {
    out.basic_ok = false;
  }
  const std::optional<double> rho = entry_rho(entry);
  if (out.zcdp_ok && rho) out.rho.add_product(c, *rho);
  else out.zcdp_ok = false;
  if (counts_delta(entry)) out.approximate_delta.add_product(c, l.delta);
  if (out.rdp_ok) {
    try {
      add_rdp(out, entry);
    } catch (const InvalidArgument&) {
      out.rdp_ok = false;
    }
  }
  if (out.pld_ok && accountant_ == Accountant::pld) {
    try {
      add_pld(out, entry);
    } catch (const InvalidArgument&) {
      out.pld_ok = false;
    }
  }
  if (accountant_ != Accountant::pld) out.pld_ok = false;
}

// docs/proofs/accounting.md §6: each kind's RDP curve (a Gaussian curve as its rho, §10); the
// deltas of approximate entries add (in approximate_delta, add_analyses).
void Budget::add_rdp(Sums& out, const LedgerEntry& entry) const {
  const PrivacyLoss l = rho_from_curve(entry) ? PrivacyLoss::zcdp(*entry_rho(entry)) : entry.loss;
  const std::vector<double> orders = accounting_rdp_orders();
  std::vector<double> curve(orders.size());
  for (std::size_t i = 0; i < orders.size(); ++i) curve[i] = loss_rdp(l, orders[i]);
  if (out.rdp.empty()) out.rdp.assign(orders.size(), 0.0);
  for (std::size_t i = 0; i < orders.size(); ++i) out.rdp[i] += entry.count * curve[i];
}

// docs/proofs/accounting.md §1-§4, §10: the entry's PLD (its mechanism's own pair when it has a
// curve), self-composed count times, composed in.
void Budget::add_pld(Sums& out, const LedgerEntry& entry) const {
  const NoiseCurve& c = entry.curve;
  const PldMechanism m = c.kind == NoiseKind::gaussian  ? PldMechanism::gaussian
                         : c.kind == NoiseKind::laplace ? PldMechanism::laplace
                                                        : PldMechanism::discrete_laplace;
  const PrivacyLossDistribution one =
      c.kind == NoiseKind::none ? PrivacyLossDistribution::from_loss(entry.loss)
                                : PrivacyLossDistribution::from_mechanism(m, c.noise, c.sensitivity);
  const PrivacyLossDistribution many =
      entry.count == 1 ? one : one.self_compose(static_cast<std::uint64_t>(entry.count));
  out.pld = std::make_shared<const PrivacyLossDistribution>(out.pld ? out.pld->compose(many)
                                                                    : many);
  const bool coupled = c.kind == NoiseKind::none ? entry.loss.discrete
                                                 : c.kind == NoiseKind::gaussian && c.lattice;
  out.lattice_coupled = out.lattice_coupled || coupled;
}

namespace {

// docs/proofs/accounting.md §9: a run with lattice-Gaussian entries is, up to a likelihood
// factor (1 +- eta)^(dT) with eta < 2e-137 and dT < 2^200, a post-processing of the continuous
// one the PLD analyses, so it is (eps + 3 dT eta, (1 + 2 dT eta) delta')-DP when the continuous
// run is (eps, delta')-DP. Both slacks are far below these margins: delta' = delta (1 - 2^-52),
// and eps grows by at least 1e-30 (plus one ulp).
double coupled_pld_epsilon(const PrivacyLossDistribution& pld, double delta) {
  const double eps = pld.epsilon_for_delta(delta * (1 - 0x1p-52));
  return std::nextafter(eps + 1e-30, std::numeric_limits<double>::infinity());
}

}  // namespace

std::vector<SpentEpsilon> Budget::analyses_at(const Sums& s, double delta) const {
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<SpentEpsilon> out;
  auto add = [&](Accountant a, bool ok, auto epsilon) {
    out.push_back({ok ? epsilon() : inf, delta, a});
  };
  const double approx_delta = s.approximate_delta.rounded_up();
  if (accountant_ == Accountant::pld) {
    add(Accountant::pld, s.pld_ok, [&] {
      if (!s.pld) return 0.0;
      return s.lattice_coupled ? coupled_pld_epsilon(*s.pld, delta)
                               : s.pld->epsilon_for_delta(delta);
    });
  }
  add(Accountant::rdp, s.rdp_ok, [&] {
    if (approx_delta >= delta) return inf;
    if (s.rdp.empty()) return 0.0;
    return rdp_to_epsilon(accounting_rdp_orders(), s.rdp, subtract_down(delta, approx_delta))
        .epsilon;
  });
  add(Accountant::zcdp, s.zcdp_ok, [&] {
    if (approx_delta > delta || (approx_delta == delta && !s.rho.is_zero())) return inf;
    return s.rho.is_zero() ? 0.0
                           : zcdp_to_epsilon(s.rho.rounded_up(), subtract_down(delta, approx_delta));
  });
  add(Accountant::basic, s.basic_ok,
      [&] { return at_most(s.delta.rounded_up(), delta) ? s.epsilon.rounded_up() : inf; });
  return out;
}

// The smallest epsilon among the analyses (the accountant's own on a tie): each is an upper
// bound at delta, so the smallest is one (proofs §10).
SpentEpsilon Budget::epsilon_at(const Sums& s, double delta) const {
  const std::vector<SpentEpsilon> all = analyses_at(s, delta);
  SpentEpsilon best = all.front();
  for (const auto& a : all)
    if (a.epsilon < best.epsilon) best = a;
  return best;
}

PrivacyLoss Budget::compose(const Sums& s) const {
  switch (accountant_) {
    case Accountant::basic: {
      const double eps = s.epsilon.rounded_up();
      if (s.delta.is_zero()) return PrivacyLoss::pure(eps);
      return PrivacyLoss::approximate(eps, std::min(1.0, s.delta.rounded_up()));
    }
    case Accountant::zcdp:
      return PrivacyLoss::zcdp(s.rho.rounded_up(), std::min(1.0, s.delta.rounded_up()));
    case Accountant::gdp: {
      // sqrt rounded up: the fma residual mu^2 - mu2 is exact in sign.
      const double mu2 = s.mu_squared.rounded_up();
      const double mu = std::sqrt(mu2);
      return PrivacyLoss::gdp(std::fma(mu, mu, -mu2) < 0 ? std::nextafter(mu, INFINITY) : mu);
    }
    case Accountant::rdp:
    case Accountant::pld: {
      PrivacyLoss out;  // not validated: epsilon may be +inf when nothing meets the delta
      out.kind = LossKind::approximate;
      out.epsilon = epsilon_at(s, total_.delta).epsilon;
      out.delta = total_.delta;
      return out;
    }
  }
  return total_;
}

bool Budget::within(const PrivacyLoss& c) const {
  const PrivacyLoss& t = total_;
  switch (accountant_) {
    case Accountant::basic: return at_most(c.epsilon, t.epsilon) && at_most(c.delta, t.delta);
    case Accountant::zcdp:
      if (t.kind == LossKind::zcdp) return at_most(c.rho, t.rho) && at_most(c.delta, t.delta);
      // Approximate target: delta-approximate rho-zCDP is (zcdp_to_epsilon(rho, d), delta + d)-DP.
      if (c.rho == 0) return at_most(c.delta, t.delta);
      if (c.delta >= t.delta) return false;
      return at_most(zcdp_to_epsilon(c.rho, subtract_down(t.delta, c.delta)), t.epsilon);
    case Accountant::gdp:
      if (t.kind == LossKind::gdp) return at_most(c.mu, t.mu);
      return at_most(gdp_to_delta(c.mu, t.epsilon), t.delta);
    case Accountant::rdp:
    case Accountant::pld: return at_most(c.epsilon, t.epsilon);
  }
  return false;
}

bool Budget::fits(const LedgerEntry& entry) const { return within(compose(add(sums_, entry))); }

void Budget::spend(const LedgerEntry& entry) {
  const Sums next = add(sums_, entry);
  if (!within(compose(next))) {
    const std::string analysis =
        takes_epsilon_target(accountant_)
            ? fmt::format(", by the {} analysis", to_string(epsilon_at(next, total_.delta).analysis))
            : "";
    throw BudgetExceeded(fmt::format(
        "budget exceeded: spending {} would exceed the total {} ({} accountant{}: {}); already "
        "spent {}",
        describe_spend(entry), total_.describe(), to_string(accountant_), analysis,
        compose(next).describe(), spent().describe()));
  }
  ledger_.push_back(entry);
  sums_ = next;
}

PrivacyLoss Budget::spent() const { return compose(sums_); }

SpentEpsilon Budget::spent_epsilon(std::optional<double> delta) const {
  const PrivacyLoss s = spent_epsilon_delta(delta);
  if (!takes_epsilon_target(accountant_)) return {s.epsilon, s.delta, accountant_};
  return epsilon_at(sums_, s.delta);
}

std::vector<SpentEpsilon> Budget::analyses(double delta) const {
  require(takes_epsilon_target(accountant_),
          fmt::format("analyses: the {} accountant has one analysis; the rdp and pld accountants "
                      "have several", to_string(accountant_)));
  check_delta_positive(delta, "delta");
  return analyses_at(sums_, delta);
}

PrivacyLoss Budget::spent_epsilon_delta(std::optional<double> delta) const {
  const PrivacyLoss s = spent();
  if (accountant_ == Accountant::basic) {
    require(!delta, fmt::format("delta: the basic accountant reports its summed delta; got delta={} "
                                "(a delta is only accepted by the zcdp and gdp accountants)",
                                delta ? *delta : 0.0));
    return PrivacyLoss::approximate(s.epsilon, s.delta);
  }
  require(delta || total_.kind == LossKind::approximate,
          fmt::format("delta must be given to convert a {} total ({}) to (epsilon, delta)",
                      to_string(total_.kind), total_.describe()));
  const double d = delta ? *delta : total_.delta;
  check_delta_positive(d, "delta");
  if (takes_epsilon_target(accountant_)) {
    PrivacyLoss out;
    out.kind = LossKind::approximate;
    out.epsilon = epsilon_at(sums_, d).epsilon;
    out.delta = d;
    return out;
  }
  if (accountant_ == Accountant::zcdp) {
    require(s.delta <= d, fmt::format("delta must be at least the spent delta {}, got {}", s.delta, d));
    if (s.rho == 0) return PrivacyLoss::approximate(0, d);
    require(s.delta < d,
            fmt::format("delta must exceed the spent delta {} when rho > 0, got {}", s.delta, d));
    return PrivacyLoss::approximate(zcdp_to_epsilon(s.rho, subtract_down(d, s.delta)), d);
  }
  return PrivacyLoss::approximate(gdp_to_epsilon(s.mu, d), d);
}

}  // namespace dpstats
