// TestHooks: the one switch that tests may flip on any algorithm. Every algorithm's trace type
// (the non-private internals it exposes to tests: kept sets, true scores) derives from it. A
// trace is never reachable from the tool or Python, and a release made with `noiseless` set is
// sealed `certified: false`.
#pragma once

namespace dpstats {

struct TestHooks {
  bool noiseless = false;  // every noise draw is switched off
};

}  // namespace dpstats
