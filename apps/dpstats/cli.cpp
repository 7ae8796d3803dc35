#include "cli.hpp"

#include <unistd.h>

#include <charconv>
#include <iostream>

namespace dpstats::cli {

void add_seed_option(CLI::App* cmd, std::optional<std::uint64_t>& seed) {
  cmd->add_option_function<std::string>(
      "--seed",
      [&seed](const std::string& text) {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
          throw CLI::ValidationError("--seed", "must be an integer in [0, 2^64), got '" + text + "'");
        }
        seed = value;
      },
      "deterministic noise for experiments (the release says \"seeded\": true; not secure)");
}

std::unique_ptr<Rng> make_rng(const std::optional<std::uint64_t>& seed) {
  if (seed) return std::make_unique<SeededRng>(*seed);
  return std::make_unique<SecureRng>();
}

void print_json(const nlohmann::ordered_json& j) {
  std::cout << (isatty(STDOUT_FILENO) ? j.dump(2) : j.dump()) << std::endl;
}

nlohmann::ordered_json release_output(nlohmann::ordered_json head, const nlohmann::json& fields,
                                      const nlohmann::ordered_json& extra) {
  auto copy = [&](const char* key) {
    head[key] = nlohmann::ordered_json::parse(fields.at(key).dump());
  };
  for (const char* key : {"status", "privacy", "seeded", "noise"}) copy(key);
  if (extra.is_object()) head.update(extra);
  copy("diagnostics");
  copy("ledger");
  return head;
}

}  // namespace dpstats::cli
