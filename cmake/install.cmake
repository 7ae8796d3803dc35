# `cmake --install build [--prefix P]` installs what a C++ user needs:
#   P/include/dpstats/...                  the public headers
#   P/lib/libdpstats.a                     the library
#   P/bin/dpstats                          the tool
#   P/lib/cmake/dpstats/dpstatsConfig.cmake  find_package(dpstats) -> target dpstats::dpstats
#   P/lib/pkgconfig/dpstats.pc             pkg-config --cflags --libs dpstats
# The library is static, so its dependencies travel with it: dpstatsConfig.cmake finds them
# (Eigen3, OpenSSL's libcrypto, nlohmann_json, fmt, Threads, Boost headers, zlib) and the .pc file
# names them (-lfmt -lcrypto -lz -pthread).
include(CMakePackageConfigHelpers)

# Users of the installed target compile as C++20 too (the headers need it).
target_compile_features(dpstats_lib PUBLIC cxx_std_20)

install(TARGETS dpstats_lib EXPORT dpstatsTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/dpstats DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS dpstats_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(DPSTATS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dpstats)
install(EXPORT dpstatsTargets NAMESPACE dpstats:: FILE dpstatsTargets.cmake
        DESTINATION ${DPSTATS_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dpstatsConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/dpstatsConfig.cmake
                              INSTALL_DESTINATION ${DPSTATS_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dpstatsConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dpstatsConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/dpstatsConfigVersion.cmake
        DESTINATION ${DPSTATS_CMAKE_DIR})

# The .pc file finds its prefix from its own place (relocatable: any --prefix works).
file(RELATIVE_PATH DPSTATS_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/dpstats.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dpstats.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dpstats.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
