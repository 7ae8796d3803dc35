// dpstats.read_table: the tool's input layer (dpstats/data/reader.hpp) for Python, so that files
// are read with the same options, limits and error messages as the tool.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common.hpp"
#include "dpstats/data/reader.hpp"

namespace dpstats::python {

namespace {

// columns: names (str) or 0-based indices (int, Python's convention; 1-based inside).
ReadOptions options(const std::vector<std::variant<std::int64_t, std::string>>& columns,
                    std::optional<bool> header, bool drop_missing, const std::string& array,
                    std::optional<std::uint64_t> max_bytes, std::optional<std::uint64_t> max_line) {
  ReadOptions o;
  for (const auto& c : columns) {
    if (const auto* i = std::get_if<std::int64_t>(&c)) {
      require(*i >= 0, "columns: indices are 0-based and non-negative, got " + std::to_string(*i));
      o.columns.push_back({std::to_string(*i), static_cast<std::size_t>(*i) + 1});
      o.columns.back().name.clear();  // an index never matches a header name
    } else {
      o.columns.push_back({std::get<std::string>(c), 0});
    }
  }
  o.header = !header ? HeaderMode::detect : *header ? HeaderMode::present : HeaderMode::absent;
  o.missing = drop_missing ? MissingPolicy::drop : MissingPolicy::error;
  o.array = array;
  if (max_bytes) o.limits.max_bytes = *max_bytes;
  if (max_line) o.limits.max_line_bytes = *max_line;
  return o;
}

}  // namespace

void bind_input_impl(py::module_& m) {
  m.def(
      "read_table",
      [](const std::string& path, const std::vector<std::variant<std::int64_t, std::string>>& columns,
         std::optional<bool> header, bool drop_missing, const std::string& array,
         std::optional<std::uint64_t> max_bytes, std::optional<std::uint64_t> max_line_bytes) {
        Table t;
        {
          py::gil_scoped_release release;
          t = read_table(path, options(columns, header, drop_missing, array, max_bytes, max_line_bytes));
        }
        // The array keeps the reader's storage alive (no copy): the matrix it filled, or the
        // mapped .npy file (copy-on-write, so writing to the array never writes the file).
        auto* kept = new DataMatrix(std::move(t.values));
        py::capsule owner(kept, [](void* p) { delete static_cast<DataMatrix*>(p); });
        CArray X({kept->rows(), kept->cols()}, const_cast<double*>(kept->data()), owner);
        return py::make_tuple(X, t.header);
      },
      py::arg("path"), py::arg("columns"), py::arg("header"), py::arg("drop_missing"),
      py::arg("array"), py::arg("max_bytes"), py::arg("max_line_bytes"));
  // The selected columns as text (ReadOptions::text): categorical columns for a histogram.
  m.def(
      "read_text",
      [](const std::string& path, const std::vector<std::variant<std::int64_t, std::string>>& columns,
         std::optional<bool> header, bool drop_missing, const std::string& array,
         std::optional<std::uint64_t> max_bytes, std::optional<std::uint64_t> max_line_bytes) {
        ReadOptions o = options(columns, header, drop_missing, array, max_bytes, max_line_bytes);
        o.text = true;
        Table t;
        {
          py::gil_scoped_release release;
          t = read_table(path, o);
        }
        return py::make_tuple(std::move(t.text), t.header);
      },
      py::arg("path"), py::arg("columns"), py::arg("header"), py::arg("drop_missing"),
      py::arg("array"), py::arg("max_bytes"), py::arg("max_line_bytes"));
}

}  // namespace dpstats::python

// Declared in module.cpp at global scope, like the other bind_<topic> functions.
void bind_input(pybind11::module_& m) { dpstats::python::bind_input_impl(m); }
