// Where the median's data passes find their rows (issue 18): X holds this rank's rows of a dataset
// spread over the ranks of `comm`, global ids offset .. offset + X.rows() − 1 of `total`. Null
// comm: this process holds every row (offset 0, total = X.rows()). Partial sums merge exactly
// (allreduce_exact) and rank 0 draws every noise sample (on_root), so a seeded release does not
// depend on the number of ranks (dpstats/comm/communicator.hpp).
#pragma once
#include <cstdint>

#include "dpstats/data/matrix.hpp"

namespace dpstats {

class Communicator;  // dpstats/comm/communicator.hpp

struct RowShard {
  Communicator* comm = nullptr;
  std::int64_t offset = 0;
  std::int64_t total = 0;  // rows over all ranks (read only when comm is set)
};

// The total row count of a pass over X: shard.total with a communicator, else X.rows().
inline std::int64_t total_rows(const ConstMatrixRef& X, const RowShard& shard) {
  return shard.comm ? shard.total : static_cast<std::int64_t>(X.rows());
}

}  // namespace dpstats
