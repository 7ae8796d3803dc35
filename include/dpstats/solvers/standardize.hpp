// Private standardisation of a fit's features, and the intercept (issue #15; the proofs' "Private
// centring" sections, docs/proofs/user-level.md and heavy-tailed.md).
//
// The scale layer's private_location (scale/location.hpp) releases, per column j, a location mu_j
// accurate to a fraction of the column's scale at any shift, and a scale s_j (1.4826 x MAD). A fit
// then runs on the rows z = ((x_1 - mu_1)/s_1, ..., (x_d - mu_d)/s_d, 1): a linear model v on z is
// the affine model x . w + b on x with
//     w_j = v_j / s_j,   b = v_{d+1} - sum_j w_j mu_j,
// which is what the release states (estimate = (w_1..w_d, b), d + 1 entries). A degenerate column
// (s_j = 0: all values equal) gets z_j = 0 and w_j = 0. Each z depends on its own row and the
// released (mu, s) only, so the fit's sensitivity argument is unchanged, and the map back is
// post-processing. Since (mu, s) follow x -> a x + c (up to the location's resolution), z and so
// the fit's error in the data's own units are the same at every unit and shift.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/release.hpp"
#include "dpstats/scale/location.hpp"
#include "dpstats/seam.hpp"

namespace dpstats {
class Communicator;  // dpstats/comm/communicator.hpp
}

namespace dpstats::optimize {

struct Standardization {
  Vector location, scale;  // per column; scale 0 marks a degenerate column (dropped)
  // Regression losses: the label's private location and scale too, y_z = (y - mu_y) / s_y, so
  // that the weights (and domain_radius) are unit-free; the model maps back as
  // y = mu_y + s_y (z . v), i.e. w_j = s_y v_j / s_j, b = mu_y + s_y v_{d+1} - sum_j w_j mu_j.
  bool labels = false;
  double label_location = 0, label_scale = 1;
  nlohmann::json diagnostics = nlohmann::json::object();

