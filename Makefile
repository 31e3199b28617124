# The two commands a newcomer needs: `make demo` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: deps configure build build-all demo test test-asan test-tsan fuzz checks ci clean

deps:
	@bash scripts/install-deps.sh

# Ninja where installed (the installer installs it): it keeps both cores busy across targets.
# A build tree keeps the generator it was made with.
generator = $(if $(wildcard $(1)/CMakeCache.txt),,$(shell command -v ninja >/dev/null 2>&1 && echo -G Ninja))
# -O2 with line tables (-g1): backtraces, perf and sanitizer reports name file and line; full
# debug info (-g) made the build a quarter slower. Configure a tree of your own for gdb's variables.
OPT_FLAGS = -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"

# The installer runs once, before the first configure; after that a missing package is named
# by cmake itself (with the apt-get line), and `make deps` installs it.
configure:
	@test -f $(BUILD)/CMakeCache.txt || bash scripts/install-deps.sh
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) $(call generator,$(BUILD)) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(OPT_FLAGS) >/dev/null

# Compiler progress is filtered out; warnings and errors still show, and a failed build fails.
QUIET = grep -vE '^\[ *[0-9]+%\]|^\[[0-9]+/[0-9]+\] |^Consolidate|^Scanning|Entering directory|Leaving directory' || true

build: configure
	@bash -o pipefail -c "cmake --build $(BUILD) -j $(JOBS) --target rig 2>&1 | { $(QUIET); }"
	@test -x $(BUILD)/rig

build-all: configure
	@bash -o pipefail -c "cmake --build $(BUILD) -j $(JOBS) 2>&1 | { $(QUIET); }"

demo: build
	@$(BUILD)/rig run scenarios/quickstart.toml

test: build-all
	@bash scripts/run-tests.sh $(BUILD)

# Sanitized and fuzz builds: -O1 with line tables only, which compiles in about a third of
# the time of -O2 -g and still names the file and line of every finding.
SAN_FLAGS = -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_C_FLAGS_DEBUG="-O1 -g1"

# The same suite built with ASan+UBSan (gcc, in build-asan). The tests that time the host
# (test_timing) and the qemu kernel test do not run sanitized: both measure speed.
test-asan: deps
	@cmake -S . -B build-asan $(call generator,build-asan) $(SAN_FLAGS) -DRIG_SANITIZE=address,undefined >/dev/null
	@bash -o pipefail -c "cmake --build build-asan -j $(JOBS) 2>&1 | { $(QUIET); }"
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j 2 -E "^test_(timing|kernel):"

# The threads of workloads, recorder, proxy and injectors under ThreadSanitizer (gcc, in
# build-tsan), the targets they start too.
TSAN_TESTS = test_workloads test_injectors
test-tsan: deps
	@cmake -S . -B build-tsan $(call generator,build-tsan) $(SAN_FLAGS) -DRIG_SANITIZE=thread >/dev/null
	@bash -o pipefail -c "cmake --build build-tsan -j $(JOBS) --target rig $(TSAN_TESTS) 2>&1 | { $(QUIET); }"
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp \
	  ctest --output-on-failure -j 2 -R "^test_(workloads|injectors):"

# libFuzzer over the scenario loader and the unit parsers (clang, in build-fuzz), from the
# scenarios as seeds; findings go to build-fuzz/findings/.
FUZZ_SECONDS ?= 60
fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz $(call generator,build-fuzz) $(SAN_FLAGS) -DRIG_FUZZ=ON \
	  -DRIG_SANITIZE=address,undefined >/dev/null
	@bash -o pipefail -c "cmake --build build-fuzz -j $(JOBS) --target fuzz_scenario 2>&1 | { $(QUIET); }"
	@mkdir -p build-fuzz/corpus build-fuzz/findings
	@cp scenarios/*.toml tests/bad_scenarios/*.toml build-fuzz/corpus/
	@build-fuzz/tests/fuzz_scenario -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	  -dict=tests/fuzz/scenario.dict -artifact_prefix=build-fuzz/findings/ -print_final_stats=1 build-fuzz/corpus

# What CI runs after `make test` (.ci/run: the installer, `make test`, `make checks`).
checks: test-asan test-tsan fuzz
ci: test checks

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
