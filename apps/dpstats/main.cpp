// dpstats <command> [options] [INPUT] — design.md §4. Exit codes: 0 ok, 2 bad input or usage,
// 1 internal failure. Errors are one line on stderr; nothing is printed on stdout then.
#include <iostream>

#include "cli.hpp"
#include "dpstats/error.hpp"

namespace {

int fail(int code, const std::string& message) {
  std::cerr << "dpstats: error: " << message << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dpstats: differentially private statistics that stay accurate on corrupted, "
               "heavy-tailed or streaming data"};
  app.require_subcommand(1);
  dpstats::cli::add_mean_command(app);
  dpstats::cli::add_noise_command(app);
  dpstats::cli::add_account_command(app);
  dpstats::cli::add_demo_command(app);
  dpstats::cli::add_repro_command(app);
  dpstats::cli::add_moments_command(app);
  dpstats::cli::add_median_command(app);
  dpstats::cli::add_fit_command(app);
  dpstats::cli::add_stat_command(app);
  dpstats::cli::add_budget_command(app);
  dpstats::cli::add_bounds_command(app);
  app.add_subcommand("version", "Print the version")->callback([] {
    dpstats::cli::print_json({{"command", "version"}, {"version", DPSTATS_VERSION}});
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    return fail(2, e.what());
  } catch (const dpstats::InvalidArgument& e) {
    return fail(2, e.what());
  } catch (const std::exception& e) {
    return fail(1, std::string("internal failure: ") + e.what());
  }
  return 0;
}
