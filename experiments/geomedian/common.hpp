// Shared helpers of the geometric-median reproductions.
#pragma once
#include <chrono>
#include <cmath>
#include <vector>

namespace dpstats::repro::geomedian {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Stats {
  double mean = 0, sd = 0, se = 0, min = 0, max = 0;
};
inline Stats stats(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  s.min = s.max = v[0];
  for (double x : v) {
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / static_cast<double>(v.size() - 1)) : 0;
  s.se = s.sd / std::sqrt(static_cast<double>(v.size()));
  return s;
}

}  // namespace dpstats::repro::geomedian
