// The median command's surface: its methods as users name them (the private pipelines,
// MedianMethod, and the non-private Weiszfeld solver, in the order of median_methods(); the tool
// and Python dispatch on this enum, never on a string) and its declared options as one request.
#pragma once
#include <array>
#include <concepts>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "dpstats/median/geometric_median.hpp"
#include "dpstats/names.hpp"
#include "dpstats/profile.hpp"

namespace dpstats {

enum class MedianCommand { fast, hsu24, weiszfeld };

template <>
struct EnumNames<MedianCommand> {
  static constexpr std::string_view parameter = "method for median";
  static constexpr std::array<std::pair<MedianCommand, std::string_view>, 3> names = {
      {{MedianCommand::fast, "fast"},
       {MedianCommand::hsu24, "hsu24"},
       {MedianCommand::weiszfeld, "weiszfeld"}}};
};

// The private pipeline `m` runs; absent for weiszfeld (the non-private solver).
inline std::optional<MedianMethod> private_method(MedianCommand m) {
  switch (m) {
    case MedianCommand::fast: return MedianMethod::fast;
    case MedianCommand::hsu24: return MedianMethod::hsu24;
    case MedianCommand::weiszfeld: return std::nullopt;
  }
  return std::nullopt;
}

// The median's declared options as a user gives them (absent: GeometricMedianOptions' default).
// Listed once in visit_fields (dpstats/option_fields.hpp): the tool's flags, the Python keywords,
// the options a request sets and the copy into GeometricMedianOptions walk it; which method
// reads which is each declaration's `methods` (src/options.cpp).
struct MedianRequest {
  std::optional<Profile> profile;     // shared (--profile); fast only
  std::optional<double> scale_share;  // shared (--scale-share)
  std::optional<PaperCenter> center;
  std::optional<double> domain_radius, min_radius, bound_check_share;
};

template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, MedianRequest>
void visit_fields(R&& r, V&& v) {
  v("profile", r.profile);
  v("scale_share", r.scale_share);
  v("center", r.center);
  v("domain_radius", r.domain_radius);
  v("min_radius", r.min_radius);
  v("bound_check_share", r.bound_check_share);
}

// The options `method` runs with for `request` (weiszfeld: the defaults, which it does not
// read). An option the method does not read -- one the request sets, or one of `shared`, the
// shared options the caller set ("epsilon", "delta", "seed", "budget") -- is the registry's
// InvalidArgument naming it and the methods that read it.
GeometricMedianOptions median_options(MedianCommand method, const MedianRequest& request,
                                      std::span<const std::string> shared);

}  // namespace dpstats
