// The classify task's own options as a user gives them (`dpstats fit --task classify`,
// dpstats.fit(task="classify")): one field per declared option (src/options.cpp, command
// "fit"), absent meaning the declaration's default. Listed once in visit_fields
// (dpstats/option_fields.hpp): the tool's flags, the Python keywords and the copy into
// ClassifyOptions (copy_given) walk it.
#pragma once
#include <concepts>
#include <cstdint>
#include <optional>

#include "dpstats/training/train_classifier.hpp"

namespace dpstats::optimize {

struct ClassifyRequest {
  std::optional<ModelKind> model;
  std::optional<ClassifyOptimizer> optimizer;
  std::optional<int> hidden, classes;
  std::optional<double> noise_multiplier, feature_scale, lambda, tau, second_moment_floor;
  std::optional<std::int64_t> n_public;
  std::optional<bool> one_unit;
};

template <class R, class V>
  requires std::same_as<std::remove_cvref_t<R>, ClassifyRequest>
void visit_fields(R&& r, V&& v) {
  v("model", r.model);
  v("optimizer", r.optimizer);
  v("hidden", r.hidden);
  v("classes", r.classes);
  v("noise_multiplier", r.noise_multiplier);
  v("feature_scale", r.feature_scale);
  v("lambda", r.lambda);
  v("tau", r.tau);
  v("second_moment_floor", r.second_moment_floor);
  v("n_public", r.n_public);
  v("one_unit", r.one_unit);
}

inline constexpr int kDefaultHidden = 128;  // the mlp's hidden units when `hidden` is absent

// The options the request sets, written into `o` (copy_given). An option the optimizer does not
// read (its line in classify_optimizers(): lambda for dp-adam-jme, tau for dp-adam-joint-clip,
// noise_multiplier for the private ones) is an InvalidArgument naming both.
void apply_request(const ClassifyRequest& r, ClassifyOptions& o);

// The model the request names on `features` inputs and `classes` outputs: logistic, or the mlp
// with `hidden` units started from a public, data-independent draw of `seed` (absent: 0).
Classifier initial_model(const ClassifyRequest& r, Eigen::Index features, int classes,
                         std::optional<std::uint64_t> seed);

}  // namespace dpstats::optimize
