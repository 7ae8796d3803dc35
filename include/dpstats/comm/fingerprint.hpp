// Fingerprint: the text every rank compares with rank 0's before the first collective
// (check_agreement, comm/communicator.hpp), built from an options struct's one field list. Each
// options struct that runs over ranks has `template <class V> void visit_fields(const XOptions&,
// V&)` beside it, calling v("name", o.field) for every field that shapes the release (the
// declared option's name where the field is a declared option); the fingerprint and the unit
// test that ties the declared options to the check (tests/unit/test_fingerprints.cpp) both walk it.
#pragma once
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <type_traits>

namespace dpstats {

class Fingerprint {
 public:
  explicit Fingerprint(std::string_view what) : text_(what) {}

  // Appends " name=value": doubles exactly (hex), enums as their number, an absent optional as
  // "-", a string with its length, a sequence element by element, a struct with visit_fields
  // in braces.
  template <class T>
  void operator()(std::string_view name, const T& value) {
    text_ += ' ';
    text_ += name;
    text_ += '=';
    append(value);
  }

  const std::string& text() const { return text_; }

 private:
  template <class T>
  void append(const T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      text_ += x ? '1' : '0';
    } else if constexpr (std::is_enum_v<T>) {
      text_ += fmt::format("{}", static_cast<long long>(x));
    } else if constexpr (std::is_floating_point_v<T>) {
      text_ += fmt::format("{:a}", x);
    } else if constexpr (std::is_integral_v<T>) {
      text_ += fmt::format("{}", x);
    } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
      const std::string_view s = x;
      text_ += fmt::format("{}:{}", s.size(), s);
    } else if constexpr (requires { x.has_value(); *x; }) {  // std::optional
      if (x) append(*x);
      else text_ += '-';
    } else if constexpr (requires(Fingerprint& f) { visit_fields(x, f); }) {
      text_ += '{';
      visit_fields(x, *this);
      text_ += " }";
    } else {
      text_ += '[';
      for (const auto& e : x) {
        append(e);
        text_ += ',';
      }
      text_ += ']';
    }
  }

  std::string text_;
};

// "what name=value ... d=<d>": the options' fields and the column count.
template <class Options>
std::string fingerprint_of(std::string_view what, const Options& o, long long d) {
  Fingerprint f(what);
  visit_fields(o, f);
  f("d", d);
  return f.text();
}

}  // namespace dpstats
