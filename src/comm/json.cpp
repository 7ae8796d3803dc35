#include "dpstats/comm/json.hpp"

namespace dpstats {

nlohmann::json on_root_json(Communicator& comm, const std::function<nlohmann::json()>& f) {
  if (comm.size() == 1) return f();
  const Bytes b = on_root_bytes(comm, [&] {
    const std::string s = f().dump();
    return Bytes(s.begin(), s.end());
  });
  return nlohmann::json::parse(b.begin(), b.end());
}

}  // namespace dpstats
