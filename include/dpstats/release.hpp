// Release<T>: what every private algorithm returns (design.md §3). Only private outputs and
// public diagnostics enter a Release; non-private internals are reachable from tests only.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "dpstats/privacy/budget.hpp"
#include "dpstats/privacy/ledger.hpp"
#include "dpstats/privacy/privacy_loss.hpp"

namespace dpstats {

enum class Status { ok, abstained };
const char* to_string(Status s);

// How the noise of a release was drawn.
enum class NoiseMode {
  secure,      // exact discrete samplers on a power-of-two lattice (default)
  fast_float,  // floating-point samplers: research only, explicit opt-in, certified = false
};
const char* to_string(NoiseMode m);

// The privacy statement printed with every output.
struct PrivacyGuarantee {
  double epsilon = 0;
  double delta = 0;
  std::optional<double> rho;  // set when the run was accounted in zCDP
  bool certified = true;      // true only when a proof covers exactly what ran
  Neighbouring neighbouring = Neighbouring::replace_one;
  PrivacyUnit unit = PrivacyUnit::record;
  std::optional<Accountant> accountant;  // how the ledger was counted (none: not private)
};

template <class T>
struct Release {
  T estimate{};
  PrivacyGuarantee privacy;
  Status status = Status::ok;
  bool seeded = false;  // made with SeededRng: reproducible, not secure
  NoiseMode noise = NoiseMode::secure;
  Ledger ledger;
  nlohmann::json diagnostics = nlohmann::json::object();  // public values only
};

// The JSON fields shared by every release: privacy, status, seeded, noise, ledger, diagnostics.
nlohmann::json privacy_json(const PrivacyGuarantee& p);
nlohmann::json ledger_json(const Ledger& ledger);
template <class T>
nlohmann::json release_fields_json(const Release<T>& r) {
  return {{"status", to_string(r.status)},
          {"privacy", privacy_json(r.privacy)},
          {"seeded", r.seeded},
          {"noise", to_string(r.noise)},
          {"diagnostics", r.diagnostics},
          {"ledger", ledger_json(r.ledger)}};
}

}  // namespace dpstats
