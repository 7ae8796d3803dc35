// Scale bindings: bounds (private per-column location, scale, clipping bounds and an optional
// row-norm quantile, with no public range; include/dpstats/scale/bounds.hpp).
#include "comm.hpp"
#include "common.hpp"
#include "dpstats/privacy/neighbouring_names.hpp"
#include "dpstats/scale/bounds.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

CArray to_array(const Vector& v) {
  CArray a({static_cast<py::ssize_t>(v.size())});
  std::copy(v.data(), v.data() + v.size(), a.mutable_data());
  return a;
}

py::tuple bounds_native(const CArray& X, double epsilon, double delta,
                        std::optional<double> norm_quantile, double norm_share,
                        std::optional<double> coverage, double clip_share,
                        const std::string& norm_centre, double widen, double alpha, double beta,
                        int per_octave, const std::string& neighbouring, int threads,
                        std::optional<std::uint64_t> seed, Budget* budget,
                        const py::object& comm) {
  const auto data = as_matrix(X);
  BoundsOptions o;
  o.privacy = {.epsilon = epsilon, .delta = delta};
  o.norm_quantile = norm_quantile;
  o.norm_share = norm_share;
  o.coverage = coverage;
  o.clip_share = clip_share;
  require(norm_centre == "location" || norm_centre == "zero",
          "norm_centre must be 'location' or 'zero', got '" + norm_centre + "'");
  o.norm_about_location = norm_centre == "location";
  o.widen = widen;
  o.alpha = alpha;
  o.beta = beta;
  o.per_octave = per_octave;
  o.neighbouring = parse_enum<Neighbouring>(neighbouring);
  o.run.threads = check_threads(threads);
  const auto ranks = communicator(comm);  // comm=None: this process holds every row
  o.run.comm = ranks.get();
  auto rng = make_rng(seed);
  Release<Bounds> r;
  {
    GilRelease release(budget);
    r = private_bounds(data, o, *rng, budget);
  }
  const ScaleEstimate& s = r.estimate.scale;
  py::dict est;
  est["location"] = to_array(s.location());
  est["scale"] = to_array(s.scale());
  est["lo"] = to_array(s.lo());
  est["hi"] = to_array(s.hi());
  if (r.estimate.clip) {
    est["clip_lo"] = to_array(r.estimate.clip->lo());
    est["clip_hi"] = to_array(r.estimate.clip->hi());
  }
  if (r.estimate.norm) est["norm_quantile"] = r.estimate.norm->value;
  return py::make_tuple(est, release_fields_json(r).dump());
}

}  // namespace

void bind_scale(py::module_& m) {
  m.def("bounds", &bounds_native, py::arg("X"), py::arg("epsilon"), py::arg("delta"),
        py::arg("norm_quantile"), py::arg("norm_share"), py::arg("coverage"),
        py::arg("clip_share"), py::arg("norm_centre"), py::arg("widen"),
        py::arg("alpha"), py::arg("beta"), py::arg("per_octave"), py::arg("neighbouring"),
        py::arg("threads"), py::arg("seed"), py::arg("budget").none(true) = nullptr,
        py::arg("comm") = py::none());
}
