# fabricsim: the two commands a newcomer needs are `make run` and `make test`.
# Everything else (bench, sanitize, fuzz, format) builds on the same set-up.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
# `make run`: the case-study replay, before and after the fixes, side by side.
RUN_ARGS   ?= compare scenarios/case-study-32gpu/before.toml scenarios/case-study-32gpu/after.toml
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc)
GENERATOR  := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all deps configure build run test bench sanitize fuzz format format-check clean install deb

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Release

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/fabricsim $(RUN_ARGS)

# Test-only packages first (before CMake looks for MPI): headless Chromium renders the HTML
# report, OpenMPI runs a sweep under mpirun. Without them those tests are skipped, saying why.
test:
	@scripts/install-deps.sh chromium libopenmpi-dev openmpi-bin || echo "fabricsim: chromium/OpenMPI missing: their tests will be skipped" >&2
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# `make install PREFIX=/opt/fabricsim` (default /usr/local): binary, man page, bash completion,
# scenarios and docs. `make deb`: build/fabricsim_VERSION_ARCH.deb for `apt install ./...deb`.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

deb: build
	cd $(BUILD) && cpack -G DEB

bench: build
	$(BUILD)/bench/fabricsim_bench --benchmark_counters_tabular=true

# Tests under AddressSanitizer + UndefinedBehaviorSanitizer (Debug, separate tree).
sanitize: deps
	cmake -S . -B $(ASAN_BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Debug -DFABRICSIM_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

# libFuzzer targets (clang), each run for FUZZ_SECONDS on a corpus seeded from scenarios/,
# tests/data/validation/ (measurement formats) and the NCCL topology files.
fuzz:
	@scripts/install-deps.sh clang libclang-rt-dev
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFABRICSIM_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_scenario fuzz_units fuzz_nccl_tests \
	  fuzz_perftest fuzz_nvidia_smi fuzz_ethtool fuzz_nccl_log fuzz_nccl_xml fuzz_harness_json
	scripts/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

format:
	git ls-files '*.cpp' '*.hpp' '*.cu' | xargs clang-format -i

format-check:
	@scripts/install-deps.sh clang-format
	git ls-files '*.cpp' '*.hpp' '*.cu' | xargs clang-format --dry-run -Werror

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
