// Floating-point reductions over rows whose result does not depend on the thread count: the rows
// are cut into chunks of a fixed size (a cut fixed by the row count alone), each chunk is
// accumulated on its own, and the chunks are merged in chunk order. Used where the sum cannot be
// an exact lattice sum (solver passes, per-example gradient sums before the noise).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "dpstats/parallel.hpp"

namespace dpstats {

// Rows [0, count) in chunks of `chunk` rows: fill(acc, begin, end) accumulates one chunk into a
// fresh acc = make(); merge(acc) adds it to the caller's total, in chunk order. `threads` chunks
// run at a time (so at most `threads` accumulators live at once). A count of at most `chunk` rows
// is one chunk: the same arithmetic as a serial loop.
template <class Make, class Fill, class Merge>
void ordered_chunks(std::int64_t count, std::int64_t chunk, int threads, Make&& make, Fill&& fill,
                    Merge&& merge) {
  const std::int64_t chunks = (count + chunk - 1) / chunk;
  const std::int64_t wave = std::max(1, threads);
  for (std::int64_t c0 = 0; c0 < chunks; c0 += wave) {
    const std::int64_t k = std::min(wave, chunks - c0);
    std::vector<decltype(make())> acc;
    acc.reserve(static_cast<std::size_t>(k));
    for (std::int64_t j = 0; j < k; ++j) acc.push_back(make());
    parallel_tasks(static_cast<std::size_t>(k), threads, [&](std::size_t j) {
      const std::int64_t b = (c0 + static_cast<std::int64_t>(j)) * chunk;
      fill(acc[j], b, std::min(count, b + chunk));
    });
    for (auto& a : acc) merge(a);
  }
}

}  // namespace dpstats
