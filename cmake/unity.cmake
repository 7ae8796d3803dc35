# Unity build of the library (issue 30 item 1: build time). The library's translation units are
# small and each compiled the same inline code of Eigen, nlohmann::json, fmt and the ledger again;
# compiled eight to a unit they share it: a batch of eight small files takes ~55% of their CPU
# apart (312.6 -> 169.5 CPU s over the 96 files, docs/benchmarks.md "Build time"). DPSTATS_UNITY=OFF
# compiles one file per unit. No compiler flag changes; scripts/seeded_outputs.sh compares two
# builds' seeded releases byte for byte.
#
# Left out of the batches: files of ≥ 10 CPU seconds (a batch would only make them a longer unit
# that the second core waits for), and files whose file-local names collide with a neighbour's
# (an anonymous namespace is per file, so two files' `kInf` are two definitions in one unit):
# privacy/ and scale/ whole (kInf, round_up, Plan, log_add in most files), a few elsewhere.
# A new collision is a compile error naming the file: add the file here.
option(DPSTATS_UNITY "Compile the library's small translation units in batches of eight" ON)

set(DPSTATS_UNITY_ALONE
  # heavy (≥ 10 s each at -O3)
  mean/prime.cpp mean/prime_plan.cpp mean/prime_run.cpp mean/private_filter.cpp
  mean/prime_primitives.cpp heavy_tailed/certificate.cpp
  heavy_tailed/heavy_tailed.cpp moments/density.cpp moments/blt.cpp moments/estimator.cpp
  # file-local names that collide with another file's
  heavy_tailed/lipschitz_extension.cpp mechanisms/laplace.cpp random/bernoulli.cpp
)
set(DPSTATS_UNITY_ALONE_DIRS privacy scale)

function(dpstats_unity target)
  if(NOT DPSTATS_UNITY)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  set(alone ${DPSTATS_UNITY_ALONE})
  foreach(dir ${DPSTATS_UNITY_ALONE_DIRS})
    file(GLOB in_dir RELATIVE ${PROJECT_SOURCE_DIR}/src CONFIGURE_DEPENDS
         ${PROJECT_SOURCE_DIR}/src/${dir}/*.cpp)
    list(APPEND alone ${in_dir})
  endforeach()
  foreach(f ${alone})
    set_source_files_properties(${PROJECT_SOURCE_DIR}/src/${f} TARGET_DIRECTORY ${target}
                                PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endforeach()
endfunction()
