// A JSON value computed on rank 0 only and given to every rank (comm/communicator.hpp, noise
// once): for diagnostics that hold a noisy value (a private count, a clipped fraction), so that
// every rank's release is the same. Doubles round-trip exactly (17 significant digits).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>

#include "dpstats/comm/communicator.hpp"

namespace dpstats {

// One process: f() itself (the single-process path unchanged).
nlohmann::json on_root_json(Communicator& comm, const std::function<nlohmann::json()>& f);

}  // namespace dpstats
