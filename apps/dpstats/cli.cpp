#include "cli.hpp"

#include <unistd.h>

#include <iostream>

namespace dpstats::cli {

std::unique_ptr<Rng> make_rng(const std::optional<std::uint64_t>& seed) {
  if (seed) return std::make_unique<SeededRng>(*seed);
  return std::make_unique<SecureRng>();
}

void print_json(const nlohmann::json& j) {
  std::cout << (isatty(STDOUT_FILENO) ? j.dump(2) : j.dump()) << std::endl;
}

}  // namespace dpstats::cli
