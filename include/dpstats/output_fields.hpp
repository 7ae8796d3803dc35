// What every output field is (issue 28 item 3): each field the tool prints and the Python Release
// carries is declared once, here, as
//   * public   — an option, a shape, a constant, or a value the neighbouring relation fixes
//                (n under replace-one): the same on neighbouring data sets run with one seed;
//   * released — the output of a charged mechanism;
//   * derived  — post-processing of released and public values (a field whose presence depends
//                on a released value is derived too);
//   * non-private — an exact statistic of the data: only in the outputs of the non-private
//                reference methods (weiszfeld, adam, non-private fits), which say so.
// The emitters (the tool's release_output, the Python Release) keep only declared fields
// (keep_declared); tests/cli/neighbours.py runs every command and method on neighbouring data
// sets and requires every public field to be identical. docs/threat-model.md "What each output
// field is" lists the declaration (`dpstats fields --markdown` prints it).
//
// Paths: keys joined by '.', `[]` after a key for each element of an array of objects (an array
// of numbers or strings is one field), `*` for any one key (e.g. a column name).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dpstats {

enum class FieldKind { public_value, released, derived, non_private };
const char* to_string(FieldKind k);  // "public", "released", "derived", "non-private"

struct OutputField {
  std::string_view path;
  FieldKind kind;
  std::string_view what;  // one line for docs/threat-model.md
};

// A named set of fields: an output scope ("mean", "fit/classify", ...) or a group that scopes
// mount under a prefix (the release's common fields, the scale layer's estimates, ...).
struct OutputScope {
  std::string_view name;
  std::string_view summary;
  std::vector<OutputField> fields;
  std::vector<std::pair<std::string_view, std::string_view>> mounts;  // (prefix, group)
  bool group = false;
};

// Every scope and group.
std::span<const OutputScope> output_scopes();

// The scope of an output object: its "command" (and "/" + "task" for fit); InvalidArgument for
// an output that names none.
std::string output_scope(const nlohmann::json& out);

// The kind of the field at `path` (a leaf path as above, array elements as `[]`) in `scope`.
std::optional<FieldKind> field_kind(std::string_view scope, std::string_view path);

// Removes from `out` every field `scope` does not declare (an object left empty by that stays,
// empty) and returns the removed paths, so a caller can report them (the tool on stderr, Python
// as a warning; the neighbour test fails on them).
std::vector<std::string> keep_declared(nlohmann::json& out, std::string_view scope);
std::vector<std::string> keep_declared(nlohmann::ordered_json& out, std::string_view scope);

// The declaration as JSON ({scope: {path: {"kind", "what"}}}, groups expanded) or as the
// Markdown table of docs/threat-model.md.
nlohmann::ordered_json output_fields_json();
std::string output_fields_markdown();

}  // namespace dpstats
