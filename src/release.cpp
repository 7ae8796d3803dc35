#include "dpstats/release.hpp"

#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/privacy/budget_json.hpp"

namespace dpstats {

LedgerEntry in_output_units(LedgerEntry entry, double output_per_unit) {
  require(std::isfinite(output_per_unit) && output_per_unit > 0,
          fmt::format("output_per_unit must be finite and > 0, got {}", output_per_unit));
  entry.output_per_unit = output_per_unit;
  return entry;
}

const char* to_string(Status s) { return s == Status::ok ? "ok" : "abstained"; }

const char* to_string(NoiseMode m) { return m == NoiseMode::secure ? "secure" : "fast_float"; }

nlohmann::json privacy_json(const PrivacyGuarantee& p) {
  nlohmann::json j = {{"epsilon", p.epsilon},
                      {"delta", p.delta},
                      {"rho", nullptr},
                      {"certified", p.certified},
                      {"neighbouring", to_string(p.neighbouring)},
                      {"unit", to_string(p.unit)}};
  if (p.rho) j["rho"] = *p.rho;
  j["accountant"] = p.accountant ? nlohmann::json(to_string(*p.accountant)) : nlohmann::json();
  return j;
}

nlohmann::json ledger_json(const Ledger& ledger) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : ledger) {
    const nlohmann::json loss = loss_to_json(e.loss);
    nlohmann::json entry = {{"mechanism", e.mechanism},
                            {"purpose", e.purpose},
                            {"sensitivity", e.sensitivity * e.output_per_unit},
                            {"noise_scale", e.noise_scale * e.output_per_unit},
                            {"count", e.count},
                            {"loss", loss}};
    if (e.output_per_unit != 1)  // the encoding's own numbers, for reproducing the calibration
      entry["lattice"] = {{"sensitivity", e.sensitivity},
                          {"noise_scale", e.noise_scale},
                          {"output_per_unit", e.output_per_unit}};
    if (e.curve.kind != NoiseKind::none) entry["curve"] = curve_to_json(e.curve);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace dpstats
