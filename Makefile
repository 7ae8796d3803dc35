# dpstats — top-level entry points. `make demo` and `make test` are the two commands the README
# opens with; both install missing Debian packages first (scripts/install-deps.sh).
BUILD   ?= build
JOBS    ?= 2
PYTHON  ?= /usr/bin/python3
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all deps configure build demo test test-slow test-all bench clean fuzz test-sanitize

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DPYTHON_EXECUTABLE=$(PYTHON) -DPython_EXECUTABLE=$(PYTHON)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The demo needs the library and the tool only (not the tests, benchmarks or Python module).
demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target dpstats_cli
	./$(BUILD)/dpstats demo

# The default suite: everything except the `slow` label (unit, stat, audit, cli, python).
test: build
	cd $(BUILD) && ctest -LE slow --output-on-failure -j $(JOBS)

# Large statistical suites (10^6-sample goodness-of-fit and audits); minutes, not seconds.
test-slow: build
	cd $(BUILD) && ctest -L slow --output-on-failure -j $(JOBS)

test-all: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# libFuzzer on every reader for FUZZ_MINUTES each (clang + libclang-rt-dev: install-deps.sh --fuzz).
FUZZ_MINUTES ?= 10
fuzz:
	@scripts/install-deps.sh --fuzz
	cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DDPSTATS_FUZZ=ON -DDPSTATS_BUILD_PYTHON=OFF -DDPSTATS_BUILD_BENCH=OFF
	cmake --build build-fuzz -j $(JOBS) --target fuzz_csv fuzz_npy fuzz_table
	scripts/fuzz.sh build-fuzz $(FUZZ_MINUTES)

# The default C++ suite (unit, stat, audit, cli, corpus replay) under ASan + UBSan (gcc); the
# Python tests are left out (the interpreter is not instrumented), and so are the mpirun tests (Open
# MPI's own allocations at MPI_Init are reported as leaks; the distributed library code runs under
# the sanitizers in the unit tests' in-process ranks). -O1, the level ASan recommends:
# about a third less compile time than -O2 with the same reports. LDFLAGS and CXXFLAGS: the
# install test builds a separate program against the (instrumented, static) library, and must
# compile it instrumented too (Eigen allocates differently under ASan: a consumer compiled
# without it frees the library's vectors with the wrong free).
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g
test-sanitize: deps
	cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPSTATS_BUILD_PYTHON=OFF \
	  -DDPSTATS_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS)" \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" \
	  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
	cmake --build build-sanitize -j $(JOBS)
	cd build-sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LDFLAGS="-fsanitize=address,undefined" \
	  CXXFLAGS="$(SANITIZE_FLAGS)" \
	  ctest -LE "slow|python|mpi" --output-on-failure -j $(JOBS)

bench: build
	bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
