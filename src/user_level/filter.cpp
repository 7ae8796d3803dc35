#include "dpstats/user_level/filter.hpp"

#include <algorithm>
#include <cmath>

#include "dpstats/error.hpp"
#include "dpstats/comm/communicator.hpp"
#include "dpstats/mechanisms/gaussian.hpp"
#include "dpstats/solvers/exact_sum.hpp"

namespace dpstats::optimize {

double filter_weight(double dist, double radius) {
  return std::clamp(2 - dist / radius, 0.0, 1.0);
}

namespace {

void check_filter(const UserDataset& data, const Domain& domain, const Vector& x0,
                  const FilterOptions& o) {
  require(domain.dimension() == data.dim(), "domain dimension must equal the feature dimension");
  require(x0.size() == data.dim(), "x0 must have the feature dimension");
  require(o.steps >= 1, "steps must be >= 1");
  check_positive(o.step_size, "step_size");
  check_positive(o.clip, "clip");
  check_positive(o.radius, "filter radius");
  check_positive(o.rho, "rho");
  require(o.centre_share > 0 && o.centre_share < 1, "centre_share must be in (0, 1)");
}

GaussianMechanism centre_mechanism(std::int64_t n, std::int64_t d, const FilterOptions& o) {
  const ClippedVectorSum probe(d, o.clip, n);
  return GaussianMechanism::from_rho(probe.sensitivity(), o.centre_share * o.rho / o.steps,
                                     static_cast<std::size_t>(d), o.noise);
}

GaussianMechanism residual_mechanism(std::int64_t n, std::int64_t d, const FilterOptions& o) {
  const ClippedVectorSum probe(d, 2 * o.radius, n);
  return GaussianMechanism::from_rho(probe.sensitivity(), (1 - o.centre_share) * o.rho / o.steps,
                                     static_cast<std::size_t>(d), o.noise);
}

Vector clipped(Vector g, double c) {
  const double norm = g.norm();
  if (norm > c) g *= c / norm;
  return g;
}

}  // namespace

namespace {

const char* const kCentrePurpose = "filter centre: exact sum of per-user clipped mean gradients, T steps";
const char* const kResidualPurpose =
    "soft-filtered residuals around the released centre (norm <= 2r), T steps";

Ledger entries_of(const GaussianMechanism& cm, const GaussianMechanism& fm, int steps) {
  LedgerEntry c = cm.ledger_entry(kCentrePurpose), f = fm.ledger_entry(kResidualPurpose);
  c.count = steps;
  f.count = steps;
  return {c, f};
}

}  // namespace

Ledger plan_filter(std::int64_t n, std::int64_t d, const FilterOptions& o) {
  return entries_of(centre_mechanism(n, d, o), residual_mechanism(n, d, o), o.steps);
}

Ledger filter_planned(const FilterOptions& o) {
  return {GaussianMechanism::reserved_entry(o.centre_share * o.rho / o.steps, kCentrePurpose, o.steps),
          GaussianMechanism::reserved_entry((1 - o.centre_share) * o.rho / o.steps, kResidualPurpose,
                                            o.steps)};
}

GradientRun filtered_dp_gd(const UserDataset& data, const Loss& loss, const Domain& domain,
                           const Vector& x0, const FilterOptions& o, Rng& rng,
                           GradientCounter& counter) {
  check_filter(data, domain, x0, o);
  Communicator& comm = comm_or_single(o.comm);
  const std::int64_t local = data.num_users(), n = data.total_users(), d = data.dim();
  const auto cm = centre_mechanism(n, d, o);
  const auto fm = residual_mechanism(n, d, o);
  if (o.account && !o.noiseless) o.account->claim(entries_of(cm, fm, o.steps));
  GradientRun run;
  run.sigma = fm.sigma();
  run.sensitivity = ClippedVectorSum(d, 2 * o.radius, n).sensitivity();
  Vector x = x0, acc = Vector::Zero(d);
  domain.project(x);
  std::vector<Vector> g(static_cast<std::size_t>(local));
  const double nd = static_cast<double>(n);
  // The exact sum over every rank's users (lattice integers; the identity in one process).
  const auto total = [&](const ClippedVectorSum& s) {
    Vector lattice = s.lattice_sum();
    allreduce_exact(comm, lattice);
    return s.value_of(lattice);
  };
  // Noise once: rank 0 draws (on_root), every rank continues from its value.
  const auto release = [&](const GaussianMechanism& mech, const Vector& v) {
    return o.noiseless ? v : on_root(comm, [&] { return Vector(mech.apply(v, rng)); });
  };
  for (int t = 0; t < o.steps; ++t) {
    ClippedVectorSum centre(d, o.clip, n);
    for (std::int64_t u = 0; u < local; ++u) {
      if (o.hook) o.hook(t, 0, u);
      g[static_cast<std::size_t>(u)] = clipped(user_mean_gradient(data, loss, x, u, counter), o.clip);
      centre.add(g[static_cast<std::size_t>(u)]);
    }
    const Vector c = release(cm, total(centre)) / nd;
    ClippedVectorSum residual(d, 2 * o.radius, n);  // every term has norm <= 2r already
    for (const Vector& gu : g) {
      const Vector diff = gu - c;
      residual.add(filter_weight(diff.norm(), o.radius) * diff);
    }
    const Vector r = release(fm, total(residual));
    run.releases += 2;
    x -= o.step_size * (c + r / nd);
    domain.project(x);
    if (t >= o.steps / 2) acc += x;
  }
  run.x = acc / static_cast<double>(o.steps - o.steps / 2);
  return run;
}

}  // namespace dpstats::optimize
