#include "dpstats/mechanisms/draw_log.hpp"

#include <atomic>
#include <stdexcept>

namespace dpstats {
namespace {

std::atomic<DrawLog*> g_log{nullptr};
thread_local int t_inner = 0;

}  // namespace

DrawLog::DrawLog() {
  DrawLog* none = nullptr;
  if (!g_log.compare_exchange_strong(none, this))
    throw std::logic_error("DrawLog: another log is installed");
}

DrawLog::~DrawLog() { g_log.store(nullptr); }

void DrawLog::note(const char* mechanism, double noise_scale, std::size_t values,
                   std::size_t dimension) {
  DrawLog* log = g_log.load(std::memory_order_relaxed);
  if (log == nullptr || t_inner > 0) return;
  log->add(mechanism, noise_scale, values, dimension);
}

void DrawLog::add(const char* mechanism, double noise_scale, std::size_t values,
                  std::size_t dimension) {
  const std::lock_guard<std::mutex> lock(mutex_);
  values_[{mechanism, noise_scale, dimension}] += values;
}

std::vector<DrawCount> DrawLog::counts() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::pair<std::string, double>, double> by_scale;
  for (const auto& [key, values] : values_) {
    const auto& [mechanism, scale, dimension] = key;
    by_scale[{mechanism, scale}] += static_cast<double>(values) / static_cast<double>(dimension);
  }
  std::vector<DrawCount> out;
  for (const auto& [key, draws] : by_scale) out.push_back({key.first, key.second, draws});
  return out;
}

void DrawLog::clear() {
  const std::lock_guard<std::mutex> lock(mutex_);
  values_.clear();
}

DrawLog::Inner::Inner() { ++t_inner; }
DrawLog::Inner::~Inner() { --t_inner; }

}  // namespace dpstats
