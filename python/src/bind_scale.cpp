// Scale bindings: bounds (private per-column location, scale, clipping bounds and an optional
// row-norm quantile, with no public range; include/dpstats/scale/bounds.hpp).
#include "comm.hpp"
#include "common.hpp"
#include "dpstats/option_fields.hpp"
#include "dpstats/privacy/neighbouring_names.hpp"
#include "dpstats/scale/bounds.hpp"
#include "request.hpp"

namespace py = pybind11;
using namespace dpstats;
using namespace dpstats::python;

namespace {

CArray to_array(const Vector& v) {
  CArray a({static_cast<py::ssize_t>(v.size())});
  std::copy(v.data(), v.data() + v.size(), a.mutable_data());
  return a;
}

// The bounds' own options come as one dict, filled by the request's field list (request.hpp).
py::tuple bounds_native(const CArray& X, double epsilon, double delta,
                        const std::string& neighbouring, int threads,
                        std::optional<std::uint64_t> seed, const py::dict& options,
                        Budget* budget, const py::object& comm) {
  const auto data = as_matrix(X);
  BoundsRequest request;
  fill_request(request, "bounds", options);
  BoundsOptions o;
  copy_given(request, o);
  o.privacy = {.epsilon = epsilon, .delta = delta};
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
        py::arg("neighbouring"), py::arg("threads"), py::arg("seed"),
        py::arg("options") = py::dict(), py::arg("budget").none(true) = nullptr,
        py::arg("comm") = py::none());
  m.def("_bounds_options", &request_fields<BoundsRequest>,
        "The bounds' declared options as [(name, kind)]: the keywords of dpstats.bounds.");
}
