// Noise once for a computation that is not a sum over shards (issue 18): a stream whose steps are
// single rows, released one step at a time. Every rank holds the whole input; rank 0 runs the
// computation with its generator and records every word drawn (and the words of every generator
// split from it, numbered in the order they are split); the other ranks run the same computation
// on the same input, reading rank 0's words instead of drawing. So every rank returns rank 0's
// release, and only rank 0 draws. The computation must split generators in a fixed order on
// the calling thread (apply_each's chunk generators do); a replay that runs out of words, or
// leaves some unread, throws: the ranks did not follow one path.
#pragma once
#include <optional>
#include <type_traits>
#include <utility>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/random/rng.hpp"

namespace dpstats {

namespace replay_detail {
// Runs f with a recording wrapper of `rng` and returns the tape (the seeded flag, then every
// generator's words).
Bytes record(Rng& rng, const std::function<void(Rng&)>& f);
// Runs f with a generator that replays `tape`; InvalidArgument when f reads past a generator's
// words or leaves some unread.
void replay(const Bytes& tape, const std::function<void(Rng&)>& f);
}  // namespace replay_detail

// f(Rng&) on every rank with rank 0's draws (one process: f(rng) itself). When f throws on rank
// 0, every rank throws (on_root_bytes) and no rank runs it again.
template <class F>
auto replay_on_ranks(Communicator& comm, Rng& rng, F&& f) -> std::invoke_result_t<F, Rng&> {
  using R = std::invoke_result_t<F, Rng&>;
  if (comm.size() == 1) return f(rng);
  std::optional<R> out;
  const Bytes tape = on_root_bytes(comm, [&] {
    return replay_detail::record(rng, [&](Rng& r) { out.emplace(f(r)); });
  });
  if (comm.rank() != 0) replay_detail::replay(tape, [&](Rng& r) { out.emplace(f(r)); });
  return std::move(*out);
}

}  // namespace dpstats
