// Pieces shared by the readers (src/data/*.cpp only; not installed).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dpstats/data/reader.hpp"

namespace dpstats::input_detail {

// "input file 'NAME', line L, column C" (1-based), the position every reader error starts with.
std::string where(const std::string& name, std::size_t line, std::size_t column);

// The part of a user-given name quoted in a message (the user's own parameter, cut at 40).
std::string quote_param(std::string_view text);

// 0-based indices of the columns `options.columns` selects (every column when it is empty).
// `header` is null when the input has none. Errors name the --columns entry, never data.
std::vector<std::size_t> resolve_columns(const ReadOptions& options,
                                         const std::vector<std::string>* header, std::size_t d,
                                         const std::string& name);

// For a dense table read whole (.npy/.npz): keeps the selected columns, applies the missing
// policy to NaN (drop or error), rejects infinities by position (the first bad cell in row order,
// whatever the thread count); checks n > 0 afterwards. The scan runs on options.threads threads.
// A table with nothing to select or drop is returned as it came (a mapped file stays a view);
// otherwise the kept cells are copied into a new matrix. Under options.release_checks_finite with
// no row to drop (MissingPolicy::error) nothing is scanned: only the columns are selected.
DataMatrix finish_dense(DataMatrix X, const std::vector<std::size_t>& selected,
                        const ReadOptions& options, const std::string& name);

// A regular .npy file of `size` bytes: memory-mapped; float64 C-order data are used in place
// (zero-copy), other dtypes and orders converted on options.threads threads.
Table read_npy_file(const std::string& path, std::uint64_t size, const ReadOptions& options);

// Message for a total over the --max-input-bytes limit.
[[noreturn]] void too_large(const std::string& name, std::uint64_t limit);

}  // namespace dpstats::input_detail
