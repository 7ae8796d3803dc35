#!/usr/bin/env bash
# The README's C++ example, built as written against an installed dpstats:
#  1. cmake --install BUILD --prefix BUILD/install-test
#  2. the README's main.cpp and CMakeLists.txt (the fenced blocks after the `install-test:`
#     markers) in a separate project that calls find_package(dpstats), configured with
#     CMAKE_PREFIX_PATH=<prefix>; the program runs and prints a release;
#  3. the same main.cpp through pkg-config (the README's one-line g++ command).
# Usage: test_find_package.sh BUILD_DIR SOURCE_DIR (CXXFLAGS and LDFLAGS, e.g. -fsanitize=...,
# reach both builds: CMake reads them from the environment, the g++ line below uses them)
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
prefix="$build/install-test"
work="$build/install-consumer"
rm -rf "$prefix" "$work"
mkdir -p "$work/project"

cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/lib/cmake/dpstats/dpstatsConfig.cmake" || { echo "no dpstatsConfig.cmake"; exit 1; }
pc=$(find "$prefix" -name dpstats.pc | head -1)
test -n "$pc" || { echo "no dpstats.pc"; exit 1; }

# A fenced block that follows the line "<!-- install-test: NAME -->" in README.md.
extract() {
  awk -v name="$1" '
    $0 ~ "<!-- install-test: " name " -->" { armed = 1; next }
    armed && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$src/README.md"
}
extract main.cpp >"$work/project/main.cpp"
extract CMakeLists.txt >"$work/project/CMakeLists.txt"
test -s "$work/project/main.cpp" && test -s "$work/project/CMakeLists.txt" ||
  { echo "README.md lacks the install-test blocks"; exit 1; }

cmake -S "$work/project" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
out=$("$work/build/hello")
echo "find_package: $out"
grep -q epsilon <<<"$out"

export PKG_CONFIG_PATH="$(dirname "$pc")"
# shellcheck disable=SC2046
${CXX:-g++} ${CXXFLAGS:-} ${LDFLAGS:-} -O1 "$work/project/main.cpp" -o "$work/hello_pc" $(pkg-config --cflags --libs dpstats)
out=$("$work/hello_pc")
echo "pkg-config: $out"
grep -q epsilon <<<"$out"
echo "install test: ok"
