// The noise actually drawn, as a test sees it: every mechanism reports each release it makes to
// the DrawLog in force (there is none outside tests; a report then costs one atomic load). The
// tests recount a release's draws against its ledger: for every (mechanism, noise scale), the
// drawn entries' counts must equal the draws (tests/unit/test_draw_recount.cpp).
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace dpstats {

// Draws of one mechanism at one noise scale, in the ledger's counting: one draw is one release
// of the mechanism's whole dimension (d coordinates of a d-dimensional Gaussian are one draw).
struct DrawCount {
  std::string mechanism;  // the name its LedgerEntry carries
  double noise_scale = 0;  // as in its LedgerEntry
  double draws = 0;
};

class DrawLog {
 public:
  DrawLog();  // installs this log (one at a time: std::logic_error otherwise)
  ~DrawLog();
  DrawLog(const DrawLog&) = delete;
  DrawLog& operator=(const DrawLog&) = delete;

  std::vector<DrawCount> counts() const;  // by (mechanism, noise_scale)
  void clear();

  // Called by the mechanisms: `values` coordinates of a release of `dimension` coordinates.
  static void note(const char* mechanism, double noise_scale, std::size_t values = 1,
                   std::size_t dimension = 1);

  // Held while a mechanism draws through others it is built on (AboveThreshold's Laplace
  // noises): the inner draws are the outer mechanism's, reported once by it.
  class Inner {
   public:
    Inner();
    ~Inner();
    Inner(const Inner&) = delete;
    Inner& operator=(const Inner&) = delete;
  };

 private:
  void add(const char* mechanism, double noise_scale, std::size_t values, std::size_t dimension);
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, double, std::size_t>, std::size_t> values_;
};

}  // namespace dpstats
