// dpstats fields [--markdown]: what every output field is (public, released or derived), as
// declared once in dpstats/output_fields.hpp; the emitters print nothing else.
#include <iostream>

#include "cli.hpp"
#include "dpstats/output_fields.hpp"
#include "ranks.hpp"

namespace dpstats::cli {

void add_fields_command(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "fields", "What each output field is: public (the same on neighbouring data), released "
                "(a charged mechanism's output) or derived (post-processing of those)");
  cmd->add_flag("--markdown", *markdown, "the tables of docs/threat-model.md instead of JSON");
  cmd->callback([markdown] {
    if (!is_root()) return;
    if (*markdown) std::cout << output_fields_markdown();
    else std::cout << output_fields_json().dump() << std::endl;
  });
}

}  // namespace dpstats::cli
