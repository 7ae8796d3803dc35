// The mean family over ranks (internal; comm/communicator.hpp, docs/architecture.md "Ranks"):
// the guard before the first collective, the private clipped-row count and q_range on rows
// spread over ranks. One process (comm.size() == 1): exactly the single-process code.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "dpstats/comm/communicator.hpp"
#include "dpstats/mechanisms/range.hpp"
#include "dpstats/mechanisms/range_ht.hpp"
#include "robust_mean_core.hpp"

namespace dpstats::mean_detail {

// The rows of every rank, after the guard: every rank's `fingerprint` (the options that shape the
// release and the column count) equals rank 0's, every rank's cells are finite (a rank may hold
// no row), and there is at least one row in all. One process: check_data(X) and X.rows().
std::int64_t guarded_rows(const ConstMatrixRef& X, Communicator& comm,
                          const std::string& fingerprint, const char* what, int threads);

// diag["clipped"] (report_clipped) from every rank's count of rows outside [lower, upper]; the
// noisy count is drawn on rank 0 and every rank gets the same diagnostics.
void report_clipped(const mean_detail::Mech& count, const ConstMatrixRef& X, const Vector& lower,
                    const Vector& upper, std::int64_t n, double tolerated, const char* what,
                    Communicator& comm, Rng& rng, nlohmann::json& diag);

// q_range on the rows of every rank (n in all): each rank's occupied bins, merged exactly, then
// the release drawn on rank 0 and given to every rank.
std::optional<RangeResult> q_range(const ConstMatrixRef& X, std::int64_t n, const RangeOptions& o,
                                   Communicator& comm, Rng& rng, int threads);
// The same on rows read through a view (the robust means' scale units).
std::optional<RangeResult> q_range(const AffineRows& X, std::int64_t n, const RangeOptions& o,
                                   Communicator& comm, Rng& rng, int threads);

// q_range-ht's centre on the rows of every rank (n in all): rank 0 draws the partition of the
// global rows and gives every rank its rows' parts; each part's bins are merged exactly, and
// rank 0 releases every part and takes the median. std::nullopt when every part abstained.
std::optional<Vector> q_range_ht(const ConstMatrixRef& X, std::int64_t n,
                                 const RangeHtOptions& o, Communicator& comm, Rng& rng,
                                 int threads);
// The same on rows read through a view (the robust means' scale units).
std::optional<Vector> q_range_ht(const AffineRows& X, std::int64_t n, const RangeHtOptions& o,
                                 Communicator& comm, Rng& rng, int threads);

// mean_detail::units_step (as the bounded mean and DP Mean call it: alpha 0, or the robust
// method's alpha when DP Mean is PRIME's fallback) on the rows of every rank: with a supplied
// scale, or in one process, exactly that; otherwise the private units estimated over every rank
// (estimate_units with comm), the same diagnostics and abstention on every rank.
std::optional<ColumnUnits> units_step(const ConstMatrixRef& X, const mean_detail::AuxPlan& aux,
                                      const std::optional<std::vector<double>>& scale,
                                      double alpha, double widen, int threads, Communicator& comm,
                                      ReleaseBudget& account,
                                      Rng& rng, nlohmann::json& diag,
                                      std::optional<std::string>& abstained);

// The filter's removal set over ranks (private_filter.cpp): exactly the rows filter_drops removes
// from the union of every rank's set S (this rank's scores `tau`, indexed like st.S; `offset` the
// global id of this rank's row 0), decided from gathered scores and tied rows.
std::vector<char> drops_over_ranks(Communicator& comm, std::span<const double> tau, double cut,
                                   const mean_detail::FilterState& st, std::int64_t k,
                                   std::int64_t offset);

// A double in exact form, for fingerprints.
inline std::string exact_text(double x) { return fmt::format("{:a}", x); }

}  // namespace dpstats::mean_detail
