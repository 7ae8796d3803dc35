// dpstats <command> [options] [INPUT] — design.md §4. Exit codes: 0 ok, 2 bad input or usage,
// 1 internal failure. Errors are one line on stderr; nothing is printed on stdout then. Under
// mpirun/srun (ranks.hpp) rank 0 prints, and an error on any rank ends every rank.
#include <iostream>

#include "cli.hpp"
#include "dpstats/dry_run.hpp"
#include "dpstats/error.hpp"
#include "dry_run_cli.hpp"
#include "ranks.hpp"

int main(int argc, char** argv) {
  try {
    dpstats::cli::start_ranks(&argc, &argv);
  } catch (const dpstats::InvalidArgument& e) {
    return dpstats::cli::finish_ranks(2, e.what());
  }
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
  dpstats::cli::add_fields_command(app);
  app.add_subcommand("version", "Print the version")->callback([] {
    dpstats::cli::print_json({{"command", "version"}, {"version", DPSTATS_VERSION}});
  });
  int code = 0;
  std::string message;
  try {
    if (argc > 1) dpstats::cli::require_distributed(argv[1]);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      if (dpstats::cli::is_root()) app.exit(e);
    } else {
      code = 2;
      message = e.what();
    }
  } catch (const dpstats::DryRunStop&) {  // --dry-run: the release stopped at its charge
    try {
      dpstats::cli::print_json(dpstats::cli::dry_run_output());
    } catch (const std::exception& e) {
      code = 1;
      message = std::string("internal failure: ") + e.what();
    }
  } catch (const dpstats::InvalidArgument& e) {
    code = 2;
    message = e.what();
  } catch (const std::exception& e) {
    code = 1;
    message = std::string("internal failure: ") + e.what();
  }
  return dpstats::cli::finish_ranks(code, message);
}
