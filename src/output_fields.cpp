// Matching an output against the declaration of its fields; see include/dpstats/output_fields.hpp.
// The declaration itself is in output_fields_table.cpp.
#include "dpstats/output_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "dpstats/error.hpp"

namespace dpstats {

const char* to_string(FieldKind k) {
  switch (k) {
    case FieldKind::public_value: return "public";
    case FieldKind::released: return "released";
    case FieldKind::derived: return "derived";
    case FieldKind::non_private: return "non-private";
  }
  return "?";
}

namespace {

const OutputScope* find_scope(std::string_view name) {
  for (const OutputScope& s : output_scopes())
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    out.push_back(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

// Whether the pattern's keys match the path's keys ('*' matches one key, not an array's "k[]").
bool matches(std::string_view pattern, std::string_view path) {
  const auto p = split(pattern), q = split(path);
  if (p.size() != q.size()) return false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == q[i]) continue;
    if (p[i] == "*" && !q[i].ends_with("[]")) continue;
    return false;
  }
  return true;
}

// Every (path pattern, field) of a scope, its groups' fields under their prefixes.
void expand(const OutputScope& scope, const std::string& prefix,
            std::vector<std::pair<std::string, const OutputField*>>& out, int depth) {
  require(depth < 8, fmt::format("output fields: the groups of '{}' nest too deep", scope.name));
  for (const OutputField& f : scope.fields)
    out.emplace_back(prefix.empty() ? std::string(f.path) : prefix + "." + std::string(f.path),
                     &f);
  for (const auto& [at, group] : scope.mounts) {
    const OutputScope* g = find_scope(group);
    require(g != nullptr && g->group, fmt::format("output fields: '{}' mounts an unknown group "
                                                  "'{}'", scope.name, group));
    const std::string below = at.empty()       ? prefix
                              : prefix.empty() ? std::string(at)
                                               : prefix + "." + std::string(at);
    expand(*g, below, out, depth + 1);
  }
}

const std::vector<std::pair<std::string, const OutputField*>>& expanded(std::string_view name) {
  static const auto table = [] {
    std::map<std::string, std::vector<std::pair<std::string, const OutputField*>>, std::less<>> t;
    for (const OutputScope& s : output_scopes()) expand(s, "", t[std::string(s.name)], 0);
    return t;
  }();
  static const std::vector<std::pair<std::string, const OutputField*>> none;
  const auto it = table.find(name);
  return it == table.end() ? none : it->second;  // an unknown scope declares nothing
}

// A key as one path component: '.' (and '%') escaped, so a category named "3.5" stays one key.
std::string component(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '.') out += "%2E";
    else if (c == '%') out += "%25";
    else out += c;
  }
  return out;
}

// Removes undeclared leaves below `v` (at `path`); returns whether `v` itself is declared as a
// whole (a leaf that matched). `removed` collects what was dropped.
template <class J>
bool prune(J& v, const std::string& path, std::string_view scope,
           std::vector<std::string>& removed) {
  auto child = [&](const std::string& key) {
    return path.empty() ? component(key) : path + "." + component(key);
  };
  if (v.is_object() && !v.empty()) {
    std::vector<std::string> drop;
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!prune(it.value(), child(it.key()), scope, removed)) drop.push_back(it.key());
    for (const std::string& k : drop) v.erase(k);
    return true;  // an object stays (perhaps empty)
  }
  const bool objects = v.is_array() && std::any_of(v.begin(), v.end(), [](const J& e) {
                         return e.is_object();
                       });
  if (objects) {
    J kept = J::array();
    for (J& e : v)
      if (prune(e, path + "[]", scope, removed)) kept.push_back(std::move(e));
    v = std::move(kept);
    return true;
  }
  if (field_kind(scope, path)) return true;
  if (std::find(removed.begin(), removed.end(), path) == removed.end()) removed.push_back(path);
  return false;
}

}  // namespace

std::string output_scope(const nlohmann::json& out) {
  require(out.is_object() && out.contains("command") && out["command"].is_string(),
          "output fields: an output names no command");
  std::string s = out["command"].get<std::string>();
  if (s == "fit" && out.contains("task") && out["task"].is_string())
    s += "/" + out["task"].get<std::string>();
  return s;
}

std::optional<FieldKind> field_kind(std::string_view scope, std::string_view path) {
  for (const auto& [pattern, f] : expanded(scope))
    if (matches(pattern, path)) return f->kind;
  return std::nullopt;
}

std::vector<std::string> keep_declared(nlohmann::json& out, std::string_view scope) {
  std::vector<std::string> removed;
  prune(out, "", scope, removed);
  return removed;
}

std::vector<std::string> keep_declared(nlohmann::ordered_json& out, std::string_view scope) {
  std::vector<std::string> removed;
  prune(out, "", scope, removed);
  return removed;
}

nlohmann::ordered_json output_fields_json() {
  nlohmann::ordered_json all = nlohmann::ordered_json::object();
  for (const OutputScope& s : output_scopes()) {
    if (s.group) continue;
    nlohmann::ordered_json fields = nlohmann::ordered_json::object();
    for (const auto& [pattern, f] : expanded(s.name))  // the first declaration of a path wins
      if (!fields.contains(pattern))
        fields[pattern] = {{"kind", to_string(f->kind)}, {"what", f->what}};
    all[std::string(s.name)] = {{"summary", s.summary}, {"fields", std::move(fields)}};
  }
  return all;
}

namespace {
std::string cell(std::string_view text) {  // a Markdown table cell: '|' escaped
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string output_fields_markdown() {
  std::string md;
  for (const OutputScope& s : output_scopes()) {
    md += fmt::format("\n#### {} `{}`\n\n{}\n\n| field | kind | what |\n|---|---|---|\n",
                      s.group ? "group" : "output", s.name, s.summary);
    for (const OutputField& f : s.fields)
      md += fmt::format("| `{}` | {} | {} |\n", f.path, to_string(f.kind), cell(f.what));
    for (const auto& [at, group] : s.mounts)
      md += fmt::format("| `{}` | group | the fields of group `{}` |\n", at, group);
  }
  return md;
}

}  // namespace dpstats
