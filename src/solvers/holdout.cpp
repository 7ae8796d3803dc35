// The held-out split and the private validation loss (holdout.hpp).
#include "dpstats/solvers/holdout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/exact/exact_sum.hpp"

namespace dpstats::optimize {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The keyed hash of a unit's words (a row's values as bit patterns, or a user's id).
template <class T>
std::uint64_t keyed_hash(const std::array<std::uint64_t, 2>& key, std::span<const T> words) {
  std::uint64_t h = key[1];
  for (T w : words) h = splitmix64(h ^ std::bit_cast<std::uint64_t>(w));
  return splitmix64(key[0] ^ h);
}

// Two-sided normal and Laplace quantiles of the statement (95%, and 97.5% for the population
// interval, whose other 2.5% go to the sampling error).
constexpr double kNormal95 = 1.959963984540054, kNormal975 = 2.241402727604947;
// ... and at 1 - 5%/3 (three bounds sharing 5%: the statement with a private count).
constexpr double kThird = 0.05 / 3, kNormalThird = 2.3939797998185104;
constexpr double kShrink = 1 - 0x1p-45;  // (holdout.hpp: the callers subtract the unshrunk loss)

}  // namespace

void check_holdout(double fraction, double loss_bound) {
  require(fraction > 0 && fraction <= 0.5,
          fmt::format("holdout: the held-out share of the units must be in (0, 0.5], got {}",
                      format_number(fraction)));
  require(std::isfinite(loss_bound) && loss_bound > 0,
          fmt::format("holdout_loss_bound: the clip of each held-out unit's loss must be a finite "
                      "number > 0, got {}", format_number(loss_bound)));
}

HoldoutSplit::HoldoutSplit(double fraction, Rng& rng, Communicator* ranks) : fraction_(fraction) {
  check_holdout(fraction, 1);
  threshold_ = static_cast<std::uint64_t>(std::ldexp(fraction, 64));  // fraction <= 1/2: fits
  const auto key = on_root(comm_or_single(ranks), [&] {
    return std::vector<std::uint64_t>{rng.next_u64(), rng.next_u64()};
  });
  key_ = {key[0], key[1]};
}

bool HoldoutSplit::held_out(std::span<const double> values) const {
  return keyed_hash(key_, values) < threshold_;
}

HoldoutSplit::Rows HoldoutSplit::rows(const ConstMatrixRef& X,
                                      const std::function<double(Eigen::Index)>& label) const {
  Rows out;
  std::vector<double> row(static_cast<std::size_t>(X.cols() + 1));
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    for (Eigen::Index j = 0; j < X.cols(); ++j) row[static_cast<std::size_t>(j)] = X(i, j);
    row.back() = label(i);
    (held_out(row) ? out.held : out.keep).push_back(i);
  }
  return out;
}

std::uint64_t HoldoutSplit::hash(std::span<const std::uint64_t> words) const {
  return keyed_hash(key_, words);
}

std::int64_t HoldoutSplit::held_units(std::int64_t units) const {
  require(units >= 2, "holdout: the table needs at least 2 units (records, or users) to hold one "
                      "out and fit on another");
  const auto k = static_cast<std::int64_t>(std::llround(fraction_ * static_cast<double>(units)));
  return std::clamp<std::int64_t>(k, 1, units - 1);
}

namespace {

// The smallest t with at least k of the hashes <= t over every rank (`sorted`: this rank's).
std::uint64_t kth_hash(const std::vector<std::uint64_t>& sorted, std::int64_t k,
                       Communicator& comm) {
  const auto at_most = [&](std::uint64_t t) {
    const auto local = static_cast<std::int64_t>(
        std::upper_bound(sorted.begin(), sorted.end(), t) - sorted.begin());
    return comm.size() == 1 ? local : allreduce_count(comm, local);
  };
  std::uint64_t lo = 0, hi = std::numeric_limits<std::uint64_t>::max();
  while (lo < hi) {  // every rank runs the same 64 rounds
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (at_most(mid) >= k) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

using Words = std::vector<std::uint64_t>;

// The units whose hash is the k-th's, by value: each value's count on every rank (rank order).
// Equal hashes are equal units but for a 64-bit collision; the words order the values totally.
std::map<Words, std::vector<std::int64_t>> tied_counts(
    const std::map<Words, std::vector<std::size_t>>& mine, Communicator& comm) {
  Bytes out;
  const auto put = [&](std::uint64_t v) {
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<std::uint8_t>(v >> (8 * b)));
  };
  for (const auto& [w, units] : mine) {
    put(w.size());
    for (std::uint64_t x : w) put(x);
    put(units.size());
  }
  const std::vector<Bytes> all = comm.size() == 1 ? std::vector<Bytes>{out} : comm.allgather(out);
  std::map<Words, std::vector<std::int64_t>> merged;
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::size_t at = 0;
    const auto get = [&] {
      std::uint64_t v = 0;
      for (int b = 0; b < 8; ++b) v |= static_cast<std::uint64_t>(all[r][at++]) << (8 * b);
      return v;
    };
    while (at < all[r].size()) {
      Words w(get());
      for (std::uint64_t& x : w) x = get();
      auto& counts = merged[w];
      counts.resize(all.size());
      counts[r] = static_cast<std::int64_t>(get());
    }
  }
  return merged;
}

}  // namespace

