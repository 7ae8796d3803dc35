// User-level data on several ranks (issue 18 item 3): every user's rows are moved to one home rank
// before anything per-user is computed, so a user whose rows are spread over ranks is clipped,
// truncated/padded to m items and bounded exactly as in one process.
//
//  * home_rank(id, P): a fixed public function of the user id (a 64-bit mix of the id, mod P); it
//    reads nothing but the id and P.
//  * gather_users: one alltoall moves each row (id, global row id, label, features) to its user's
//    home rank; the home rank orders a user's rows by global row id (the order one process reads
//    them in), so "the first m rows" and the cyclic padding are those of the single process.
//    m >= 1 is the public number of items per user (required, as for the one-process
//    constructor: the row count is not public). The result holds this rank's home users (possibly none) and total_users() = the users of every
//    rank (allreduce). One process (comm.size() == 1): exactly UserDataset(X, y, users, m, A, B).
// Every rank checks the column count and the options against rank 0 first (check_agreement); a
// bad row on one rank (NaN, a length mismatch) stops every rank before the shuffle (all_or_none).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/user_level/user_data.hpp"

namespace dpstats::optimize {

int home_rank(std::int64_t user_id, int ranks);

// What every rank checks before gather_users moves a row (comm/fingerprint.hpp, with the column
// count): the public items per user and the bounds each user's rows are clipped to.
struct HomeRankOptions {
  std::int64_t items_per_user = 1;
  std::optional<double> feature_bound, label_bound;
};

template <class V>
void visit_fields(const HomeRankOptions& o, V& v) {
  v("items_per_user", o.items_per_user);
  v("feature_bound", o.feature_bound);
  v("label_bound", o.label_bound);
}

UserDataset gather_users(Communicator& comm, const ConstMatrixRef& X, const Vector& y,
                         const std::vector<std::int64_t>& users, std::int64_t m,
                         std::optional<double> feature_bound = std::nullopt,
                         std::optional<double> label_bound = std::nullopt);

// Every rank's users on rank 0, in id order: the one-process users of a gathered dataset, bit for
// bit (rows are not clipped again; the bounds are kept). Other ranks get none. total_users() is
// the same on every rank. One process: a copy of `data`. For the methods that walk the users in
// one sequential pass (user_level.cpp runs them on rank 0); one alltoall of n·m·(d + 1) + n words.
UserDataset users_on_root(Communicator& comm, const UserDataset& data);

}  // namespace dpstats::optimize
