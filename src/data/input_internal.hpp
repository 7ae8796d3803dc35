// Pieces shared by the readers (src/data/*.cpp only; not installed).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dpstats/data/reader.hpp"

namespace dpstats::input {

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
// policy to NaN (drop or error), rejects infinities by position; checks n > 0 afterwards.
void finish_dense(Table& table, const std::vector<std::size_t>& selected,
                  const ReadOptions& options, const std::string& name);

// Message for a total over the --max-input-bytes limit.
[[noreturn]] void too_large(const std::string& name, std::uint64_t limit);

}  // namespace dpstats::input