std::vector<char> HoldoutSplit::smallest(const std::vector<std::vector<std::uint64_t>>& words,
                                         std::int64_t units, Communicator* ranks) const {
  Communicator& comm = comm_or_single(ranks);
  const std::int64_t k = held_units(units);
  std::vector<std::uint64_t> h(words.size());
  for (std::size_t i = 0; i < words.size(); ++i) h[i] = hash(words[i]);
  std::vector<std::uint64_t> sorted = h;
  std::sort(sorted.begin(), sorted.end());
  const std::uint64_t t = kth_hash(sorted, k, comm);
  std::vector<char> held(words.size(), 0);
  std::map<Words, std::vector<std::size_t>> tied;  // this rank's units at hash t, by value
  std::int64_t below = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (h[i] < t) held[i] = 1, ++below;
    else if (h[i] == t) tied[words[i]].push_back(i);
  }
  std::int64_t left = k - (comm.size() == 1 ? below : allreduce_count(comm, below));
  for (const auto& [w, counts] : tied_counts(tied, comm)) {  // values in order, then ranks
    for (std::size_t r = 0; r < counts.size() && left > 0; ++r) {
      const std::int64_t take = std::min(left, counts[r]);
      if (static_cast<int>(r) == comm.rank())
        for (std::int64_t j = 0; j < take; ++j) held[tied.at(w)[static_cast<std::size_t>(j)]] = 1;
      left -= take;
    }
  }
  return held;
}

HoldoutSplit::Rows HoldoutSplit::exact_rows(const ConstMatrixRef& X,
                                            const std::function<double(Eigen::Index)>& label,
                                            Communicator* ranks) const {
  std::vector<std::vector<std::uint64_t>> words(static_cast<std::size_t>(X.rows()));
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    auto& w = words[static_cast<std::size_t>(i)];
    for (Eigen::Index j = 0; j < X.cols(); ++j) w.push_back(std::bit_cast<std::uint64_t>(X(i, j)));
    w.push_back(std::bit_cast<std::uint64_t>(label(i)));
  }
  const auto local = static_cast<std::int64_t>(X.rows());
  Communicator& comm = comm_or_single(ranks);
  const std::vector<char> held =
      smallest(words, comm.size() == 1 ? local : allreduce_count(comm, local), ranks);
  Rows out;
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    (held[static_cast<std::size_t>(i)] ? out.held : out.keep).push_back(i);
  return out;
}

const char* HoldoutSplit::exact_rule() {
  return "exactly round(fraction x units) units (at least 1, and 1 left to fit on) are held out: "
         "the units with the smallest keyed hash of the unit (a row's values and label, or a "
         "user's id; equal hashes ordered by the unit's bits), under a secret key drawn for this "
         "release";
}

const char* HoldoutSplit::rule() {
  return "a unit is held out when a keyed hash of the unit (a row's values, or a user's id) "
         "falls below fraction x 2^64, under a secret key drawn for this release";
}

HoldoutLoss HoldoutLoss::gaussian(double L, double rho, NoiseMode mode) {
  check_holdout(0.5, L);
  return HoldoutLoss(L, GaussianMechanism::from_rho(L, rho * kShrink, 1, mode));
}

HoldoutLoss HoldoutLoss::laplace(double L, double epsilon, NoiseMode mode) {
  check_holdout(0.5, L);
  return HoldoutLoss(L, LaplaceMechanism(L, epsilon * kShrink, 1, mode));
}

LedgerEntry HoldoutLoss::ledger_entry() const {
  const char* purpose = "holdout: clipped validation-loss sum over the held-out units";
  return std::visit([&](const auto& m) { return m.ledger_entry(purpose); }, mechanism_);
}

const GaussianMechanism* HoldoutLoss::gaussian_mechanism() const {
  return std::get_if<GaussianMechanism>(&mechanism_);
}

