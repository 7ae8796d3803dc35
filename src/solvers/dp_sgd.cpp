#include "dpstats/solvers/dp_sgd.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/error.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/parallel.hpp"
#include "dpstats/privacy/composite.hpp"
#include "dpstats/solvers/exact_sum.hpp"

namespace dpstats::optimize {

std::vector<std::int64_t> random_permutation(std::int64_t n, Rng& rng) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.uniform_below(static_cast<std::uint64_t>(i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

Vector user_mean_gradient(const UserDataset& data, const Loss& loss, const Vector& x,
                          std::int64_t user, GradientCounter& counter) {
  const std::int64_t m = data.items_per_user();
  Vector g = Vector::Zero(x.size());
  for (std::int64_t k = 0; k < m; ++k) {
    loss.add_gradient(x, data.features(user, k), data.label(user, k), 1.0, g, counter);
  }
  return g / static_cast<double>(m);
}

namespace {

void check_run(const UserDataset& data, const Domain& domain, const Vector& x0,
               const GradientOptions& o) {
  require(domain.dimension() == data.dim(), "domain dimension must equal the feature dimension");
  require(x0.size() == data.dim(), "x0 must have the feature dimension");
  require(o.steps >= 1, "steps must be >= 1");
  check_positive(o.step_size, "step_size");
  check_positive(o.clip, "clip");
  require(o.sigma_scale >= 0, "sigma_scale must be >= 0");
}

const char* const kGdPurpose = "noisy gradient sums, T full-batch steps at rho/T each";
const char* const kSgdPurpose = "noisy gradient sums on disjoint user batches (parallel composition)";
const char* const kGroupPurpose = "item-level rho/m^2 per disjoint item batch (parallel composition)";

// The run's one mechanism on exact clipped sums of `capacity` terms (none under the test hook).
std::optional<GaussianMechanism> run_mechanism(std::int64_t d, std::int64_t capacity, double rho,
                                               const GradientOptions& o) {
  if (o.sigma_scale == 0) return std::nullopt;
  check_positive(rho, "rho");
  return GaussianMechanism::from_rho(ClippedVectorSum(d, o.clip, capacity).sensitivity(),
                                     rho / (o.sigma_scale * o.sigma_scale),
                                     static_cast<std::size_t>(d), o.noise);
}

// T disjoint batches of the one mechanism, each a block (checked before any draw).
LedgerEntry batches_entry(const GaussianMechanism& mech, double rho, const GradientOptions& o,
                          const char* purpose) {
  ParallelComposite batches(PrivacyLoss::zcdp(rho), Accountant::zcdp, purpose);
  for (int t = 0; t < o.steps; ++t) batches.add_block({mech.ledger_entry("one batch")});
  return batches.entry();
}

// Adds the mechanism's noise to the exact clipped sum s (or none under the test hook). The draw is
// rank 0's when o.comm has several ranks (on_root; one process: the same draw, in place).
Vector noisy(const Vector& s, const std::optional<GaussianMechanism>& mech, const GradientOptions& o,
             Rng& rng, GradientRun& run) {
  ++run.releases;
  if (!mech) return s;
  run.sigma = mech->sigma();
  return on_root(comm_or_single(o.comm), [&] { return Vector(mech->apply(s, rng)); });
}

// Tail averaging: the iterates of the second half, x_{⌊T/2⌋+1..T} (the early iterates of a run
// started far from the optimum would bias a full average).
void step(const Domain& domain, Vector& x, const Vector& g, double eta, Vector& acc, int t,
          int steps) {
  x -= eta * g;
  domain.project(x);
  if (t >= steps / 2) acc += x;
}

// Σ_b clip_c(∇F̂(x, Z_u)) over the users u = user_at(b), b in [0, count): the batch is cut into
// at most o.threads contiguous parts (parallel_ranges), each with its own exact sum and counter,
// merged by integer addition, so the sum does not depend on the thread count. With a test hook
// the pass stays on one thread, in order.
template <class UserAt>
ClippedVectorSum user_gradient_sum(const UserDataset& data, const Loss& loss, const Vector& x,
                                   std::int64_t count, std::int64_t capacity, UserAt user_at,
                                   const GradientOptions& o, std::int64_t t,
                                   GradientCounter& counter) {
  constexpr std::int64_t kGrain = 64;  // users per part at least
  const int threads = o.hook ? 1 : o.threads;
  const auto parts = static_cast<std::size_t>(std::max(threads, 1));
  std::vector<ClippedVectorSum> sums(parts, ClippedVectorSum(data.dim(), o.clip, capacity));
  std::vector<GradientCounter> counters(parts);
  parallel_ranges(count, threads, kGrain, [&](int p, std::int64_t begin, std::int64_t end) {
    auto& sum = sums[static_cast<std::size_t>(p)];
    auto& c = counters[static_cast<std::size_t>(p)];
    for (std::int64_t b = begin; b < end; ++b) {
      const std::int64_t u = user_at(b);
      if (o.hook) o.hook(t, 0, u);
      sum.add(user_mean_gradient(data, loss, x, u, c));
    }
  });
  for (std::size_t p = 1; p < parts; ++p) sums[0].merge(sums[p]);
  for (const auto& c : counters) counter.evaluations += c.evaluations;
  return std::move(sums[0]);
}

Vector output(const Vector& x, const Vector& acc, const GradientOptions& o) {
  return o.average ? Vector(acc / static_cast<double>(o.steps - o.steps / 2)) : x;
}

}  // namespace

LedgerEntry user_dp_gd_planned(const GradientOptions& o) {
  return GaussianMechanism::reserved_entry(o.rho / o.steps, kGdPurpose, o.steps);
}

LedgerEntry user_dp_sgd_planned(const GradientOptions& o) {
  return ParallelComposite(PrivacyLoss::zcdp(o.rho), Accountant::zcdp, kSgdPurpose).planned();
}

LedgerEntry item_dp_sgd_group_planned(const GradientOptions& o, std::int64_t items_per_user) {
  const double m = static_cast<double>(items_per_user);
  return group_privacy_entry(
      ParallelComposite(PrivacyLoss::zcdp(o.rho / (m * m)), Accountant::zcdp, kGroupPurpose)
          .planned(),
      static_cast<int>(items_per_user));
}

GradientRun user_dp_gd(const UserDataset& data, const Loss& loss, const Domain& domain,
                       const Vector& x0, const GradientOptions& o, Rng& rng,
                       GradientCounter& counter) {
  check_run(data, domain, x0, o);
  Communicator& comm = comm_or_single(o.comm);
  // n: every rank's users (the capacity of the lattice sum, its sensitivity and the mean).
  const std::int64_t local = data.num_users(), n = data.total_users();
  GradientRun run;
  run.sensitivity = ClippedVectorSum(data.dim(), o.clip, n).sensitivity();
  const auto mech = run_mechanism(data.dim(), n, o.rho / o.steps, o);
  if (mech && o.account) {
    LedgerEntry e = mech->ledger_entry(kGdPurpose);
    e.count = o.steps;
    o.account->claim(e);
  }
  Vector x = x0, acc = Vector::Zero(x0.size());
  domain.project(x);
  for (int t = 0; t < o.steps; ++t) {
    const ClippedVectorSum sum = user_gradient_sum(
        data, loss, x, local, n, [](std::int64_t u) { return u; }, o, t, counter);
    Vector lattice = sum.lattice_sum();
    allreduce_exact(comm, lattice);  // exact integers: any split of the users, the same total
    const Vector g = noisy(sum.value_of(lattice), mech, o, rng, run) / static_cast<double>(n);
    step(domain, x, g, o.step_size, acc, t, o.steps);
  }
  run.x = output(x, acc, o);
  return run;
}

namespace {

// Global user index (the position of the id among every rank's ids, sorted: the single process's
// user order) -> this rank's user, or -1 when another rank holds it. One allgather of the ids.
std::vector<std::int64_t> local_of_global(const UserDataset& data, Communicator& comm) {
  const std::int64_t n = data.total_users();
  std::vector<std::int64_t> local(static_cast<std::size_t>(n), -1);
  if (comm.size() == 1) {
    for (std::int64_t u = 0; u < n; ++u) local[static_cast<std::size_t>(u)] = u;
    return local;
  }
  std::vector<std::int64_t> every;
  for (const Bytes& b : comm.allgather(to_bytes(data.ids()))) {
    const auto ids = from_bytes<std::vector<std::int64_t>>(b);
    every.insert(every.end(), ids.begin(), ids.end());
  }
  std::sort(every.begin(), every.end());
  require(static_cast<std::int64_t>(every.size()) == n, "user ids must be on one home rank each");
  for (std::int64_t u = 0; u < data.num_users(); ++u) {
    const std::int64_t id = data.ids()[static_cast<std::size_t>(u)];
    const auto g = std::lower_bound(every.begin(), every.end(), id) - every.begin();
    local[static_cast<std::size_t>(g)] = u;
  }
  return local;
}

}  // namespace

GradientRun user_dp_sgd(const UserDataset& data, const Loss& loss, const Domain& domain,
                        const Vector& x0, const GradientOptions& o, Rng& rng,
                        GradientCounter& counter) {
  check_run(data, domain, x0, o);
  Communicator& comm = comm_or_single(o.comm);
  const std::int64_t n = data.total_users();
  require(o.steps <= n, "dp-sgd-user needs at most one batch per user (steps <= n)");
  const std::int64_t B = n / o.steps;  // equal batches; the remainder users are not used
  // The batches: a permutation of the global user indices, drawn once on rank 0.
  const auto perm = on_root(comm, [&] { return random_permutation(n, rng); });
  const auto local = local_of_global(data, comm);
  GradientRun run;
  run.sensitivity = ClippedVectorSum(data.dim(), o.clip, B).sensitivity();
  // Disjoint users: every batch may use the whole ρ (parallel composition).
  const auto mech = run_mechanism(data.dim(), B, o.rho, o);
  if (mech && o.account) o.account->claim(batches_entry(*mech, o.rho, o, kSgdPurpose));
  Vector x = x0, acc = Vector::Zero(x0.size());
  domain.project(x);
  std::vector<std::int64_t> mine;  // this rank's users of the batch, in batch order
  for (int t = 0; t < o.steps; ++t) {
    mine.clear();
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t u = local[static_cast<std::size_t>(perm[static_cast<std::size_t>(t * B + b)])];
      if (u >= 0) mine.push_back(u);
    }
    const ClippedVectorSum sum = user_gradient_sum(
        data, loss, x, static_cast<std::int64_t>(mine.size()), B,
        [&](std::int64_t b) { return mine[static_cast<std::size_t>(b)]; }, o, t, counter);
    Vector lattice = sum.lattice_sum();
    allreduce_exact(comm, lattice);
    const Vector g = noisy(sum.value_of(lattice), mech, o, rng, run) / static_cast<double>(B);
    step(domain, x, g, o.step_size, acc, t, o.steps);
  }
  run.x = output(x, acc, o);
  return run;
}

GradientRun item_dp_sgd_group(const UserDataset& data, const Loss& loss, const Domain& domain,
                              const Vector& x0, const GradientOptions& o, Rng& rng,
                              GradientCounter& counter) {
  check_run(data, domain, x0, o);
  Communicator& comm = comm_or_single(o.comm);
  const std::int64_t n = data.total_users(), m = data.items_per_user(), N = n * m;
  require(o.steps <= N, "dp-sgd-group needs at most one batch per item (steps <= n·m)");
  const std::int64_t B = N / o.steps;
  // The batches: a permutation of the global items (global user index · m + k), drawn on rank 0;
  // each rank adds the items of its home users to the exact sum, merged by integer allreduce.
  const auto perm = on_root(comm, [&] { return random_permutation(N, rng); });
  const auto local = local_of_global(data, comm);
  // Item-level ρ/m² per (parallel) batch; group privacy over a user's m items gives ρ.
  const double rho_item = o.rho / (static_cast<double>(m) * static_cast<double>(m));
  GradientRun run;
  run.sensitivity = ClippedVectorSum(data.dim(), o.clip, B).sensitivity();
  const auto mech = run_mechanism(data.dim(), B, rho_item, o);
  if (mech && o.account)
    o.account->claim(group_privacy_entry(batches_entry(*mech, rho_item, o, kGroupPurpose),
                                         static_cast<int>(m)));
  Vector x = x0, acc = Vector::Zero(x0.size());
  domain.project(x);
  Vector g1(data.dim());
  for (int t = 0; t < o.steps; ++t) {
    ClippedVectorSum sum(data.dim(), o.clip, B);
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t item = perm[static_cast<std::size_t>(t * B + b)];
      const std::int64_t u = local[static_cast<std::size_t>(item / m)], k = item % m;
      if (u < 0) continue;  // another rank's user
      if (o.hook) o.hook(t, 0, u);
      g1.setZero();
      loss.add_gradient(x, data.features(u, k), data.label(u, k), 1.0, g1, counter);
      sum.add(g1);
    }
    Vector lattice = sum.lattice_sum();
    allreduce_exact(comm, lattice);
    const Vector g = noisy(sum.value_of(lattice), mech, o, rng, run) / static_cast<double>(B);
    step(domain, x, g, o.step_size, acc, t, o.steps);
  }
  run.x = output(x, acc, o);
  return run;
}

Vector projected_sgd(const UserDataset& data, const Loss& loss, const Domain& domain,
                     const Vector& y0, double eta,
                     const std::vector<std::pair<std::int64_t, std::int64_t>>& items,
                     GradientCounter& counter) {
  Vector y = y0, acc = Vector::Zero(y0.size()), g(y0.size());
  for (const auto& [u, k] : items) {
    acc += y;
    g.setZero();
    loss.add_gradient(y, data.features(u, k), data.label(u, k), 1.0, g, counter);
    y -= eta * g;
    domain.project(y);
  }
  return items.empty() ? y0 : Vector(acc / static_cast<double>(items.size()));
}

Vector non_private_sgd(const UserDataset& data, const Loss& loss, const Domain& domain,
                       const Vector& x0, double eta, Rng& rng, GradientCounter& counter) {
  const std::int64_t m = data.items_per_user(), N = data.num_users() * m;
  const auto perm = random_permutation(N, rng);
  std::vector<std::pair<std::int64_t, std::int64_t>> items;
  items.reserve(static_cast<std::size_t>(N));
  for (auto i : perm) items.emplace_back(i / m, i % m);
  Vector y0 = x0;
  domain.project(y0);
  return projected_sgd(data, loss, domain, y0, eta, items, counter);
}

double empirical_risk(const UserDataset& data, const Loss& loss, const Vector& x) {
  double s = 0;
  const std::int64_t n = data.num_users(), m = data.items_per_user();
  for (std::int64_t u = 0; u < n; ++u)
    for (std::int64_t k = 0; k < m; ++k) s += loss.value(x, data.features(u, k), data.label(u, k));
  return s / static_cast<double>(n * m);
}

}  // namespace dpstats::optimize
