# dpstats — top-level entry points. `make demo` and `make test` are the two commands the README
# opens with; both install missing Debian packages first (scripts/install-deps.sh).
BUILD   ?= build
JOBS    ?= 2
PYTHON  ?= /usr/bin/python3
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all deps configure build demo test test-slow test-all bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DPYTHON_EXECUTABLE=$(PYTHON) -DPython_EXECUTABLE=$(PYTHON)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/dpstats demo

# The default suite: everything except the `slow` label (unit, stat, audit, cli, python).
test: build
	cd $(BUILD) && ctest -LE slow --output-on-failure -j $(JOBS)

# Large statistical suites (10^6-sample goodness-of-fit and audits); minutes, not seconds.
test-slow: build
	cd $(BUILD) && ctest -L slow --output-on-failure -j $(JOBS)

test-all: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
