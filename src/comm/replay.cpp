#include "dpstats/comm/replay.hpp"

#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "dpstats/error.hpp"

namespace dpstats::replay_detail {
namespace {

// Every generator's words, by number (0: the caller's; then in the order they were split). A
// deque: splitting (on the calling thread) never moves the words another thread is appending to.
using Tape = std::deque<std::vector<std::uint64_t>>;

class Recording final : public Rng {
 public:
  Recording(Rng& inner, Tape& tape) : inner_(inner), tape_(tape), own_(tape.emplace_back()) {}
  std::uint64_t next_u64() override { return own_.emplace_back(inner_.next_u64()); }
  void fill(std::span<std::uint64_t> out) override {
    inner_.fill(out);
    own_.insert(own_.end(), out.begin(), out.end());
  }
  bool seeded() const noexcept override { return inner_.seeded(); }
  std::unique_ptr<Rng> split() override {
    auto child = inner_.split();
    if (!child) return nullptr;
    children_.push_back(std::move(child));
    return std::make_unique<Recording>(*children_.back(), tape_);
  }

 private:
  Rng& inner_;
  Tape& tape_;
  std::vector<std::uint64_t>& own_;
  std::vector<std::unique_ptr<Rng>> children_;
};

struct ReplayTape {
  bool seeded = false;
  std::vector<std::vector<std::uint64_t>> words;
  std::vector<std::size_t> read;  // words read per generator
  std::size_t handed_out = 0;     // generators given out so far
};

class Replaying final : public Rng {
 public:
  explicit Replaying(ReplayTape& tape) : tape_(tape), id_(claim(tape)) {}
  std::uint64_t next_u64() override {
    std::size_t& at = tape_.read[id_];
    require(at < tape_.words[id_].size(),
            "replay: this rank drew more random words than rank 0 (the ranks' inputs differ)");
    return tape_.words[id_][at++];
  }
  bool seeded() const noexcept override { return tape_.seeded; }
  std::unique_ptr<Rng> split() override {
    if (tape_.handed_out >= tape_.words.size()) return nullptr;  // rank 0's could not split
    return std::make_unique<Replaying>(tape_);
  }

 private:
  static std::size_t claim(ReplayTape& tape) {
    require(tape.handed_out < tape.words.size(),
            "replay: this rank split more generators than rank 0 (the ranks' inputs differ)");
    return tape.handed_out++;
  }
  ReplayTape& tape_;
  std::size_t id_;
};

void put(Bytes& b, std::uint64_t w) {
  const auto at = b.size();
  b.resize(at + sizeof w);
  std::memcpy(b.data() + at, &w, sizeof w);
}
std::uint64_t take(const Bytes& b, std::size_t& at) {
  require(at + 8 <= b.size(), "replay: truncated tape");
  std::uint64_t w = 0;
  std::memcpy(&w, b.data() + at, sizeof w);
  at += sizeof w;
  return w;
}

}  // namespace

Bytes record(Rng& rng, const std::function<void(Rng&)>& f) {
  Tape tape;
  {
    Recording root(rng, tape);
    f(root);
  }
  Bytes out;
  put(out, rng.seeded() ? 1 : 0);
  put(out, tape.size());
  for (const auto& words : tape) {
    put(out, words.size());
    for (auto w : words) put(out, w);
  }
  return out;
}

void replay(const Bytes& bytes, const std::function<void(Rng&)>& f) {
  ReplayTape tape;
  std::size_t at = 0;
  tape.seeded = take(bytes, at) != 0;
  tape.words.resize(take(bytes, at));
  for (auto& words : tape.words) {
    words.resize(take(bytes, at));
    for (auto& w : words) w = take(bytes, at);
  }
  tape.read.assign(tape.words.size(), 0);
  {
    Replaying root(tape);
    f(root);
  }
  for (std::size_t k = 0; k < tape.words.size(); ++k)
    require(tape.read[k] == tape.words[k].size(),
            "replay: this rank drew fewer random words than rank 0 (the ranks' inputs differ)");
}

}  // namespace dpstats::replay_detail
