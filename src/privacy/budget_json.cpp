#include "dpstats/privacy/budget_json.hpp"

#include <fmt/format.h>

#include "dpstats/error.hpp"
#include "dpstats/release.hpp"

namespace dpstats {
namespace {

using nlohmann::json;

const json& field(const json& j, const char* name, const char* where) {
  require(j.is_object() && j.contains(name),
          fmt::format("a budget file's {} must have the field \"{}\"", where, name));
  return j.at(name);
}

double number(const json& j, const char* name, const char* where) {
  const json& v = field(j, name, where);
  require(v.is_number(), fmt::format("a budget file's {}.{} must be a number", where, name));
  return v.get<double>();
}

// The mechanism's own curve (ledger.hpp); absent in files written before it existed: none.
NoiseCurve curve_from_json(const json& j) {
  const json& kind = field(j, "kind", "ledger entry curve");
  require(kind.is_string(), "a budget file's ledger entry curve.kind must be a string");
  NoiseCurve c;
  for (auto k : {NoiseKind::gaussian, NoiseKind::laplace, NoiseKind::discrete_laplace})
    if (kind.get<std::string>() == to_string(k)) c.kind = k;
  require(c.kind != NoiseKind::none, "a budget file's ledger entry curve.kind is unknown");
  c.noise = number(j, "noise", "ledger entry curve");
  c.sensitivity = number(j, "sensitivity", "ledger entry curve");
  const json& lattice = field(j, "lattice", "ledger entry curve");
  require(lattice.is_boolean(), "a budget file's ledger entry curve.lattice must be true or false");
  c.lattice = lattice.get<bool>();
  return c;
}

LedgerEntry entry_from_json(const json& j) {
  LedgerEntry e;
  const json& mech = field(j, "mechanism", "ledger entry");
  const json& purpose = field(j, "purpose", "ledger entry");
  require(mech.is_string() && purpose.is_string(),
          "a budget file's ledger entry must have string mechanism and purpose");
  e.mechanism = mech.get<std::string>();
  e.purpose = purpose.get<std::string>();
  e.loss = loss_from_json(field(j, "loss", "ledger entry"));
  const json& count = field(j, "count", "ledger entry");
  require(count.is_number_integer() && count.get<long long>() >= 1 &&
              count.get<long long>() <= std::numeric_limits<int>::max(),
          "a budget file's ledger entry count must be an integer >= 1");
  e.count = count.get<int>();
  if (j.contains("lattice")) {  // the encoding's own numbers (ledger_json)
    const json& l = j.at("lattice");
    e.sensitivity = number(l, "sensitivity", "ledger entry lattice");
    e.noise_scale = number(l, "noise_scale", "ledger entry lattice");
    e = in_output_units(std::move(e), number(l, "output_per_unit", "ledger entry lattice"));
  } else {
    e.sensitivity = number(j, "sensitivity", "ledger entry");
    e.noise_scale = number(j, "noise_scale", "ledger entry");
  }
  if (j.contains("curve")) e.curve = curve_from_json(j.at("curve"));
  return e;
}

// The lattice flag of a gdp or subsampled-Gaussian loss (privacy_loss.hpp); absent = false.
bool discrete_from_json(const json& j) {
  if (!j.contains("discrete")) return false;
  require(j.at("discrete").is_boolean(), "a budget file's loss.discrete must be true or false");
  return j.at("discrete").get<bool>();
}

// The sampling scheme and neighbouring relation are stored by name (privacy_loss.hpp).
PrivacyLoss subsampled_from_json(const json& j) {
  const auto text = [&](const char* name) {
    const json& v = field(j, name, "loss");
    require(v.is_string(), fmt::format("a budget file's loss.{} must be a string", name));
    return v.get<std::string>();
  };
  const std::string sampling = text("sampling"), relation = text("neighbouring");
  Sampling s = Sampling::poisson;
  if (sampling == to_string(Sampling::without_replacement)) s = Sampling::without_replacement;
  else require(sampling == to_string(Sampling::poisson), "a budget file's loss.sampling is unknown");
  Neighbouring n = Neighbouring::add_remove;
  if (relation == to_string(Neighbouring::replace_one)) n = Neighbouring::replace_one;
  else require(relation == to_string(Neighbouring::add_remove),
               "a budget file's loss.neighbouring is unknown");
  PrivacyLoss loss = PrivacyLoss::subsampled_gaussian(number(j, "sampling_rate", "loss"),
                                                      number(j, "noise_multiplier", "loss"), s, n);
  loss.discrete = discrete_from_json(j);
  return loss;
}

}  // namespace

Accountant parse_accountant(std::string_view name) {
  for (auto a : {Accountant::basic, Accountant::zcdp, Accountant::gdp, Accountant::rdp,
                 Accountant::pld})
    if (name == to_string(a)) return a;
  throw InvalidArgument(fmt::format(
      "accountant must be one of 'basic', 'zcdp', 'gdp', 'rdp', 'pld', got '{}'", name));
}

json curve_to_json(const NoiseCurve& c) {
  return {{"kind", to_string(c.kind)},
          {"noise", c.noise},
          {"sensitivity", c.sensitivity},
          {"lattice", c.lattice}};
}

json loss_to_json(const PrivacyLoss& loss) {
  json j = {{"kind", to_string(loss.kind)}};
  switch (loss.kind) {
    case LossKind::pure: j["epsilon"] = loss.epsilon; break;
    case LossKind::approximate:
      j["epsilon"] = loss.epsilon;
      j["delta"] = loss.delta;
      break;
    case LossKind::zcdp:
      j["rho"] = loss.rho;
      if (loss.delta > 0) j["delta"] = loss.delta;
      break;
    case LossKind::gdp:
      j["mu"] = loss.mu;
      if (loss.discrete) j["discrete"] = true;
      break;
    case LossKind::subsampled_gaussian:
      j["sampling_rate"] = loss.sampling_rate;
      j["noise_multiplier"] = loss.noise_multiplier;
      j["sampling"] = to_string(loss.sampling);
      j["neighbouring"] = to_string(loss.neighbouring);
      if (loss.discrete) j["discrete"] = true;
      break;
  }
  return j;
}

PrivacyLoss loss_from_json(const json& j) {
  const json& kind = field(j, "kind", "loss");
  require(kind.is_string(), "a budget file's loss.kind must be a string");
  const auto k = kind.get<std::string>();
  auto opt = [&](const char* name) { return j.contains(name) ? number(j, name, "loss") : 0.0; };
  if (k == "pure") return PrivacyLoss::pure(number(j, "epsilon", "loss"));
  if (k == "approximate")
    return PrivacyLoss::approximate(number(j, "epsilon", "loss"), number(j, "delta", "loss"));
  if (k == "zcdp") return PrivacyLoss::zcdp(number(j, "rho", "loss"), opt("delta"));
  if (k == "gdp") {
    PrivacyLoss loss = PrivacyLoss::gdp(number(j, "mu", "loss"));
    loss.discrete = discrete_from_json(j);
    return loss;
  }
  if (k == to_string(LossKind::subsampled_gaussian)) return subsampled_from_json(j);
  throw InvalidArgument(fmt::format("a budget file's loss.kind must be 'pure', 'approximate', "
                                    "'zcdp', 'gdp' or '{}', got '{}'",
                                    to_string(LossKind::subsampled_gaussian), k));
}

json budget_to_json(const Budget& budget) {
  json j = {{"format", "dpstats-budget"},
            {"version", 1},
            {"accountant", to_string(budget.accountant())},
            {"total", loss_to_json(budget.total())},
            {"ledger", ledger_json(budget.ledger())}};
  const bool states_epsilon =
      budget.total().kind == LossKind::pure || budget.total().kind == LossKind::approximate;
  if (!budget.ledger().empty() && states_epsilon) {
    const SpentEpsilon s = budget.spent_epsilon();
    j["spent"] = {{"epsilon", s.epsilon}, {"delta", s.delta}, {"analysis", to_string(s.analysis)}};
  }
  return j;
}

Budget budget_from_json(const json& j) {
  const json& format = field(j, "format", "top level");
  require(format == "dpstats-budget",
          "not a dpstats budget file (its \"format\" is not \"dpstats-budget\")");
  require(field(j, "version", "top level") == 1, "a budget file's version must be 1");
  const json& acc = field(j, "accountant", "top level");
  require(acc.is_string(), "a budget file's accountant must be a string");
  Budget b(loss_from_json(field(j, "total", "top level")), parse_accountant(acc.get<std::string>()));
  const json& ledger = field(j, "ledger", "top level");
  require(ledger.is_array(), "a budget file's ledger must be an array");
  for (const auto& e : ledger) b.spend(entry_from_json(e));  // replayed: spent is recomputed
  return b;
}

}  // namespace dpstats
