// Shared pieces of the command-line tool: it stays thin — parse, call the library, print JSON.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "dpstats/random/rng.hpp"

namespace dpstats::cli {

// SeededRng when --seed was given (the release then says "seeded": true), SecureRng otherwise.
std::unique_ptr<Rng> make_rng(const std::optional<std::uint64_t>& seed);

// Prints one JSON object on stdout: indented on a terminal, one line otherwise.
void print_json(const nlohmann::json& j);

// Each command registers itself on the app; the callback runs after a successful parse.
void add_mean_command(CLI::App& app);
void add_noise_command(CLI::App& app);
void add_account_command(CLI::App& app);
void add_demo_command(CLI::App& app);

}  // namespace dpstats::cli
