// Errors: misuse and bad input throw InvalidArgument with a message that names the parameter,
// its value and the valid range (design.md §3). Messages never contain private data.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dpstats {

class InvalidArgument : public std::invalid_argument {
 public:
  explicit InvalidArgument(const std::string& what) : std::invalid_argument(what) {}
};

// A spend that would exceed the budget is refused before any noise is drawn.
class BudgetExceeded : public InvalidArgument {
 public:
  explicit BudgetExceeded(const std::string& what) : InvalidArgument(what) {}
};

// Formats a double the way every error message shows it (shortest round-trip form).
std::string format_number(double x);

inline void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgument(message);
}

// The same with a format string: the message is formatted only when the check fails, so checks
// inside per-element loops cost a comparison, not a string.
template <class... Args>
void require(bool ok, fmt::format_string<Args...> format, Args&&... args) {
  if (!ok) throw InvalidArgument(fmt::format(format, std::forward<Args>(args)...));
}

// epsilon > 0 and finite.
void check_epsilon(double epsilon, std::string_view name = "epsilon");
// delta in [0, 1).
void check_delta(double delta, std::string_view name = "delta");
// delta in (0, 1): for mechanisms that need a strictly positive delta.
void check_delta_positive(double delta, std::string_view name = "delta");
// x > 0 and finite.
void check_positive(double x, std::string_view name);
// x finite.
void check_finite(double x, std::string_view name);

}  // namespace dpstats
