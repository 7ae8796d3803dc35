#include "dpstats/release.hpp"

namespace dpstats {

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
    nlohmann::json loss = {{"kind", to_string(e.loss.kind)}};
    switch (e.loss.kind) {
      case LossKind::pure: loss["epsilon"] = e.loss.epsilon; break;
      case LossKind::approximate:
        loss["epsilon"] = e.loss.epsilon;
        loss["delta"] = e.loss.delta;
        break;
      case LossKind::zcdp:
        loss["rho"] = e.loss.rho;
        if (e.loss.delta > 0) loss["delta"] = e.loss.delta;
        break;
      case LossKind::gdp: loss["mu"] = e.loss.mu; break;
      case LossKind::subsampled_gaussian:
        loss["sampling_rate"] = e.loss.sampling_rate;
        loss["noise_multiplier"] = e.loss.noise_multiplier;
        loss["sampling"] = to_string(e.loss.sampling);
        loss["neighbouring"] = to_string(e.loss.neighbouring);
        if (e.loss.discrete) loss["discrete"] = true;
        break;
    }
    out.push_back({{"mechanism", e.mechanism},
                   {"purpose", e.purpose},
                   {"sensitivity", e.sensitivity},
                   {"noise_scale", e.noise_scale},
                   {"count", e.count},
                   {"loss", loss}});
  }
  return out;
}

}  // namespace dpstats
