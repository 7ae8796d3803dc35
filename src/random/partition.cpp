// Uniformly random partitions (random/partition.hpp).
#include "dpstats/random/partition.hpp"

#include "dpstats/error.hpp"
#include "dpstats/solvers/dp_sgd.hpp"

namespace dpstats {

std::vector<int> random_parts(std::int64_t n, int m, Rng& rng) {
  require(m >= 1 && m <= n, "random_parts: needs 1 <= m <= n, got m = {}, n = {}", m, n);
  const std::vector<std::int64_t> perm = optimize::random_permutation(n, rng);
  std::vector<int> part(static_cast<std::size_t>(n));
  for (int l = 0; l < m; ++l)
    for (std::int64_t r = n * l / m; r < n * (l + 1) / m; ++r)
      part[static_cast<std::size_t>(perm[static_cast<std::size_t>(r)])] = l;
  return part;
}

std::vector<std::vector<std::int64_t>> rows_of_parts(const std::vector<int>& part, int m,
                                                     std::int64_t first, std::int64_t count) {
  if (count < 0) count = static_cast<std::int64_t>(part.size()) - first;
  std::vector<std::vector<std::int64_t>> rows(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < count; ++i)
    rows[static_cast<std::size_t>(part[static_cast<std::size_t>(first + i)])].push_back(i);
  return rows;
}

}  // namespace dpstats
