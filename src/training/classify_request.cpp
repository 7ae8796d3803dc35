#include "dpstats/training/classify_request.hpp"

#include <algorithm>

#include "dpstats/option_fields.hpp"
#include "dpstats/registry.hpp"

namespace dpstats::optimize {

void apply_request(const ClassifyRequest& r, ClassifyOptions& o) {
  copy_given(r, o);
  const auto registry = classify_optimizers();
  std::vector<std::string> read_by_some;  // the given options an optimizer's line names
  for (auto& name : given_options(r))
    if (std::any_of(registry.begin(), registry.end(), [&](const MethodInfo& m) {
          return std::find(m.options.begin(), m.options.end(), name) != m.options.end();
        }))
      read_by_some.push_back(std::move(name));
  check_options_apply(registry, find_method(registry, "fit --task classify", name_of(o.optimizer)),
                      read_by_some);
}

Classifier initial_model(const ClassifyRequest& r, Eigen::Index features, int classes,
                         std::optional<std::uint64_t> seed) {
  if (r.model.value_or(ModelKind::logistic) == ModelKind::logistic)
    return Classifier::logistic(features, classes);
  SeededRng init(seed.value_or(0) ^ 0x9e3779b97f4a7c15ULL);  // public, data-independent init
  return Classifier::mlp(features, r.hidden.value_or(kDefaultHidden), classes, init);
}

}  // namespace dpstats::optimize
