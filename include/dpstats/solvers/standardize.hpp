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
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "dpstats/data/matrix.hpp"
#include "dpstats/privacy/privacy_loss.hpp"
#include "dpstats/random/rng.hpp"
#include "dpstats/scale/location.hpp"
#include "dpstats/seam.hpp"

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
};

// The private location's options for a share (pure epsilon or zcdp rho) of a fit's budget.
LocationOptions centring_options(const PrivacyLoss& share);

// Releases (mu, s) of the n x d table `rows` (one row per privacy unit: a record, or one row per
// user) through private_location, charged on `account`. The caller has checked
// private_location_shortfall; a column whose estimate still has no guarantee gives `abstained`.
struct Centring {
  Standardization standardization;
  std::optional<std::string> abstained;
};
// With `labels`, the label is one more column of the table (regression losses; a degenerate
// label column keeps its units: label_scale = 1).
Centring private_centring(const ConstMatrixRef& rows, const PrivacyLoss& share,
                          ReleaseBudget& account, Rng& rng, const Vector* labels = nullptr);

}  // namespace dpstats::optimize