  // n x (d + 1): the standardised columns, then the constant 1.
  RowMatrix apply(const ConstMatrixRef& X) const;
  // The labels in standardised units (unchanged when `labels` is false).
  Vector apply_labels(const Vector& y) const;
  // (v_1..v_{d+1}) on z -> (w_1..w_d, b) on x; an empty v stays empty (an abstention).
  Vector to_user_units(const Vector& v) const;
  // A bound on ||apply(x)|| for every raw row with ||x|| <= raw_bound (the constant 1 included):
  // sqrt(((raw_bound + ||location||) / min_{scale_j > 0} scale_j)^2 + 1), since a degenerate
  // column's z_j is 0. Post-processing of the released (location, scale) and a public bound.
  double bound_of(double raw_bound) const;
};

// The private location's options for a share (pure epsilon or zcdp rho) of a fit's budget.
LocationOptions centring_options(const PrivacyLoss& share);

// Releases (mu, s) of the n x d table `rows` (one row per privacy unit: a record, or one row per
// user) through private_location, its entries claimed on `account`. The caller has checked
// private_location_shortfall; an estimate the reliability rule (scale/reliability.hpp) finds
// unusable gives `abstained` with its reason; a degenerate column is dropped (w_j = 0), listed in
// diagnostics["dropped_columns"].
struct Centring {
  Standardization standardization;
  std::optional<std::string> abstained;
};
// With `labels`, the label is one more column of the table (regression losses; a degenerate
// label column keeps its units: label_scale = 1). `comm` (null: one process): the ranks holding
// the table's rows, each passing its own (possibly none); the release is the one-process release
// on the union of the rows (private_location over ranks: exact counts, rank 0 draws).
Centring private_centring(const ConstMatrixRef& rows, const PrivacyLoss& share,
                          ReleaseBudget& account, Rng& rng, const Vector* labels = nullptr,
                          Communicator* comm = nullptr);

// The offset check (issue #15; docs/proofs/user-level.md and heavy-tailed.md "Offset check"):
// when a fit cannot centre (too few units for private_location) and its feature scale is unknown,
// it runs without an intercept in the data's units, which is useless on columns far from 0
// (age in years, salary in dollars). Per checked column j (the features, then the label for a
// regression loss) the statistic is
//     S_j = sum over units u of (1/m_u) sum over u's rows of (1{x_j < 0} + 1/2 1{x_j = 0}),
// i.e. n times the mid-rank position of 0 in the column. One unit moves each S_j by at most 1, so
// the c-vector has l1 sensitivity c (Laplace, pure epsilon) and l2 sensitivity sqrt(c) (Gaussian,
// zcdp rho). The released fraction F_j = clamp(noisy S_j / n, 0, 1); a column is far from
// centred when min(F_j, 1 - F_j) < kOffsetMinority: 0 lies outside its central 80% (for a
// Gaussian column, |mean| > 1.28 sd; a constant nonzero column, e.g. a hand-made intercept, is
// far). A column is *unsure* when it is not far but its one-sided 95% noise band reaches 0:
// min(F_j, 1 - F_j) - 1.645 sd / n <= 0 (sd: the noise's standard deviation), i.e. the check's
// noise cannot even rule out a column entirely on one side of 0 (issue 27 case 5: at 200
// users and epsilon 0.3 the noise sd is half the users, and a fit in raw units released a log
// loss of 24 with status ok). A far or unsure column blocks the uncentred fit. The decision and
// the diagnostics are post-processing of the noisy vector.
inline constexpr double kOffsetMinority = 0.1;
inline constexpr double kOffsetBandZ = 1.6448536269514722;  // one-sided 95% normal quantile
// What the check spends of the centring's share (scale_share): a quarter under zCDP (Gaussian,
// l2 sensitivity sqrt(c): the noise sd is about 5% of the units at 1000 users, epsilon = 1); all
// of it under pure epsilon (Laplace, l1 sensitivity c).
inline constexpr double kOffsetCheckZcdpFraction = 0.25;

struct OffsetCheck {
  std::optional<std::string> far;     // the far columns' names ("2, 3, y"), empty when none
  std::optional<std::string> unsure;  // the columns the check's noise cannot place
  double noise_sd_fraction = 0;       // the noise's sd over the units
  nlohmann::json diagnostics = nlohmann::json::object();
  bool blocks() const { return far.has_value() || unsure.has_value(); }
};

// `rows`: units x m rows, unit u's rows at u*m .. u*m + m - 1 (m = rows_per_unit; 1 for
// records). `labels`: one more checked column, "y" (a regression label; or class labels +-1,
// where "far" means fewer than 10% of the units in one class: a fit without an intercept cannot
// express that base rate). `share`: pure epsilon or zcdp
// rho: the mechanism's entry claims its planned place on `account` (or is charged as the whole
// plan of an account not charged yet) before the noise is drawn. S_j is computed as
// the exact integer sum of 2 (1{x_j < 0} + 1/2 1{x_j = 0}) over the rows, divided by 2m once.
// `comm` (null: one process): the ranks holding the rows, each a whole number of units; the
// integer sums merge exactly and rank 0 draws the noise (the one-process release).
// `class_labels`: `labels` are +-1 classes, unsure until the one-sided 95% band rules out a
// class under 10% (not only an empty class): a 5% class with noise sd 3% of the units must not
// pass on one lucky draw.
OffsetCheck offset_check(const ConstMatrixRef& rows, std::int64_t rows_per_unit,
                         const Vector* labels, const PrivacyLoss& share, NoiseMode noise,
                         ReleaseBudget& account, Rng& rng, Communicator* comm = nullptr,
                         bool class_labels = false);
// The check's entry on `columns` checked columns (the features, and the label when checked): what
// a fit's plan charges, claimed by offset_check.
LedgerEntry offset_check_entry(Eigen::Index columns, const PrivacyLoss& share, NoiseMode noise);

// The fewest units (rows for a record-level fit) for which private_location_shortfall(o, n, d) is
// empty: public, from the options and d only (for the abstention's advice).
std::size_t centring_units_needed(const LocationOptions& o, std::size_t d);

// The abstention reason when the offset check blocks (far or unsure columns) and the fit cannot
// centre. `class_labels`: the checked "y" is +-1 class labels (only more units, whose centring
// fits an intercept, or centre = false can help it; centring the features by hand cannot).
std::string offset_abstention(const OffsetCheck& oc, std::size_t have, std::size_t need,
                              const char* units, bool class_labels = false);

// Every fit release's diagnostics["stated_error"] (issue #15): {"radius": null, "statement": why
// no error is stated}. The fits' excess-risk theorems (docs/proofs/user-level.md §4,
// heavy-tailed.md §4 "Stated error") are asymptotic, in expectation, with constants and problem
// parameters (the true minimiser's norm, L on the unclipped data) that a release cannot compute.
nlohmann::json fit_stated_error();

}  // namespace dpstats::optimize
