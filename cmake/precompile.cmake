# Precompiled headers (issue 30 item 1): Eigen, nlohmann::json, fmt and the standard headers most
# translation units include take about a third of each one's compile time; parsing them once per
# target instead saves that third. DPSTATS_PCH=OFF compiles without them. The header also declares
# the Eigen templates compiled once in the library (dpstats/eigen_instances.hpp), so that no target's
# translation units compile them again.
option(DPSTATS_PCH "Precompile the heavy third-party headers of each target" ON)

function(dpstats_precompile target)
  if(DPSTATS_PCH)
    target_precompile_headers(${target} PRIVATE
      <Eigen/Dense> <nlohmann/json.hpp> <fmt/format.h>
      <algorithm> <cmath> <cstdint> <functional> <memory> <optional> <span> <string> <vector>
      <dpstats/eigen_instances.hpp>)
  endif()
endfunction()