HoldoutLoss::NoisySum HoldoutLoss::noisy_sum(std::span<const double> losses, Rng& rng,
                                              Communicator& comm, std::int64_t capacity) const {
  // The exact sum on the box lattice of `capacity` terms, noised at the lattice's scale
  // (sensitivity Q instead of L, the same loss): the plan's entry describes this release times
  // L / Q exactly.
  const double Q = exact::box_quantum(capacity), scale = Q / L_;
  std::uint64_t word = 0;
  for (double v : losses) exact::add(word, exact::box_value(std::isnan(v) ? L_ : v, 0, L_, scale));
  Vector total(1);
  total(0) = static_cast<double>(exact::total(word, static_cast<std::int64_t>(losses.size())));
  if (comm.size() > 1) allreduce_exact(comm, total);
  const double noisy = on_root(comm, [&] {
    if (const auto* g = std::get_if<GaussianMechanism>(&mechanism_))
      return GaussianMechanism::from_rho(Q, g->rho(), 1, g->mode()).apply(total(0), rng);
    const auto& l = std::get<LaplaceMechanism>(mechanism_);
    return LaplaceMechanism(Q, l.loss().epsilon, 1, l.mode()).apply(total(0), rng);
  });
  NoisySum r;
  r.sum = noisy / scale;
  if (const auto* g = std::get_if<GaussianMechanism>(&mechanism_)) {
    r.sd = g->sigma();
    r.half95 = kNormal95 * r.sd, r.half975 = kNormal975 * r.sd;
    r.half_third = kNormalThird * r.sd;
  } else {
    const double b = std::get<LaplaceMechanism>(mechanism_).noise_scale();
    r.sd = std::sqrt(2.0) * b;
    r.half95 = b * std::log(20.0), r.half975 = b * std::log(40.0);
    r.half_third = b * std::log(1 / kThird);
  }
  return r;
}

nlohmann::json HoldoutLoss::release(std::span<const double> losses, Rng& rng,
                                    Communicator* ranks) const {
  Communicator& comm = comm_or_single(ranks);
  const auto local = static_cast<std::int64_t>(losses.size());
  const std::int64_t m = comm.size() == 1 ? local : allreduce_count(comm, local);
  nlohmann::json out = {{"units", m}, {"loss_bound", L_}, {"rule", HoldoutSplit::exact_rule()}};
  if (m == 0) return out["loss"] = nullptr, out;
  const NoisySum s = noisy_sum(losses, rng, comm, m);
  const double md = static_cast<double>(m), loss = s.sum / md;
  const double sampling = L_ * std::sqrt(std::log(2 / 0.025) / (2 * md));  // Hoeffding, 97.5%
  auto interval = [&](double half) {
    return std::vector<double>{std::clamp(loss - half, 0.0, L_), std::clamp(loss + half, 0.0, L_)};
  };
  out.update({{"loss", loss}, {"noise_sd", s.sd / md}, {"interval_95", interval(s.half95 / md)},
              {"population_interval_95", interval(s.half975 / md + sampling)}});
  return out;
}

nlohmann::json HoldoutLoss::release(std::span<const double> losses, Rng& rng,
                                    Communicator* ranks, PublicCount count) const {
  require(count.units >= 1 && count.fraction > 0 && count.fraction <= 0.5 &&
              count.capacity >= 1,
          fmt::format("holdout: the public count needs units >= 1, fraction in (0, 0.5] and "
                      "capacity >= 1, got {}, {} and {}", count.units,
                      format_number(count.fraction), count.capacity));
  Communicator& comm = comm_or_single(ranks);
  const auto local = static_cast<std::int64_t>(losses.size());
  const std::int64_t m = comm.size() == 1 ? local : allreduce_count(comm, local);
  require(m <= count.capacity, "holdout: more held-out units than the public capacity of the "
                               "loss sum's lattice (the count is not shown)");
  const NoisySum s = noisy_sum(losses, rng, comm, count.capacity);
  const double N = static_cast<double>(count.units), e = count.fraction * N, loss = s.sum / e;
  auto clamp = [&](double lo, double hi) {
    return std::vector<double>{std::clamp(lo, 0.0, L_), std::clamp(hi, 0.0, L_)};
  };
  // m in [m_lo, m_hi] (Hoeffding on Binomial(N, f)); the mean of m held-out units within h of
  // the population's (Hoeffding, m >= m_lo); the sum within the noise's half-width.
  const double t = std::sqrt(N * std::log(2 / kThird) / 2);
  const double m_lo = std::max(1.0, e - t), m_hi = e + t;
  const double h = L_ * std::sqrt(std::log(2 / kThird) / (2 * m_lo));
  const double lo = std::max(0.0, s.sum - s.half_third) / m_hi - h;
  const double hi = (s.sum + s.half_third) / m_lo + h;
  return {{"units_expected", e}, {"loss_bound", L_}, {"rule", HoldoutSplit::rule()},
          {"loss", loss}, {"noise_sd", s.sd / e},
          {"interval_95", clamp(loss - s.half95 / e, loss + s.half95 / e)},
          {"population_interval_95", clamp(lo, hi)},
          {"statement", "loss is the noisy clipped-loss sum over the held-out units divided by "
                        "their public expected count (the exact count is private); interval_95: "
                        "that ratio's noise interval; population_interval_95: the expected "
                        "clipped loss of a fresh unit (noise, the held-out mean and the held-out "
                        "count bounded at 5%/3 each)"}};
}

}  // namespace dpstats::optimize
